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
        """Immutable identity, capabilities and limits, stable for the instance's life.

        Bounded synchronous work; never waits for resource progress; allocates no
        backing and copies no bulk content. An error creates nothing and may be retried.
        """
        ...

    def create_context(self, desc: ContextDesc) -> C:
        """Create one context. Non-empty flags are unsupported.

        May block for setup but not for unrelated progress; on error nothing is retained.
        """
        ...

    def destroy_context(self, context: C) -> None:
        """Destroy an empty context (no live children); consumes the handle.

        Must not wait for in-flight work. Raises ReleaseFailure (rejected: retry).
        """
        ...

    def allocate_buffer(self, context: C, desc: BufferDesc) -> AllocatedBuffer[B]:
        """Allocate one exact backing; program-visible requests are directly bindable or fail.

        ``context`` is borrowed for the call only. On error nothing is retained.
        No hidden bounce allocation, no content copy.
        """
        ...

    def write_buffer(self, buffer: B, offset: int, data: ByteSource) -> None:
        """Explicit host→buffer transfer; may block until done.

        Needs TRANSFER_DESTINATION (else PERMISSION_DENIED); past the end → OUT_OF_BOUNDS.
        Segments flow straight into the backing (bounded staging at most). On error the
        range is unspecified but the handle stays live.
        """
        ...

    def read_buffer(self, buffer: B, offset: int, data: ByteSink) -> None:
        """Explicit buffer→host transfer; may block until done.

        Needs TRANSFER_SOURCE (else PERMISSION_DENIED); past the end → OUT_OF_BOUNDS.
        On error the destination must not be published; success initialises every byte.
        """
        ...

    def free_buffer(self, buffer: B) -> None:
        """Release an unreferenced buffer and its exact backing; consumes the handle.

        Raises ReleaseFailure. Never copies or allocates a replacement.
        """
        ...

    def load_program(self, context: C, artifact: ArtifactRef) -> P:
        """Create a resident program from a possibly segmented artifact.

        Format and target are validated before the driver sees bytes; over
        ``max_artifact_bytes`` → RESOURCE_LIMIT; everything retained fits
        ``artifact.resident_bytes``; no reference to the payload is kept.
        """
        ...

    def unload_program(self, program: P) -> None:
        """Release an unreferenced program; consumes the handle. Raises ReleaseFailure."""
        ...

    def create_queue(self, context: C, desc: QueueDesc) -> Q:
        """Create one execution queue. Non-empty flags are unsupported."""
        ...

    def destroy_queue(self, queue: Q) -> None:
        """Release an unreferenced queue without waiting for submitted work. Raises ReleaseFailure."""
        ...

    def submit(self, queue: Q, program: P, bindings: Sequence[BindingRef[B]], timeout: Timeout) -> E:
        """Validate and admit one execution; never waits for it to finish.

        Raises SubmitFailure: Rejected (provably not accepted, retry allowed) or
        Indeterminate (the returned event owns the invocation). Binds each exact
        allocation directly or rejects with INCOMPATIBLE. Callers keep every
        referenced handle alive until the event is terminal and destroyed.
        """
        ...

    def poll_event(self, event: E) -> EventState:
        """Observe the event without blocking; allocates nothing per call.

        Errors do not make the event terminal; a terminal state, once observed, is stable.
        """
        ...

    def destroy_event(self, event: E) -> None:
        """Release a terminal event. A pending event → ReleaseRejected(BUSY) with the event back."""
        ...

    def cancel_event(self, event: E) -> None:
        """Try to make a pending event Cancelled; bounded and non-blocking.

        Returns when cancellation won; raises BUSY when completion won. The default
        raises UNSUPPORTED, conformant only without EVENT_CANCELLATION.
        """
        raise BackendError(ErrorKind.UNSUPPORTED, "this provider does not implement event cancellation")
