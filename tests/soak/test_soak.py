"""Soak: long create/destroy and submit/poll loops on every real device must not grow the process.

Three workloads per device, each on a fresh provider instance (Vulkan with the validation layer
unless ``ACCEL_VULKAN_VALIDATION=0``, as in tests/vulkan):

- ``load``: 10^4 ``load_program`` / ``unload_program`` of the standard conformance package;
- ``submit``: 10^4 ``submit`` / ``poll_event`` (until terminal) / ``destroy_event`` of it, one context,
  queue and buffer set (the output is checked once at the end);
- ``context``: 10^3 ``create_context`` / ``destroy_context``.

Each loop first runs :data:`WARMUP` of its cycles (allocator arenas, driver caches and the
recording cache fill there), then the rest. Over the rest, RSS (``/proc/self/statm``) may grow at
most :data:`RSS_BOUND_MIB` and the count of Python-allocated blocks (``sys.getallocatedblocks``: every
Python object; not cffi buffers, which RSS covers; counted after ``gc.collect()``) at most
:data:`BLOCKS_BOUND`. ``ACCEL_SOAK_SCALE``
scales every count (e.g. ``0.1`` for a quick look; the bounds stay). Numbers: docs/benchmarks.md, "Soak".

Marked ``slow``; narrow with ``ACCEL_DEVICES`` like the other real-device suites.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
os.environ.setdefault("RUSTICL_ENABLE", "swrast")  # before the first OpenCL enumeration (see tests/opencl)
os.environ.setdefault("ACCELCORE_CACHE_DIR", __import__("tempfile").mkdtemp(prefix="accel-soak-cache-"))

import pytest

from accelcore import (
    ArtifactRef,
    BindingRef,
    BufferDesc,
    BufferRange,
    ContextDesc,
    EventState,
    MemorySink,
    MemorySource,
    QueueDesc,
    Timeout,
)
from accelcore.contract.waiting import poll_until_terminal
from accelcore.testing.pytest_support import real_device_params
from accelcore.testing.selection import device_test_id

SCALE = float(os.environ.get("ACCEL_SOAK_SCALE", "1"))
CYCLES = {"load": 10_000, "submit": 10_000, "context": 1_000}
WARMUP = 0.1
"""The share of each loop's cycles run before the baseline is taken."""

RSS_BOUND_MIB = 16.0
"""Most RSS growth allowed after the warm-up. Measured at most 2.3 MiB over three full runs (lavapipe,
PoCL, rusticl; docs/benchmarks.md, "Soak"). A native leak of 1.9 KiB per cycle of the 9,000 measured load or submit
cycles (19 KiB per context cycle) exceeds it; lavapipe keeping each destroyed pipeline (about 130 KiB,
what accel_vulkan works around) would add 1.1 GiB."""

BLOCKS_BOUND = 2_000
"""Most growth of Python-allocated blocks after the warm-up (measured at most +307, PoCL load). One Python
object kept per load or submit cycle adds 9,000; a context keeps dozens, so one kept per context cycle
adds far more than 900."""

VALIDATION = os.environ.get("ACCEL_VULKAN_VALIDATION", "1").strip().lower() not in ("0", "false", "no", "off")
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


DEVICES = real_device_params()


class Soak:
    """One workload's loop: warm-up, baseline, the rest, and what grew."""

    def __init__(self, workload: str) -> None:
        self.total = max(10, round(CYCLES[workload] * SCALE))
        self.warmup = max(1, round(self.total * WARMUP))

    def run(self, cycle: Callable[[], None]) -> dict[str, float]:
        for _ in range(self.warmup):
            cycle()
        gc.collect()  # cyclic garbage (pyopencl's Kernel makes some) is not growth
        blocks0, rss0, t0 = sys.getallocatedblocks(), rss_mib(), time.perf_counter()
        for _ in range(self.total - self.warmup):
            cycle()
        seconds = time.perf_counter() - t0
        gc.collect()
        return {
            "rss_mib": rss_mib() - rss0,
            "blocks": sys.getallocatedblocks() - blocks0,
            "us_per_cycle": seconds * 1e6 / (self.total - self.warmup),
            "rss_start_mib": rss0,
        }


def _open(family: Any, entry: Any) -> tuple[Any, Any]:
    setup = family.conformance(entry, validation=VALIDATION) if family.name == "vulkan" else family.conformance(entry)
    return setup, setup.factory()


