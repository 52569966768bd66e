"""poll_until_terminal: returns the terminal state, None on time-out, propagates poll errors."""

from __future__ import annotations

import pytest

from accelcore import BackendError, ErrorKind, EventState
from accelcore.waiting import poll_until_terminal


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
