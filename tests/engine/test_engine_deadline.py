"""A finite ``Timeout`` on a device that cannot preempt a running kernel (docs/engine.md).

The provider keeps answering Pending after the deadline (PoCL runs an endless loop to its end;
a cancel answers BUSY). The engine does not wait behind it: the first poll after the deadline
makes the event ``Failed(DEADLINE_EXPIRED)``, and when the device could not stop it (no
EVENT_CANCELLATION, or a cancel that answers BUSY while the kernel keeps running) the engine goes
to NEEDS_DISCARD with a reason saying so, so every later call fails fast with DEVICE_LOST instead
of blocking. A device that can cancel gets its event cancelled and the engine stays usable.

Deterministic cases run on the reference provider (``control.run_away()``: held kernels that ignore
their deadline and refuse cancellation) under ``FaultAccelerator``; the real-device case runs the
corpus ``spin`` kernel (calibrated to ~1.5 s) with a 0.1 s deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from accelcore import Capabilities, ErrorKind, EventState, EventStatus
from accelcore.contract.refusals import cancellation_lost
from accelcore.engine import EngineState, ObjectKind, ResourcePolicy
from accelcore.testing import REFERENCE_CAPABILITIES, ReferenceAccelerator
from accelcore.testing.pytest_support import raises_kind

from .conftest import Rig, make_rig
from .test_engine_quarantine_retry import DEVICES, _Spin

DEADLINE_S = 0.05


def _rig(cancellation: bool = True, reference: ReferenceAccelerator | None = None) -> Rig:
    caps = REFERENCE_CAPABILITIES if cancellation else REFERENCE_CAPABILITIES & ~Capabilities.EVENT_CANCELLATION
    return make_rig(ResourcePolicy(), reference or ReferenceAccelerator(capabilities=caps))


def _runaway(rig: Rig, count: int = 1) -> list[int]:
    rig.reference.control.run_away()
    events = [rig.engine.submit(rig.queue, rig.program, rig.bindings(), DEADLINE_S) for _ in range(count)]
    rig.reference.control.stop_holding()
    assert all(rig.engine.poll(e) == EventState.PENDING for e in events)
    time.sleep(DEADLINE_S * 2)
    return events


def _assert_overran(rig: Rig, state: EventState, why: str) -> None:
    assert state.status is EventStatus.FAILED and state.error is not None
    assert state.error.kind is ErrorKind.DEADLINE_EXPIRED
    assert "ran past its deadline of 0.05 s and the device could not stop it" in state.error.message
    assert why in state.error.message
    assert rig.engine.state is EngineState.NEEDS_DISCARD
    assert "a kernel overran its deadline and the device could not stop it" in rig.engine.state_reason


@pytest.mark.parametrize(
    ("cancellation", "why"),
    [(True, "a cancel answered BUSY"), (False, "does not advertise EVENT_CANCELLATION")],
)
def test_a_kernel_past_its_deadline_fails_and_the_engine_needs_a_discard(cancellation: bool, why: str) -> None:
    rig = _rig(cancellation)
    (event,) = _runaway(rig)
    cancels = rig.faults.calls["cancel_event"]
    state = rig.engine.poll(event)
    _assert_overran(rig, state, why)
    assert rig.faults.calls["cancel_event"] == cancels + (1 if cancellation else 0)
    assert rig.reference.control.held() == 1, "the native kernel is still running"
    # Nothing queues behind it: every later call fails fast, without reaching the provider.
    calls = dict(rig.faults.calls)
    for call in (
        lambda: rig.engine.submit(rig.queue, rig.program, rig.bindings(), DEADLINE_S),
        lambda: rig.engine.read_buffer(rig.out),
        lambda: rig.engine.poll(event),
        lambda: rig.engine.destroy_event(event),
    ):
        with raises_kind(ErrorKind.DEVICE_LOST):
            call()
    assert dict(rig.faults.calls) == calls


def test_wait_returns_at_the_deadline_not_at_the_wait_limit() -> None:
    rig = _rig()
    rig.reference.control.run_away()
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings(), DEADLINE_S)
    started = time.perf_counter()
    state = rig.engine.wait(event, timeout_s=30)
    elapsed = time.perf_counter() - started
    _assert_overran(rig, state, "a cancel answered BUSY")
    assert DEADLINE_S <= elapsed < DEADLINE_S + 0.5, elapsed


def test_a_submission_behind_the_runaway_is_refused_not_blocked() -> None:
    rig = _rig()
    first, second = _runaway(rig, count=2)
    _assert_overran(rig, rig.engine.poll(first), "a cancel answered BUSY")
    with raises_kind(ErrorKind.DEVICE_LOST):
        rig.engine.cancel(second)
    with raises_kind(ErrorKind.DEVICE_LOST):
        rig.engine.wait(second, timeout_s=30)


def test_reset_quarantines_the_runaway_and_a_fresh_provider_is_the_way_out() -> None:
    rig = _rig()
    (event,) = _runaway(rig)
    rig.engine.poll(event)
    quarantine = rig.engine.reset()
    events = [q for q in quarantine if q.kind is ObjectKind.EVENT]
    assert len(events) == 1 and events[0].handle is not None
    assert events[0].reason.startswith("overran its deadline (the device could not stop it)")
    assert sorted(q.kind.label for q in quarantine) == sorted(
        ["event", "queue", "program", "context", "buffer", "buffer", "buffer"]
    )
    fresh = ReferenceAccelerator()
    rig.engine.reset(fresh)
    assert rig.engine.state is EngineState.READY and rig.engine.quarantine == []
    assert len(rig.engine.discarded) == len(quarantine)


def test_the_runaway_is_released_once_its_kernel_ends() -> None:
    rig = _rig(cancellation=False)
    (event,) = _runaway(rig)
    rig.engine.poll(event)
    assert rig.engine.reset() != []
    assert rig.reference.control.release_all() == 1
    assert rig.engine.poll_quarantine() == []
    assert rig.faults.live_resources() == dict.fromkeys(
        ("context", "buffer", "program", "queue", "event", "indeterminate"), 0
    )


def test_a_device_that_can_cancel_gets_its_event_cancelled_and_stays_usable() -> None:
    rig = _rig()
    rig.reference.control.hold()
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings(), DEADLINE_S)
    rig.reference.control.stop_holding()
    for native in rig.reference._events:
        native.deadline_ns = None  # the device does not enforce deadlines, but it can cancel
    time.sleep(DEADLINE_S * 2)
    state = rig.engine.poll(event)
    assert state.status is EventStatus.FAILED and state.error is not None
    assert state.error.kind is ErrorKind.DEADLINE_EXPIRED and "the engine cancelled it" in state.error.message
    assert rig.engine.state is EngineState.READY
    assert rig.engine.poll(event) == state  # terminal states stay
    rig.engine.destroy_event(event)
    rig.run_and_check()


class _CompletesOnCancel(ReferenceAccelerator):
    """Completion wins the race: the kernel ends just as the engine's cancel arrives."""

    def cancel_event(self, event: Any) -> None:
        self.control.release(event)
        raise cancellation_lost()


