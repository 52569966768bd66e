"""The one host-side wait: poll an event until it is terminal, sleeping between polls.

``poll_event`` itself never blocks; hosts that want to wait (the engine's
``wait``, the conformance suite, test rigs) call :func:`poll_until_terminal`,
which sleeps between polls instead of spinning: each sleep is an eighth of the
time already waited (at least ``first_sleep_s``, at most ``max_sleep_s``), so
the wait overshoots an operation's end by about 12.5 % at most — a doubling
back-off could overshoot by 100 % (a 3 ms kernel seen at 6 ms) — and never
sleeps past ``limit_s``.

A provider may also offer a *blocking* wait (:class:`EventWaiter`, an optional method outside the
seed contract): the engine's ``wait`` then lets the driver block the thread until the event ends
(``clWaitForEvents``, ``vkWaitSemaphores``) where the provider can bound that wait, and falls back to
these polls where it cannot (see :meth:`accelcore.engine.CommandEngine.wait`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from .submission import EventState

__all__ = ["FIRST_SLEEP_S", "MAX_SLEEP_S", "SLEEP_FRACTION", "EventWaiter", "poll_until_terminal"]

E_contra = TypeVar("E_contra", contravariant=True)


class EventWaiter(Protocol[E_contra]):
    """Optional provider method: block in the driver until an event's native work has ended.

    Not part of the seed contract (``poll_event`` never blocks); the engine looks it up once per
    provider instance and calls it only from its own ``wait``.

    Ownership: the event is borrowed and stays live. Progress: blocks the calling thread (the GIL
    released) for at most ``timeout_ns`` nanoseconds (None: until the native work ends); returns
    False at once, without blocking, where it cannot honour that bound or the event is not in the
    driver's hands (held on the host, behind a gate, already ended). Failure: it reports no state:
    True only means "blocked until the work ended or the time ran out"; the caller learns the
    state from ``poll_event``, so a kernel that failed is reported there, never here. Errors from
    the driver's wait are not raised (the next poll meets them). Copies: none.
    """

    def wait_event(self, event: E_contra, timeout_ns: int | None) -> bool: ...


FIRST_SLEEP_S = 50e-6
MAX_SLEEP_S = 5e-3
SLEEP_FRACTION = 0.125
"""Each sleep is this fraction of the time waited so far (the bound on the overshoot)."""


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
    started = time.monotonic()
    deadline = None if limit_s is None else started + limit_s
    while True:
        state = poll()
        if state.is_terminal:
            return state
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return None
        delay = min(max_sleep_s, max(first_sleep_s, (now - started) * SLEEP_FRACTION))
        if deadline is not None:
            delay = min(delay, deadline - now)
        time.sleep(delay)
