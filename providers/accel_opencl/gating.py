"""Submission to the driver through a bounded window; everything newer stays cancellable on the host.

This module owns what is submitted and where: :class:`Submission` (one admitted kernel run), the queue
handle :class:`OpenCLQueue` with its :class:`QueueGates`, and the event handle :class:`OpenCLEvent` (a
submission's token). The resource handles it names (contexts, programs, buffers) are :mod:`.handles`'.

Policy, per queue (one in-order CL command queue):

* The **driver window**: at most ``window`` submissions (default :data:`WINDOW`) are handed to the
  driver and not yet known to have ended (*released*). An admission that finds room is enqueued at
  once, without a gate; later ones wait, validated and fully prepared, in the provider's FIFO
  (*deferred*) - the driver never saw them, so cancelling one always wins - and are enqueued in
  order as the window frees.
* The window frees when a released submission is seen to have ended: by a ``poll_event`` of it (an
  in-order queue has then ended everything released before it too) or, when the window is full and
  work waits, by one status read of the oldest released submission in any pump.
* Progress comes from admission and from any later provider call on the queue (poll, cancel,
  release), and - only while work waits behind a full window - from one ``CL_COMPLETE`` callback
  armed on the submission in the middle of the window (pyopencl runs each callback on a thread of
  its own), so a caller that waits for its last submission does not starve the driver.

Why a window and not one submission at a time: the driver needs queued work to run back to back
(PoCL, Intel: a few microseconds per tiny kernel; rusticl batches a flushed queue), and the contract
lets ``cancel_event`` lose (BUSY, "completion won") for work the device was already given. A gate
per submission cannot keep more than one closed: PoCL fails every command already queued behind a
command whose gate failed (measured 2026-11-30), so the host FIFO is what keeps work cancellable.

Gates (user events) are used in hold mode (the conformance hook): the head of the held FIFO is
enqueued behind a closed gate - the queue's *tail*, always the newest native command - and opens only
on :meth:`QueueGates.release_held` (or once hold mode is off and the window has room); cancelling it
completes the gate with a negative status, which the per-device proof (:mod:`.cancellation`) shows
never runs the kernel.

Cancellation: a deferred submission is dropped; a gated tail's gate fails; a released one cannot be
taken back: cancel loses (BUSY) and it runs to its end. A deferred or gated submission whose deadline
has passed ends Failed(DEADLINE_EXPIRED) the same way. Everything happens under the queue's lock, so
cancellation, expiry, release and completion reach exactly one terminal state.

Enqueues and gate changes are flushed once at the end of each pump; released work is flushed before
a gated command joins the queue (rusticl acts only on a flushed queue, and runs a flushed batch as a
unit: a released kernel flushed together with the closed gate behind it never runs).

Status reads that block (rusticl): rusticl holds a kernel event's lock while the kernel runs, so
``clGetEventInfo`` (and ``clSetEventCallback``) on a running kernel's event waits for the kernel to
end (measured 2026-12-01: 0.1-4 s reads). On such a driver every flushed batch of released kernels
is followed by one marker (``clEnqueueMarkerWithWaitList``, no wait list: it ends after everything
before it); polls and callbacks watch the marker, which never blocks, and read the kernel's own
status only once the marker has ended.

Process exit with a callback armed: pyopencl delivers a callback on a detached C++ thread that takes
the GIL once the driver reports the event; if that happens after the interpreter began finalising,
CPython ends the thread with ``pthread_exit`` inside nanobind's ``noexcept`` GIL acquisition and
libstdc++ calls ``std::terminate``: "terminate called without an active exception", SIGABRT, exit
status 134 (reproduced 2026-12-01 on PoCL, the Intel runtime and rusticl by exiting with more than a
window in flight). An ``atexit`` hook (:func:`quiesce_callbacks`, registered once at import) stops
arming new callbacks and waits, at most :data:`EXIT_WAIT_S`, for the armed ones to have run; a
callback that arrives after that (its kernel still running at the bound) can still abort the process.
"""

from __future__ import annotations