def test_completion_that_wins_the_cancel_race_is_kept() -> None:
    rig = _rig(reference=_CompletesOnCancel())
    (event,) = _runaway(rig)
    assert rig.engine.poll(event) == EventState.COMPLETE
    assert rig.engine.state is EngineState.READY
    rig.engine.destroy_event(event)
    rig.run_and_check()


def test_a_device_that_enforces_its_deadline_answers_first() -> None:
    rig = _rig()
    rig.reference.control.hold()  # held, not running: the reference provider expires it itself
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings(), DEADLINE_S)
    time.sleep(DEADLINE_S * 2)
    state = rig.engine.poll(event)
    assert state.error is not None and "passed its deadline while pending" in state.error.message
    assert rig.faults.calls["cancel_event"] == 0 and rig.engine.state is EngineState.READY


def test_infinite_timeouts_never_trip() -> None:
    rig = _rig()
    rig.reference.control.run_away()
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings(), None)
    time.sleep(DEADLINE_S)
    assert rig.engine.poll(event) == EventState.PENDING and rig.engine.state is EngineState.READY
    rig.reference.control.release_all()
    assert rig.engine.poll(event) == EventState.COMPLETE


# ----------------------------------------------------------------------------- real devices

REAL_DEADLINE_S = 0.1


@pytest.fixture
def spin(family: Any, entry: Any) -> Iterator[_Spin]:
    run = _Spin(family, entry)
    yield run
    run.close()  # waits for the quarantined kernel to end, then closes the instance


@pytest.mark.parametrize(("family", "entry"), DEVICES)
def test_real_device_spin_past_its_deadline_ends_for_the_engine(spin: _Spin) -> None:
    n, iterations = spin.calibrate()  # ~1.5 s: the deadline passes long before the kernel ends
    event, started = spin.submit(n, iterations, timeout=REAL_DEADLINE_S)
    longest = 0.0
    while True:  # engine.wait, with each poll timed
        before = time.perf_counter()
        state = spin.engine.poll(event)
        longest = max(longest, time.perf_counter() - before)
        if state.is_terminal or time.perf_counter() - started > 60:
            break
        time.sleep(0.005)
    elapsed = time.perf_counter() - started
    # rusticl holds a running kernel's event lock, so a status read of it waited for the kernel
    # (1-1.5 s here) until the OpenCL provider watched a marker instead (docs/opencl.md).
    assert longest < 0.5, f"one poll_event blocked {longest:.2f} s (ended {state}): the poll is not non-blocking"
    assert state.status is EventStatus.FAILED and state.error is not None, state
    assert state.error.kind is ErrorKind.DEADLINE_EXPIRED
    assert elapsed < REAL_DEADLINE_S + 0.5, f"the engine waited {elapsed:.2f} s behind the kernel"
    engine = spin.engine
    if engine.state is EngineState.NEEDS_DISCARD:
        assert "could not stop it" in state.error.message and "overran its deadline" in engine.state_reason
        with raises_kind(ErrorKind.DEVICE_LOST):
            engine.create_context()
        quarantine = engine.reset()
        assert any(q.kind is ObjectKind.EVENT and q.handle is not None for q in quarantine), quarantine
    else:  # the device stopped it (cancelled by the engine, or its own deadline)
        assert engine.state is EngineState.READY
        engine.reset()
