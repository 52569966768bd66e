"""The engine is generic: the same lifecycle and fault recovery over every real device found.

Each installed provider family (OpenCL, Vulkan) is driven through CommandEngine +
FaultAccelerator with its own conformance target. Narrow with ``ACCEL_DEVICES`` (comma list of
globs over ids such as ``opencl:0-pocl`` or ``opencl:0``; accelcore.testing.selection). A family
whose driver stack is missing is reported as a skip with its reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from accelcore import (
    BackendError,
    BufferDesc,
    ErrorKind,
    EventState,
    ReleaseRejected,
    SubmitIndeterminate,
)
from accelcore.engine import CommandEngine, EngineState
from accelcore.testing import Fault, FaultAccelerator, FaultKind

from .conftest import load_target, real_devices

DEVICES = real_devices()


class _Run:
    def __init__(self, family: Any, entry: Any) -> None:
        self.setup = family.conformance(entry)
        self.inner = self.setup.factory()
        self.faults = FaultAccelerator(self.inner)
        self.engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(self.faults)

    def build(self) -> tuple[int, list[tuple[Any, int]], int, int]:
        return load_target(self.engine, self.setup.target)

    def submit(self, buffers: list[tuple[Any, int]], program: int, queue: int) -> int:
        bindings = [(f.slot, b, None, f.access) for f, b in buffers]
        event: int = self.engine.submit(queue, program, bindings)
        return event

    def check(self, buffers: list[tuple[Any, int]]) -> None:
        for fixture, buffer in buffers:
            if fixture.expected is not None:
                assert bytes(self.engine.read_buffer(buffer)) == fixture.expected, f"slot {fixture.slot}"

    def assert_clean_after_reset(self) -> None:
        quarantine = self.engine.reset()
        assert self.engine.state is EngineState.READY
        counts = self.setup.hooks.live_resources(self.inner)
        if counts is not None:
            live = sum(counts.values())
            assert live == sum(1 for q in quarantine if q.handle is not None), (counts, quarantine)
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


@pytest.mark.parametrize(("family", "entry"), DEVICES)
def test_engine_lifecycle_and_fault_recovery_on_a_real_device(family: Any, entry: Any) -> None:
    run = _Run(family, entry)
    engine = run.engine
    context, buffers, program, queue = run.build()

    event = run.submit(buffers, program, queue)
    assert engine.wait(event, timeout_s=30) == EventState.COMPLETE
    run.check(buffers)
    engine.destroy_event(event)

    # A rejected release restores the object; the retry releases it.
    spare = engine.allocate_buffer(context, BufferDesc(256, 64, buffers[0][0].domain, buffers[0][0].buffer_usage()))
    run.faults.inject(Fault("free_buffer", FaultKind.REJECT_RELEASE))
    with pytest.raises(ReleaseRejected):
        engine.free_buffer(spare)
    assert engine.exists(spare)
    engine.free_buffer(spare)

    # A partial write leaves the buffer usable; a full rewrite replaces it.
    fixture, first = buffers[0]
    run.faults.inject(Fault("write_buffer", FaultKind.PARTIAL_WRITE))
    with pytest.raises(BackendError):
        engine.write_buffer(first, 0, fixture.initial)
    engine.write_buffer(first, 0, fixture.initial)

    # An indeterminate submission hands back an event that still completes.
    for f, b in buffers:
        engine.write_buffer(b, 0, f.initial)
    run.faults.inject(Fault("submit", FaultKind.INDETERMINATE_SUBMIT))
    with pytest.raises(SubmitIndeterminate) as indeterminate:
        run.submit(buffers, program, queue)
    assert engine.wait(indeterminate.value.event, timeout_s=30) == EventState.COMPLETE
    engine.destroy_event(indeterminate.value.event)

    # A held event, then DEVICE_LOST while polling it: discard, and reset tears everything down
    # (cancelling the held event when the device can; otherwise it and its objects are quarantined).
    run.setup.hooks.hold_submissions(run.inner)
    held = run.submit(buffers, program, queue)
    run.faults.inject(Fault("poll_event", FaultKind.DEVICE_LOST))
    with pytest.raises(BackendError) as lost:
        engine.poll(held)
    assert lost.value.kind is ErrorKind.DEVICE_LOST and engine.state is EngineState.NEEDS_DISCARD
    run.assert_clean_after_reset()
