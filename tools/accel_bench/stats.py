"""Timing primitives: warm-up, repeats, medians and min-max.

Every measurement is a :class:`Stat` of seconds per operation. Garbage
collection is paused inside timed regions (as ``timeit`` does) so a collection
triggered by an earlier phase does not land in one repeat.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Stat", "measure_interleaved"]


@dataclass(frozen=True, slots=True)
class Stat:
    """Seconds per operation over ``repeats`` timed runs (after ``warmup`` untimed ones)."""

    median: float
    min: float
    max: float
    repeats: int
    warmup: int
    inner: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "median_s": self.median,
            "min_s": self.min,
            "max_s": self.max,
            "repeats": self.repeats,
            "warmup": self.warmup,
            "inner": self.inner,
        }

    @classmethod
    def from_runs(cls, runs: list[float], *, warmup: int, inner: int) -> Stat:
        if not runs:
            raise ValueError("a Stat needs at least one timed run")
        return cls(statistics.median(runs), min(runs), max(runs), len(runs), warmup, inner)


def measure_interleaved(
    ops: Mapping[str, Callable[[], object]],
    *,
    warmup: int,
    repeats: int,
    inner: int = 1,
    budget_s: float | None = None,
) -> dict[str, Stat]:
    """Call each op ``warmup`` times, then time ``repeats`` runs of ``inner`` calls per op,
    the ops taking turns each repeat; seconds per call.

    A drift in machine load (other processes) then hits every side alike, so
    their ratios stay meaningful on a busy machine. With ``budget_s``, warm-up
    stops once it has used a quarter of the budget and repeats stop once they
    have used all of it (at least one timed run each): one pathologically slow
    side — reads of uncached, write-combined GPU memory through a mapping run at
    ~0.02 GB/s — cannot stretch a row to minutes. ``Stat.repeats`` and
    ``Stat.warmup`` record what was really done.
    """
    started = time.monotonic()
    warmed = 0
    for _ in range(warmup):
        if budget_s is not None and warmed and time.monotonic() - started > budget_s / 4:
            break
        for fn in ops.values():
            fn()
        warmed += 1
    runs: dict[str, list[float]] = {name: [] for name in ops}
    enabled = gc.isenabled()
    timed_from = time.monotonic()
    gc.disable()
    try:
        for done in range(repeats):
            if budget_s is not None and done and time.monotonic() - timed_from > budget_s:
                break
            for name, fn in ops.items():
                start = time.perf_counter_ns()
                for _ in range(inner):
                    fn()
                runs[name].append((time.perf_counter_ns() - start) / 1e9 / inner)
    finally:
        if enabled:
            gc.enable()
    return {name: Stat.from_runs(values, warmup=warmed, inner=inner) for name, values in runs.items()}