import atexit
import enum
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from accelcore import BackendError, ErrorKind, EventState
from accelcore.contract.refusals import cancellation_lost
from accelcore.contract.waiting import call_interruptibly

from .errors import cl_error, error_from_status, native_errors
from .handles import OpenCLBuffer, OpenCLContext, OpenCLProgram, next_serial

if TYPE_CHECKING:
    from .accounting import LiveObjects

__all__ = [
    "EXIT_WAIT_S",
    "WINDOW",
    "HoldSwitch",
    "Marker",
    "OpenCLEvent",
    "OpenCLQueue",
    "Phase",
    "QueueGates",
    "Submission",
    "callbacks_pending",
    "quiesce_callbacks",
    "wait_for_event",
]

_CL_COMPLETE = 0

WINDOW = 16
"""Default driver window: submissions per queue handed to the driver and not yet seen to end.

Chosen from the sustained-submission runs of 2026-12-01 (docs/opencl.md, "The driver window"):
enough that the driver does not run dry while the caller sleeps between polls (a 50-100 us
back-off sleep is 10-20 tiny PoCL kernels), few enough that a caller with more in flight keeps
all but 16 cancellable."""


EXIT_WAIT_S = 10.0
"""Most seconds the exit hook waits for armed completion callbacks to have run (a runaway kernel
must not keep the process alive: past the bound the process exits and takes its chance)."""

_callbacks_lock = threading.Lock()
_callbacks_pending = 0
"""Callbacks armed whose Python side has not finished (process-wide; under ``_callbacks_lock``)."""
_exiting = False
"""Set by the exit hook: no new callback is armed, and one that runs does not pump."""


_loader: Any = None
"""(clWaitForEvents, clRetainEvent, clReleaseEvent) of the OpenCL ICD loader pyopencl itself loaded, through
ctypes (None: not looked up yet; False: not available)."""


def _ctypes_loader() -> Any:
    global _loader
    if _loader is None:
        import ctypes
        import glob
        import os

        import pyopencl

        here = os.path.dirname(pyopencl.__file__)
        found = sorted(glob.glob(os.path.join(here, ".libs", "libOpenCL*.so*")))  # the wheel's own loader
        try:
            library = ctypes.CDLL(found[0] if found else "libOpenCL.so.1")
            wait, retain, release = library.clWaitForEvents, library.clRetainEvent, library.clReleaseEvent
        except (OSError, AttributeError):
            _loader = False
        else:
            wait.argtypes, wait.restype = (ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p)), ctypes.c_int32
            for function in (retain, release):
                function.argtypes, function.restype = (ctypes.c_void_p,), ctypes.c_int32
            _loader = (wait, retain, release, ctypes.c_void_p)
    return _loader


def _wait_native(loader: Any, pointer: int) -> None:
    """Block in ``clWaitForEvents`` on a retained native event, then release it (nothing of Python's held)."""
    wait, _, release, c_void_p = loader
    try:
        wait(1, c_void_p(pointer))
    finally:
        release(pointer)


def wait_for_event(event: Any, errors: Any) -> None:
    """``clWaitForEvents`` on one pyopencl event, so that Ctrl-C still reaches a caller on the main thread;
    its error status is not raised (the caller's read or ``poll_event`` reports it).

    ``clWaitForEvents`` does not return to Python until the kernel ends, so the wait runs through
    :func:`accelcore.contract.waiting.call_interruptibly`: on the main thread a helper thread blocks in it while the
    caller waits in slices and sees ``KeyboardInterrupt`` at once. What the helper holds is only the native
    event, retained, through ctypes (the ICD loader pyopencl loaded): no Python object of the provider, so an
    interrupted caller's queue, buffers and events are released as usual, and a thread left blocked there by
    a kernel that outlives the interpreter ends quietly (CPython ends it with ``pthread_exit`` when it takes the
    GIL back; inside pyopencl's nanobind ``Event.wait`` that unwinds through a ``noexcept`` frame and aborts:
    "terminate called without an active exception", seen 2026-12-04). Falls back to ``Event.wait`` on the
    calling thread where the loader cannot be opened.
    """
    loader = _ctypes_loader()
    if not loader:
        try:
            event.wait()
        except errors:
            pass
        return
    pointer = int(event.int_ptr)
    loader[1](pointer)  # clRetainEvent: the helper's own reference, released when its wait returns
    call_interruptibly(_wait_native, loader, pointer)


