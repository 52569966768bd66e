"""Unloaded programs give their pipeline memory back (lavapipe frees a destroyed pipeline only on a submission).

Mesa lavapipe queues ``vkDestroyPipeline`` and frees the pipeline in its queue-submit path (or at
``vkDestroyDevice``): load/unload with no submission kept ~130 KiB of RSS per cycle of the conformance
kernel (tools/repro/lavapipe_pipeline_leak.py; docs/vulkan.md). The provider hands the device one empty
batch after each unload there (``flush_pipeline_destroys``).
"""

from __future__ import annotations

import os
from typing import Any

from accel_vulkan.handles import HandleState

from accelcore import BackendError, ContextDesc, ErrorKind
from accelcore.conformance.corpus import load_package

from .conftest import VK, artifact

PAGE = os.sysconf("SC_PAGE_SIZE")
CYCLES = 300
BOUND_MIB = 8.0
"""300 cycles grew 39 MiB on lavapipe (Mesa 22.3.6) without the flush, 0.0-0.5 MiB with it."""


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def _cycles(accel: Any, context: Any, count: int) -> None:
    ref = artifact(load_package("conformance", VK))
    for _ in range(count):
        accel.unload_program(accel.load_program(context, ref))


def test_load_unload_cycles_do_not_keep_pipeline_memory(make_accel: Any) -> None:
    accel = make_accel()
    context = accel.create_context(ContextDesc())
    _cycles(accel, context, 30)  # warm-up: allocator arenas, the cache-size memo, the module-check memo
    before = rss_mib()
    _cycles(accel, context, CYCLES)
    grown = rss_mib() - before
    accel.destroy_context(context)
    assert grown <= BOUND_MIB, f"{CYCLES} load/unload cycles grew RSS by {grown:.1f} MiB (bound {BOUND_MIB})"


def test_lavapipe_gets_the_flush_by_default(make_accel: Any) -> None:
    from accel_vulkan.context import defers_pipeline_destroy

    accel = make_accel()
    lavapipe = accel.description.driver.startswith("llvmpipe") or accel.description.name.startswith("llvmpipe")
    assert defers_pipeline_destroy(accel.description) is lavapipe
    assert accel._flush_destroys is lavapipe
    assert make_accel(flush_pipeline_destroys=True)._flush_destroys is True
    assert make_accel(flush_pipeline_destroys=False)._flush_destroys is False


def test_a_failed_flush_still_unloads(make_accel: Any, monkeypatch: Any) -> None:
    import accel_vulkan.context as context_ops

    def failing(context: Any) -> None:
        raise BackendError(ErrorKind.DEVICE_LOST, "injected: the empty batch was refused")

    monkeypatch.setattr(context_ops, "flush_deferred_destroys", failing)
    accel = make_accel(flush_pipeline_destroys=True)
    context = accel.create_context(ContextDesc())
    program = accel.load_program(context, artifact(load_package("conformance", VK)))
    accel.unload_program(program)
    assert program.state is HandleState.RELEASED
    assert accel.live_resources()["VkPipeline"] == 0
    accel.destroy_context(context)
