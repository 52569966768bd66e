"""The engine's ``wait`` lets a provider block in the driver (``accelcore.contract.waiting.EventWaiter``).

What must hold: the engine only ever reports what a poll said (a waiter that returns early, or that
lies, changes nothing but the time spent); it asks for at most what is left of the wait's limit and
of the event's deadline, and for an unbounded wait only when neither exists; a provider that cannot
block for an event (held on the host) answers False at once and the engine polls instead.

Deterministic cases run on the reference provider under an honest wrapper whose ``wait_event``
really waits (polling the reference event with short sleeps) and records every budget it was given;
``test_engine_blocking_wait_real.py`` runs the OpenCL and Vulkan providers' own ``wait_event``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from accelcore import ErrorKind, EventState, EventStatus
from accelcore.engine import CommandEngine, EngineState, ResourcePolicy
from accelcore.testing import FaultAccelerator, ReferenceAccelerator
from accelcore.testing.pytest_support import raises_kind

from .conftest import N, Rig, populate

LIMIT_S = 0.05


class _Waiting(FaultAccelerator):
    """The reference provider plus a ``wait_event`` that waits for real: it polls the inner event
    (sleeping 1 ms between polls) until it is terminal or ``timeout_ns`` has passed. ``lie``: return
    True at once without waiting (a broken provider); ``refuse``: return False (cannot block)."""

    def __init__(self, inner: Any, *, lie: bool = False, refuse: bool = False) -> None:
        super().__init__(inner)
        self.budgets: list[int | None] = []
        self.lie = lie
        self.refuse = refuse

    def wait_event(self, event: Any, timeout_ns: int | None) -> bool:
        self.budgets.append(timeout_ns)
        if self.refuse:
            return False
        if self.lie:
            return True
        ends = None if timeout_ns is None else time.monotonic_ns() + timeout_ns
        while not self.inner.poll_event(event).is_terminal:
            if ends is not None and time.monotonic_ns() >= ends:
                break
            time.sleep(0.001)
        return True


def _rig(**options: bool) -> tuple[Rig, _Waiting]:
    reference = ReferenceAccelerator()
    waiting = _Waiting(reference, **options)
    engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(waiting, ResourcePolicy())
    return populate(engine, reference, waiting), waiting


def _held(rig: Rig, timeout: float | None = None) -> int:
    rig.reference.control.hold()
    event: int = rig.engine.submit(rig.queue, rig.program, rig.bindings(), timeout)
    assert rig.engine.poll(event) == EventState.PENDING
    return event


def _release_later(rig: Rig, delay_s: float) -> threading.Thread:
    def release() -> None:
        time.sleep(delay_s)
        rig.reference.control.release_all()

    thread = threading.Thread(target=release)
    thread.start()
    return thread


def _sum_is_right(rig: Rig) -> None:
    got = np.frombuffer(rig.engine.read_buffer(rig.out), np.uint32)
    assert got.tolist() == [i + 100 for i in range(N)]


def test_an_unbounded_wait_blocks_in_the_provider_until_the_event_ends() -> None:
    rig, waiting = _rig()
    event = _held(rig)
    thread = _release_later(rig, 0.05)
    assert rig.engine.wait(event) == EventState.COMPLETE
    thread.join()
    assert waiting.budgets and waiting.budgets[0] is None, waiting.budgets  # nothing bounds it
    _sum_is_right(rig)
    rig.engine.destroy_event(event)


def test_a_wait_limit_bounds_every_block_and_the_event_stays_pending() -> None:
    rig, waiting = _rig()
    event = _held(rig)
    with raises_kind(ErrorKind.DEADLINE_EXPIRED):
        rig.engine.wait(event, timeout_s=LIMIT_S)
    assert waiting.budgets, "the provider's wait was never asked"
    assert all(b is not None and 0 < b <= LIMIT_S * 1e9 for b in waiting.budgets), waiting.budgets
    assert rig.engine.poll(event) == EventState.PENDING  # the engine reported no state of its own
    rig.reference.control.release_all()
    assert rig.engine.wait(event) == EventState.COMPLETE
    _sum_is_right(rig)


def test_the_event_deadline_bounds_an_unlimited_wait() -> None:
    rig, waiting = _rig()
    event = _held(rig, timeout=LIMIT_S)
    state = rig.engine.wait(event)
    assert all(b is not None and 0 < b <= LIMIT_S * 1e9 for b in waiting.budgets), waiting.budgets
    # Past its deadline the engine cancels it, exactly as without a blocking wait.
    assert state.status is EventStatus.FAILED and state.error is not None
    assert state.error.kind is ErrorKind.DEADLINE_EXPIRED
    assert rig.engine.state is EngineState.READY


@pytest.mark.parametrize("option", ["lie", "refuse"])
def test_a_waiter_that_returns_early_changes_no_answer(option: str) -> None:
    rig, waiting = _rig(**{option: True})
    event = _held(rig)
    with raises_kind(ErrorKind.DEADLINE_EXPIRED):
        rig.engine.wait(event, timeout_s=LIMIT_S)
    # Two early returns without progress and the engine polls with sleeps instead of asking again.
    assert 1 <= len(waiting.budgets) <= (1 if option == "refuse" else 2), waiting.budgets
    assert rig.engine.poll(event) == EventState.PENDING
    thread = _release_later(rig, 0.02)
    assert rig.engine.wait(event) == EventState.COMPLETE
    thread.join()
    _sum_is_right(rig)


def test_without_the_optional_method_the_engine_polls() -> None:
    reference = ReferenceAccelerator()
    faults = FaultAccelerator(reference)  # no wait_event
    rig = populate(CommandEngine(faults, ResourcePolicy()), reference, faults)
    event = _held(rig)
    thread = _release_later(rig, 0.02)
    assert rig.engine.wait(event) == EventState.COMPLETE
    thread.join()
    _sum_is_right(rig)