def _close(setup: Any, accel: Any) -> None:
    live = setup.hooks.live_resources(accel)
    messages = list(getattr(accel, "validation_messages", ()))
    close = getattr(accel, "close", None)
    if close is not None:
        close()
    assert not {k: v for k, v in (live or {}).items() if v}, f"live native objects left: {live}"
    assert not messages, f"{len(messages)} validation message(s); first: {messages[0]}"


def _report(entry: Any, workload: str, soak: Soak, got: dict[str, float]) -> None:
    print(
        f"\nsoak {device_test_id(entry)} {workload}: {soak.total} cycles ({soak.warmup} warm-up), "
        f"{got['us_per_cycle']:.0f} us/cycle, RSS {got['rss_start_mib']:.0f} MiB +{got['rss_mib']:.1f} MiB, "
        f"Python blocks {got['blocks']:+d}"
    )
    assert got["rss_mib"] <= RSS_BOUND_MIB, (
        f"RSS grew {got['rss_mib']:.1f} MiB over {soak.total - soak.warmup} {workload} cycles "
        f"(bound {RSS_BOUND_MIB} MiB; {got['rss_mib'] * 1024 / (soak.total - soak.warmup):.2f} KiB per cycle)"
    )
    assert got["blocks"] <= BLOCKS_BOUND, (
        f"{got['blocks']} more Python-allocated blocks after {soak.total - soak.warmup} {workload} cycles "
        f"(bound {BLOCKS_BOUND})"
    )


def _artifact(setup: Any) -> ArtifactRef:
    target = setup.target
    return ArtifactRef(target.format, target.target, MemorySource(target.artifact), target.resident_bytes)


def _soak(
    setup: Any, accel: Any, entry: Any, workload: str, cycle: Callable[[], None], teardown: Callable[[Soak], None]
) -> None:
    """Runs ``workload``'s loop, then ``teardown`` (which frees what the test made), then checks that no native
    object is left and that neither RSS nor Python's blocks grew past their bounds."""
    soak = Soak(workload)
    got = soak.run(cycle)
    teardown(soak)
    _close(setup, accel)
    _report(entry, workload, soak, got)


@pytest.mark.slow
@pytest.mark.parametrize(("family", "entry"), DEVICES)
def test_load_unload_soak(family: Any, entry: Any) -> None:
    setup, accel = _open(family, entry)
    artifact = _artifact(setup)
    context = accel.create_context(ContextDesc())

    def cycle() -> None:
        accel.unload_program(accel.load_program(context, artifact))

    _soak(setup, accel, entry, "load", cycle, lambda _: accel.destroy_context(context))


@pytest.mark.slow
@pytest.mark.parametrize(("family", "entry"), DEVICES)
def test_submit_poll_soak(family: Any, entry: Any) -> None:
    setup, accel = _open(family, entry)
    context = accel.create_context(ContextDesc())
    queue = accel.create_queue(context, QueueDesc())
    program = accel.load_program(context, _artifact(setup))
    buffers = []
    for fixture in setup.target.fixtures:
        desc = BufferDesc(len(fixture.initial), fixture.alignment, fixture.domain, fixture.buffer_usage())
        buffer = accel.allocate_buffer(context, desc).buffer
        accel.write_buffer(buffer, 0, MemorySource(fixture.initial))
        buffers.append((fixture, buffer))
    refs = [BindingRef(f.slot, b, BufferRange(0, len(f.initial)), f.access) for f, b in buffers]

    def cycle() -> None:
        event = accel.submit(queue, program, refs, Timeout.INFINITE)
        state = poll_until_terminal(lambda: accel.poll_event(event), 60.0)
        assert state == EventState.COMPLETE, state
        accel.destroy_event(event)

    def teardown(soak: Soak) -> None:
        for fixture, buffer in buffers:
            out = bytearray(len(fixture.initial))
            accel.read_buffer(buffer, 0, MemorySink(out))
            if fixture.expected is not None:
                assert bytes(out) == fixture.expected, f"slot {fixture.slot} is wrong after {soak.total} submissions"
            accel.free_buffer(buffer)
        accel.unload_program(program)
        accel.destroy_queue(queue)
        accel.destroy_context(context)

    _soak(setup, accel, entry, "submit", cycle, teardown)


@pytest.mark.slow
@pytest.mark.parametrize(("family", "entry"), DEVICES)
def test_context_soak(family: Any, entry: Any) -> None:
    setup, accel = _open(family, entry)

    def cycle() -> None:
        accel.destroy_context(accel.create_context(ContextDesc()))

    _soak(setup, accel, entry, "context", cycle, lambda _: None)
