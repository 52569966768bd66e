"""Item 2: dispatch round trip (submit → terminal) and sustained submissions per second
(at 1, 8 and 64 in flight in a full run).

Every side runs the same tiny kernel (:mod:`accel_bench.kernels`); a round
trip is one timed repeat, so medians and min-max are over single round trips.
After timing, each side proves the kernel really ran once per dispatch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from .config import Config
from .sides import DispatchSide, RoundTripSide
from .stats import measure_interleaved

__all__ = ["round_trips", "sustained", "sustained_groups"]


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


def _submits_for(config: Config, side: DispatchSide, in_flight: int) -> int:
    """``config.sustained_submits``, or fewer where one run of ``side`` would take longer than the
    budget (a calibration run of 200 submits decides; never fewer than ``sustained_min_submits``)."""
    submits = config.sustained_submits
    if config.sustained_budget_s <= 0:
        return submits
    probe = 200
    start = time.perf_counter()
    side.sustained(probe, in_flight)
    per_s = probe / max(time.perf_counter() - start, 1e-9)
    fit = int(per_s * config.sustained_budget_s) // 100 * 100
    return max(min(submits, fit), min(submits, config.sustained_min_submits))


def sustained(
    config: Config, sides: Mapping[str, DispatchSide], log: Callable[[str], None], in_flight: int | None = None
) -> dict[str, dict[str, Any]]:
    """{side name: seconds per submission + submissions per second} with at most ``in_flight``
    (default ``config.window``) submissions in flight.

    Sides take turns, one whole run each per repeat. Every side runs the same number of submits:
    ``config.sustained_submits``, fewer on a device where the slowest side (calibrated once per
    group) would take longer than ``config.sustained_budget_s`` per run.
    """
    window = config.window if in_flight is None else in_flight
    submits = config.sustained_submits
    if config.sustained_budget_s > 0 and sides:
        submits = min(_submits_for(config, side, window) for side in sides.values())
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
        log(f"  sustained  {name:<16} {window:3d} in flight {entry['per_s']:9.0f} submits/s ({submits} submits)")
    return out


def sustained_groups(
    config: Config, sides: Mapping[str, DispatchSide], log: Callable[[str], None]
) -> dict[str, dict[str, dict[str, Any]]]:
    """{str(in flight): sustained(...)} for every ``config.sustained_in_flight``; the largest last."""
    limits = sorted(set(config.sustained_in_flight) | {config.window})
    return {str(n): sustained(config, sides, log, n) for n in limits}
