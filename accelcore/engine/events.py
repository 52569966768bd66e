"""Event calls of the engine: polling, deadlines, waiting (in the driver or with sleeps), cancel, release."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..contract.errors import BackendError, ErrorKind, ReleaseFailure
from ..contract.submission import EventState, timeout_seconds
from ..contract.waiting import INTERRUPT_SLICE_S, call_interruptibly, on_main_thread, poll_until_terminal
from .base import B, C, E, EngineBase, P, Q
from .entries import _NEEDS_DISCARD, _PENDING_STATUS, _Event
from .ids import format_id

_SLICE_NS = int(INTERRUPT_SLICE_S * 1e9)


class EventCalls(EngineBase[C, B, P, Q, E]):
    """Poll, wait for, cancel and destroy events (mixed into :class:`~.core.CommandEngine`)."""

    def poll(self, event_id: int) -> EventState:
        """Non-blocking: the cached terminal state, or one provider poll."""
        if self.state is _NEEDS_DISCARD:
            self._usable()
        entry = self._event_lookup(event_id) if type(event_id) is int else None
        if entry is None:
            entry = self._event(event_id)
        state = entry.state
        if state.status is not _PENDING_STATUS:
            return state
        try:
            state = self._provider.poll_event(entry.handle)
        except BackendError as exc:
            self._watch(exc, "poll_event")
            raise
        if state.is_terminal:
            entry.state = state
        elif entry.deadline_ns is not None and time.monotonic_ns() >= entry.deadline_ns:
            return self._past_deadline(event_id, entry)
        return state

    def _past_deadline(self, event_id: int, entry: _Event) -> EventState:
        """The provider still answers Pending after the event's deadline: the device did not end it.

        With EVENT_CANCELLATION the engine cancels it: cancelled → ``Failed(DEADLINE_EXPIRED)``;
        BUSY and a terminal state on the next poll → that state (completion won). Otherwise — no
        EVENT_CANCELLATION, or a cancel that answers BUSY while the kernel keeps running — the device
        cannot preempt it: the event is ``Failed(DEADLINE_EXPIRED)`` for the engine (the native event
        stays live and is quarantined by ``reset()``) and the engine goes to NEEDS_DISCARD, so later
        calls fail fast with DEVICE_LOST instead of queueing behind the kernel.
        """
        seconds = f"{entry.timeout_ns / 1e9:g} s"
        if self._can_cancel():
            try:
                self._provider.cancel_event(entry.handle)
            except BackendError as exc:
                self._watch(exc, "cancel_event")
                self._usable()
                why = f"a cancel answered {exc.kind.name} and the kernel kept running"
                try:
                    state = self._provider.poll_event(entry.handle)
                except BackendError as poll_exc:
                    self._watch(poll_exc, "poll_event")
                    raise
                if state.is_terminal:
                    entry.state = state
                    return state
            else:
                entry.state = EventState.failed(
                    BackendError(
                        ErrorKind.DEADLINE_EXPIRED,
                        f"{format_id(event_id)} was pending at its deadline of {seconds}; the engine cancelled it",
                    )
                )
                return entry.state
        else:
            why = "the device does not advertise EVENT_CANCELLATION"
        entry.overran = True
        entry.state = EventState.failed(
            BackendError(
                ErrorKind.DEADLINE_EXPIRED,
                f"{format_id(event_id)} ran past its deadline of {seconds} and the device could not stop it "
                f"({why}); the provider instance needs a discard",
            )
        )
        self._needs_discard(
            f"a kernel overran its deadline and the device could not stop it: {format_id(event_id)}, "
            f"deadline {seconds}, {why}"
        )
        return entry.state

    def wait(self, event_id: int, timeout_s: float | None = None) -> EventState:
        """Wait until the event is terminal and return its state (what :meth:`poll` reports).

        Where the provider offers a blocking wait (:class:`~accelcore.contract.waiting.EventWaiter`) the
        thread blocks in the driver, for at most what is left of ``timeout_s`` and of the event's
        own deadline (``clWaitForEvents`` only without either: OpenCL has no timed wait); every
        state still comes from a poll. Otherwise, or where the provider cannot block for this
        event, polls sleep in between (an eighth of the time waited, 50 µs .. 5 ms).

        Ctrl-C on the main thread raises ``KeyboardInterrupt`` here within
        :data:`~accelcore.contract.waiting.INTERRUPT_SLICE_S`, also while the driver blocks (:meth:`_block`); the
        event stays live and pending, and a later ``wait`` or ``reset`` takes it from there.

        Still pending after ``timeout_s`` → DEADLINE_EXPIRED (the event stays live and pending). A
        ``timeout_s`` that is no finite number of seconds (:func:`~accelcore.contract.submission.timeout_seconds`)
        → INVALID_ARGUMENT naming ``timeout=``.
        """
        if timeout_s is not None:
            timeout_s = timeout_seconds(timeout_s)
        limit_s = timeout_s
        waiter = self._waiter
        if waiter is not None and timeout_s is None and type(event_id) is int and self.state is not _NEEDS_DISCARD:
            entry = self._event_lookup(event_id)
            if entry is not None and entry.deadline_ns is None:
                # No bound at all (the common case): :meth:`_wait_in_driver` without its budget arithmetic.
                state = entry.state
                if state.status is not _PENDING_STATUS:
                    return state
                for _ in range(2):
                    try:
                        waited = self._block(waiter, entry.handle, None)
                    except BackendError as exc:
                        self._watch(exc, "wait_event")
                        raise
                    state = self.poll(event_id)
                    if state.is_terminal:
                        return state
                    if not waited:
                        break
                waiter = None
        if waiter is not None:
            started = time.monotonic_ns()
            polled = self._wait_in_driver(waiter, event_id, timeout_s, started)
            if polled.is_terminal:
                return polled
            if timeout_s is not None:
                limit_s = max(0.0, timeout_s - (time.monotonic_ns() - started) / 1e9)
        final = poll_until_terminal(lambda: self.poll(event_id), limit_s)
        if final is None:
            raise BackendError(ErrorKind.DEADLINE_EXPIRED, f"{format_id(event_id)} still pending after {timeout_s:g} s")
        return final

    def _wait_in_driver(
        self, waiter: Callable[[Any, int | None], bool], event_id: int, timeout_s: float | None, started_ns: int
    ) -> EventState:
        """Let the provider block for what is left of both bounds, then poll, until terminal; the last
        polled state (pending) once the time is up, the provider cannot block, or it returned twice
        without the event ending (the caller then polls with sleeps). Every state comes from a poll."""
        if self.state is _NEEDS_DISCARD:
            self._usable()
        entry = self._event_lookup(event_id) if type(event_id) is int else None
        if entry is None:
            entry = self._event(event_id)
        if entry.state.status is not _PENDING_STATUS:
            return entry.state
        ends_wait = None if timeout_s is None else started_ns + max(0, int(timeout_s * 1e9))
        ends = entry.deadline_ns
        if ends_wait is not None:
            ends = ends_wait if ends is None else min(ends, ends_wait)
        for _ in range(2):
            budget = None
            if ends is not None:
                budget = ends - time.monotonic_ns()
                if budget <= 0:
                    break
            try:
                blocked = self._block(waiter, entry.handle, budget)
            except BackendError as exc:
                self._watch(exc, "wait_event")
                raise
            state = self.poll(event_id)
            if state.is_terminal or not blocked:
                return state
        return self.poll(event_id)

    def _block(self, waiter: Callable[[Any, int | None], bool], handle: Any, budget_ns: int | None) -> bool:
        """One provider wait. On the main thread a wait that may block longer than
        :data:`~accelcore.contract.waiting.INTERRUPT_SLICE_S` in a driver call that does not return to Python
        (``clWaitForEvents``) runs on a helper thread, so Ctrl-C still raises ``KeyboardInterrupt`` here
        at once (:func:`~accelcore.contract.waiting.call_interruptibly`); a provider whose wait returns to Python
        in slices (``interruptible_wait = True``, the Vulkan provider) is called directly."""
        if self._waiter_interruptible or (budget_ns is not None and budget_ns <= _SLICE_NS) or not on_main_thread():
            return waiter(handle, budget_ns)
        return call_interruptibly(waiter, handle, budget_ns)

    def cancel(self, event_id: int) -> None:
        """Cancel a pending event. Without EVENT_CANCELLATION → UNSUPPORTED (event untouched);
        already Cancelled → success (cancellation won earlier; the provider is not called);
        otherwise terminal, or completion won → BUSY."""
        self._usable()
        entry = self._event(event_id)
        self._info.validate_event_cancellation()
        if entry.state == EventState.CANCELLED:
            return
        if entry.state.is_terminal:
            raise BackendError(ErrorKind.BUSY, f"{format_id(event_id)} is already {entry.state}: completion won")
        try:
            self._provider.cancel_event(entry.handle)
        except BackendError as exc:
            self._watch(exc, "cancel_event")
            raise
        entry.state = EventState.CANCELLED

    def destroy_event(self, event_id: int) -> None:
        """Release a terminal event (polled once if its state is not known terminal; pending → BUSY)."""
        if self.state is _NEEDS_DISCARD:
            self._usable()
        entry = self._event_lookup(event_id) if type(event_id) is int else None
        if entry is None:
            entry = self._event(event_id)
        if entry.state.status is _PENDING_STATUS and not self.poll(event_id).is_terminal:
            raise BackendError(ErrorKind.BUSY, f"{format_id(event_id)} is still pending")
        try:
            self._provider.destroy_event(entry.handle)
        except (ReleaseFailure, BackendError) as exc:
            self._release_failed(self._events, event_id, entry, exc)
        self._events.remove(event_id)
        queue = entry.queue_entry
        queue.events.discard(event_id)
        entry.program_entry.events.discard(event_id)
        for buffer in entry.buffer_entries:
            buffer.events.discard(event_id)
        queue.owner.events.discard(event_id)
