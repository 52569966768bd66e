"""Timing primitives: warm-up, repeats, medians and min-max.

Every measurement is a :class:`Stat` of seconds per operation. Garbage
collection is paused inside timed regions (as ``timeit`` does) so a collection
triggered by an earlier phase does not land in one repeat.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Stat", "measure", "measure_batches"]


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


def measure(fn: Callable[[], object], *, warmup: int, repeats: int, inner: int = 1) -> Stat:
    """Call ``fn`` ``warmup`` times, then time ``repeats`` runs of ``inner`` calls each.

    Returns seconds per call (run time / ``inner``).
    """
    for _ in range(warmup):
        fn()
    runs: list[float] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter_ns()
            for _ in range(inner):
                fn()
            runs.append((time.perf_counter_ns() - start) / 1e9 / inner)
    finally:
        if enabled:
            gc.enable()
    return Stat.from_runs(runs, warmup=warmup, inner=inner)


def measure_batches(batch: Callable[[], int], *, warmup: int, repeats: int) -> Stat:
    """Time ``batch()`` runs that report how many operations they did; seconds per operation."""
    for _ in range(warmup):
        batch()
    runs: list[float] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter_ns()
            count = batch()
            runs.append((time.perf_counter_ns() - start) / 1e9 / max(count, 1))
    finally:
        if enabled:
            gc.enable()
    return Stat.from_runs(runs, warmup=warmup, inner=1)
