"""The ``Accelerator`` contract: native accelerator lifecycle over provider-owned handles.

Every provider implements this protocol; the command engine and the
conformance suite drive any implementation through it. Borrowed arguments are
valid only for the call; destructive methods consume handles; the only calls
that move buffer contents are ``write_buffer`` and ``read_buffer``; ``submit``
binds the exact allocation or raises INCOMPATIBLE, never a hidden copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from .buffers import AllocatedBuffer, BufferDesc
from .device import ContextDesc, DeviceInfo, QueueDesc
from .errors import BackendError, ErrorKind
from .ports import ByteSink, ByteSource
from .program import ArtifactRef
from .submission import BindingRef, EventState, Timeout

__all__ = ["Accelerator"]

C = TypeVar("C")
B = TypeVar("B")
P = TypeVar("P")
Q = TypeVar("Q")
E = TypeVar("E")


class Accelerator(Protocol[C, B, P, Q, E]):
    """Generic over the handle types Context, Buffer, Program, Queue, Event.

    Failures: resource calls raise :class:`~accelcore.BackendError`; releases raise
    :class:`~accelcore.ReleaseFailure` (rejected → handle returned, indeterminate →
    discard the instance); ``submit`` raises :class:`~accelcore.SubmitFailure`.
    """

    def device_info(self) -> DeviceInfo:
        """Immutable identity, capabilities and limits.

        Ownership: nothing changes hands; a success stays identical for the instance's lifetime.
        Progress: bounded synchronous discovery; never waits for resource progress.
        Failure: creates nothing, may be retried. Copies: allocates no backing, copies no bulk content.
        """
        ...

    def create_context(self, desc: ContextDesc) -> C:
        """Create one context from prevalidated intent; returns an owned handle.

        Ownership: ``desc`` is taken by value; non-empty flags → UNSUPPORTED.
        Progress: setup may block, but never on unrelated resource progress.
        Failure: nothing retained, retry allowed. Copies: bookkeeping only, no buffer content.
        """
        ...

    def destroy_context(self, context: C) -> None:
        """Destroy an empty context; consumes the handle.

        Ownership: the context has no live children (the host checks). Progress: may block,
        never waits for children or in-flight work. Failure: ReleaseRejected returns the handle
        for retry; ReleaseIndeterminate invalidates it. Copies: none.
        """
        ...

    def allocate_buffer(self, context: C, desc: BufferDesc) -> AllocatedBuffer[B]:
        """Allocate one exact backing for ``desc``; returns the handle and its honest BufferInfo.

        Ownership: ``context`` borrowed for the call; the result borrows nothing. Progress: may block.
        Failure: no backing retained, retry allowed. Copies: program-visible requests get directly
        bindable backing or fail — no submission-time bounce allocation, no content copy.
        """
        ...

    def write_buffer(self, buffer: B, offset: int, data: ByteSource) -> None:
        """Explicit host→buffer transfer of ``data`` at ``offset``.

        Ownership: buffer and ``data`` borrowed for the call, never retained. Progress: may block
        until done. Failure: needs TRANSFER_DESTINATION (else PERMISSION_DENIED); past the end →
        OUT_OF_BOUNDS; on error the range is unspecified, the handle stays live.
        Copies: the one explicit copy; segments flow into the backing (bounded staging at most).
        """
        ...

    def read_buffer(self, buffer: B, offset: int, data: ByteSink) -> None:
        """Explicit buffer→host transfer into ``data`` from ``offset``.

        Ownership: buffer and ``data`` borrowed for the call, never retained. Progress: may block
        until done. Failure: needs TRANSFER_SOURCE (else PERMISSION_DENIED); past the end →
        OUT_OF_BOUNDS; on error the destination must not be published, the buffer is unchanged.
        Copies: the one explicit copy; success initialises every destination byte.
        """
        ...

    def free_buffer(self, buffer: B) -> None:
        """Release an unreferenced buffer and its exact backing; consumes the handle.

        Ownership: not bound to any live event. Progress: may block, never waits for references.
        Failure: ReleaseRejected returns the handle; ReleaseIndeterminate invalidates it.
        Copies: none, and no replacement is allocated.
        """
        ...

    def load_program(self, context: C, artifact: ArtifactRef) -> P:
        """Create a resident program from a possibly segmented artifact; returns an owned handle.

        Ownership: context and artifact borrowed for the call; no reference to the payload is kept.
        Progress: may block. Failure: format/target validated before the driver sees bytes; over
        ``max_artifact_bytes`` → RESOURCE_LIMIT; nothing retained on error, retry allowed.
        Copies: everything retained fits ``artifact.resident_bytes``; no artifact-sized coalescing.
        """
        ...

    def unload_program(self, program: P) -> None:
        """Release an unreferenced program; consumes the handle.

        Ownership: not referenced by any live event. Progress: may block, never waits for in-flight
        references. Failure: ReleaseRejected returns the handle; ReleaseIndeterminate invalidates it.
        Copies: none, and no replacement state is allocated.
        """
        ...

    def create_queue(self, context: C, desc: QueueDesc) -> Q:
        """Create one execution queue; returns an owned handle.

        Ownership: ``context`` borrowed for the call; non-empty flags → UNSUPPORTED.
        Progress: setup may block. Failure: nothing retained, retry allowed.
        Copies: bookkeeping only; no program or buffer content.
        """
        ...

    def destroy_queue(self, queue: Q) -> None:
        """Release an unreferenced execution queue; consumes the handle.

        Ownership: not referenced by any live event. Progress: may block, never waits for submitted
        work. Failure: ReleaseRejected returns the handle; ReleaseIndeterminate invalidates it.
        Copies: none.
        """
        ...

    def submit(self, queue: Q, program: P, bindings: Sequence[BindingRef[B]], timeout: Timeout) -> E:
        """Validate and admit one execution; returns its event without waiting for it.

        Ownership: queue, program, buffers and ``bindings`` borrowed for admission only; the caller
        keeps every referenced handle alive until the event is terminal and destroyed.
        Progress: validation and admission only, never waits for execution.
        Failure: SubmitRejected (provably not accepted, retry allowed) or SubmitIndeterminate (the
        returned event owns the invocation; never retry it). Copies: binds each exact allocation
        directly or rejects with INCOMPATIBLE — no hidden bounce buffer.
        """
        ...

    def poll_event(self, event: E) -> EventState:
        """Observe the event's state.

        Ownership: the event is borrowed and stays live. Progress: bounded and non-blocking.
        Failure: an error does not make the event terminal; a terminal state, once observed, is
        stable. Copies: allocates nothing per call, copies no bulk content.
        """
        ...

    def destroy_event(self, event: E) -> None:
        """Release a terminal event and its invocation state; consumes the handle.

        Ownership: referenced handles stay live until this succeeds. Progress: never waits for a
        pending event. Failure: a pending event → ReleaseRejected(BUSY) with the event back;
        ReleaseIndeterminate invalidates it. Copies: none.
        """
        ...

    def cancel_event(self, event: E) -> None:
        """Try to make a pending event Cancelled.

        Ownership: the event is borrowed and stays live. Progress: bounded, non-blocking; races
        completion and exactly one wins. Failure: returning means cancellation won; BUSY means
        completion won (poll it). The default raises UNSUPPORTED, conformant only without
        EVENT_CANCELLATION. Copies: allocates nothing per call.
        """
        raise BackendError(ErrorKind.UNSUPPORTED, "this provider does not implement event cancellation")
