"""``CommandEngine``: the host side of the contract, generic over any ``Accelerator``.

Ownership: the engine owns every provider handle it creates and hands out
nonzero, generation-checked 64-bit IDs instead (see :mod:`.ids`). Host checks
come first: every call validates IDs, flags, limits, ranges, usage vs access
and the resource policy before the provider is called.

Failure: host-side rejections are :class:`BackendError` (STALE_OBJECT for a
zero, unknown, stale, wrong-kind or other-context ID). Provider outcomes keep
their contract shape: ``submit`` raises ``SubmitRejected`` or
``SubmitIndeterminate(error, event_id)``; releases raise ``ReleaseRejected(error,
id)`` (the object is restored, retry allowed) or ``ReleaseIndeterminate`` (the
object is quarantined and the engine needs a discard). DEVICE_LOST or an
indeterminate release puts the engine in ``NEEDS_DISCARD``: every call then
fails fast with DEVICE_LOST until :meth:`CommandEngine.reset`.

Progress: nothing here busy-waits; ``poll`` never blocks; ``wait`` sleeps with
a back-off between polls. One engine is used from one thread at a time (no
locks), like the handles it owns. Copies: only ``write_buffer`` / ``read_buffer`` move
bytes, straight between the caller's objects and the provider.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import is_
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

from ..contract._checks import U32_MAX, check_u64
from ..contract.accelerator import Accelerator
from ..contract.buffers import BufferDesc, BufferInfo, BufferRange, validate_transfer
from ..contract.device import ContextDesc, DeviceInfo, QueueDesc
from ..contract.errors import (
    BackendError,
    ErrorKind,
    ReleaseFailure,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitFailure,
    SubmitIndeterminate,
    SubmitRejected,
)
from ..contract.flags import AccessMode, BufferUsage, Capabilities
from ..contract.ports import ByteSink, ByteSource, MemorySink, sink_of, source_of
from ..contract.program import ArtifactRef
from ..contract.submission import BindingRef, EventState, Timeout, timeout_seconds, validate_binding_ranges
from ..contract.waiting import INTERRUPT_SLICE_S, call_interruptibly, on_main_thread, poll_until_terminal
from .coverage import CoverageRule, coverage_rule
from .ids import IdTable, ObjectKind, format_id
from .policy import ResourcePolicy, ResourceUsage

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["BindingSpec", "CommandEngine", "EngineState", "QuarantinedObject"]

C = TypeVar("C")
B = TypeVar("B")
P = TypeVar("P")
Q = TypeVar("Q")
E = TypeVar("E")

BindingSpec = tuple[int, int, BufferRange | None, AccessMode | int] | BindingRef[int]
"""``(slot, buffer_id, range or None for the whole buffer, access)`` or a ``BindingRef`` over a buffer ID."""


class EngineState(enum.Enum):
    READY = "ready"
    ADMISSION_STOPPED = "admission-stopped"
    """A release the engine needed was not proven: no new objects until reset(); existing ones work."""
    NEEDS_DISCARD = "needs-discard"
    """DEVICE_LOST or an indeterminate release: every call fails DEVICE_LOST until reset()."""


@dataclass(slots=True)
class QuarantinedObject:
    """An object the engine could not prove released. ``handle`` is None when it is gone (indeterminate).

    ``waits_for``: the IDs of quarantined events that reference it (a queue, program, buffer or
    context a still-running kernel pins); its release is retried only once none of them is still
    quarantined with a live handle.
    """

    kind: ObjectKind
    object_id: int
    handle: Any
    reason: str
    allocation_bytes: int = 0
    resident_bytes: int = 0
    waits_for: tuple[int, ...] = ()


@dataclass(slots=True)
class _Context:
    handle: Any
    buffers: set[int] = field(default_factory=set)
    programs: set[int] = field(default_factory=set)
    queues: set[int] = field(default_factory=set)
    events: set[int] = field(default_factory=set)

    def describe_children(self) -> str:
        parts = [
            f"{len(ids)} {name}"
            for name, ids in (
                ("buffers", self.buffers),
                ("programs", self.programs),
                ("queues", self.queues),
                ("events", self.events),
            )
            if ids
        ]
        return ", ".join(parts)


_MEMOS_KEPT = 4
"""Binding lists remembered per program by :meth:`CommandEngine.submit` (see ``_Program.memos``)."""
_NATIVE_CACHE_SIZE = 16
"""Most native ``BindingRef``s one buffer keeps for reuse (cleared when full)."""


@dataclass(slots=True)
class _Buffer:
    """A live buffer. ``owner`` is its context's entry (a context outlives its buffers).

    The facts the hot paths need are computed once from the (immutable) ``info.desc``:
    ``size``, ``access_mask`` (bit ``1 << access`` set when the usage allows a binding
    with that access), ``readable`` / ``writable`` (TRANSFER_SOURCE / TRANSFER_DESTINATION)
    and ``whole`` (the range of the whole buffer). ``native`` caches the immutable
    provider-facing ``BindingRef``s built for this buffer, keyed by (slot, access, offset,
    bytes); an entry is only reused while its ``buffer`` is still ``handle``.
    """

    handle: Any
    context: int
    info: BufferInfo
    owner: _Context
    events: set[int] = field(default_factory=set)
    size: int = field(init=False)
    access_mask: int = field(init=False)
    readable: bool = field(init=False)
    writable: bool = field(init=False)
    whole: BufferRange = field(init=False)
    native: dict[tuple[int, ...], BindingRef[Any]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        desc = self.info.desc
        usage = int(desc.usage)
        self.size = desc.bytes
        self.access_mask = sum(1 << int(mode) for mode in AccessMode if desc.allows_access(mode))
        self.readable = bool(usage & BufferUsage.TRANSFER_SOURCE)
        self.writable = bool(usage & BufferUsage.TRANSFER_DESTINATION)
        self.whole = BufferRange(0, desc.bytes)


@dataclass(slots=True)
class _Program:
    handle: Any
    context: int
    resident_bytes: int
    owner: _Context
    events: set[int] = field(default_factory=set)
    coverage: CoverageRule | None = None
    """Known per-binding coverage of a kernel package (None: nothing to check; see .coverage)."""
    memos: list[tuple[tuple[Any, ...], tuple[BindingRef[Any], ...], tuple[int, ...], tuple[_Buffer, ...]]] = field(
        default_factory=list
    )
    """The last few (``_MEMOS_KEPT``, newest first) binding lists that passed :meth:`CommandEngine.submit`'s
    one pass for this program: (the very spec objects, the native refs, buffer IDs, buffer entries).
    Reused only when the same (immutable) spec objects come again and every buffer ID still resolves
    to the same entry with the same handle; the checks that depend on anything else (queue, context,
    events limit) run on every call. More than one, so calls that alternate between binding lists
    (host arrays, then device arrays) all hit; it may keep a freed buffer's entry object until replaced."""


