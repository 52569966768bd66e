"""``FaultAccelerator``: scripted fault injection around any provider, with resource accounting.

It forwards every call to ``inner`` unchanged (handles are the inner
provider's own), except the calls a :class:`Fault` of its script names: the
n-th such call (counted from when the fault was added) returns the scripted
outcome instead. It counts live native resources per kind as seen through it,
plus ``indeterminate`` ones (handles whose release outcome was indeterminate).

Honest about what it is: it never pretends a fault happened in the driver;
injected errors say "injected" and carry EXTERNAL domain :data:`FAULT_DOMAIN`
where no standard kind fits.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..contract.buffers import AllocatedBuffer, BufferDesc
from ..contract.device import ContextDesc, DeviceInfo, QueueDesc
from ..contract.errors import (
    BackendError,
    ErrorKind,
    ReleaseFailure,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitIndeterminate,
    SubmitRejected,
)
from ..contract.ports import ByteSink, ByteSource
from ..contract.program import ArtifactRef
from ..contract.submission import BindingRef, EventState, Timeout

__all__ = ["BOUNDARIES", "FAULT_DOMAIN", "Fault", "FaultAccelerator", "FaultKind"]

FAULT_DOMAIN = 0xFA17
"""EXTERNAL error domain of injected indeterminate outcomes."""


class FaultKind(enum.Enum):
    REJECT_RELEASE = "reject-release"
    """A release call returns ReleaseRejected(BUSY) with the live handle; the inner release is not called."""
    INDETERMINATE_RELEASE = "indeterminate-release"
    """A release call returns ReleaseIndeterminate; ``Fault.performed`` says whether the inner release ran."""
    INDETERMINATE_SUBMIT = "indeterminate-submit"
    """``submit`` really submits, then reports SubmitIndeterminate with the event."""
    DEVICE_LOST = "device-lost"
    """The call fails DEVICE_LOST without reaching the inner provider (releases: indeterminate, handle stuck)."""
    OUT_OF_MEMORY = "out-of-memory"
    """The call fails OUT_OF_MEMORY without reaching the inner provider."""
    PARTIAL_WRITE = "partial-write"
    """``write_buffer`` writes the first half of the data, then fails OUT_OF_MEMORY."""


RELEASE_CALLS = ("destroy_context", "free_buffer", "unload_program", "destroy_queue", "destroy_event")
_CREATES = {
    "create_context": "context",
    "allocate_buffer": "buffer",
    "load_program": "program",
    "create_queue": "queue",
    "submit": "event",
}
_RELEASES = {
    "destroy_context": "context",
    "free_buffer": "buffer",
    "unload_program": "program",
    "destroy_queue": "queue",
    "destroy_event": "event",
}
_ALL_CALLS = (
    "device_info",
    "create_context",
    "allocate_buffer",
    "write_buffer",
    "read_buffer",
    "load_program",
    "create_queue",
    "submit",
    "poll_event",
    "cancel_event",
    *RELEASE_CALLS,
)

BOUNDARIES: dict[FaultKind, tuple[str, ...]] = {
    FaultKind.REJECT_RELEASE: RELEASE_CALLS,
    FaultKind.INDETERMINATE_RELEASE: RELEASE_CALLS,
    FaultKind.INDETERMINATE_SUBMIT: ("submit",),
    FaultKind.DEVICE_LOST: _ALL_CALLS,
    FaultKind.OUT_OF_MEMORY: (
        "create_context",
        "allocate_buffer",
        "write_buffer",
        "read_buffer",
        "load_program",
        "create_queue",
        "submit",
    ),
    FaultKind.PARTIAL_WRITE: ("write_buffer",),
}
"""Which calls each fault kind may be injected at."""


@dataclass(frozen=True, slots=True)
class Fault:
    """Make the ``nth`` call to ``call`` (counted from when the fault is added) end with ``kind``."""

    call: str
    kind: FaultKind
    nth: int = 1
    performed: bool = True

    def __post_init__(self) -> None:
        if self.call not in BOUNDARIES[self.kind]:
            raise ValueError(
                f"fault {self.kind.value} cannot be injected at {self.call!r}; allowed: {BOUNDARIES[self.kind]}"
            )
        if self.nth < 1:
            raise ValueError(f"Fault.nth must be >= 1, got {self.nth}")


class _PrefixSource:
    """The first ``length`` bytes of another source (zero-copy)."""

    def __init__(self, source: ByteSource, length: int) -> None:
        self._source = source
        self._length = length

    def len(self) -> int:
        return self._length

    def read_at(self, offset: int, dst: memoryview) -> None:
        if offset + dst.nbytes > self._length:
            raise BackendError(ErrorKind.OUT_OF_BOUNDS, "read past the prefix")
        self._source.read_at(offset, dst)

    def contiguous(self) -> memoryview | None:
        return None

    def segments(self) -> Sequence[memoryview] | None:
        return None


class FaultAccelerator:
    """Wraps any ``Accelerator``; see the module docstring. ``fired`` lists faults that happened."""

    def __init__(self, inner: Any, script: Sequence[Fault] = ()) -> None:
        self.inner = inner
        self._pending: list[list[Any]] = []
        self.fired: list[Fault] = []
        self.calls: Counter[str] = Counter()
        self._live: Counter[str] = Counter({kind: 0 for kind in _CREATES.values()})
        self.indeterminate = 0
        for fault in script:
            self.inject(fault)

    def __repr__(self) -> str:
        return f"<FaultAccelerator over {self.inner!r} pending={len(self._pending)} fired={len(self.fired)}>"

    def inject(self, fault: Fault) -> None:
        """Add ``fault`` to the script; its ``nth`` counts calls from now."""
        self._pending.append([fault, fault.nth])

    def clear(self) -> None:
        """Drop every fault that has not fired yet."""
        self._pending.clear()

    @property
    def pending(self) -> list[Fault]:
        return [entry[0] for entry in self._pending]

    def live_resources(self) -> dict[str, int]:
        """Live native resources per kind as seen through the wrapper, plus ``indeterminate``."""
        counts = dict(self._live)
        counts["indeterminate"] = self.indeterminate
        return counts

    def _take(self, call: str) -> Fault | None:
        self.calls[call] += 1
        chosen: Fault | None = None
        for entry in list(self._pending):
            if entry[0].call != call:
                continue
            entry[1] -= 1
            if entry[1] == 0 and chosen is None:
                chosen = entry[0]
                self._pending.remove(entry)
        if chosen is not None:
            self.fired.append(chosen)
        return chosen

    def _error(self, fault: Fault, kind: ErrorKind) -> BackendError:
        return BackendError(kind, f"injected fault {fault.kind.value} at {fault.call} (call #{self.calls[fault.call]})")

    def _indeterminate_error(self, fault: Fault) -> BackendError:
        return BackendError.external(
            FAULT_DOMAIN,
            self.calls[fault.call],
            f"injected fault {fault.kind.value} at {fault.call}: outcome unknown",
        )

    def _plain(self, fault: Fault | None) -> None:
        """Raise the plain BackendError of a DEVICE_LOST / OUT_OF_MEMORY fault."""
        if fault is None:
            return
        if fault.kind is FaultKind.DEVICE_LOST:
            raise self._error(fault, ErrorKind.DEVICE_LOST)
        if fault.kind is FaultKind.OUT_OF_MEMORY:
            raise self._error(fault, ErrorKind.OUT_OF_MEMORY)

    def _create(self, call: str, make: Any, *args: Any) -> Any:
        self._plain(self._take(call))
        result = make(*args)
        self._live[_CREATES[call]] += 1
        return result

    def _release(self, call: str, release: Any, handle: Any) -> None:
        kind = _RELEASES[call]
        fault = self._take(call)
        if fault is not None:
            if fault.kind is FaultKind.REJECT_RELEASE:
                raise ReleaseRejected(self._error(fault, ErrorKind.BUSY), handle)
            if fault.kind is FaultKind.DEVICE_LOST:
                self._gone(kind)
                raise ReleaseIndeterminate(self._error(fault, ErrorKind.DEVICE_LOST))
            if fault.kind is FaultKind.INDETERMINATE_RELEASE:
                if fault.performed:
                    try:
                        release(handle)
                    except ReleaseRejected as exc:
                        raise ReleaseRejected(exc.error, exc.resource) from None
                    except ReleaseFailure:
                        pass
                self._gone(kind)
                raise ReleaseIndeterminate(self._indeterminate_error(fault))
        try:
            release(handle)
        except ReleaseIndeterminate:
            self._gone(kind)
            raise
        self._live[kind] -= 1

    def _gone(self, kind: str) -> None:
        self._live[kind] -= 1
        self.indeterminate += 1

    # -- the Accelerator surface -------------------------------------------------------------

    def device_info(self) -> DeviceInfo:
        self._plain(self._take("device_info"))
        info: DeviceInfo = self.inner.device_info()
        return info

    def create_context(self, desc: ContextDesc) -> Any:
        return self._create("create_context", self.inner.create_context, desc)

    def destroy_context(self, context: Any) -> None:
        self._release("destroy_context", self.inner.destroy_context, context)

    def allocate_buffer(self, context: Any, desc: BufferDesc) -> AllocatedBuffer[Any]:
        result: AllocatedBuffer[Any] = self._create("allocate_buffer", self.inner.allocate_buffer, context, desc)
        return result

    def write_buffer(self, buffer: Any, offset: int, data: ByteSource) -> None:
        fault = self._take("write_buffer")
        if fault is not None and fault.kind is FaultKind.PARTIAL_WRITE:
            half = data.len() // 2
            if half:
                self.inner.write_buffer(buffer, offset, _PrefixSource(data, half))
            raise self._error(fault, ErrorKind.OUT_OF_MEMORY)
        self._plain(fault)
        self.inner.write_buffer(buffer, offset, data)

    def read_buffer(self, buffer: Any, offset: int, data: ByteSink) -> None:
        self._plain(self._take("read_buffer"))
        self.inner.read_buffer(buffer, offset, data)

    def free_buffer(self, buffer: Any) -> None:
        self._release("free_buffer", self.inner.free_buffer, buffer)

    def load_program(self, context: Any, artifact: ArtifactRef) -> Any:
        return self._create("load_program", self.inner.load_program, context, artifact)

    def unload_program(self, program: Any) -> None:
        self._release("unload_program", self.inner.unload_program, program)

    def create_queue(self, context: Any, desc: QueueDesc) -> Any:
        return self._create("create_queue", self.inner.create_queue, context, desc)

    def destroy_queue(self, queue: Any) -> None:
        self._release("destroy_queue", self.inner.destroy_queue, queue)

    def submit(self, queue: Any, program: Any, bindings: Sequence[BindingRef[Any]], timeout: Timeout) -> Any:
        fault = self._take("submit")
        if fault is not None and fault.kind is not FaultKind.INDETERMINATE_SUBMIT:
            kind = ErrorKind.DEVICE_LOST if fault.kind is FaultKind.DEVICE_LOST else ErrorKind.OUT_OF_MEMORY
            raise SubmitRejected(self._error(fault, kind))
        try:
            event = self.inner.submit(queue, program, bindings, timeout)
        except SubmitIndeterminate as exc:
            self._live["event"] += 1
            raise SubmitIndeterminate(exc.error, exc.event) from None
        self._live["event"] += 1
        if fault is not None:
            raise SubmitIndeterminate(self._indeterminate_error(fault), event)
        return event

    def poll_event(self, event: Any) -> EventState:
        self._plain(self._take("poll_event"))
        state: EventState = self.inner.poll_event(event)
        return state

    def cancel_event(self, event: Any) -> None:
        self._plain(self._take("cancel_event"))
        self.inner.cancel_event(event)

    def destroy_event(self, event: Any) -> None:
        self._release("destroy_event", self.inner.destroy_event, event)
