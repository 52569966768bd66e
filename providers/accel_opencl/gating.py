"""Gated submission: every kernel waits on a user event that the provider opens.

Release policy (per queue): a submission's gate opens at admission when no
earlier submission on its queue is *released but not yet started*;
otherwise it stays closed and opens as soon as that predecessor starts
running (or ends). So at most one submission per queue is committed but idle
on the device - it runs back-to-back after the current one - and everything
behind it stays cancellable. Gates open on:

* admission (``submit``),
* a ``CL_RUNNING`` callback armed on the predecessor (only when a submission
  actually waits behind one that has not started; pyopencl runs it on a
  thread of its own),
* any later provider call on the queue (``poll_event``, ``cancel_event``),
  which covers a driver that never reports RUNNING for a failed command.

Cancellation completes a closed gate with a negative status (the driver then
never runs the kernel: proven per device by :mod:`.cancellation`); a released
gate cannot be taken back, so cancel then loses (BUSY) and the event runs to
its end. A gated submission whose deadline has passed is failed the same way
with DEADLINE_EXPIRED. All of this happens under the queue's lock, so
cancellation, expiry, release and completion reach exactly one terminal
state. After every gate change the queue is flushed (rusticl only acts on
a flushed queue).

In hold mode (the conformance hook) gates open only through
:meth:`QueueGates.release_held`.
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from accelcore import BackendError, ErrorKind, EventState

from .errors import cl_call, error_from_status

if TYPE_CHECKING:
    from .handles import OpenCLBuffer, OpenCLProgram, OpenCLQueue

__all__ = ["HoldSwitch", "Phase", "QueueGates", "Submission"]

_CL_COMPLETE = 0
_CL_RUNNING = 1


class Phase(enum.Enum):
    GATED = "gated"
    """Gate closed: the kernel cannot start; cancellation wins."""
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
    """One admitted kernel run: its gate, its kernel event and its recorded state."""

    __slots__ = (
        "armed",
        "buffers",
        "deadline_ns",
        "gate",
        "kernel_event",
        "phase",
        "program",
        "queue",
        "state",
        "sub_buffers",
    )

    def __init__(
        self,
        queue: OpenCLQueue,
        program: OpenCLProgram,
        buffers: list[OpenCLBuffer],
        sub_buffers: list[Any],
        gate: Any,
        kernel_event: Any,
        deadline_ns: int | None,
    ) -> None:
        self.queue = queue
        self.program = program
        self.buffers = buffers
        self.sub_buffers = sub_buffers
        self.gate = gate
        self.kernel_event = kernel_event
        self.deadline_ns = deadline_ns
        self.phase = Phase.GATED
        self.state = EventState.PENDING
        self.armed = False

    def started(self) -> bool:
        """Whether the driver reports the kernel running or ended (one clGetEventInfo)."""
        return int(self.kernel_event.command_execution_status) <= _CL_RUNNING


_DEADLINE_MESSAGE = "the submission's deadline passed while it was still gated; it never ran"


class QueueGates:
    """The gate state of one queue (see the module docstring for the policy)."""

    def __init__(self, native_queue: Any, hold: HoldSwitch) -> None:
        self._native_queue = native_queue
        self._hold = hold
        self._lock = threading.Lock()
        self._waiting: deque[Submission] = deque()
        self._last_released: Submission | None = None
        self.callbacks_armed = 0
        """How many RUNNING callbacks the policy needed (for measurements)."""

    # -- admission and progress -------------------------------------------------

    def admit(self, submission: Submission) -> None:
        """Queue a freshly enqueued (gated) submission and open what the policy allows."""
        with self._lock:
            self._waiting.append(submission)
            self._pump_locked()

    def pump(self) -> None:
        """Open every gate the policy allows now (never waits)."""
        with self._lock:
            self._pump_locked()

    def _pump_locked(self) -> None:
        while self._waiting:
            head = self._waiting[0]
            if head.phase is not Phase.GATED:
                self._waiting.popleft()
                continue
            if head.deadline_ns is not None and time.monotonic_ns() >= head.deadline_ns:
                self._waiting.popleft()
                self._end_gated(head, EventState.failed(BackendError(ErrorKind.DEADLINE_EXPIRED, _DEADLINE_MESSAGE)))
                continue
            if self._hold.on:
                return
            last = self._last_released
            if last is not None and last.phase is Phase.RELEASED and not last.started():
                if not last.armed:
                    last.armed = True
                    self.callbacks_armed += 1
                    last.kernel_event.set_callback(_CL_RUNNING, self._on_started)
                return
            self._waiting.popleft()
            self._release(head)

    def _on_started(self, _status: Any) -> None:
        # Runs on a pyopencl callback thread: never let an exception escape there.
        try:
            self.pump()
        except Exception:
            pass

    def _release(self, submission: Submission) -> None:
        try:
            with cl_call("clSetUserEventStatus", "opening a submission gate"):
                submission.gate.set_status(_CL_COMPLETE)
            submission.phase = Phase.RELEASED
            self._last_released = submission
            with cl_call("clFlush", "flushing the queue after opening a gate"):
                self._native_queue.flush()
        except BackendError as error:
            submission.phase = Phase.ENDED
            submission.state = EventState.failed(error)

    def _end_gated(self, submission: Submission, state: EventState) -> None:
        """Complete a closed gate negatively: the kernel never runs; record ``state``."""
        submission.phase = Phase.ENDED
        submission.state = state
        try:
            submission.gate.set_status(-1)
            self._native_queue.flush()
        except Exception:
            pass  # the recorded state stands; the kernel still cannot run behind an unreleased gate

    # -- contract calls ------------------------------------------------------------

    def poll(self, submission: Submission) -> EventState:
        """Non-blocking: the recorded terminal state, else one status read."""
        if submission.phase is Phase.ENDED:
            return submission.state
        with self._lock:
            if submission.phase is Phase.GATED or self._waiting:
                self._pump_locked()
            if submission.phase is Phase.RELEASED:
                status = int(submission.kernel_event.command_execution_status)
                if status == _CL_COMPLETE:
                    submission.phase = Phase.ENDED
                    submission.state = EventState.COMPLETE
                elif status < 0:
                    submission.phase = Phase.ENDED
                    submission.state = EventState.failed(
                        error_from_status(status, "clGetEventInfo", "the kernel ended with an error status")
                    )
            return submission.state

    def cancel(self, submission: Submission) -> None:
        """Cancel a gated submission; BUSY when it was already released or ended otherwise."""
        with self._lock:
            if submission.phase is Phase.GATED:
                self._end_gated(submission, EventState.CANCELLED)
                self._pump_locked()
                return
            if submission.phase is Phase.ENDED and submission.state == EventState.CANCELLED:
                return
        raise BackendError(
            ErrorKind.BUSY,
            "cancellation lost: the submission was already released to the device "
            "(or had ended); poll it for its final state",
        )

    def release_held(self, submission: Submission) -> None:
        """Hook for the conformance suite: open this gate now, even in hold mode."""
        with self._lock:
            if submission.phase is Phase.GATED:
                try:
                    self._waiting.remove(submission)
                except ValueError:
                    pass
                self._release(submission)

    def pending(self) -> int:
        with self._lock:
            return len(self._waiting)