@dataclass(slots=True)
class _Queue:
    handle: Any
    context: int
    owner: _Context
    events: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Event:
    """A live event. It keeps the entries it references (queue, program, buffers, context):
    none of them can be released while the event lives, so unlinking needs no lookups."""

    handle: Any
    context: int
    queue: int
    program: int
    buffers: tuple[int, ...]
    queue_entry: _Queue
    program_entry: _Program
    buffer_entries: tuple[_Buffer, ...]
    state: EventState = EventState.PENDING
    indeterminate: bool = False
    deadline_ns: int | None = None
    """``time.monotonic_ns()`` past which the engine stops trusting a Pending answer (None: no deadline)."""
    timeout_ns: int = 0
    overran: bool = False
    """The deadline passed and the device could not stop the kernel: Failed for the engine, still live natively."""


_READY = EngineState.READY
_NEEDS_DISCARD = EngineState.NEEDS_DISCARD
_SLICE_NS = int(INTERRUPT_SLICE_S * 1e9)
_PENDING = EventState.PENDING
_PENDING_STATUS = _PENDING.status
_MODES: dict[int, AccessMode] = {int(mode): mode for mode in AccessMode}


def _stale(message: str) -> BackendError:
    return BackendError(ErrorKind.STALE_OBJECT, message)


