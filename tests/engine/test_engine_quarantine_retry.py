"""Objects quarantined by ``reset()`` while a kernel is in flight are released once it ends.

``reset()`` cannot destroy an event whose kernel is still running (the provider refuses:
``ReleaseRejected(BUSY)``), nor the queue, program, buffers and context it pins. They are
quarantined with their handles and stay charged to the policy. Every later ``reset()`` and
every ``poll_quarantine()`` polls each such event; once it is terminal it is destroyed and what
it pinned is released, child before parent, and the charges go with them.

Deterministic cases run on the reference provider without EVENT_CANCELLATION (a held event is a
kernel "in flight" that reset cannot cancel) under ``FaultAccelerator``; the real-device cases
run the corpus ``spin`` kernel long enough to still be running when ``reset()`` is called.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from accelcore import (
    ArtifactRef,
    BackendError,
    BufferDesc,
    Capabilities,
    ErrorKind,
    EventState,
    MemoryDomain,
    MemorySource,
    ReleaseIndeterminate,
)
from accelcore.conformance.corpus import SPIN_MAX_ITERATIONS, load_package, spin_case
from accelcore.engine import CommandEngine, EngineState, ObjectKind, ResourcePolicy
from accelcore.kernels.package import ModuleKind
from accelcore.testing import REFERENCE_CAPABILITIES, Fault, FaultAccelerator, FaultKind, ReferenceAccelerator
from accelcore.testing.pytest_support import raises_kind

from .conftest import IN, Rig, make_rig, real_devices

CAP = 1 << 20
KINDS = ("context", "buffer", "program", "queue", "event")


def _uncancellable_rig() -> Rig:
    reference = ReferenceAccelerator(capabilities=REFERENCE_CAPABILITIES & ~Capabilities.EVENT_CANCELLATION)
    return make_rig(ResourcePolicy(max_allocation_bytes=CAP), reference)


def _stuck_reset(rig: Rig, events: int = 1) -> list[int]:
    """Hold ``events`` submissions, then reset: they and what they pin are quarantined."""
    rig.reference.control.hold()
    ids = [rig.engine.submit(rig.queue, rig.program, rig.bindings()) for _ in range(events)]
    rig.reference.control.stop_holding()
    quarantine = rig.engine.reset()
    expected = sorted(["event"] * events + ["queue", "program", "context", "buffer", "buffer", "buffer"])
    assert sorted(q.kind.label for q in quarantine) == expected
    assert all(q.handle is not None for q in quarantine)
    return ids


def _charged(engine: CommandEngine[Any, Any, Any, Any, Any]) -> tuple[int, int]:
    return engine.usage.allocation_bytes, engine.usage.resident_bytes


def test_a_later_reset_releases_what_a_finished_kernel_pinned() -> None:
    rig = _uncancellable_rig()
    charged = _charged(rig.engine)
    _stuck_reset(rig)
    engine = rig.engine
    assert _charged(engine) == charged and charged[0] > 0 and charged[1] == 4096  # still charged
    assert engine.reset() != []  # still running: nothing can go yet
    assert rig.faults.calls["free_buffer"] == 0, "a buffer a pending event pins must not be released"
    assert rig.reference.control.release_all() == 1  # the kernel ends
    assert engine.reset() == []
    assert _charged(engine) == (0, 0)
    assert rig.faults.live_resources() == dict.fromkeys((*KINDS, "indeterminate"), 0)


def test_poll_quarantine_releases_once_the_event_is_terminal() -> None:
    rig = _uncancellable_rig()
    _stuck_reset(rig)
    engine = rig.engine
    before = list(engine.quarantine)
    context = engine.create_context()
    big = BufferDesc(CAP - 256, 16, MemoryDomain.HOST, IN)  # fits only once the quarantined bytes are gone
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        engine.allocate_buffer(context, big)
    assert engine.poll_quarantine() == before  # pending: one poll, nothing released
    assert rig.faults.calls["free_buffer"] == 0 and rig.faults.calls["destroy_event"] == 1
    rig.reference.control.release_all()
    assert engine.poll_quarantine() == []
    assert _charged(engine) == (0, 0)
    assert rig.faults.live_resources() == {**dict.fromkeys((*KINDS, "indeterminate"), 0), "context": 1}
    engine.allocate_buffer(context, big)


def test_what_two_stuck_events_pin_waits_for_both() -> None:
    rig = _uncancellable_rig()
    _stuck_reset(rig, events=2)
    engine, reference = rig.engine, rig.reference
    first = next(e for e in reference._events if e.state is EventState.PENDING)
    reference.control.release(first)
    left = engine.poll_quarantine()
    assert sorted(q.kind.label for q in left) == ["buffer", "buffer", "buffer", "context", "event", "program", "queue"]
    assert rig.faults.calls["free_buffer"] == 0
    reference.control.release_all()
    assert engine.poll_quarantine() == [] and _charged(engine) == (0, 0)


def test_a_rejected_retry_keeps_the_handle_and_the_next_one_releases() -> None:
    rig = _uncancellable_rig()
    _stuck_reset(rig)
    rig.reference.control.release_all()
    rig.faults.inject(Fault("free_buffer", FaultKind.REJECT_RELEASE))
    left = rig.engine.poll_quarantine()
    assert [q.kind.label for q in left] == ["buffer", "context"] and all(q.handle is not None for q in left)
    assert _charged(rig.engine) == (left[0].allocation_bytes, 0) and left[0].allocation_bytes > 0
    assert rig.engine.poll_quarantine() == [] and _charged(rig.engine) == (0, 0)


def test_an_indeterminate_retry_is_quarantined_without_a_handle() -> None:
    rig = _uncancellable_rig()
    _stuck_reset(rig)
    rig.reference.control.release_all()
    rig.faults.inject(Fault("destroy_event", FaultKind.INDETERMINATE_RELEASE, performed=True))
    left = rig.engine.poll_quarantine()
    # The event is gone for good (handle None); what it pinned no longer waits for it.
    assert [(q.kind, q.handle is None) for q in left] == [(ObjectKind.EVENT, True)]
    live = rig.faults.live_resources()
    assert live["indeterminate"] == 1 and sum(live[k] for k in KINDS) == 0, live
    assert _charged(rig.engine) == (0, 0)


def test_poll_quarantine_needs_a_usable_engine() -> None:
    rig = _uncancellable_rig()
    rig.faults.inject(Fault("free_buffer", FaultKind.INDETERMINATE_RELEASE))
    with pytest.raises(ReleaseIndeterminate):
        rig.engine.free_buffer(rig.a)
    assert rig.engine.state is EngineState.NEEDS_DISCARD
    with pytest.raises(BackendError) as info:
        rig.engine.poll_quarantine()
    assert info.value.kind is ErrorKind.DEVICE_LOST


# ----------------------------------------------------------------------------- real devices


MODULE_KIND = {"opencl": ModuleKind.OPENCL_SOURCE, "vulkan": ModuleKind.SPIRV_VULKAN}
IN_FLIGHT_S = 1.5
"""How long the spin run that reset meets should take (calibrated per device)."""


class _Spin:
    """An engine over one real device with the corpus spin kernel loaded on every ``setup()``."""

    def __init__(self, family: Any, entry: Any) -> None:
        self.setup = family.conformance(entry)
        self.inner = self.setup.factory()
        self.engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(self.inner, ResourcePolicy())
        target = self.setup.target
        self.artifact = ArtifactRef(
            target.format, target.target, MemorySource(load_package("spin", MODULE_KIND[family.name])), 64 << 20
        )
        self.fixtures = target.fixtures  # slot 0 READ (parameters), slot 1 WRITE: the spin layout too

    def submit(self, n: int, iterations: int, timeout: float | None = None) -> tuple[int, float]:
        """Set up and submit one spin run (``timeout`` in seconds, None: infinite):
        (event, perf_counter just before the submit)."""
        engine, case = self.engine, spin_case(n, iterations)
        context = engine.create_context()
        bindings = []
        for fixture in self.fixtures:
            data = case.initial_bytes(fixture.slot)
            data += bytes(-len(data) % 16)
            desc = BufferDesc(len(data), fixture.alignment, fixture.domain, fixture.buffer_usage())
            buffer = engine.allocate_buffer(context, desc)
            engine.write_buffer(buffer, 0, data)
            bindings.append((fixture.slot, buffer, None, fixture.access))
        program = engine.load_program(context, self.artifact)
        queue = engine.create_queue(context)
        started = time.perf_counter()
        event: int = engine.submit(queue, program, bindings, timeout)
        return event, started

    def timed(self, n: int, iterations: int) -> float:
        """Seconds from submit to completion (the kernel only: the build is not counted)."""
        event, started = self.submit(n, iterations)
        assert self.engine.wait(event, timeout_s=120) == EventState.COMPLETE
        elapsed = time.perf_counter() - started
        assert self.engine.reset() == []
        return elapsed

    def calibrate(self) -> tuple[int, int]:
        """(n, iterations) of a spin run that takes about IN_FLIGHT_S on this device."""
        n, iterations = 1024, 1 << 16
        elapsed = self.timed(n, iterations)
        while elapsed < 0.2:
            if iterations < SPIN_MAX_ITERATIONS:
                iterations = min(SPIN_MAX_ITERATIONS, iterations * 8)
            else:
                n *= 8
            elapsed = self.timed(n, iterations)
        scale = max(1, round(IN_FLIGHT_S / elapsed))
        return n * scale, iterations

    def stuck_reset(self, n: int, iterations: int) -> list[Any]:
        """Start a long spin run, reset while it runs: the event and what it pins are quarantined."""
        event, _ = self.submit(n, iterations)
        assert self.engine.poll(event) == EventState.PENDING, "the spin run ended at once; calibrate longer"
        quarantine = self.engine.reset()
        events = [q for q in quarantine if q.kind is ObjectKind.EVENT]
        assert len(events) == 1 and events[0].handle is not None, (
            f"the spin run ended before reset() met it; calibrate longer ({quarantine})"
        )
        kinds = sorted(q.kind.label for q in quarantine)
        assert kinds == ["buffer", "buffer", "context", "event", "program", "queue"], quarantine
        assert self.engine.usage.resident_bytes == 64 << 20 and self.engine.usage.allocation_bytes > 0
        return quarantine

    def wait_for_kernel(self, quarantine: list[Any]) -> None:
        """Poll the quarantined event's handle directly until its kernel ended."""
        deadline = time.monotonic() + 120
        for item in quarantine:
            if item.kind is ObjectKind.EVENT and item.handle is not None:
                while not self.inner.poll_event(item.handle).is_terminal:
                    assert time.monotonic() < deadline, "the spin run did not end within 120 s"
                    time.sleep(0.02)

    def assert_nothing_left(self) -> None:
        assert self.engine.quarantine == []
        assert (self.engine.usage.allocation_bytes, self.engine.usage.resident_bytes) == (0, 0)
        counts = self.setup.hooks.live_resources(self.inner)
        if counts is not None:
            assert sum(counts.values()) == 0, counts

    def close(self) -> None:
        self.wait_for_kernel(self.engine.quarantine)
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


