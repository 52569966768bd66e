"""Buffer calls of the engine: allocation against the policy, transfers, release."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..contract._checks import check_u64
from ..contract.buffers import BufferDesc, BufferInfo, validate_transfer
from ..contract.errors import BackendError, ErrorKind, ReleaseFailure, ReleaseRejected
from ..contract.ports import ByteSink, ByteSource, MemorySink, sink_of, source_of
from .base import B, C, E, EngineBase, P, Q
from .entries import _NEEDS_DISCARD, _PENDING_STATUS, QuarantinedObject, _Buffer
from .ids import ObjectKind, format_id

if TYPE_CHECKING:
    from typing_extensions import Buffer


class BufferCalls(EngineBase[C, B, P, Q, E]):
    """Allocate, write, read and free buffers (mixed into :class:`~.core.CommandEngine`)."""

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