class CommandEngine(Generic[C, B, P, Q, E]):
    """See the module docstring. ``device_info`` is fetched and validated once here
    (``DeviceInfoError`` propagates and no engine is made)."""

    def __init__(self, provider: Accelerator[C, B, P, Q, E], policy: ResourcePolicy | None = None) -> None:
        self._provider = provider
        self.policy = policy if policy is not None else ResourcePolicy()
        self.usage = ResourceUsage()
        self._info = self._fetch_info(provider)
        self._waiter = _waiter_of(provider)
        self._waiter_interruptible = bool(getattr(provider, "interruptible_wait", False))
        self._contexts: IdTable[_Context] = IdTable(ObjectKind.CONTEXT)
        self._buffers: IdTable[_Buffer] = IdTable(ObjectKind.BUFFER)
        self._programs: IdTable[_Program] = IdTable(ObjectKind.PROGRAM)
        self._queues: IdTable[_Queue] = IdTable(ObjectKind.QUEUE)
        self._events: IdTable[_Event] = IdTable(ObjectKind.EVENT)
        # Hot-path resolution: exact-int IDs are one dict lookup (tables are cleared, never replaced).
        self._buffer_lookup = self._buffers.lookup
        self._program_lookup = self._programs.lookup
        self._queue_lookup = self._queues.lookup
        self._event_lookup = self._events.lookup
        self.state = EngineState.READY
        self.state_reason = ""
        self._teardown_loss: str | None = None
        """Set while reset() tears down, when the instance reported DEVICE_LOST or an indeterminate release."""
        self.quarantine: list[QuarantinedObject] = []
        self.discarded: list[QuarantinedObject] = []
        """Quarantine of provider instances replaced by ``reset(provider)``."""

    @staticmethod
    def _fetch_info(provider: Accelerator[C, B, P, Q, E]) -> DeviceInfo:
        info = provider.device_info()
        if not isinstance(info, DeviceInfo):
            raise BackendError(ErrorKind.INCOMPATIBLE, f"device_info() returned {type(info).__name__}, not DeviceInfo")
        info.validate()
        return info

    def __repr__(self) -> str:
        return (
            f"<CommandEngine {self.state.value} contexts={len(self._contexts)} buffers={len(self._buffers)} "
            f"programs={len(self._programs)} queues={len(self._queues)} events={len(self._events)} "
            f"quarantine={len(self.quarantine)}>"
        )

    @property
    def info(self) -> DeviceInfo:
        """The validated, cached device metadata."""
        return self._info

    @property
    def provider(self) -> Accelerator[C, B, P, Q, E]:
        return self._provider

    def live_objects(self) -> dict[str, int]:
        return {
            "context": len(self._contexts),
            "buffer": len(self._buffers),
            "program": len(self._programs),
            "queue": len(self._queues),
            "event": len(self._events),
        }

    def objects(self) -> list[tuple[int, ObjectKind, int | None]]:
        """Every live ID with its kind and owning context ID (None for contexts)."""
        found: list[tuple[int, ObjectKind, int | None]] = [
            (i, ObjectKind.CONTEXT, None) for i, _ in self._contexts.items()
        ]
        found += [(i, ObjectKind.BUFFER, e.context) for i, e in self._buffers.items()]
        found += [(i, ObjectKind.PROGRAM, e.context) for i, e in self._programs.items()]
        found += [(i, ObjectKind.QUEUE, e.context) for i, e in self._queues.items()]
        found += [(i, ObjectKind.EVENT, e.context) for i, e in self._events.items()]
        return found

    def exists(self, object_id: int) -> bool:
        """Whether ``object_id`` resolves now (to a live object of the kind it encodes)."""
        tables: tuple[IdTable[Any], ...] = (self._contexts, self._buffers, self._programs, self._queues, self._events)
        return any(table.get(object_id) is not None for table in tables)

    def buffer_info(self, buffer_id: int) -> BufferInfo:
        return self._buffer(buffer_id).info

    # -- state ---------------------------------------------------------------------------------

    def _usable(self) -> None:
        if self.state is EngineState.NEEDS_DISCARD:
            raise BackendError(
                ErrorKind.DEVICE_LOST,
                f"the provider instance needs to be discarded ({self.state_reason}); call reset()",
            )

    def _admitting(self) -> None:
        self._usable()
        if self.state is EngineState.ADMISSION_STOPPED:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"admission is stopped ({self.state_reason}); release objects and call reset()",
            )

    def _needs_discard(self, reason: str) -> None:
        self.state = EngineState.NEEDS_DISCARD
        self.state_reason = reason

    def _stop_admission(self, reason: str) -> None:
        if self.state is EngineState.READY:
            self.state = EngineState.ADMISSION_STOPPED
            self.state_reason = reason

    def _watch(self, error: BackendError, call: str) -> None:
        if error.kind is ErrorKind.DEVICE_LOST:
            self._needs_discard(f"{call} reported DEVICE_LOST: {error.message}")
            if self._teardown_loss is None:
                self._teardown_loss = f"{call} reported DEVICE_LOST: {error.message}"

    # -- resolution ----------------------------------------------------------------------------

    def _resolve(self, table: IdTable[Any], object_id: object) -> Any:
        if type(object_id) is int:
            found = table.lookup(object_id)
            if found is not None:
                return found
        if isinstance(object_id, bool) or not isinstance(object_id, int):
            raise _stale(f"{table.kind.label} id must be an integer, got {type(object_id).__name__} {object_id!r}")
        if object_id == 0:
            raise _stale(f"{table.kind.label} id 0 is never valid")
        entry = table.get(object_id)
        if entry is None:
            kind = object_id >> 60
            if kind != table.kind and kind in ObjectKind._value2member_map_:
                raise _stale(f"{format_id(object_id)} names a {ObjectKind(kind).label}, expected a {table.kind.label}")
            raise _stale(f"{table.kind.label} id {object_id:#x} is unknown, released or from before a reset")
        return entry

    def _context(self, context_id: int) -> _Context:
        entry: _Context = self._resolve(self._contexts, context_id)
        return entry

    def _buffer(self, buffer_id: int) -> _Buffer:
        entry: _Buffer = self._resolve(self._buffers, buffer_id)
        return entry

    def _program(self, program_id: int) -> _Program:
        entry: _Program = self._resolve(self._programs, program_id)
        return entry

    def _queue(self, queue_id: int) -> _Queue:
        entry: _Queue = self._resolve(self._queues, queue_id)
        return entry

    def _event(self, event_id: int) -> _Event:
        entry: _Event = self._resolve(self._events, event_id)
        return entry

    @staticmethod
    def _same_context(expected: int, actual: int, what: str, object_id: int) -> None:
        if expected != actual:
            raise _stale(f"{what} {format_id(object_id)} belongs to context {actual:#x}, not to context {expected:#x}")

    # -- contexts ------------------------------------------------------------------------------

    def create_context(self, desc: ContextDesc | None = None) -> int:
        """A new context ID. Reserved flags → UNSUPPORTED; max_contexts → RESOURCE_LIMIT."""
        self._admitting()
        desc = desc if desc is not None else ContextDesc()
        self._info.validate_context_desc(desc)
        if len(self._contexts) >= self._info.limits.max_contexts:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_contexts {self._info.limits.max_contexts} reached")
        try:
            handle = self._provider.create_context(desc)
        except BackendError as exc:
            self._watch(exc, "create_context")
            raise
        return self._contexts.insert(_Context(handle))

    def destroy_context(self, context_id: int) -> None:
        """Release an empty context. Live children → BUSY (no provider call)."""
        self._usable()
        entry = self._context(context_id)
        children = entry.describe_children()
        if children:
            raise BackendError(ErrorKind.BUSY, f"{format_id(context_id)} still has {children}")
        self._release(self._contexts, context_id, entry, self._provider.destroy_context)

    # -- buffers -------------------------------------------------------------------------------

    def allocate_buffer(self, context_id: int, desc: BufferDesc) -> int:
        """Allocate an exact buffer; the policy is charged with the actual ``allocation_bytes``
        before the ID is published (over the cap → the buffer is released and RESOURCE_LIMIT)."""
        self._admitting()
        ctx = self._context(context_id)
        self._info.validate_buffer_desc(desc)
        limit = self._info.limits.max_buffers_per_context
        if len(ctx.buffers) >= limit:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_buffers_per_context {limit} reached")
        self.usage.check_allocation(self.policy, desc.bytes, f"buffer of {desc.bytes} bytes")
        total = self._info.limits.total_memory_bytes
        self.usage.check_device_memory(self.policy, total, desc.bytes, f"buffer of {desc.bytes} bytes")
        try:
            allocated = self._provider.allocate_buffer(ctx.handle, desc)
        except BackendError as exc:
            self._watch(exc, "allocate_buffer")
            raise
        info = allocated.info
        try:
            if not isinstance(info, BufferInfo):
                raise BackendError(ErrorKind.INCOMPATIBLE, f"allocation info is {type(info).__name__}, not BufferInfo")
            self._info.validate_buffer_info(desc, info)
            self.usage.check_allocation(self.policy, info.allocation_bytes, f"buffer of {desc.bytes} bytes")
            self.usage.check_device_memory(self.policy, total, info.allocation_bytes, f"buffer of {desc.bytes} bytes")
        except BackendError as exc:
            note = self._undo(ObjectKind.BUFFER, self._provider.free_buffer, allocated.buffer, exc)
            raise BackendError(exc.kind, exc.message + note) from None
        self.usage.allocation_bytes += info.allocation_bytes
        buffer_id = self._buffers.insert(_Buffer(allocated.buffer, context_id, info, ctx))
        ctx.buffers.add(buffer_id)
        return buffer_id

    def _undo(self, kind: ObjectKind, release: Callable[[Any], None], handle: Any, cause: BackendError) -> str:
        """Release a just-made object the engine will not publish; returns a note when that failed."""
        try:
            release(handle)
            return ""
        except ReleaseRejected as exc:
            self.quarantine.append(QuarantinedObject(kind, 0, exc.resource, f"undo rejected: {exc.error}"))
            self._stop_admission(f"releasing a refused new {kind.label} was rejected ({exc.error.kind.name})")
            if exc.error.kind is ErrorKind.DEVICE_LOST:
                self._watch(exc.error, f"release of a new {kind.label}")
            return f" (the new {kind.label} could not be released: admission stopped)"
        except ReleaseFailure as exc:
            self.quarantine.append(QuarantinedObject(kind, 0, None, f"undo indeterminate: {exc.error}"))
            self._needs_discard(f"releasing a refused new {kind.label} was indeterminate ({exc.error.kind.name})")
            return f" (the release of the new {kind.label} was indeterminate: the instance needs a discard)"

    def write_buffer(self, buffer_id: int, offset: int, data: ByteSource | Buffer) -> None:
        """Copy ``data`` (a ByteSource or any buffer-protocol object, zero-copy) into the buffer at ``offset``."""
        if self.state is _NEEDS_DISCARD:
            self._usable()
        entry = self._buffer_lookup(buffer_id) if type(buffer_id) is int else None
        if entry is None:
            entry = self._buffer(buffer_id)
        source = source_of(data)
        length = source.len()
        # Fast path: a valid transfer is decided with plain ints; anything else takes the full check.
        if not (entry.writable and type(offset) is int and 0 <= offset < entry.size and offset + length <= entry.size):
            validate_transfer(entry.info.desc, offset, length, write=True)
        if entry.events:
            self._not_pending(buffer_id, entry)
        try:
            self._provider.write_buffer(entry.handle, offset, source)
        except BackendError as exc:
            self._watch(exc, "write_buffer")
            raise

    def read_buffer(self, buffer_id: int, offset: int = 0, size: int | None = None) -> bytearray:
        """Read ``size`` bytes (default: to the end) from ``offset`` into a new bytearray."""
        self._usable()
        entry = self._buffer(buffer_id)
        check_u64("offset", offset)
        length = max(entry.info.desc.bytes - offset, 0) if size is None else check_u64("size", size)
        out = bytearray(length)
        self._read_into(buffer_id, entry, offset, MemorySink(out))
        return out

    def read_buffer_into(self, buffer_id: int, offset: int, data: ByteSink | Buffer) -> None:
        """Read ``len(data)`` bytes from ``offset`` straight into ``data`` (not published on failure)."""
        if self.state is _NEEDS_DISCARD:
            self._usable()
        entry = self._buffer_lookup(buffer_id) if type(buffer_id) is int else None
        if entry is None:
            entry = self._buffer(buffer_id)
        self._read_into(buffer_id, entry, offset, sink_of(data))

    def _read_into(self, buffer_id: int, entry: _Buffer, offset: int, sink: ByteSink) -> None:
        length = sink.len()
        if not (entry.readable and type(offset) is int and 0 <= offset < entry.size and offset + length <= entry.size):
            validate_transfer(entry.info.desc, offset, length, write=False)
        if entry.events:
            self._not_pending(buffer_id, entry)
        try:
            self._provider.read_buffer(entry.handle, offset, sink)
        except BackendError as exc:
            self._watch(exc, "read_buffer")
            raise

    def _not_pending(self, buffer_id: int, entry: _Buffer) -> None:
        """BUSY when an event bound to the buffer is not known terminal (the engine's cached state)."""
        for event_id in entry.events:
            event = self._events.get(event_id)
            if event is not None and event.state.status is _PENDING_STATUS:
                raise BackendError(
                    ErrorKind.BUSY, f"{format_id(buffer_id)} is bound to pending {format_id(event_id)}; wait first"
                )

    def free_buffer(self, buffer_id: int) -> None:
        """Release a buffer no live event references (else BUSY)."""
        self._usable()
        entry = self._buffer(buffer_id)
        self._not_referenced(buffer_id, entry.events)
        self._release(self._buffers, buffer_id, entry, self._provider.free_buffer)

    @staticmethod
    def _not_referenced(object_id: int, events: set[int]) -> None:
        if events:
            listed = ", ".join(format_id(e) for e in sorted(events))
            raise BackendError(ErrorKind.BUSY, f"{format_id(object_id)} is referenced by live event(s) {listed}")

    # -- programs and queues -------------------------------------------------------------------

    def load_program(self, context_id: int, artifact: ArtifactRef) -> int:
        """Load a program; ``artifact.resident_bytes`` is charged to the policy before the load."""
        self._admitting()
        ctx = self._context(context_id)
        limit = self._info.limits.max_programs_per_context
        if len(ctx.programs) >= limit:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_programs_per_context {limit} reached")
        size = artifact.payload.len()
        if size > self._info.limits.max_artifact_bytes:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"artifact of {size} bytes exceeds max_artifact_bytes {self._info.limits.max_artifact_bytes}",
            )
        self.usage.check_resident(self.policy, artifact.resident_bytes, "program")
        rule = coverage_rule(artifact, self._info.limits.max_artifact_bytes)
        self.usage.resident_bytes += artifact.resident_bytes
        try:
            handle = self._provider.load_program(ctx.handle, artifact)
        except BackendError as exc:
            self.usage.resident_bytes -= artifact.resident_bytes
            self._watch(exc, "load_program")
            raise
        except BaseException:
            self.usage.resident_bytes -= artifact.resident_bytes
            raise
        program_id = self._programs.insert(_Program(handle, context_id, artifact.resident_bytes, ctx, coverage=rule))
        ctx.programs.add(program_id)
        return program_id

    def unload_program(self, program_id: int) -> None:
        self._usable()
        entry = self._program(program_id)
        self._not_referenced(program_id, entry.events)
        self._release(self._programs, program_id, entry, self._provider.unload_program)

    def create_queue(self, context_id: int, desc: QueueDesc | None = None) -> int:
        self._admitting()
        ctx = self._context(context_id)
        desc = desc if desc is not None else QueueDesc()
        self._info.validate_queue_desc(desc)
        limit = self._info.limits.max_queues_per_context
        if len(ctx.queues) >= limit:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_queues_per_context {limit} reached")
        try:
            handle = self._provider.create_queue(ctx.handle, desc)
        except BackendError as exc:
            self._watch(exc, "create_queue")
            raise
        queue_id = self._queues.insert(_Queue(handle, context_id, ctx))
        ctx.queues.add(queue_id)
        return queue_id

    def destroy_queue(self, queue_id: int) -> None:
        self._usable()
        entry = self._queue(queue_id)
        self._not_referenced(queue_id, entry.events)
        self._release(self._queues, queue_id, entry, self._provider.destroy_queue)

    # -- submission ----------------------------------------------------------------------------

    def submit(
        self,
        queue_id: int,
        program_id: int,
        bindings: Sequence[BindingSpec],
        timeout: Timeout | float | None = None,
    ) -> int:
        """Check everything host-side, then admit; returns the event ID.

        ``timeout``: a Timeout, seconds (float) or None (infinite). Host-side
        failures raise BackendError; the provider's refusal SubmitRejected; an
        unknown acceptance SubmitIndeterminate whose ``event`` is the new event ID.

        The common shape (exact-int IDs, ``BindingRef`` or ``(slot, id, range | None,
        access)`` tuples of plain values, nothing wrong) is checked in one pass over plain
        ints; anything else, including every input that fails a check, takes the full
        path (:meth:`_submit_checked`), which raises the documented error.
        """
        if self.state is not _READY:
            return self._submit_checked(queue_id, program_id, bindings, timeout)
        queue = self._queue_lookup(queue_id) if type(queue_id) is int else None
        program = self._program_lookup(program_id) if type(program_id) is int else None
        if queue is None or program is None or program.context != queue.context:
            return self._submit_checked(queue_id, program_id, bindings, timeout)
        kind = type(bindings)
        count = len(bindings) if kind is list or kind is tuple else 0
        if not 0 < count <= self._info.limits.max_bindings_per_submission:
            return self._submit_checked(queue_id, program_id, bindings, timeout)
        buffer_lookup = self._buffer_lookup
        for memo in program.memos:
            if len(memo[0]) != count or not all(map(is_, memo[0], bindings)):
                continue
            # The same spec objects as a recent call that passed: only liveness can have changed.
            for buffer_id, held, given in zip(memo[2], memo[3], memo[1], strict=True):
                if buffer_lookup(buffer_id) is not held or given.buffer is not held.handle:
                    break
            else:
                if len(queue.owner.events) >= self._info.limits.max_events_per_context:
                    return self._submit_checked(queue_id, program_id, bindings, timeout)
                return self._admit(queue_id, queue, program_id, program, memo[1], memo[2], memo[3], timeout)
            program.memos = [m for m in program.memos if m is not memo]  # a buffer went: checked afresh below
            break
        context_id = queue.context
        native: list[BindingRef[Any]] = []
        buffer_ids: list[int] = []
        entries: list[_Buffer] = []
        slots: set[int] | None = set() if count > 1 else None
        for spec in bindings:
            spec_kind = type(spec)
            if spec_kind is BindingRef:
                # The public constructor has checked slot and access already.
                slot, buffer_id, rng, access = spec.slot, spec.buffer, spec.range, spec.access  # type: ignore[union-attr]
            elif spec_kind is tuple and len(spec) == 4:  # type: ignore[arg-type]
                slot, buffer_id, rng, access = spec  # type: ignore[misc]
                if type(slot) is not int or not 0 <= slot <= U32_MAX:
                    return self._submit_checked(queue_id, program_id, bindings, timeout)
                if type(access) is not AccessMode:
                    mode = _MODES.get(access) if type(access) is int else None
                    if mode is None:
                        return self._submit_checked(queue_id, program_id, bindings, timeout)
                    access = mode
            else:
                return self._submit_checked(queue_id, program_id, bindings, timeout)
            entry = buffer_lookup(buffer_id) if type(buffer_id) is int else None
            if entry is None or entry.context != context_id or not entry.access_mask >> access & 1:
                return self._submit_checked(queue_id, program_id, bindings, timeout)
            if rng is None:
                key: tuple[int, ...] = (slot, access)
                rng = entry.whole
            elif type(rng) is BufferRange and rng.offset + rng.bytes <= entry.size:
                key = (slot, access, rng.offset, rng.bytes)
            else:
                return self._submit_checked(queue_id, program_id, bindings, timeout)
            if slots is not None:
                if slot in slots:
                    return self._submit_checked(queue_id, program_id, bindings, timeout)
                slots.add(slot)
            cache = entry.native
            ref = cache.get(key)
            if ref is None or ref.buffer is not entry.handle:
                if len(cache) >= _NATIVE_CACHE_SIZE:
                    cache.clear()
                ref = cache[key] = BindingRef._trusted(slot, entry.handle, rng, access)
            native.append(ref)
            buffer_ids.append(buffer_id)
            entries.append(entry)
        if len(queue.owner.events) >= self._info.limits.max_events_per_context:
            return self._submit_checked(queue_id, program_id, bindings, timeout)
        refs, ids, kept = tuple(native), tuple(buffer_ids), tuple(entries)
        memos = program.memos
        memos.insert(0, (tuple(bindings), refs, ids, kept))
        del memos[_MEMOS_KEPT:]
        return self._admit(queue_id, queue, program_id, program, refs, ids, kept, timeout)

    def _submit_checked(
        self,
        queue_id: int,
        program_id: int,
        bindings: Sequence[BindingSpec],
        timeout: Timeout | float | None,
    ) -> int:
        """The full, ordered host checks of :meth:`submit` (every error is raised here)."""
        self._admitting()
        queue = self._queue(queue_id)
        program = self._program(program_id)
        self._same_context(queue.context, program.context, "program", program_id)
        ctx = self._context(queue.context)
        refs: list[BindingRef[int]] = []
        entries: list[_Buffer] = []
        for spec in bindings:
            ref = self._binding(spec)
            entry = self._buffer(ref.buffer)
            self._same_context(queue.context, entry.context, "buffer", ref.buffer)
            refs.append(ref)
            entries.append(entry)
        descs = [entry.info.desc for entry in entries]
        BindingRef.validate_for_submit(refs, descs, self._info.limits.max_bindings_per_submission)
        validate_binding_ranges(refs, descs)
        limit = self._info.limits.max_events_per_context
        if len(ctx.events) >= limit:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_events_per_context {limit} reached")
        native = [BindingRef(r.slot, e.handle, r.range, r.access) for r, e in zip(refs, entries, strict=True)]
        buffer_ids = tuple(r.buffer for r in refs)
        return self._admit(queue_id, queue, program_id, program, native, buffer_ids, tuple(entries), timeout)

    def _admit(
        self,
        queue_id: int,
        queue: _Queue,
        program_id: int,
        program: _Program,
        native: Sequence[BindingRef[Any]],
        buffer_ids: tuple[int, ...],
        entries: tuple[_Buffer, ...],
        timeout: Timeout | float | None,
    ) -> int:
        """The coverage check, then the provider call and the event's publication."""
        if program.coverage is not None:
            program.coverage.check(native)
        limit = Timeout.INFINITE
        try:
            limit = timeout if type(timeout) is Timeout else _timeout(timeout)
            handle = self._provider.submit(queue.handle, program.handle, native, limit)
        except SubmitIndeterminate as exc:
            event_id = self._publish_event(
                exc.event, queue_id, queue, program_id, program, buffer_ids, entries, True, limit.ns
            )
            self._watch(exc.error, "submit")
            raise SubmitIndeterminate(exc.error, event_id) from None
        except SubmitFailure as exc:
            self._watch(exc.error, "submit")
            raise SubmitRejected(exc.error) from None
        except BackendError as exc:
            # Contract violation (submit must raise SubmitFailure); the provider meant a refusal.
            # (A bad ``timeout`` also lands here, as before: SubmitRejected(INVALID_ARGUMENT).)
            self._watch(exc, "submit")
            raise SubmitRejected(exc) from None
        return self._publish_event(handle, queue_id, queue, program_id, program, buffer_ids, entries, False, limit.ns)

    def _binding(self, spec: BindingSpec) -> BindingRef[int]:
        rng: BufferRange | None
        access: AccessMode | int
        if isinstance(spec, BindingRef):
            slot, buffer_id, rng, access = spec.slot, spec.buffer, spec.range, spec.access
        else:
            try:
                length = len(spec)
            except TypeError:
                length = -1
            if length != 4:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT, f"a binding is (slot, buffer_id, range or None, access), got {spec!r}"
                )
            slot, buffer_id, rng, access = spec
        entry = self._buffer(buffer_id)
        if rng is not None and not isinstance(rng, BufferRange):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"slot {slot!r}: binding range {rng!r} is not a BufferRange (or None for the whole buffer)",
            )
        whole = rng if rng is not None else BufferRange(0, entry.info.desc.bytes)
        number: object
        try:
            number = int(access)
        except (TypeError, ValueError):
            number = access  # from_number names it as not a mode
        return BindingRef(slot, buffer_id, whole, AccessMode.from_number(number))

    def _publish_event(
        self,
        handle: Any,
        queue_id: int,
        queue: _Queue,
        program_id: int,
        program: _Program,
        buffer_ids: tuple[int, ...],
        entries: tuple[_Buffer, ...],
        indeterminate: bool,
        timeout_ns: int | None = None,
    ) -> int:
        # The engine's deadline is taken after the provider's submit returned, so it is never
        # earlier than the provider's own (a provider that enforces deadlines always answers first).
        event_id = self._events.insert(
            _Event(
                handle,
                queue.context,
                queue_id,
                program_id,
                buffer_ids,
                queue,
                program,
                entries,
                _PENDING,
                indeterminate,
                None if timeout_ns is None else time.monotonic_ns() + timeout_ns,
                timeout_ns or 0,
            )
        )
        queue.events.add(event_id)
        program.events.add(event_id)
        for entry in entries:
            entry.events.add(event_id)
        queue.owner.events.add(event_id)
        return event_id

    # -- events --------------------------------------------------------------------------------

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

    @staticmethod
    def _unlink_event(event_id: int, entry: _Event) -> None:
        entry.queue_entry.events.discard(event_id)
        entry.program_entry.events.discard(event_id)
        for buffer in entry.buffer_entries:
            buffer.events.discard(event_id)
        entry.queue_entry.owner.events.discard(event_id)

    # -- release -------------------------------------------------------------------------------

    def _release(self, table: IdTable[Any], object_id: int, entry: Any, release: Callable[[Any], None]) -> None:
        try:
            release(entry.handle)
        except (ReleaseFailure, BackendError) as exc:
            self._release_failed(table, object_id, entry, exc)
        self._forget(table, object_id, entry)
        entry_kind = type(entry)
        if entry_kind is _Buffer:
            self.usage.allocation_bytes -= entry.info.allocation_bytes
        elif entry_kind is _Program:
            self.usage.resident_bytes -= entry.resident_bytes

    def _release_failed(
        self, table: IdTable[Any], object_id: int, entry: Any, error: ReleaseFailure[Any] | BackendError
    ) -> NoReturn:
        """A release did not succeed: restore (rejected) or quarantine (indeterminate), and raise."""
        kind = table.kind
        try:
            raise error
        except ReleaseRejected as exc:
            entry.handle = exc.resource
            self._watch(exc.error, f"release of {format_id(object_id)}")
            raise ReleaseRejected(exc.error, object_id) from None
        except ReleaseFailure as exc:
            self._forget(table, object_id, entry)
            self.quarantine.append(
                QuarantinedObject(kind, object_id, None, f"release indeterminate: {exc.error}", *_charges(entry))
            )
            self._needs_discard(f"release of {format_id(object_id)} was indeterminate ({exc.error.kind.name})")
            raise ReleaseIndeterminate(exc.error) from None
        except BackendError as exc:
            # Contract violation: releases raise ReleaseFailure. Nothing may be assumed.
            self._forget(table, object_id, entry)
            self.quarantine.append(QuarantinedObject(kind, object_id, None, f"release raised {exc}", *_charges(entry)))
            self._needs_discard(f"release of {format_id(object_id)} raised a plain {exc.kind.name}")
            raise ReleaseIndeterminate(exc) from None

    @staticmethod
    def _forget(table: IdTable[Any], object_id: int, entry: Any) -> None:
        """Unpublish ``object_id`` and unlink it from its context (and an event from what it references)."""
        table.remove(object_id)
        kind = type(entry)
        if kind is _Event:
            CommandEngine._unlink_event(object_id, entry)  # also leaves its context's event set
        elif kind is _Buffer:
            entry.owner.buffers.discard(object_id)
        elif kind is _Program:
            entry.owner.programs.discard(object_id)
        elif kind is _Queue:
            entry.owner.queues.discard(object_id)

    # -- reset ---------------------------------------------------------------------------------

    def reset(self, provider: Accelerator[C, B, P, Q, E] | None = None) -> list[QuarantinedObject]:
        """Retry the quarantine (as :meth:`poll_quarantine`), tear everything down child before parent
        (events, queues, programs, buffers, contexts), quarantine what cannot be released, and open a
        fresh ID namespace.

        With ``provider`` (a fresh instance — required after an indeterminate outcome
        if the old one is to be dropped), the old instance's quarantine moves to
        ``discarded`` and the policy charges start from zero. Returns the quarantine.
        """
        info = self._fetch_info(provider) if provider is not None else None  # an invalid one changes nothing
        self._teardown_loss = None
        self._teardown()
        loss, self._teardown_loss = self._teardown_loss, None
        for table in (self._events, self._queues, self._programs, self._buffers, self._contexts):
            table.clear()
        if provider is not None and info is not None:
            self._provider = provider
            self._info = info
            self._waiter = _waiter_of(provider)
            self._waiter_interruptible = bool(getattr(provider, "interruptible_wait", False))
            self.discarded.extend(self.quarantine)
            self.quarantine = []
            self.usage = ResourceUsage()
        else:
            self.usage = ResourceUsage(
                sum(q.allocation_bytes for q in self.quarantine), sum(q.resident_bytes for q in self.quarantine)
            )
        if loss is not None and (provider is None or info is None):
            # The instance itself failed during teardown: it stays discarded until a fresh one comes.
            self.state = EngineState.NEEDS_DISCARD
            self.state_reason = f"reset: {loss}; reset(provider=<fresh instance>) to go on"
        else:
            self.state = EngineState.READY
            self.state_reason = ""
        return list(self.quarantine)

    def poll_quarantine(self) -> list[QuarantinedObject]:
        """Retry the quarantine now, as ``reset()`` does first, and return what is left.

        Each quarantined event with a live handle is polled once (cancelled first when the device
        can); one now terminal is destroyed, then every quarantined queue, program, buffer and
        context whose events are gone is released, child before parent. What the provider
        releases leaves the quarantine and its charge leaves ``usage``; a rejected retry keeps
        the (returned) handle, an indeterminate one drops it. Never blocks. NEEDS_DISCARD →
        DEVICE_LOST (a fresh provider via ``reset(provider)`` is the way out).
        """
        self._usable()
        for item in self._retry_quarantine():
            self.usage.allocation_bytes -= item.allocation_bytes
            self.usage.resident_bytes -= item.resident_bytes
        return list(self.quarantine)

    def _can_cancel(self) -> bool:
        return bool(self._info.capabilities & Capabilities.EVENT_CANCELLATION)

    def _retry_quarantine(self) -> list[QuarantinedObject]:
        """One retry of every quarantined live handle (events first); returns the items released."""
        cancel = self._can_cancel()
        released: list[QuarantinedObject] = []
        for item in [q for q in self.quarantine if q.kind is ObjectKind.EVENT and q.handle is not None]:
            if self._settle(item.handle, cancel) is not None and self._retry_quarantined(
                item, self._provider.destroy_event
            ):
                released.append(item)
        stuck = {q.object_id for q in self.quarantine if q.kind is ObjectKind.EVENT and q.handle is not None}
        stages: tuple[tuple[ObjectKind, Callable[[Any], None]], ...] = (
            (ObjectKind.QUEUE, self._provider.destroy_queue),
            (ObjectKind.PROGRAM, self._provider.unload_program),
            (ObjectKind.BUFFER, self._provider.free_buffer),
            (ObjectKind.CONTEXT, self._provider.destroy_context),
        )
        for kind, release in stages:
            for item in [q for q in self.quarantine if q.kind is kind and q.handle is not None]:
                if stuck.isdisjoint(item.waits_for) and self._retry_quarantined(item, release):
                    released.append(item)
        return released

    def _teardown(self) -> None:
        self._retry_quarantine()  # what earlier resets left: a kernel that pinned it may have ended
        # IDs that must stay alive -> the quarantined events that reference them (empty: a child failed).
        blocked: dict[int, set[int]] = {}
        cancel = self._can_cancel()
        for event_id, event in list(self._events.items()):
            if event.overran or not event.state.is_terminal:
                state = self._settle(event.handle, cancel)
                if state is not None and not event.state.is_terminal:
                    event.state = state
            if not self._teardown_release(ObjectKind.EVENT, event_id, event, self._provider.destroy_event):
                if event.overran:
                    self.quarantine[-1].reason = "overran its deadline (the device could not stop it); " + (
                        self.quarantine[-1].reason
                    )
                for pinned in (event.queue, event.program, event.context, *event.buffers):
                    blocked.setdefault(pinned, set()).add(event_id)
        stages: tuple[tuple[ObjectKind, IdTable[Any], Callable[[Any], None]], ...] = (
            (ObjectKind.QUEUE, self._queues, self._provider.destroy_queue),
            (ObjectKind.PROGRAM, self._programs, self._provider.unload_program),
            (ObjectKind.BUFFER, self._buffers, self._provider.free_buffer),
        )
        for kind, table, release in stages:
            for object_id, entry in list(table.items()):
                if object_id in blocked:
                    waits = blocked[object_id]
                    self._quarantine_live(kind, object_id, entry, "referenced by a quarantined event", waits=waits)
                    blocked.setdefault(entry.context, set()).update(waits)
                elif not self._teardown_release(kind, object_id, entry, release):
                    blocked.setdefault(entry.context, set())
        for object_id, ctx_entry in list(self._contexts.items()):
            if object_id in blocked:
                self._quarantine_live(
                    ObjectKind.CONTEXT, object_id, ctx_entry, "a child could not be released", waits=blocked[object_id]
                )
            else:
                self._teardown_release(ObjectKind.CONTEXT, object_id, ctx_entry, self._provider.destroy_context)

    def _settle(self, handle: Any, cancel: bool) -> EventState | None:
        """Cancel (when the device can) and poll once: the terminal state, or None (pending or unknown)."""
        try:
            if cancel:
                try:
                    self._provider.cancel_event(handle)
                except BackendError as exc:
                    self._watch(exc, "cancel_event")
            state = self._provider.poll_event(handle)
        except BackendError as exc:
            self._watch(exc, "poll_event")
            return None
        return state if state.is_terminal else None

    def _teardown_release(self, kind: ObjectKind, object_id: int, entry: Any, release: Callable[[Any], None]) -> bool:
        """One release during reset; False (and quarantined) when it was not proven."""
        try:
            release(entry.handle)
            return True
        except ReleaseRejected as exc:
            self._quarantine_live(kind, object_id, entry, f"release rejected during reset: {exc.error}", exc.resource)
        except ReleaseFailure as exc:
            self.quarantine.append(
                QuarantinedObject(
                    kind, object_id, None, f"release indeterminate during reset: {exc.error}", *_charges(entry)
                )
            )
            if self._teardown_loss is None:
                self._teardown_loss = f"a {kind.label} release was indeterminate during reset ({exc.error})"
        except BackendError as exc:
            self._quarantine_live(kind, object_id, entry, f"release raised during reset: {exc}")
        return False

    def _quarantine_live(
        self,
        kind: ObjectKind,
        object_id: int,
        entry: Any,
        reason: str,
        handle: Any = None,
        waits: set[int] | None = None,
    ) -> None:
        self.quarantine.append(
            QuarantinedObject(
                kind,
                object_id,
                entry.handle if handle is None else handle,
                reason,
                *_charges(entry),
                waits_for=tuple(sorted(waits)) if waits else (),
            )
        )

    def _retry_quarantined(self, item: QuarantinedObject, release: Callable[[Any], None]) -> bool:
        """One release of a quarantined handle; True (and out of the quarantine) when the provider did it."""
        try:
            release(item.handle)
        except ReleaseRejected as exc:
            item.handle = exc.resource
            self._watch(exc.error, f"retried release of a quarantined {item.kind.label}")
            return False
        except (ReleaseFailure, BackendError):
            item.handle = None
            item.reason += "; a retried release was indeterminate"
            return False
        self.quarantine.remove(item)
        return True


def _waiter_of(provider: Any) -> Callable[[Any, int | None], bool] | None:
    """The provider's optional blocking wait (:class:`~accelcore.contract.waiting.EventWaiter`), looked up once."""
    wait_event = getattr(provider, "wait_event", None)
    return wait_event if callable(wait_event) else None


def _charges(entry: Any) -> tuple[int, int]:
    """(allocation_bytes, resident_bytes) an entry holds against the policy."""
    if isinstance(entry, _Buffer):
        return entry.info.allocation_bytes, 0
    if isinstance(entry, _Program):
        return 0, entry.resident_bytes
    return 0, 0


def _timeout(timeout: Timeout | float | None) -> Timeout:
    if timeout is None:
        return Timeout.INFINITE
    if isinstance(timeout, Timeout):
        return timeout
    seconds = timeout_seconds(timeout)  # a number, finite, in range: else INVALID_ARGUMENT naming timeout=
    if seconds <= 0:
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"timeout {timeout!r} must be a positive number of seconds")
    return Timeout.after_ns(max(1, int(seconds * 1e9)))
