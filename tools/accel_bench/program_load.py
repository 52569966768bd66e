"""Item 4: program load, cold vs warm.

Cold: a module no cache has seen (the tiny kernel with a unique comment or a
unique ``OpSourceExtension``), so every compile cache misses. Warm: the same
module loaded again after a first load primed whatever caches the side has.
Each timed load is followed by an untimed unload. The raw sides show what the
native API alone gives: pyopencl's own binary cache, a ``VkPipelineCache``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from . import kernels
from .stats import Stat

__all__ = ["cold_warm"]

Input = TypeVar("Input")
"""What a load consumes (an ArtifactRef, OpenCL C source, a binary, SPIR-V)."""
Handle = TypeVar("Handle")
"""What a load returns and an unload takes."""


def _timed(load: Callable[[], Handle], unload: Callable[[Handle], None]) -> float:
    start = time.perf_counter_ns()
    handle = load()
    elapsed = time.perf_counter_ns() - start
    unload(handle)
    return elapsed / 1e9


def cold_warm(
    make_cold: Callable[[str], Input],
    warm_input: Input,
    load: Callable[[Input], Handle],
    unload: Callable[[Handle], None],
    repeats: int,
) -> dict[str, Any]:
    """Time ``repeats`` cold loads of fresh inputs and ``repeats`` warm loads of ``warm_input``.

    Inputs are built before the clock starts; only ``load`` is timed.
    """
    cold_runs = []
    for _ in range(repeats):
        fresh = make_cold(kernels.nonce())

        def load_fresh(fresh: Input = fresh) -> Handle:
            return load(fresh)

        cold_runs.append(_timed(load_fresh, unload))
    unload(load(warm_input))  # prime
    warm_runs = [_timed(lambda: load(warm_input), unload) for _ in range(repeats)]
    cold = Stat.from_runs(cold_runs, warmup=0, inner=1)
    warm = Stat.from_runs(warm_runs, warmup=1, inner=1)
    return {"cold": cold.as_dict(), "warm": warm.as_dict(), "speedup": cold.median / warm.median}