@pytest.fixture
def spin(family: Any, entry: Any) -> Iterator[_Spin]:
    run = _Spin(family, entry)
    yield run
    run.close()


DEVICES = real_devices()


@pytest.mark.parametrize(("family", "entry"), DEVICES)
def test_real_device_later_reset_releases_what_the_kernel_pinned(spin: _Spin) -> None:
    n, iterations = spin.calibrate()
    quarantine = spin.stuck_reset(n, iterations)
    spin.wait_for_kernel(quarantine)
    assert spin.engine.reset() == []
    spin.assert_nothing_left()


@pytest.mark.parametrize(("family", "entry"), DEVICES)
def test_real_device_poll_quarantine_releases_once_the_kernel_ends(spin: _Spin) -> None:
    n, iterations = spin.calibrate()
    spin.stuck_reset(n, iterations)
    deadline = time.monotonic() + 120
    polls = 0
    while spin.engine.poll_quarantine():
        polls += 1
        assert time.monotonic() < deadline, f"still quarantined after 120 s: {spin.engine.quarantine}"
        time.sleep(0.02)
    assert polls >= 1, "the kernel was still running: the first polls must have found it pending"
    spin.assert_nothing_left()


def test_device_lost_during_reset_leaves_the_same_instance_discarded() -> None:
    """Found by the state machine over real providers: reset() used to end READY after its own
    teardown saw DEVICE_LOST, and the lost instance kept admitting objects."""
    faults = FaultAccelerator(ReferenceAccelerator())
    engine = CommandEngine(faults)
    engine.create_context()
    faults.inject(Fault("destroy_context", FaultKind.DEVICE_LOST))
    engine.reset()
    assert engine.state is EngineState.NEEDS_DISCARD
    assert engine.state_reason.startswith("reset: ") and "fresh instance" in engine.state_reason
    with pytest.raises(BackendError) as info:
        engine.create_context()
    assert info.value.kind is ErrorKind.DEVICE_LOST
    engine.reset(ReferenceAccelerator())  # a fresh instance is the way out
    assert engine.state is EngineState.READY
    engine.create_context()
