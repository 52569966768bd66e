"""poll_until_terminal: returns the terminal state, None on time-out, propagates poll errors."""

from __future__ import annotations

import pytest

from accelcore import BackendError, ErrorKind, EventState
from accelcore.contract.waiting import poll_until_terminal


def test_returns_the_first_terminal_state() -> None:
    states = iter([EventState.PENDING, EventState.PENDING, EventState.COMPLETE, EventState.CANCELLED])
    calls = []

    def poll() -> EventState:
        state = next(states)
        calls.append(state)
        return state

    assert poll_until_terminal(poll, 5.0) == EventState.COMPLETE
    assert len(calls) == 3


def test_still_pending_after_the_limit_is_none() -> None:
    assert poll_until_terminal(lambda: EventState.PENDING, 0.01) is None


def test_poll_errors_propagate() -> None:
    def poll() -> EventState:
        raise BackendError(ErrorKind.DEVICE_LOST, "gone")

    with pytest.raises(BackendError) as caught:
        poll_until_terminal(poll, None)
    assert caught.value.kind is ErrorKind.DEVICE_LOST


def test_sleeps_are_a_fraction_of_the_time_waited(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a simulated clock an operation that ends at 3.2 ms is seen within 12.5 % (+ the first sleep) of
    its end; the old doubling back-off saw it at up to 2x (6.3 ms measured on Intel/rusticl)."""
    import accelcore.contract.waiting as waiting

    clock = [0.0]
    monkeypatch.setattr(waiting.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(waiting.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    for end in (0.0032, 0.0064, 0.4):

        def poll(end: float = end) -> EventState:
            return EventState.COMPLETE if clock[0] >= end else EventState.PENDING

        clock[0] = 0.0
        assert poll_until_terminal(poll, None) == EventState.COMPLETE
        assert clock[0] <= end * (1 + waiting.SLEEP_FRACTION) + waiting.FIRST_SLEEP_S
    clock[0] = 0.0
    assert poll_until_terminal(lambda: EventState.PENDING, 0.0123) is None
    assert clock[0] == pytest.approx(0.0123)  # never sleeps past the limit
