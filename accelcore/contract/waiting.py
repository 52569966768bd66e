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

Ctrl-C: Python runs its SIGINT handler (raising ``KeyboardInterrupt``) on the main thread, and only
between bytecodes: a driver call that blocks without returning (``clWaitForEvents`` on a kernel that
runs for minutes) would hold it off until the kernel ends. :func:`call_interruptibly` runs such a
call on a helper thread while the main thread waits on a lock, in slices of at most
:data:`INTERRUPT_SLICE_S`, so ``KeyboardInterrupt`` reaches the caller at once; the helper is left
blocked in the driver and goes back to the pool of idle helpers when the call returns.
"""

from __future__ import annotations

import _thread
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from .submission import EventState

__all__ = [
    "FIRST_SLEEP_S",
    "INTERRUPT_SLICE_S",
    "MAX_SLEEP_S",
    "SLEEP_FRACTION",
    "EventWaiter",
    "call_interruptibly",
    "on_main_thread",
    "poll_until_terminal",
]

E_contra = TypeVar("E_contra", contravariant=True)
T = TypeVar("T")


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


INTERRUPT_SLICE_S = 0.1
"""Longest a blocking wait on the main thread goes without returning to Python (where ``KeyboardInterrupt``
is raised): the slice of :func:`call_interruptibly` and of the providers' own interruptible waits."""

_MAIN_THREAD = threading.main_thread().ident


def on_main_thread() -> bool:
    """Whether the caller runs on the main thread, the only one Python delivers signals (Ctrl-C) to."""
    return _thread.get_ident() == _MAIN_THREAD


class _Call:
    """One call handed to a helper: what to run, and where its outcome goes (``done`` is released then)."""

    __slots__ = ("args", "done", "error", "function", "result")

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.function = function
        self.args = args
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = _thread.allocate_lock()
        self.done.acquire()


class _Helper:
    """A thread that runs one :class:`_Call` at a time and then offers itself again (never joined: like a
    daemon thread, it does not hold the process at exit while a driver keeps it blocked)."""

    def __init__(self) -> None:
        self.call: _Call | None = None
        self.ready = _thread.allocate_lock()
        self.ready.acquire()
        _thread.start_new_thread(self._serve, ())

    def _serve(self) -> None:
        while True:
            self.ready.acquire()
            call, self.call = self.call, None
            assert call is not None
            try:
                call.result = call.function(*call.args)
            except BaseException as exc:
                call.error = exc
            call.done.release()
            del call
            with _idle_lock:
                _idle.append(self)


_idle: list[_Helper] = []
_idle_lock = _thread.allocate_lock()


def _after_fork() -> None:
    """A forked child has none of its parent's helper threads: forget them (and a lock held at the fork)."""
    global _idle_lock
    _idle.clear()
    _idle_lock = _thread.allocate_lock()


os.register_at_fork(after_in_child=_after_fork)


def call_interruptibly(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)``: on the main thread run on a helper thread while the caller waits in slices of
    :data:`INTERRUPT_SLICE_S`, so ``KeyboardInterrupt`` (Ctrl-C) reaches the caller within a slice even
    while the call blocks in a driver that does not return; elsewhere called directly.

    Ownership: the arguments stay referenced by the helper until the call returns, also after an interrupt.
    Progress: an interrupted call goes on in the helper (a driver call cannot be taken back); its outcome is
    dropped and the helper returns to the pool when it ends. Failure: the call's exception is raised here.
    Copies: none. Cost: two thread hand-offs (measured within the noise of a 100 µs kernel call).
    """
    if not on_main_thread():
        return function(*args)
    with _idle_lock:
        helper = _idle.pop() if _idle else None
    if helper is None:
        helper = _Helper()
    call = _Call(function, args)
    helper.call = call
    helper.ready.release()
    while not call.done.acquire(True, INTERRUPT_SLICE_S):
        pass  # each timed acquire returns to Python, where a pending SIGINT raises KeyboardInterrupt
    if call.error is not None:
        raise call.error
    result: T = call.result
    return result
