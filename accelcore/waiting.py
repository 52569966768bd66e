"""The one host-side wait: poll an event until it is terminal, sleeping between polls.

``poll_event`` itself never blocks; hosts that want to wait (the engine's
``wait``, the conformance suite, test rigs) call :func:`poll_until_terminal`,
which sleeps with a doubling back-off instead of spinning.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .submission import EventState

__all__ = ["FIRST_SLEEP_S", "MAX_SLEEP_S", "poll_until_terminal"]

FIRST_SLEEP_S = 50e-6
MAX_SLEEP_S = 5e-3


def poll_until_terminal(
    poll: Callable[[], EventState],
    limit_s: float | None,
    *,
    first_sleep_s: float = FIRST_SLEEP_S,
    max_sleep_s: float = MAX_SLEEP_S,
) -> EventState | None:
    """Call ``poll`` until it returns a terminal state and return it; None when still
    pending after ``limit_s`` seconds (None: no limit). Errors from ``poll`` propagate;
    each caller reports a time-out in its own terms."""
    deadline = None if limit_s is None else time.monotonic() + limit_s
    delay = first_sleep_s
    while True:
        state = poll()
        if state.is_terminal:
            return state
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, max_sleep_s)
