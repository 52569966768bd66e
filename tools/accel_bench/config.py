"""What one benchmark run measures and how often (full vs ``--quick``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DOMAINS", "KIB", "MIB", "Config"]

KIB = 1 << 10
MIB = 1 << 20
DOMAINS = ("host", "device", "shared")


@dataclass(frozen=True, slots=True)
class Config:
    """Sizes, repeat counts and submission counts of one run."""

    quick: bool
    transfer_sizes: tuple[int, ...]
    warmup: int
    repeats_small: int
    """Repeats for transfers below 64 MiB and for round trips."""
    repeats_large: int
    """Repeats for transfers of 64 MiB and more."""
    round_trips: int
    """Timed round trips (each one a repeat: the median and min-max are over single round trips)."""
    sustained_submits: int
    sustained_repeats: int
    window: int
    """Most submissions in flight during the headline sustained run (older ones are drained first)."""
    overhead_batch: int
    overhead_repeats: int
    load_repeats: int
    copyfree_large: int
    copyfree_small: int
    copyfree_cycles: int
    copyfree_cycles_small: int
    row_budget_s: float = 20.0
    """Timed seconds one transfer row may use before it stops repeating (at least one repeat each)."""
    reload_repeats: int = 21
    """Timed rounds of the re-load-with-changed-arguments group (every operation once per round)."""
    reload_warmup: int = 2
    reload_inner: int = 1000
    """clSetKernelArg / vkCmdPushConstants calls per timed repeat (each is well under a microsecond)."""
    sustained_in_flight: tuple[int, ...] = (1, 8, 64)
    """In-flight limits of the sustained groups (``window`` is the headline one, the last)."""
    sustained_budget_s: float = 2.0
    """Seconds one sustained run should take at most: slower devices get fewer submits (a calibration
    run of the raw side decides, at least ``sustained_min_submits``); 0 = always ``sustained_submits``."""
    sustained_min_submits: int = 1000

    @classmethod
    def full(cls) -> Config:
        return cls(
            quick=False,
            transfer_sizes=(4 * KIB, 1 * MIB, 64 * MIB, 256 * MIB),
            warmup=2,
            repeats_small=41,
            repeats_large=5,
            round_trips=300,
            sustained_submits=10_000,
            sustained_repeats=3,
            window=64,
            overhead_batch=64,
            overhead_repeats=40,
            load_repeats=5,
            copyfree_large=256 * MIB,
            copyfree_small=1 * MIB,
            copyfree_cycles=10_000,
            copyfree_cycles_small=1_000,
        )

    @classmethod
    def quick_mode(cls) -> Config:
        return cls(
            quick=True,
            transfer_sizes=(4 * KIB, 1 * MIB),
            warmup=1,
            repeats_small=3,
            repeats_large=2,
            round_trips=20,
            sustained_submits=300,
            sustained_repeats=1,
            window=16,
            overhead_batch=16,
            overhead_repeats=4,
            load_repeats=2,
            copyfree_large=32 * MIB,
            copyfree_small=1 * MIB,
            copyfree_cycles=4_000,
            copyfree_cycles_small=2_000,
            reload_repeats=2,
            reload_warmup=1,
            reload_inner=20,
            sustained_in_flight=(1, 4, 16),
            sustained_budget_s=0.0,
        )

    def repeats_for(self, nbytes: int) -> int:
        return self.repeats_large if nbytes >= 64 * MIB else self.repeats_small

    @staticmethod
    def inner_for(nbytes: int) -> int:
        """Transfers per timed run: enough that a 4 KiB run is not one timer tick."""
        return max(1, min(1000, (8 * MIB) // nbytes))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