def callbacks_pending() -> int:
    """How many armed completion callbacks have not yet run to their end (this process)."""
    with _callbacks_lock:
        return _callbacks_pending


def quiesce_callbacks(limit_s: float | None = None) -> bool:
    """Exit hook: arm no more callbacks and wait, at most ``limit_s`` (default :data:`EXIT_WAIT_S`),
    for the armed ones to have run, sleeping (the GIL free) between looks. True when none is left;
    False (with one line on stderr) when some are still armed at the bound."""
    global _exiting
    with _callbacks_lock:
        _exiting = True
    limit = EXIT_WAIT_S if limit_s is None else limit_s
    deadline = time.monotonic() + limit
    pause = 0.0005
    while True:
        left = callbacks_pending()
        if not left:
            # The last callback thread may still be between its count and handing the GIL back
            # (a thread switch can fall there): give it the GIL once more before finalisation.
            time.sleep(0.002)
            return True
        if time.monotonic() >= deadline:
            try:
                sys.stderr.write(
                    f"accel_opencl: exiting with {left} OpenCL completion callback(s) still armed after "
                    f"{limit:g} s (a kernel still running); if the driver delivers one during interpreter "
                    "shutdown the process aborts\n"
                )
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.01)


atexit.register(quiesce_callbacks)


class Phase(enum.Enum):
    DEFERRED = "deferred"
    """Admitted, prepared, not yet enqueued natively; cancellation wins."""
    GATED = "gated"
    """Enqueued behind a closed gate (the queue's tail, hold mode only); cancellation wins."""
    RELEASED = "released"
    """Handed to the driver (enqueued without a gate, or its gate opened); cancellation loses."""
    ENDED = "ended"
    """A terminal EventState is recorded and never changes."""


class HoldSwitch:
    """Instance-wide test control: while ``on``, gates open only by explicit release."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = False


class Marker:
    """A marker enqueued after one flushed batch of released kernels, shared by them; ``users``
    counts the submissions still holding it (the accounting drops it with the last one)."""

    __slots__ = ("event", "users")

    def __init__(self, event: Any, users: int) -> None:
        self.event = event
        self.users = users


class Submission:
    """One admitted kernel run: what to enqueue, its gate, its kernel event and its recorded state.

    ``state`` is always written before ``phase`` becomes ENDED, so a lock-free reader that sees
    ENDED also sees the terminal state.
    """

    __slots__ = (
        "arguments",
        "buffers",
        "count_argument",
        "deadline_ns",
        "gate",
        "global_size",
        "kernel_event",
        "local_size",
        "marker",
        "phase",
        "program",
        "queue",
        "release_requested",
        "seq",
        "state",
        "sub_buffers",
    )

    def __init__(
        self,
        queue: OpenCLQueue,
        program: OpenCLProgram,
        buffers: Sequence[OpenCLBuffer],
        sub_buffers: Sequence[Any],
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
        self.marker: Marker | None = None
        """Where status reads block (rusticl): the marker enqueued after this kernel's flushed batch."""
        self.seq = 0
        """Release order on the queue (1, 2, ...): the window retires by it."""
        self.phase = Phase.DEFERRED
        self.state = EventState.PENDING
        self.release_requested = False

    @property
    def native(self) -> bool:
        """Whether the driver holds a kernel command for this submission (gated or not)."""
        return self.kernel_event is not None

    def expired(self, now_ns: int) -> bool:
        return self.deadline_ns is not None and now_ns >= self.deadline_ns


@dataclass(eq=False)
class OpenCLQueue:
    """An in-order cl.CommandQueue and its submission gates."""

    owner: int
    context: OpenCLContext
    native: Any
    gates: QueueGates
    serial: int = field(default_factory=next_serial)
    in_flight: int = 0
    live: bool = True

    def __repr__(self) -> str:
        return f"<OpenCLQueue #{self.serial} live={self.live} events={self.in_flight}>"


