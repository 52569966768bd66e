"""Item 1: host→buffer and buffer→host transfers per memory domain and size.

Every side transfers the same bytes from/to the same page-touched numpy
arrays; numpy ``copyto`` of those bytes is the memory-bandwidth ceiling.
One buffer of the largest size per (side, domain) serves all sizes (offset 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .config import Config
from .sides import NotMeasured, TransferSide
from .stats import Stat, measure

__all__ = ["HostArrays", "memcpy_ceiling", "transfer_rows"]


class HostArrays:
    """Source and destination host memory of the largest size, touched once (no first-touch faults in timing)."""

    def __init__(self, nbytes: int) -> None:
        self.source = np.empty(nbytes, dtype=np.uint8)
        self.source[:] = np.arange(nbytes, dtype=np.uint64).astype(np.uint8) if nbytes <= (1 << 20) else 0xA5
        self.destination = np.zeros(nbytes, dtype=np.uint8)

    def src(self, nbytes: int) -> np.ndarray:
        return self.source[:nbytes]

    def dst(self, nbytes: int) -> np.ndarray:
        return self.destination[:nbytes]


def _stat_dict(stat: Stat, nbytes: int) -> dict[str, Any]:
    out = stat.as_dict()
    out["gbps"] = nbytes / stat.median / 1e9
    out["gbps_min"] = nbytes / stat.max / 1e9
    out["gbps_max"] = nbytes / stat.min / 1e9
    return out


def memcpy_ceiling(config: Config, arrays: HostArrays) -> dict[str, dict[str, Any]]:
    """numpy copyto of each size: {str(size): stat with gbps}."""
    out: dict[str, dict[str, Any]] = {}
    for nbytes in config.transfer_sizes:
        src, dst = arrays.src(nbytes), arrays.dst(nbytes)

        def copy(src: np.ndarray = src, dst: np.ndarray = dst) -> None:
            np.copyto(dst, src)

        stat = measure(copy, warmup=config.warmup, repeats=config.repeats_for(nbytes), inner=config.inner_for(nbytes))
        out[str(nbytes)] = _stat_dict(stat, nbytes)
    return out


def _side_rows(
    side: TransferSide, domain: str, config: Config, arrays: HostArrays, log: Callable[[str], None]
) -> dict[tuple[str, int], dict[str, Any]]:
    """{(direction, size): stat dict or {"not_measured": reason}} for one side and domain."""
    results: dict[tuple[str, int], dict[str, Any]] = {}
    largest = max(config.transfer_sizes)
    try:
        buffer = side.open_buffer(largest, domain)
    except NotMeasured as exc:
        for nbytes in config.transfer_sizes:
            for direction in ("write", "read"):
                results[(direction, nbytes)] = {"not_measured": exc.reason}
        return results
    try:
        for nbytes in config.transfer_sizes:
            ops = {
                "write": side.writer(buffer, arrays.src(nbytes)),
                "read": side.reader(buffer, arrays.dst(nbytes)),
            }
            for direction, op in ops.items():
                try:
                    stat = measure(
                        op, warmup=config.warmup, repeats=config.repeats_for(nbytes), inner=config.inner_for(nbytes)
                    )
                except NotMeasured as exc:
                    results[(direction, nbytes)] = {"not_measured": exc.reason}
                    continue
                entry = results[(direction, nbytes)] = _stat_dict(stat, nbytes)
                log(f"  {side.name:>4} {domain:<6} {direction:<5} {nbytes:>10} B  {entry['gbps']:.2f} GB/s")
        # The last read must have brought back what the last write put there (the side really moved bytes).
        side.writer(buffer, arrays.src(largest))()
        arrays.destination[:largest] = 0
        side.reader(buffer, arrays.dst(largest))()
        if not np.array_equal(arrays.src(largest), arrays.dst(largest)):
            raise RuntimeError(f"{side.name} {domain}: read-back differs from what was written")
    finally:
        side.close_buffer(buffer)
    return results


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
    if not a or not b or "gbps" not in a or "gbps" not in b:
        return None
    return float(a["gbps"] / b["gbps"])


def transfer_rows(
    config: Config,
    arrays: HostArrays,
    memcpy: dict[str, dict[str, Any]],
    domains: Sequence[str],
    ours: TransferSide | None,
    raw: TransferSide | None,
    log: Callable[[str], None],
    ours_missing: str = "",
    raw_missing: str = "",
) -> list[dict[str, Any]]:
    """One row per (domain, direction, size): ours, raw, memcpy, and the ratios ours/raw, ours/memcpy."""
    rows: list[dict[str, Any]] = []
    for domain in domains:
        ours_results = _side_rows(ours, domain, config, arrays, log) if ours is not None else {}
        raw_results = _side_rows(raw, domain, config, arrays, log) if raw is not None else {}
        for direction in ("write", "read"):
            for nbytes in config.transfer_sizes:
                ours_stat = ours_results.get((direction, nbytes)) or {"not_measured": ours_missing or "no ours side"}
                raw_stat = raw_results.get((direction, nbytes)) or {"not_measured": raw_missing or "no raw side"}
                ceiling = memcpy[str(nbytes)]
                rows.append(
                    {
                        "domain": domain,
                        "direction": direction,
                        "bytes": nbytes,
                        "ours": ours_stat,
                        "raw": raw_stat,
                        "memcpy": ceiling,
                        "ratio_ours_raw": _ratio(ours_stat, raw_stat),
                        "ratio_ours_memcpy": _ratio(ours_stat, ceiling),
                        "ratio_raw_memcpy": _ratio(raw_stat, ceiling),
                    }
                )
    return rows
