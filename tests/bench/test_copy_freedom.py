"""Item 5, checked: traced memory does not grow with transfer size or with submission count.

Counts, not times. The bounds: a large transfer may use at most
``STAGING_BOUND`` traced bytes (bounded staging), and never more than a
quarter of its size. For submissions, what stays allocated after a full
collection must not grow from 2,000 to 4,000 cycles (a leak), and neither may
the traced peak: garbage that only the cyclic collector frees is allowed to
exist, but its level must have settled by 2,000 cycles (``PEAK_SLACK``, far
below one byte per extra cycle). The negative controls prove the measurement
sees a hidden transfer-sized copy and a per-cycle leak.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_bench.config import Config
from accel_bench.copyfree import traced

QUICK = Config.quick_mode()
STAGING_BOUND = 4 << 20
CYCLE_SLACK = 16 << 10
PEAK_SLACK = 32 << 10


def test_negative_control_hidden_copy_is_seen() -> None:
    data = np.ones(8 << 20, dtype=np.uint8)
    result = traced(lambda: bytes(data))
    assert result["peak_bytes"] >= data.nbytes


def test_negative_control_leak_is_seen() -> None:
    kept: list[bytes] = []
    result = traced(lambda: kept.extend(bytes(64) + bytes([i % 256]) for i in range(2000)))
    assert result["live_bytes_after_gc"] >= 2000 * 64
    assert result["live_blocks_after_gc"] >= 2000


def _copy_freedom(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for device in document["devices"]:
        if device["ours_status"] != "measured":
            pytest.fail(f"{device['device_id']}: ours not measured: {device['ours_status']}")
        found.append((device["device_id"], device["copy_freedom"]))
    assert found
    return found


def test_transfer_peak_does_not_grow_with_size(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, _ = quick_run
    small, large = QUICK.copyfree_small >> 20, QUICK.copyfree_large >> 20
    for device_id, copies in _copy_freedom(document):
        for direction in ("write", "read"):
            big = copies[f"{direction}_{large}MiB"]
            little = copies[f"{direction}_{small}MiB"]
            assert big["peak_bytes"] <= STAGING_BOUND, (device_id, direction, big)
            assert big["peak_bytes"] < QUICK.copyfree_large // 4, (device_id, direction, big)
            assert big["peak_bytes"] - little["peak_bytes"] <= STAGING_BOUND, (device_id, direction, big, little)
            assert big["live_bytes_after_gc"] <= CYCLE_SLACK, (device_id, direction, big)


def test_cycle_memory_does_not_grow_with_count(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, _ = quick_run
    few, many = QUICK.copyfree_cycles_small, QUICK.copyfree_cycles
    for device_id, copies in _copy_freedom(document):
        short, long = copies[f"cycles_{few}"], copies[f"cycles_{many}"]
        assert long["peak_bytes"] <= short["peak_bytes"] + PEAK_SLACK, (device_id, short, long)
        assert long["live_bytes_after_gc"] <= short["live_bytes_after_gc"] + CYCLE_SLACK, (device_id, short, long)
        assert long["live_blocks_after_gc"] <= short["live_blocks_after_gc"] + 64, (device_id, short, long)
