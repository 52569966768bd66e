"""Item 1: host→buffer and buffer→host transfers per memory domain and size.

Every side transfers the same bytes from/to the same page-touched numpy
arrays; numpy ``copyto`` of those bytes is the memory-bandwidth ceiling.
Each size gets its own buffer (a size over the device's ``max_buffer_bytes``
is recorded as not measured, with that reason).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .config import Config
from .sides import NotMeasured, TransferSide
from .stats import Stat, measure_interleaved

__all__ = ["HostArrays", "transfer_rows"]


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


def _memcpy_op(arrays: HostArrays, nbytes: int) -> Callable[[], None]:
    src, dst = arrays.src(nbytes), arrays.dst(nbytes)

    def copy() -> None:
        np.copyto(dst, src)

    return copy


class _Opened:
    """The buffers of every side for one (domain, size), or each side's reason it has none."""

    def __init__(self, sides: dict[str, TransferSide[Any]], domain: str, nbytes: int) -> None:
        self.sides = sides
        self.buffers: dict[str, Any] = {}
        self.missing: dict[str, str] = {}
        for name, side in sides.items():
            try:
                self.buffers[name] = side.open_buffer(nbytes, domain)
            except NotMeasured as exc:
                self.missing[name] = exc.reason

    def close(self) -> None:
        for name, buffer in self.buffers.items():
            self.sides[name].close_buffer(buffer)


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
    if not a or not b or "gbps" not in a or "gbps" not in b:
        return None
    return float(a["gbps"] / b["gbps"])


def transfer_rows(
    config: Config,
    arrays: HostArrays,
    domains: Sequence[str],
    sides: dict[str, TransferSide[Any]],
    missing: dict[str, str],
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    """One row per (domain, direction, size): every side, memcpy, and the ratios ours/raw, ours/memcpy.

    ``sides`` maps "ours"/"raw" to a TransferSide; ``missing`` maps a side that
    does not exist to the reason. Sides and memcpy take turns every repeat
    (:func:`measure_interleaved`). Each side's buffer is exactly the transfer
    size; after timing, a whole write then read must bring back the bytes.
    """
    rows: list[dict[str, Any]] = []
    for domain in domains:
        for nbytes in config.transfer_sizes:
            opened = _Opened(sides, domain, nbytes)
            try:
                per_direction: dict[str, dict[str, Any]] = {}
                for direction in ("write", "read"):
                    ops: dict[str, Callable[[], None]] = {}
                    for name, buffer in opened.buffers.items():
                        side = sides[name]
                        if direction == "write":
                            ops[name] = side.writer(buffer, arrays.src(nbytes))
                        else:
                            ops[name] = side.reader(buffer, arrays.dst(nbytes))
                    ops["memcpy"] = _memcpy_op(arrays, nbytes)
                    stats = measure_interleaved(
                        ops,
                        warmup=config.warmup,
                        repeats=config.repeats_for(nbytes),
                        inner=config.inner_for(nbytes),
                        budget_s=config.row_budget_s,
                    )
                    per_direction[direction] = {name: _stat_dict(stat, nbytes) for name, stat in stats.items()}
                for name, buffer in opened.buffers.items():
                    side = sides[name]
                    side.writer(buffer, arrays.src(nbytes))()
                    arrays.destination[:nbytes] = 0
                    side.reader(buffer, arrays.dst(nbytes))()
                    if not np.array_equal(arrays.src(nbytes), arrays.dst(nbytes)):
                        raise RuntimeError(f"{name} {domain} {nbytes} B: read-back differs from what was written")
            finally:
                opened.close()
            for direction, results in per_direction.items():
                row: dict[str, Any] = {"domain": domain, "direction": direction, "bytes": nbytes}
                for name in ("ours", "raw"):
                    reason = missing.get(name) or opened.missing.get(name)
                    row[name] = results[name] if name in results else {"not_measured": reason or "no side"}
                row["memcpy"] = results["memcpy"]
                row["ratio_ours_raw"] = _ratio(row["ours"], row["raw"])
                row["ratio_ours_memcpy"] = _ratio(row["ours"], row["memcpy"])
                row["ratio_raw_memcpy"] = _ratio(row["raw"], row["memcpy"])
                rows.append(row)
                log(
                    f"  {domain:<6} {direction:<5} {nbytes:>10} B  "
                    + "  ".join(f"{k} {v['gbps']:.2f}" for k, v in results.items())
                    + " GB/s"
                )
    return rows
