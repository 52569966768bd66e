"""Gated submission: every kernel waits on a user event (its gate) that the provider opens.

Policy, per queue (one in-order CL command queue):

* At most one submission per queue sits in the native queue behind a
  *closed* gate, and it is always the newest native command (the *tail*).
  Later admissions wait, validated and fully prepared, in the provider's own
  FIFO (*deferred*) and are enqueued natively - behind a fresh closed gate -
  as soon as the tail's gate opens or the tail ends.
* The tail's gate opens as soon as the command before it has started
  running (or ended): so the device always has the next kernel committed and
  runs back to back, while everything after it stays cancellable.
* Progress comes from admission, from a ``CL_RUNNING`` callback armed on the
  command before a waiting tail (only when one is needed; pyopencl runs it on
  its own thread) and from any later provider call on the queue (poll,
  cancel), which also covers a driver that never reports RUNNING.

Why the tail only: PoCL fails every command already queued behind a command
whose gate failed (measured 2026-11-30: the successor ends with status -1),
so a closed gate must never have native successors. A command enqueued
*after* the failure runs normally on both drivers.

Cancellation: a deferred submission is simply dropped (the driver never saw
it); the gated tail is ended by completing its gate with a negative status
(the driver never runs it - proven per device, :mod:`.cancellation`); a
released one cannot be taken back: cancel loses (BUSY) and it runs to its
end. A deferred or gated submission whose deadline has passed ends
Failed(DEADLINE_EXPIRED) the same way. Everything happens under the queue's
lock, so cancellation, expiry, release and completion reach exactly one
terminal state. Enqueues and gate changes are flushed once at the end of each
pump, and released work is flushed before a gated command joins the queue
(rusticl acts only on a flushed queue, and runs a flushed batch as a unit: a
released kernel flushed together with the closed gate behind it never runs).

A submission the policy would release in the same pump that enqueues it is
enqueued without a gate (it is Released from the start); only a submission
that must wait gets one.

In hold mode (the conformance hook) gates open only on an explicit
:meth:`QueueGates.release_held`.
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from accelcore import BackendError, ErrorKind, EventState
from accelcore.refusals import cancellation_lost

from .errors import cl_error, error_from_status, native_errors

if TYPE_CHECKING:
    from .accounting import LiveObjects
    from .handles import OpenCLBuffer, OpenCLProgram, OpenCLQueue

__all__ = ["HoldSwitch", "Phase", "QueueGates", "Submission"]

_CL_COMPLETE = 0
_CL_RUNNING = 1


class Phase(enum.Enum):
    DEFERRED = "deferred"
    """Admitted, prepared, not yet enqueued natively; cancellation wins."""
    GATED = "gated"
    """Enqueued behind a closed gate (the queue's tail); cancellation wins."""
    RELEASED = "released"
    """Gate open: the device owns the run; cancellation loses."""
    ENDED = "ended"
    """A terminal EventState is recorded and never changes."""


class HoldSwitch:
    """Instance-wide test control: while ``on``, gates open only by explicit release."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = False


class Submission:
    """One admitted kernel run: what to enqueue, its gate, its kernel event and its recorded state.

    ``state`` is always written before ``phase`` becomes ENDED, so a lock-free reader that sees
    ENDED also sees the terminal state.
    """

    __slots__ = (
        "arguments",
        "armed",
        "buffers",
        "count_argument",
        "deadline_ns",
        "gate",
        "global_size",
        "kernel_event",
        "local_size",
        "phase",
        "previous",
        "program",
        "queue",
        "release_requested",
        "state",
        "sub_buffers",
    )

    def __init__(
        self,
        queue: OpenCLQueue,
        program: OpenCLProgram,
        buffers: Sequence[OpenCLBuffer],
        sub_buffers: list[Any],
        arguments: Sequence[tuple[int, Any]],
        count_argument: tuple[int, int] | None,
        global_size: tuple[int, int, int],
        local_size: tuple[int, int, int] | None,
        deadline_ns: int | None,
    ) -> None:
        self.queue = queue
        self.program = program
        self.buffers = buffers
        self.sub_buffers = sub_buffers
        self.arguments = arguments
        self.count_argument = count_argument
        self.global_size = global_size
        self.local_size = local_size
        self.deadline_ns = deadline_ns
        self.gate: Any = None
        self.kernel_event: Any = None
        self.previous: Submission | None = None
        self.phase = Phase.DEFERRED
        self.state = EventState.PENDING
        self.armed = False
        self.release_requested = False

    @property
    def native(self) -> bool:
        """Whether the driver holds a kernel command for this submission (gated or not)."""
        return self.kernel_event is not None

    def started(self) -> bool:
        """Whether the driver reports the kernel running or ended (one clGetEventInfo)."""
        return int(self.kernel_event.command_execution_status) <= _CL_RUNNING

    def expired(self, now_ns: int) -> bool:
        return self.deadline_ns is not None and now_ns >= self.deadline_ns


_DEADLINE_MESSAGE = "the submission's deadline passed before it was released to the device; it never ran"


class QueueGates:
    """The gate state of one queue (see the module docstring for the policy)."""

    def __init__(self, cl: Any, context: Any, native_queue: Any, hold: HoldSwitch, live: LiveObjects) -> None:
        self._cl = cl
        self._context = context
        self._native_queue = native_queue
        self._hold = hold
        self._live = live
        self._lock = threading.Lock()
        self._deferred: deque[Submission] = deque()
        self._tail: Submission | None = None
        self._dirty = False
        """Commands or gate changes since the last clFlush (flushed once at the end of a pump)."""
        self._errors = native_errors()
        self._user_event = cl.UserEvent
        self._enqueue_kernel = cl.enqueue_nd_range_kernel
        self._status_info = cl.event_info.COMMAND_EXECUTION_STATUS
        self.callbacks_armed = 0
        """How many RUNNING callbacks the policy needed (for measurements)."""
        self.ungated = 0
        """How many submissions were enqueued without a gate because the policy released them at once."""

    # -- admission and progress -------------------------------------------------

    def admit(self, submission: Submission) -> None:
        """Take a prepared submission; raise the enqueue error if it failed at admission."""
        with self._lock:
            self._deferred.append(submission)
            self._pump_locked()
            if (
                submission.phase is Phase.ENDED
                and submission.kernel_event is None
                and submission.state.error is not None
            ):
                # The driver refused it right now: provably not accepted.
                raise submission.state.error

    def pump(self) -> None:
        """Open and enqueue whatever the policy allows now (never waits)."""
        with self._lock:
            self._pump_locked()

    def _pump_locked(self) -> None:
        self._advance_locked()
        if self._dirty:
            self._flush_locked()

    def _flush_locked(self) -> None:
        self._dirty = False
        try:
            self._native_queue.flush()
        except self._errors as exc:
            tail = self._tail
            if tail is not None and tail.phase is Phase.GATED:
                error = cl_error(exc, "clFlush", "flushing the queue after a gate change")
                self._end_gated(tail, EventState.failed(error))
            # A released command stays the driver's; its event reports how it ends.

    def _may_release_after(self, before: Submission | None) -> bool:
        """Whether a tail behind ``before`` may open now (``before`` started or ended); else arm a
        RUNNING callback on ``before`` so the tail opens when it starts."""
        if before is None or before.phase is not Phase.RELEASED:
            return True
        try:
            if before.started():
                return True
            if not before.armed:
                before.armed = True
                self.callbacks_armed += 1
                before.kernel_event.set_callback(_CL_RUNNING, self._on_started)
        except self._errors:
            return True  # its event cannot be asked or watched: open rather than wait forever
        return False

    def _advance_locked(self) -> None:
        while True:
            tail = self._tail
            if tail is not None and tail.phase is Phase.GATED:
                if tail.deadline_ns is not None and time.monotonic_ns() >= tail.deadline_ns:
                    self._end_gated(tail, _deadline_state())
                    continue
                if not tail.release_requested:
                    if self._hold.on or not self._may_release_after(tail.previous):
                        return
                self._release(tail)
                continue
            if not self._deferred:
                return
            nxt = self._deferred.popleft()
            if nxt.phase is not Phase.DEFERRED:
                continue  # cancelled or expired while deferred
            if nxt.deadline_ns is not None and time.monotonic_ns() >= nxt.deadline_ns:
                nxt.state, nxt.phase = _deadline_state(), Phase.ENDED
                continue
            # Released in this very pass anyway: then a gate would never be observable as closed
            # (no cancel, hold or deadline can act between enqueue and release), so skip it.
            at_once = nxt.release_requested or (not self._hold.on and self._may_release_after(tail))
            if self._enqueue(nxt, gated=not at_once):
                if nxt.gate is not None:
                    nxt.previous = tail  # only a gated tail needs its predecessor (no chain)
                self._tail = nxt

    def _on_started(self, _status: Any) -> None:
        # Runs on a pyopencl callback thread: never let an exception escape there.
        try:
            self.pump()
        except Exception:
            pass

    def _enqueue(self, submission: Submission, *, gated: bool) -> bool:
        """Enqueue the kernel natively, behind a fresh closed gate when ``gated`` (else released).

        Kernel arguments the program's kernel already holds (the same object, the same count)
        are not set again; an argument whose set failed is forgotten so it is set next time.
        """
        program = submission.program
        gate = None
        if gated and self._dirty:
            # Flush what is released before a gated command joins the queue: rusticl runs a flushed
            # batch as a unit, so a released kernel flushed together with a closed gate behind it
            # waits for that gate - which opens only once the kernel started (a deadlock, seen).
            self._flush_locked()
        call = "clCreateUserEvent"
        try:
            if gated:
                gate = self._user_event(self._context)
            with program.lock:
                kernel = program.kernel
                bound = program.bound
                call = "clSetKernelArg"
                for index, value in submission.arguments:
                    if bound.get(index) is not value:
                        bound.pop(index, None)
                        kernel.set_arg(index, value)
                        bound[index] = value
                count = submission.count_argument
                if count is not None:
                    index, elements = count
                    if bound.get(index) != elements:
                        bound.pop(index, None)
                        kernel.set_arg(index, np.uint32(elements))
                        bound[index] = elements
                call = "clEnqueueNDRangeKernel"
                event = self._enqueue_kernel(
                    self._native_queue,
                    kernel,
                    submission.global_size,
                    submission.local_size,
                    wait_for=None if gate is None else [gate],
                )
        except self._errors as exc:
            if gate is not None:
                try:
                    gate.set_status(-1)
                except Exception:
                    pass
            error = cl_error(exc, call, _enqueue_what(call, program.package.entry_point))
            submission.state, submission.phase = EventState.failed(error), Phase.ENDED
            return False
        submission.kernel_event = event
        self._dirty = True
        if gate is None:
            submission.phase = Phase.RELEASED
            self.ungated += 1
            self._live.add("kernel_events")
        else:
            submission.gate = gate
            submission.phase = Phase.GATED
            self._live.add_gated()
        return True

    def _release(self, submission: Submission) -> None:
        try:
            submission.gate.set_status(_CL_COMPLETE)
        except self._errors as exc:
            error = cl_error(exc, "clSetUserEventStatus", "opening a submission gate")
            submission.state, submission.phase = EventState.failed(error), Phase.ENDED
            return
        submission.phase = Phase.RELEASED
        submission.previous = None  # only a gated tail needs its predecessor (no chain of old submissions)
        self._dirty = True

    def _end_gated(self, submission: Submission, state: EventState) -> None:
        """Complete a closed gate negatively: the kernel never runs; record ``state``."""
        submission.state, submission.phase = state, Phase.ENDED
        submission.previous = None
        try:
            submission.gate.set_status(-1)
            self._dirty = False
            self._native_queue.flush()
        except Exception:
            pass  # the recorded state stands; the kernel still cannot run behind an unreleased gate

    # -- contract calls ------------------------------------------------------------

    def poll(self, submission: Submission) -> EventState:
        """Non-blocking: the recorded terminal state, else bounded gate work and one status read."""
        if submission.phase is Phase.ENDED:
            return submission.state
        with self._lock:
            tail = self._tail
            if self._deferred or self._dirty or (tail is not None and tail.phase is Phase.GATED):
                self._pump_locked()
            phase = submission.phase
            if phase is Phase.RELEASED:
                try:
                    status = int(submission.kernel_event.get_info(self._status_info))
                except self._errors as exc:
                    raise cl_error(exc, "clGetEventInfo", "polling a submission") from exc
                if status == _CL_COMPLETE:
                    submission.state, submission.phase = EventState.COMPLETE, Phase.ENDED
                elif status < 0:
                    error = error_from_status(status, "clGetEventInfo", "the kernel ended with an error status")
                    submission.state, submission.phase = EventState.failed(error), Phase.ENDED
            elif phase in (Phase.DEFERRED, Phase.GATED) and submission.expired(time.monotonic_ns()):
                if phase is Phase.GATED:
                    self._end_gated(submission, _deadline_state())
                    self._pump_locked()
                else:
                    submission.state, submission.phase = _deadline_state(), Phase.ENDED
            return submission.state

    def cancel(self, submission: Submission) -> None:
        """Cancel a deferred or gated submission; BUSY when it was released or had ended otherwise."""
        with self._lock:
            if submission.phase is Phase.DEFERRED:
                submission.state, submission.phase = EventState.CANCELLED, Phase.ENDED
                return
            if submission.phase is Phase.GATED:
                self._end_gated(submission, EventState.CANCELLED)
                self._pump_locked()
                return
            if submission.phase is Phase.ENDED and submission.state == EventState.CANCELLED:
                return
        raise cancellation_lost()

    def release_held(self, submission: Submission) -> None:
        """Conformance hook: open this submission's gate as soon as it is the queue's tail.

        A deferred submission behind a held tail stays pending until that tail
        is released or cancelled (the queue runs in order).
        """
        with self._lock:
            if submission.phase in (Phase.DEFERRED, Phase.GATED):
                submission.release_requested = True
                self._pump_locked()

    def waiting(self) -> int:
        """Deferred submissions not yet enqueued natively (for measurements)."""
        with self._lock:
            return sum(1 for s in self._deferred if s.phase is Phase.DEFERRED)


def _deadline_state() -> EventState:
    return EventState.failed(BackendError(ErrorKind.DEADLINE_EXPIRED, _DEADLINE_MESSAGE))


def _enqueue_what(call: str, entry_point: str) -> str:
    """What the provider was doing when ``call`` failed in ``QueueGates._enqueue`` (built on failure only)."""
    if call == "clCreateUserEvent":
        return "creating a submission gate"
    if call == "clSetKernelArg":
        return f"setting the arguments of {entry_point!r}"
    return f"enqueueing {entry_point!r}"
