"""Item 2: dispatch round trip (submit → terminal) and sustained submissions per second.

Every side runs the same tiny kernel (:mod:`accel_bench.kernels`); a round
trip is one timed repeat, so medians and min-max are over single round trips.
After timing, each side proves the kernel really ran once per dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .config import Config
from .sides import DispatchSide, RoundTripSide
from .stats import measure_interleaved

__all__ = ["round_trips", "sustained"]


def _verified(side: RoundTripSide) -> bool | None:
    verify = getattr(side, "verify", None)
    return bool(verify()) if callable(verify) else None


def round_trips(
    config: Config, sides: Mapping[str, RoundTripSide], log: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    """{side name: round-trip stat (seconds) + microseconds + whether results were verified}.

    Sides take turns, one round trip each per repeat, so load drift hits all alike.
    """
    stats = measure_interleaved(
        {name: side.round_trip for name, side in sides.items()},
        warmup=max(3, config.warmup),
        repeats=config.round_trips,
    )
    out: dict[str, dict[str, Any]] = {}
    for name, side in sides.items():
        stat = stats[name]
        entry = stat.as_dict()
        entry["median_us"] = stat.median * 1e6
        entry["verified"] = _verified(side)
        out[name] = entry
        log(
            f"  round trip {name:<16} {entry['median_us']:9.1f} us (min {stat.min * 1e6:.1f}, max {stat.max * 1e6:.1f})"
        )
    return out


def sustained(
    config: Config, sides: Mapping[str, DispatchSide], log: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    """{side name: seconds per submission over ``sustained_submits`` + submissions per second}.

    Sides take turns, one whole run each per repeat.
    """
    submits, window = config.sustained_submits, config.window
    ops: dict[str, Callable[[], int]] = {}
    for name, side in sides.items():

        def op(side: DispatchSide = side) -> int:
            return side.sustained(submits, window)

        ops[name] = op
    stats = measure_interleaved(
        ops,
        warmup=0,
        repeats=config.sustained_repeats,
    )
    out: dict[str, dict[str, Any]] = {}
    for name, side in sides.items():
        stat = stats[name]
        entry = {key: value / submits if key.endswith("_s") else value for key, value in stat.as_dict().items()}
        entry["submits"] = submits
        entry["window"] = window
        entry["per_s"] = submits / stat.median
        entry["per_s_min"] = submits / stat.max
        entry["per_s_max"] = submits / stat.min
        entry["verified"] = _verified(side)
        out[name] = entry
        log(f"  sustained  {name:<16} {entry['per_s']:9.0f} submits/s")
    return out