class OpenCLEvent:
    """A submission's token; the state machine lives in :class:`Submission`.

    A plain slotted class (one is made per submission; a dataclass with a serial factory costs more).
    """

    __slots__ = ("live", "owner", "serial", "submission")

    def __init__(self, owner: int, submission: Submission) -> None:
        self.owner = owner
        self.submission = submission
        self.serial = next_serial()
        self.live = True

    def __repr__(self) -> str:
        return f"<OpenCLEvent #{self.serial} {self.submission.phase.name}>"


_DEFERRED = Phase.DEFERRED
_RELEASED = Phase.RELEASED
_ENDED = Phase.ENDED

_DEADLINE_MESSAGE = "the submission's deadline passed before it was released to the device; it never ran"


class QueueGates:
    """The submission state of one queue (see the module docstring for the policy)."""

    def __init__(
        self,
        cl: Any,
        context: Any,
        native_queue: Any,
        hold: HoldSwitch,
        live: LiveObjects,
        *,
        window: int = WINDOW,
        markers: bool = False,
    ) -> None:
        self._cl = cl
        self._context = context
        self._native_queue = native_queue
        self._hold = hold
        self._live = live
        self._live_lock, self._live_counts = live.lock, live.counts
        self._lock = threading.Lock()
        self._deferred: deque[Submission] = deque()
        self._released: deque[Submission] = deque()
        """Released submissions not yet seen to end, oldest first (the driver window)."""
        self._tail: Submission | None = None
        """The gated submission (hold mode), always the newest native command; else None."""
        self._seq = 0
        self._dirty = False
        """Commands or gate changes since the last clFlush (flushed once at the end of a pump)."""
        self._unmarked: list[Submission] = []
        """Released since the last flush, waiting for their batch's marker (``markers`` only)."""
        self._armed = False
        self.window = max(1, int(window))
        """Most submissions handed to the driver and not yet seen to end (see :data:`WINDOW`)."""
        self.markers = markers
        """Status reads of a running kernel block on this driver: watch a marker instead."""
        self._errors = native_errors()
        self._user_event = cl.UserEvent
        self._enqueue_kernel = cl.enqueue_nd_range_kernel
        self._enqueue_marker = cl.enqueue_marker
        self._status_info = cl.event_info.COMMAND_EXECUTION_STATUS
        self.callbacks_armed = 0
        """How many CL_COMPLETE callbacks the policy armed (work waited behind a full window)."""
        self.ungated = 0
        """How many submissions were enqueued without a gate (every release outside hold mode)."""
        self.markers_made = 0
        """How many markers were enqueued (``markers`` drivers only)."""

    # -- admission and progress -------------------------------------------------

    def admit(self, submission: Submission) -> None:
        """Take a prepared submission; raise the enqueue error if it failed at admission."""
        with self._lock:
            if not self._deferred and self._tail is None and not self._hold.on and self._room_locked():
                # Nothing waits and the window has room (the common case): what _advance_open_locked
                # would do for this one submission, without the FIFO round trip.
                if submission.deadline_ns is not None and time.monotonic_ns() >= submission.deadline_ns:
                    submission.state, submission.phase = _deadline_state(), Phase.ENDED
                else:
                    self._enqueue_released(submission)
                if self._dirty:
                    self._flush_locked()
            else:
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
        """Release and enqueue whatever the policy allows now (never waits)."""
        with self._lock:
            self._pump_locked()

    def _pump_locked(self) -> None:
        self._advance_locked()
        if self._dirty:
            self._flush_locked()
        if self._deferred and not self._armed and not self._hold.on:
            self._arm_locked()

    def _flush_locked(self) -> None:
        self._dirty = False
        unmarked = self._unmarked
        if unmarked:
            self._unmarked = []
            try:
                marker = self._enqueue_marker(self._native_queue)
            except self._errors:
                marker = None  # those polls read the kernel events themselves (they may block)
            if marker is not None:
                self.markers_made += 1
                self._live.add("marker_events")
                watch = Marker(marker, len(unmarked))
                for submission in unmarked:
                    submission.marker = watch
        try:
            self._native_queue.flush()
        except self._errors as exc:
            tail = self._tail
            if tail is not None and tail.phase is Phase.GATED:
                error = cl_error(exc, "clFlush", "flushing the queue after a gate change")
                self._end_gated(tail, EventState.failed(error))
            # A released command stays the driver's; its event reports how it ends.

    def _room_locked(self) -> bool:
        """Whether the window has room; when it is full, one status read of the oldest released
        submission first (it may have ended without anyone polling it)."""
        released = self._released
        while released and released[0].phase is not Phase.RELEASED:
            released.popleft()
        if len(released) < self.window:
            return True
        try:
            ended = self._read_locked(released[0])
        except BackendError:
            ended = True  # its event cannot be read: stop counting it rather than wait forever
        if ended:
            released.popleft()
        return ended

    def _retire_locked(self, ended: Submission) -> None:
        """``ended`` was seen to end: it and everything released before it left the driver."""
        released, seq = self._released, ended.seq
        while released and released[0].seq <= seq:
            released.popleft()

    def _advance_locked(self) -> None:
        hold = self._hold.on
        if self._tail is None and not hold:
            self._advance_open_locked()
            return
        while True:
            tail = self._tail
            if tail is not None:
                if tail.phase is not Phase.GATED:
                    self._tail = None
                    continue
                if tail.deadline_ns is not None and time.monotonic_ns() >= tail.deadline_ns:
                    self._end_gated(tail, _deadline_state())
                    continue
                if not tail.release_requested and (hold or not self._room_locked()):
                    return
                self._release(tail)
                continue
            deferred = self._deferred
            if not deferred:
                return
            nxt = deferred[0]
            if nxt.phase is not Phase.DEFERRED:
                deferred.popleft()  # cancelled or expired while deferred
                continue
            if nxt.deadline_ns is not None and time.monotonic_ns() >= nxt.deadline_ns:
                deferred.popleft()
                nxt.state, nxt.phase = _deadline_state(), Phase.ENDED
                continue
            if nxt.release_requested or not hold:
                if not nxt.release_requested and not self._room_locked():
                    return
                deferred.popleft()
                self._enqueue(nxt, gated=False)
                continue
            # Hold mode: the head waits natively behind a closed gate, the rest on the host.
            deferred.popleft()
            if self._enqueue(nxt, gated=True):
                self._tail = nxt

    def _advance_open_locked(self) -> None:
        """:meth:`_advance_locked` without a gated tail and outside hold mode (the common case):
        enqueue deferred work in order while the window has room; nothing is gated here."""
        deferred, released, window = self._deferred, self._released, self.window
        while deferred:
            nxt = deferred[0]
            if nxt.phase is not _DEFERRED:
                deferred.popleft()  # cancelled or expired while deferred
                continue
            if nxt.deadline_ns is not None and time.monotonic_ns() >= nxt.deadline_ns:
                deferred.popleft()
                nxt.state, nxt.phase = _deadline_state(), Phase.ENDED
                continue
            if not nxt.release_requested:
                while released and released[0].phase is not _RELEASED:
                    released.popleft()
                if len(released) >= window and not self._room_locked():
                    return
            deferred.popleft()
            self._enqueue_released(nxt)

    def _arm_locked(self) -> None:
        """Work waits behind a full window: have the driver wake the pump once the middle of the
        window has ended (one pyopencl callback thread per arming)."""
        released = self._released
        if len(released) < self.window or not any(s.phase is Phase.DEFERRED for s in self._deferred):
            return
        target = released[len(released) // 2]
        watch = target.kernel_event
        if self.markers:
            watch = None if target.marker is None else target.marker.event
        if watch is None or target.phase is not Phase.RELEASED:
            return
        global _callbacks_pending
        with _callbacks_lock:
            if _exiting:
                return  # the process is exiting: see quiesce_callbacks
            try:
                watch.set_callback(_CL_COMPLETE, self._on_ended)
            except self._errors:
                return  # no callback: progress comes from the next provider call
            _callbacks_pending += 1
        self._armed = True
        self.callbacks_armed += 1

    def _on_ended(self, _status: Any) -> None:
        # Runs on a pyopencl callback thread: never let an exception escape there.
        global _callbacks_pending
        try:
            with self._lock:
                self._armed = False
                if not _exiting:
                    self._pump_locked()
        except Exception:
            pass
        finally:
            with _callbacks_lock:
                _callbacks_pending -= 1

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
            # waits for that gate (a deadlock, seen 2026-11-30).
            self._flush_locked()
        call = "clCreateUserEvent"
        try:
            if gated:
                gate = self._user_event(self._context)
            with program.lock:
                kernel = program.kernel
                call = "clSetKernelArg"
                _set_arguments(kernel, program.bound, submission)
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
            self.ungated += 1
            self._live.add("kernel_events")
            self._released_locked(submission)
        else:
            submission.gate = gate
            submission.phase = Phase.GATED
            self._live.add_gated()
        return True

    def _enqueue_released(self, submission: Submission) -> None:
        """:meth:`_enqueue` without a gate (the window's release of deferred work); the same
        argument memory and error handling, fewer steps."""
        program = submission.program
        call = "clSetKernelArg"
        try:
            with program.lock:
                kernel = program.kernel
                _set_arguments(kernel, program.bound, submission)
                call = "clEnqueueNDRangeKernel"
                event = self._enqueue_kernel(self._native_queue, kernel, submission.global_size, submission.local_size)
        except self._errors as exc:
            error = cl_error(exc, call, _enqueue_what(call, program.package.entry_point))
            submission.state, submission.phase = EventState.failed(error), Phase.ENDED
            return
        submission.kernel_event = event
        self._dirty = True
        self.ungated += 1
        with self._live_lock:
            self._live_counts["kernel_events"] += 1
        self._seq += 1
        submission.seq = self._seq
        submission.phase = _RELEASED
        self._released.append(submission)
        if self.markers:
            self._unmarked.append(submission)

    def _released_locked(self, submission: Submission) -> None:
        self._seq += 1
        submission.seq = self._seq
        submission.phase = Phase.RELEASED
        self._released.append(submission)
        if self.markers:
            self._unmarked.append(submission)

    def _release(self, submission: Submission) -> None:
        try:
            submission.gate.set_status(_CL_COMPLETE)
        except self._errors as exc:
            error = cl_error(exc, "clSetUserEventStatus", "opening a submission gate")
            submission.state, submission.phase = EventState.failed(error), Phase.ENDED
            return
        self._tail = None
        self._released_locked(submission)
        self._dirty = True

    def _end_gated(self, submission: Submission, state: EventState) -> None:
        """Complete a closed gate negatively: the kernel never runs; record ``state``."""
        submission.state, submission.phase = state, Phase.ENDED
        if self._tail is submission:
            self._tail = None
        try:
            submission.gate.set_status(-1)
        except Exception:
            pass  # the recorded state stands; the kernel still cannot run behind an unreleased gate
        self._flush_locked()

    def _read_locked(self, submission: Submission) -> bool:
        """One non-blocking status read of a released submission; record a terminal state.

        Where status reads block (``markers``), the batch's marker is read first and the kernel's
        own event only once the marker has ended. Raises the read's error as a BackendError.
        """
        try:
            if self.markers:
                marker = submission.marker
                if marker is not None and int(marker.event.get_info(self._status_info)) > 0:
                    return False
            status = int(submission.kernel_event.get_info(self._status_info))
        except self._errors as exc:
            raise cl_error(exc, "clGetEventInfo", "polling a submission") from exc
        if status == _CL_COMPLETE:
            submission.state, submission.phase = EventState.COMPLETE, Phase.ENDED
        elif status < 0:
            error = error_from_status(status, "clGetEventInfo", "the kernel ended with an error status")
            submission.state, submission.phase = EventState.failed(error), Phase.ENDED
        else:
            return False
        return True

    # -- contract calls ------------------------------------------------------------

    def poll(self, submission: Submission) -> EventState:
        """Non-blocking: the recorded terminal state, else one status read and bounded pump work."""
        if submission.phase is Phase.ENDED:
            return submission.state
        with self._lock:
            phase = submission.phase
            if phase is Phase.RELEASED:
                if self._read_locked(submission):
                    self._retire_locked(submission)
                if self._deferred or self._dirty or self._tail is not None:
                    self._pump_locked()
                return submission.state
            if self._deferred or self._dirty or self._tail is not None:
                self._pump_locked()
            phase = submission.phase
            if phase in (Phase.DEFERRED, Phase.GATED) and submission.expired(time.monotonic_ns()):
                if phase is Phase.GATED:
                    self._end_gated(submission, _deadline_state())
                    self._pump_locked()
                else:
                    submission.state, submission.phase = _deadline_state(), Phase.ENDED
            return submission.state

    def wait(self, submission: Submission) -> bool:
        """Block in ``clWaitForEvents`` (pyopencl releases the GIL) until a released submission's
        native work has ended: its kernel event, or on ``markers`` drivers its batch's marker (it
        ends right after the kernel, and a poll reads it first). False at once, without blocking,
        for a deferred or gated submission (the driver does not hold it, or holds it behind a gate
        only the host opens) and for one already ended. After the wait, one status read as a poll
        makes it (it records what the driver says, so the next poll needs no lock); the wait's own
        error is not raised (a failed kernel is reported by that read or the next poll). No
        timeout: OpenCL has none (the engine asks only when neither its wait nor the submission
        has a deadline).
        """
        if submission.phase is not Phase.RELEASED:
            return False
        with self._lock:
            if submission.phase is not Phase.RELEASED:
                return False
            if self._dirty:
                self._flush_locked()  # never wait on work the driver was not told to start
            watch = submission.kernel_event
            marker = submission.marker
            if self.markers and marker is not None and marker.event is not None:
                watch = marker.event
        if watch is None:
            return False
        wait_for_event(watch, self._errors)
        with self._lock:
            if submission.phase is Phase.RELEASED:
                try:
                    if self._read_locked(submission):
                        self._retire_locked(submission)
                except BackendError:
                    pass  # poll_event meets the same error and reports it
            if self._deferred or self._dirty or self._tail is not None:
                self._pump_locked()  # the window may have room now, as after a poll
        return True

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
        """Conformance hook: hand this submission to the driver as soon as it is the queue's head
        (the window does not hold it back).

        A deferred submission behind a held tail stays pending until that tail is released or
        cancelled (the queue runs in order).
        """
        with self._lock:
            if submission.phase in (Phase.DEFERRED, Phase.GATED):
                submission.release_requested = True
                self._pump_locked()

    def waiting(self) -> int:
        """Deferred submissions not yet enqueued natively (for measurements and tests)."""
        with self._lock:
            return sum(1 for s in self._deferred if s.phase is Phase.DEFERRED)

    def in_window(self) -> int:
        """Released submissions not yet seen to end (for measurements and tests)."""
        with self._lock:
            return sum(1 for s in self._released if s.phase is Phase.RELEASED)


def _deadline_state() -> EventState:
    return EventState.failed(BackendError(ErrorKind.DEADLINE_EXPIRED, _DEADLINE_MESSAGE))


def _set_arguments(kernel: Any, bound: dict[int, Any], submission: Submission) -> None:
    """Set the submission's kernel arguments that differ from what ``kernel`` holds (``bound``: index → the
    value last set; an entry is dropped before its clSetKernelArg so a failed call leaves it unknown).
    Called with the program's lock held."""
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


def _enqueue_what(call: str, entry_point: str) -> str:
    """What the provider was doing when ``call`` failed in ``QueueGates._enqueue`` (built on failure only)."""
    if call == "clCreateUserEvent":
        return "creating a submission gate"
    if call == "clSetKernelArg":
        return f"setting the arguments of {entry_point!r}"
    return f"enqueueing {entry_point!r}"
