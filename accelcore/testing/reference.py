"""``ReferenceAccelerator``: the whole contract in pure Python/numpy (test infrastructure).

Honest about what it is: no driver, buffers are numpy arrays, programs are the
deterministic built-ins of :mod:`accelcore.testing.programs`. It keeps every
rule of the contract (exact allocations, segmented transfers, validation
before admission, stable terminal states, real cancellation) so the engine
and the suite can be tested without a device.

Progress: a submission runs synchronously inside ``submit`` unless the test
control holds it (``control.hold()``); a held event stays Pending until
``control.release(event)`` runs it, or its finite deadline passes (then it
ends ``Failed(DEADLINE_EXPIRED)``). ``control.run_away()`` holds them as kernels
the device cannot preempt: Pending past their deadline, and a cancel answers
BUSY, until released. No threads. Not thread-safe.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from ..conformance.target import COPY_PATH_LIMIT
from ..contract.buffers import AllocatedBuffer, BufferDesc, BufferInfo, validate_transfer
from ..contract.device import ContextDesc, DeviceIdentity, DeviceInfo, DeviceLimits, QueueDesc
from ..contract.errors import BackendError, ErrorKind, ReleaseRejected, SubmitRejected
from ..contract.flags import AcceleratorClass, BufferProperties, Capabilities, MemoryDomain
from ..contract.ports import ByteSink, ByteSource
from ..contract.program import ArtifactRef
from ..contract.refusals import (
    cancellation_lost,
    context_not_empty,
    event_still_pending,
    foreign_handle,
    limit_reached,
    other_context,
    released_handle,
    still_referenced,
    wrong_handle,
)
from ..contract.submission import (
    BindingRef,
    EventState,
    Timeout,
    validate_binding_ranges,
    validate_bindings,
    validate_program_bindings,
)
from .programs import PROGRAM_RESIDENT_BYTES, REFERENCE_FORMAT, REFERENCE_TARGET, ReferenceProgram, parse_program

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "REFERENCE_CAPABILITIES",
    "REFERENCE_LIMITS",
    "REFERENCE_UUID",
    "HoldControl",
    "RefBuffer",
    "RefContext",
    "RefEvent",
    "RefProgram",
    "RefQueue",
    "ReferenceAccelerator",
]

REFERENCE_UUID = bytes.fromhex("acce1c0e0000400080000000000000aa")
REFERENCE_CAPABILITIES = (
    Capabilities.HOST_VISIBLE_MEMORY
    | Capabilities.DEVICE_LOCAL_MEMORY
    | Capabilities.SHARED_MEMORY
    | Capabilities.EVENT_CANCELLATION
)
REFERENCE_LIMITS = DeviceLimits(
    max_contexts=16,
    max_buffers_per_context=64,
    max_programs_per_context=16,
    max_queues_per_context=8,
    max_events_per_context=64,
    max_bindings_per_submission=8,
    max_buffer_bytes=64 << 20,
    max_artifact_bytes=64 << 10,
)
_MIN_ALIGNMENT = 64
_STAGING_BYTES = 4096
_DOMAIN_PROPERTIES = {
    MemoryDomain.HOST: BufferProperties.HOST_VISIBLE | BufferProperties.DIRECT_BINDING,
    MemoryDomain.DEVICE: BufferProperties.DEVICE_LOCAL | BufferProperties.DIRECT_BINDING,
    MemoryDomain.SHARED: BufferProperties.HOST_VISIBLE | BufferProperties.DIRECT_BINDING,
}

H = TypeVar("H", bound="_Handle")


def _view(array: npt.NDArray[np.uint8]) -> memoryview:
    """A zero-copy byte view of a backing array."""
    return memoryview(cast("Buffer", array))


class _Handle:
    __slots__ = ("alive", "owner", "serial")

    kind = "handle"

    def __init__(self, owner: ReferenceAccelerator, serial: int) -> None:
        self.owner = owner
        self.serial = serial
        self.alive = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} #{self.serial}{'' if self.alive else ' released'}>"


class RefContext(_Handle):
    __slots__ = ("buffers", "events", "programs", "queues")
    kind = "context"

    def __init__(self, owner: ReferenceAccelerator, serial: int) -> None:
        super().__init__(owner, serial)
        self.buffers = 0
        self.programs = 0
        self.queues = 0
        self.events = 0

    def children(self) -> int:
        return self.buffers + self.programs + self.queues + self.events


class RefBuffer(_Handle):
    __slots__ = ("context", "data", "desc", "info", "users")
    kind = "buffer"

    def __init__(
        self,
        owner: ReferenceAccelerator,
        serial: int,
        context: RefContext,
        info: BufferInfo,
        data: npt.NDArray[np.uint8],
    ) -> None:
        super().__init__(owner, serial)
        self.context = context
        self.info = info
        self.desc = info.desc
        self.data = data
        self.users = 0


class RefProgram(_Handle):
    __slots__ = ("context", "program", "users")
    kind = "program"

    def __init__(
        self, owner: ReferenceAccelerator, serial: int, context: RefContext, program: ReferenceProgram
    ) -> None:
        super().__init__(owner, serial)
        self.context = context
        self.program = program
        self.users = 0


class RefQueue(_Handle):
    __slots__ = ("context", "users")
    kind = "queue"

    def __init__(self, owner: ReferenceAccelerator, serial: int, context: RefContext) -> None:
        super().__init__(owner, serial)
        self.context = context
        self.users = 0


class RefEvent(_Handle):
    __slots__ = (
        "bindings",
        "buffers",
        "context",
        "deadline_ns",
        "expired",
        "held",
        "program",
        "queue",
        "running",
        "state",
    )
    kind = "event"

    def __init__(
        self,
        owner: ReferenceAccelerator,
        serial: int,
        queue: RefQueue,
        program: RefProgram,
        buffers: list[RefBuffer],
        bindings: list[tuple[int, int, int]],
        deadline_ns: int | None,
    ) -> None:
        super().__init__(owner, serial)
        self.context = queue.context
        self.queue = queue
        self.program = program
        self.buffers = buffers
        self.bindings = bindings  # (slot, offset, end)
        self.deadline_ns = deadline_ns
        self.state = EventState.PENDING
        self.held = False
        self.running = False
        """Held as a running kernel the device cannot stop (``control.run_away()``)."""
        # Built at admission so that polling allocates nothing.
        self.expired = EventState.failed(
            BackendError(ErrorKind.DEADLINE_EXPIRED, f"event #{serial} passed its deadline while pending")
        )


class HoldControl:
    """The test control: hold submissions pending, then release them one by one or all at once."""

    def __init__(self, owner: ReferenceAccelerator) -> None:
        self._owner = owner
        self.holding = False
        self.running = False

    def hold(self) -> None:
        """From now on, new submissions on this instance stay Pending until released."""
        self.holding = True

    def run_away(self) -> None:
        """From now on, new submissions are held as running kernels the device cannot preempt:
        Pending past their deadline, a cancel answers BUSY (completion won), until released
        (then they end Complete)."""
        self.holding = True
        self.running = True

    def stop_holding(self) -> None:
        self.holding = False
        self.running = False

    def release(self, event: RefEvent) -> None:
        """Run one held event now (it ends Complete, or Failed(DEADLINE_EXPIRED) past its deadline)."""
        self._owner._check(event, RefEvent)
        if event.held and event.state is EventState.PENDING:
            self._owner._finish(event)

    def release_all(self) -> int:
        """Run every held pending event; returns how many ran."""
        ran = 0
        for event in list(self._owner._events):
            if event.held and event.state is EventState.PENDING:
                self._owner._finish(event)
                ran += 1
        return ran

    def held(self) -> int:
        return sum(1 for e in self._owner._events if e.held and e.state is EventState.PENDING)


class ReferenceAccelerator:
    """A pure-Python ``Accelerator`` over numpy buffers (see the module docstring).

    ``capabilities`` and ``limits`` let tests shape the device (e.g. drop
    EVENT_CANCELLATION); ``device_info`` stays stable for the instance.
    """

    def __init__(
        self,
        *,
        capabilities: Capabilities = REFERENCE_CAPABILITIES,
        limits: DeviceLimits = REFERENCE_LIMITS,
        uuid: bytes = REFERENCE_UUID,
    ) -> None:
        self._info = DeviceInfo(DeviceIdentity(uuid, AcceleratorClass.OTHER, 0xACCE, 0x0001), capabilities, limits)
        self._serial = 0
        self._contexts: list[RefContext] = []
        self._buffers: list[RefBuffer] = []
        self._programs: list[RefProgram] = []
        self._queues: list[RefQueue] = []
        self._events: list[RefEvent] = []
        self.control = HoldControl(self)
        self.copy_paths: deque[dict[str, int]] = deque(maxlen=COPY_PATH_LIMIT)
        """Per accepted submission: how its bindings reach the program (``ConformanceHooks.copy_paths``).
        The reference runs on the buffers' own bytes: DEVICE buffers are ``direct``, HOST and SHARED ones
        ``shared`` (host memory the program reads in place); nothing is ``staged``. ``transfer_bytes``:
        what write_buffer/read_buffer moved since the previous submission (or since construction).
        Always on, so bounded: the latest :data:`~accelcore.conformance.target.COPY_PATH_LIMIT` records,
        each with ``seq``, its number since construction."""
        self._copy_path_seq = 0
        self.transferred = 0
        """Bytes moved by successful write_buffer/read_buffer calls on this instance."""
        self._transferred_at_submit = 0

    def __repr__(self) -> str:
        return f"<ReferenceAccelerator live={self.live_resources()}>"

    # -- helpers -----------------------------------------------------------------------------

    def _next(self) -> int:
        self._serial += 1
        return self._serial

    def _check(self, handle: object, cls: type[H]) -> H:
        if not isinstance(handle, cls):
            raise wrong_handle(cls.kind, cls.__name__, handle)
        if not handle.alive:
            raise released_handle(cls.kind)
        if handle.owner is not self:
            raise foreign_handle(cls.kind)
        return handle

    def live_resources(self) -> dict[str, int]:
        """Live native resources per kind (the reference never has indeterminate ones)."""
        return {
            "context": len(self._contexts),
            "buffer": len(self._buffers),
            "program": len(self._programs),
            "queue": len(self._queues),
            "event": len(self._events),
        }

    # -- metadata and contexts ---------------------------------------------------------------

    def device_info(self) -> DeviceInfo:
        return self._info

    def create_context(self, desc: ContextDesc) -> RefContext:
        self._info.validate_context_desc(desc)
        if len(self._contexts) >= self._info.limits.max_contexts:
            raise limit_reached("max_contexts", self._info.limits.max_contexts)
        context = RefContext(self, self._next())
        self._contexts.append(context)
        return context

    def destroy_context(self, context: RefContext) -> None:
        self._check(context, RefContext)
        if context.children():
            raise ReleaseRejected(
                context_not_empty(context.buffers, context.programs, context.queues, context.events), context
            )
        context.alive = False
        self._contexts.remove(context)

    # -- buffers -----------------------------------------------------------------------------

    def allocate_buffer(self, context: RefContext, desc: BufferDesc) -> AllocatedBuffer[RefBuffer]:
        self._check(context, RefContext)
        self._info.validate_buffer_desc(desc)
        if context.buffers >= self._info.limits.max_buffers_per_context:
            raise limit_reached("max_buffers_per_context", self._info.limits.max_buffers_per_context)
        alignment = max(desc.alignment, _MIN_ALIGNMENT)
        raw = np.zeros(desc.bytes + alignment, dtype=np.uint8)
        start = (-raw.ctypes.data) % alignment
        data = raw[start : start + desc.bytes]
        info = self._buffer_info(desc, raw.nbytes, alignment)
        buffer = RefBuffer(self, self._next(), context, info, data)
        context.buffers += 1
        self._buffers.append(buffer)
        return AllocatedBuffer(buffer, info)

    def _buffer_info(self, desc: BufferDesc, allocation_bytes: int, alignment: int) -> BufferInfo:
        """The honest BufferInfo of a new backing (a seam for deliberately broken variants)."""
        return BufferInfo(desc, allocation_bytes, alignment, _DOMAIN_PROPERTIES[desc.domain])

    def _check_transfer(self, buffer: RefBuffer, offset: int, length: int, *, write: bool) -> None:
        """accelcore's transfer check (a seam for deliberately broken variants)."""
        validate_transfer(buffer.desc, offset, length, write=write)

    def write_buffer(self, buffer: RefBuffer, offset: int, data: ByteSource) -> None:
        self._write(buffer, offset, data)
        self.transferred += data.len()

    def _write(self, buffer: RefBuffer, offset: int, data: ByteSource) -> None:
        self._check(buffer, RefBuffer)
        length = data.len()
        self._check_transfer(buffer, offset, length, write=True)
        target = _view(buffer.data)[offset : offset + length]
        if buffer.desc.domain is MemoryDomain.DEVICE:
            # Device-local backing: bounded staging, never a transfer-sized temporary.
            staging = memoryview(bytearray(min(_STAGING_BYTES, max(length, 1))))
            position = 0
            while position < length:
                take = min(staging.nbytes, length - position)
                data.read_at(position, staging[:take])
                target[position : position + take] = staging[:take]
                position += take
            return
        segments = data.segments()
        if segments is None:
            data.read_at(0, target)
            return
        position = 0
        for segment in segments:
            target[position : position + segment.nbytes] = segment
            position += segment.nbytes

    def read_buffer(self, buffer: RefBuffer, offset: int, data: ByteSink) -> None:
        self._read(buffer, offset, data)
        self.transferred += data.len()

    def _read(self, buffer: RefBuffer, offset: int, data: ByteSink) -> None:
        self._check(buffer, RefBuffer)
        length = data.len()
        self._check_transfer(buffer, offset, length, write=False)
        source = _view(buffer.data)[offset : offset + length]
        segments = data.segments()
        if segments is None:
            data.write_at(0, source)
            return
        position = 0
        for segment in segments:
            segment[:] = source[position : position + segment.nbytes]
            position += segment.nbytes

    def free_buffer(self, buffer: RefBuffer) -> None:
        self._check(buffer, RefBuffer)
        if buffer.users:
            raise ReleaseRejected(still_referenced("buffer", buffer.users), buffer)
        buffer.alive = False
        buffer.context.buffers -= 1
        self._buffers.remove(buffer)

    # -- programs and queues -----------------------------------------------------------------

    def load_program(self, context: RefContext, artifact: ArtifactRef) -> RefProgram:
        self._check(context, RefContext)
        if artifact.format != REFERENCE_FORMAT:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"artifact format {int(artifact.format):#010x} is not the reference format "
                f"{int(REFERENCE_FORMAT):#010x}",
            )
        if any(artifact.target.words) and artifact.target != REFERENCE_TARGET:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"artifact target word 0 {artifact.target.words[0]:#x} is not the reference target "
                f"{REFERENCE_TARGET.words[0]:#x} (or all zero)",
            )
        size = artifact.payload.len()
        if size > self._info.limits.max_artifact_bytes:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"artifact of {size} bytes exceeds max_artifact_bytes {self._info.limits.max_artifact_bytes}",
            )
        if artifact.resident_bytes < PROGRAM_RESIDENT_BYTES:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"a reference program retains {PROGRAM_RESIDENT_BYTES} bytes; resident_bytes "
                f"{artifact.resident_bytes} does not allow it",
            )
        if context.programs >= self._info.limits.max_programs_per_context:
            raise limit_reached("max_programs_per_context", self._info.limits.max_programs_per_context)
        program = RefProgram(self, self._next(), context, parse_program(artifact.payload))
        context.programs += 1
        self._programs.append(program)
        return program

    def unload_program(self, program: RefProgram) -> None:
        self._check(program, RefProgram)
        if program.users:
            raise ReleaseRejected(still_referenced("program", program.users), program)
        program.alive = False
        program.context.programs -= 1
        self._programs.remove(program)

    def create_queue(self, context: RefContext, desc: QueueDesc) -> RefQueue:
        self._check(context, RefContext)
        self._info.validate_queue_desc(desc)
        if context.queues >= self._info.limits.max_queues_per_context:
            raise limit_reached("max_queues_per_context", self._info.limits.max_queues_per_context)
        queue = RefQueue(self, self._next(), context)
        context.queues += 1
        self._queues.append(queue)
        return queue

    def destroy_queue(self, queue: RefQueue) -> None:
        self._check(queue, RefQueue)
        if queue.users:
            raise ReleaseRejected(still_referenced("queue", queue.users), queue)
        queue.alive = False
        queue.context.queues -= 1
        self._queues.remove(queue)

    # -- submission --------------------------------------------------------------------------

    def submit(
        self, queue: RefQueue, program: RefProgram, bindings: Sequence[BindingRef[RefBuffer]], timeout: Timeout
    ) -> RefEvent:
        try:
            buffers = self._admit(queue, program, bindings)
        except BackendError as exc:
            raise SubmitRejected(exc) from None
        deadline = None if timeout.ns is None else time.monotonic_ns() + timeout.ns
        event = RefEvent(
            self,
            self._next(),
            queue,
            program,
            buffers,
            [(b.slot, b.range.offset, b.range.end()) for b in bindings],
            deadline,
        )
        queue.users += 1
        program.users += 1
        path = self._copy_path(buffers)
        path["transfer_bytes"] = self.transferred - self._transferred_at_submit
        path["seq"] = self._copy_path_seq
        self._copy_path_seq += 1
        self._transferred_at_submit = self.transferred
        self.copy_paths.append(path)
        for buffer in buffers:
            buffer.users += 1
        queue.context.events += 1
        self._events.append(event)
        if self.control.holding:
            event.held = True
            event.running = self.control.running
        else:
            self._finish(event)
        return event

    def _copy_path(self, buffers: Sequence[RefBuffer]) -> dict[str, int]:
        """A seam for deliberately broken variants (a bounce-buffer provider reports ``staged``)."""
        direct = sum(1 for b in buffers if b.desc.domain is MemoryDomain.DEVICE)
        return {"direct": direct, "shared": len(buffers) - direct, "staged": 0, "staged_bytes": 0}

    def _admit(self, queue: Any, program: Any, bindings: Sequence[BindingRef[Any]]) -> list[RefBuffer]:
        """Every admission check; raises BackendError (wrapped as SubmitRejected by ``submit``)."""
        q = self._check(queue, RefQueue)
        p = self._check(program, RefProgram)
        if p.context is not q.context:
            raise other_context("the program")
        self._validate_bindings(bindings)
        buffers = []
        for binding in bindings:
            buffer = self._check(binding.buffer, RefBuffer)
            if not self._same_context(buffer.context, q.context):
                raise other_context(f"slot {binding.slot}: the buffer")
            buffers.append(buffer)
        validate_binding_ranges(bindings, [b.desc for b in buffers])
        for binding, buffer in zip(bindings, buffers, strict=True):
            if not buffer.desc.allows_access(binding.access):
                raise BackendError(
                    ErrorKind.PERMISSION_DENIED,
                    f"slot {binding.slot}: access {binding.access.name} not allowed by usage {buffer.desc.usage!r}",
                )
        validate_program_bindings(bindings, p.program.slots, p.program.name)
        if q.context.events >= self._info.limits.max_events_per_context:
            raise limit_reached("max_events_per_context", self._info.limits.max_events_per_context)
        return buffers

    def _same_context(self, a: RefContext, b: RefContext) -> bool:
        """Whether two objects share a context (a seam for deliberately broken variants)."""
        return a is b

    def _validate_bindings(self, bindings: Sequence[BindingRef[Any]]) -> None:
        """Count and slot uniqueness (a seam for deliberately broken variants)."""
        validate_bindings(bindings, self._info.limits.max_bindings_per_submission)

    def _finish(self, event: RefEvent) -> None:
        """Run a pending event's program (or expire it past its deadline)."""
        event.held = False
        if event.deadline_ns is not None and not event.running and time.monotonic_ns() > event.deadline_ns:
            event.state = event.expired
            return
        arrays = {
            slot: buffer.data[offset:end]
            for (slot, offset, end), buffer in zip(event.bindings, event.buffers, strict=True)
        }
        event.program.program.run(arrays)
        event.state = EventState.COMPLETE

    # -- events ------------------------------------------------------------------------------

    def poll_event(self, event: RefEvent) -> EventState:
        self._check(event, RefEvent)
        if event.state is EventState.PENDING and event.deadline_ns is not None and not event.running:
            if time.monotonic_ns() > event.deadline_ns:
                event.state = event.expired
                event.held = False
        return event.state

    def cancel_event(self, event: RefEvent) -> None:
        self._info.validate_event_cancellation()
        self._check(event, RefEvent)
        if event.state == EventState.CANCELLED:
            return  # cancellation already won: idempotent (as on every provider)
        if event.state is not EventState.PENDING or event.running:
            raise cancellation_lost()
        event.state = EventState.CANCELLED
        event.held = False

    def destroy_event(self, event: RefEvent) -> None:
        self._check(event, RefEvent)
        if event.state is EventState.PENDING:
            raise ReleaseRejected(event_still_pending(), event)
        event.alive = False
        event.queue.users -= 1
        event.program.users -= 1
        for buffer in event.buffers:
            buffer.users -= 1
        event.context.events -= 1
        self._events.remove(event)
