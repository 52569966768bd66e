"""Item 2: dispatch round trip (submit → terminal) and sustained submissions per second.

Every side runs the same tiny kernel (:mod:`accel_bench.kernels`); a round
trip is one timed repeat, so medians and min-max are over single round trips.
After timing, each side proves the kernel really ran once per dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .config import Config
from .sides import DispatchSide
from .stats import measure, measure_batches

__all__ = ["round_trips", "sustained"]


def _verified(side: DispatchSide) -> bool | None:
    verify = getattr(side, "verify", None)
    return bool(verify()) if callable(verify) else None


def round_trips(
    config: Config, sides: Mapping[str, DispatchSide], log: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    """{side name: round-trip stat (seconds) + microseconds + whether results were verified}."""
    out: dict[str, dict[str, Any]] = {}
    for name, side in sides.items():
        stat = measure(side.round_trip, warmup=max(3, config.warmup), repeats=config.round_trips)
        entry = stat.as_dict()
        entry["median_us"] = stat.median * 1e6
        entry["verified"] = _verified(side)
        out[name] = entry
        log(
            f"  round trip {name:<12} {entry['median_us']:9.1f} us (min {stat.min * 1e6:.1f}, max {stat.max * 1e6:.1f})"
        )
    return out


def sustained(
    config: Config, sides: Mapping[str, DispatchSide], log: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    """{side name: seconds per submission over ``sustained_submits`` + submissions per second}."""
    out: dict[str, dict[str, Any]] = {}
    submits, window = config.sustained_submits, config.window
    for name, side in sides.items():
        stat = measure_batches(
            lambda side=side: side.sustained(submits, window), warmup=0, repeats=config.sustained_repeats
        )
        entry = stat.as_dict()
        entry["submits"] = submits
        entry["window"] = window
        entry["per_s"] = 1.0 / stat.median
        entry["per_s_min"] = 1.0 / stat.max
        entry["per_s_max"] = 1.0 / stat.min
        entry["verified"] = _verified(side)
        out[name] = entry
        log(f"  sustained  {name:<12} {entry['per_s']:9.0f} submits/s")
    return out
