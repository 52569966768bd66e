"""The quick run's JSON has every item for every device, and every side really ran the kernel.

Structure and counts only: no assertion here looks at a wall-clock time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from accel_bench.config import DOMAINS, Config

QUICK = Config.quick_mode()


def _devices(document: dict[str, Any]) -> list[dict[str, Any]]:
    return list(document["devices"])


def test_document_records_machine_and_config(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, path = quick_run
    assert json.loads(path.read_text(encoding="utf-8")) == document
    assert document["schema"] == "accel-bench/1"
    machine = document["machine"]
    for key in ("date_utc", "cpu", "cores", "memory_bytes", "os", "python", "packages"):
        assert machine[key], key
    assert machine["packages"]["numpy"]
    assert document["config"]["quick"] is True


def test_every_api_device_is_benchmarked(quick_run: tuple[dict[str, Any], Path]) -> None:
    from accel_bench import raw_opencl, raw_vulkan

    document, _ = quick_run
    apis = [d["api"] for d in _devices(document)]
    assert apis.count("opencl") == len(raw_opencl.list_devices())
    assert apis.count("vulkan") == len(raw_vulkan.list_devices())


def test_no_item_failed(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, _ = quick_run
    errors = {d["device_id"]: d["errors"] for d in _devices(document) if d["errors"]}
    assert not errors


def test_transfer_rows_cover_every_domain_direction_and_size(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, _ = quick_run
    for device in _devices(document):
        keys = {(r["domain"], r["direction"], r["bytes"]) for r in device["transfers"]}
        assert keys == {(d, w, s) for d in DOMAINS for w in ("write", "read") for s in QUICK.transfer_sizes}
        for row in device["transfers"]:
            for side in ("ours", "raw"):
                stat = row[side]
                assert ("gbps" in stat) != ("not_measured" in stat), (device["device_id"], side, stat)
                if "gbps" in stat:
                    assert stat["repeats"] == QUICK.repeats_for(row["bytes"])
                    assert stat["min_s"] <= stat["median_s"] <= stat["max_s"]
            if "gbps" in row["ours"] and "gbps" in row["raw"]:
                assert row["ratio_ours_raw"] == pytest.approx(row["ours"]["gbps"] / row["raw"]["gbps"])
            assert "gbps" in row["raw"], f"{device['device_id']}: raw {row['domain']} not measured"
            assert "gbps" in row["memcpy"]


def test_round_trip_sides_ran_the_kernel(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, _ = quick_run
    for device in _devices(document):
        expected = {"raw", "raw-poll", "ours", "provider-direct"}
        if device["api"] == "opencl":
            expected.add("raw-gated")
        if device["api"] == "vulkan":
            expected.add("wgpu")
        if device["ours_status"] != "measured":
            pytest.fail(f"{device['device_id']}: ours not measured: {device['ours_status']}")
        assert set(device["round_trip"]) == expected
        for name, stat in device["round_trip"].items():
            assert stat["repeats"] == QUICK.round_trips
            if name != "wgpu":
                assert stat["verified"] is True, (device["device_id"], name)
        assert "raw-poll" not in device["sustained"], "raw-poll is a round-trip side only"
        for name, stat in device["sustained"].items():
            assert stat["submits"] == QUICK.sustained_submits
            assert stat["verified"] is True, (device["device_id"], name)
        groups = device["sustained_in_flight"]
        assert set(groups) == {str(n) for n in QUICK.sustained_in_flight}
        assert device["sustained"] == groups[str(QUICK.window)]
        for limit, group in groups.items():
            assert set(group) == set(device["sustained"]) and all(s["window"] == int(limit) for s in group.values())
        window = device["sustained_window"]
        if device["api"] == "opencl":
            assert isinstance(window["size"], int) and window["size"] > 0, window
        assert window["what"]


def test_overhead_and_program_load_present(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, _ = quick_run
    for device in _devices(document):
        overhead = device["overhead"]
        expected = {"submit_us", "poll_us", "poll_terminal_us", "proxy_cost_us", "engine_submit", "provider_submit"}
        assert expected <= set(overhead), device["errors"]
        assert {"engine_poll", "provider_poll", "engine_poll_terminal", "provider_poll_terminal"} <= set(overhead)
        assert overhead["pending_throughout"] is True
        assert overhead["pending_throughout_vs_direct"] is True
        assert {"submit_wall_us", "poll_wall_us", "poll_terminal_wall_us", "proxy_cost_wall_us"} <= set(overhead)
        assert overhead["in_call_submit_cpu"]["repeats"] == QUICK.overhead_repeats
        loads = device["program_load"]
        assert loads["ours"] and loads["raw"]
        for kinds in loads.values():
            for entry in kinds.values():
                assert entry["cold"]["repeats"] == QUICK.load_repeats
                assert entry["speedup"] == pytest.approx(entry["cold"]["median_s"] / entry["warm"]["median_s"])
