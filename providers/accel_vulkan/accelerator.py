"""``VulkanAccelerator``: the ``Accelerator`` contract over the ``vulkan`` cffi binding.

One provider instance drives one physical device through the process's
shared ``VkInstance`` of its validation mode (:func:`.instance.acquire`;
never destroyed while the process runs, see docs/vulkan.md "One instance per
process"); it owns only its contexts, each its own ``VkDevice``, and what
they hold. Validation messages are attributed by time window: an instance
reports the shared log's messages that arrived between its open and its
close, so two instances open at once in one process see each other's. Every method validates with the accelcore
validators first, then calls the modules that own the native objects
(:mod:`.memory`, :mod:`.transfer`, :mod:`.pipeline`, :mod:`.submission`).
Calls are serialised by one lock per instance. Handles are provider-owned
records; using a released handle or one of another instance is
INVALID_ARGUMENT.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from accelcore import (
    AllocatedBuffer,
    ArtifactFormat,
    ArtifactRef,
    BackendError,
    BindingRef,
    BufferDesc,
    ByteSink,
    ByteSource,
    ContextDesc,
    DeviceInfo,
    ErrorKind,
    EventState,
    QueueDesc,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitIndeterminate,
    SubmitRejected,
    Timeout,
    validate_binding_ranges,
    validate_program_bindings,
)
from accelcore.contract.refusals import (
    context_not_empty,
    event_still_pending,
    foreign_handle,
    limit_reached,
    other_context,
    released_handle,
    still_referenced,
    wrong_handle,
)
from accelcore.kernels.package import ModuleKind, format_for

from . import context as context_ops
from . import instance as instances
from . import memory, pipeline, submission, transfer
from ._binding import vk
from .accounting import Ledger
from .device_info import MAX_CONTEXTS, build_device_info
from .errors import native
from .handles import (
    EventStage,
    HandleState,
    VulkanBuffer,
    VulkanContext,
    VulkanEvent,
    VulkanProgram,
    VulkanQueue,
)
from .instance import describe, validation_default
from .recording import Plan, PlanMemo
from .validation import ValidationMessage

if TYPE_CHECKING:
    from accelcore.conformance.target import CopyPathLog

T = TypeVar("T")
_LIVE = HandleState.LIVE

CLOSE_WAIT_S = 2.0
"""How long :meth:`VulkanAccelerator.close` waits for a context's batches to end before it abandons the
context (a kernel still running then keeps its ``VkDevice`` alive until the process exits)."""

ABANDONED: list[tuple[Any, tuple[VulkanContext, ...], tuple[Any, ...]]] = []
"""(instance, contexts, their live handles) of every close that abandoned a context whose device was still
running a batch: referenced here so nothing of them is ever destroyed while the process runs."""


class VulkanAccelerator:
    """The contract over one Vulkan physical device.

    ``device``: the physical device's enumeration index or its 16-byte
    ``deviceUUID``. ``validation``: enable ``VK_LAYER_KHRONOS_validation`` and
    collect its messages in :attr:`validation_messages` (None → the
    ``ACCEL_VULKAN_VALIDATION`` environment variable). ``map_device_domain``:
    False sends Device-domain transfers through the bounded staging buffer
    even when the memory is host-visible (exercises the staging path on
    unified-memory devices). ``flush_pipeline_destroys``: after unloading a
    program, hand the device one empty batch so a driver that frees destroyed
    pipelines only on a queue submission frees it now (None → only where the
    driver is known to, Mesa lavapipe: :func:`~accel_vulkan.context.defers_pipeline_destroy`).
    """

    interruptible_wait = True
    """:meth:`wait_event` blocks in slices of :data:`~accel_vulkan.submission.WAIT_SLICE_NS`, returning to
    Python in between (:class:`accelcore.contract.waiting.EventWaiter`): the engine calls it on the main thread too."""

    def __init__(
        self,
        device: int | bytes = 0,
        *,
        validation: bool | None = None,
        map_device_domain: bool = True,
        flush_pipeline_destroys: bool | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self._token = object()
        self._ledger = Ledger()
        self._map_device_domain = map_device_domain
        self._contexts: list[VulkanContext] = []
        self._live: dict[str, dict[Any, None]] = {"buffer": {}, "program": {}, "queue": {}, "event": {}}
        self._closed = False
        self._mark_end: int | None = None
        self._instance, self._mark = instances.acquire(validation_default() if validation is None else validation)
        try:
            physicals = self._instance.physical_devices()
            chosen = None
            for index, physical in enumerate(physicals):
                desc = describe(index, physical)
                if (isinstance(device, int) and index == device) or (isinstance(device, bytes) and desc.uuid == device):
                    chosen = (physical, desc)
                    break
            if chosen is None:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT,
                    f"no Vulkan physical device {device!r} (found {len(physicals)})",
                )
            self._physical, self.description = chosen
            if self.description.not_offered is not None:
                raise BackendError(
                    ErrorKind.UNSUPPORTED, f"{self.description.name} is not offered: {self.description.not_offered}"
                )
            self._info = build_device_info(self.description)
            self._info.validate()
            self._flush_destroys = (
                context_ops.defers_pipeline_destroy(self.description)
                if flush_pipeline_destroys is None
                else flush_pipeline_destroys
            )
        except BaseException:
            self._closed = True
            instances.release(self._instance)
            raise
        self._held_all = False
        self.transferred = 0
        """Bytes moved by successful write_buffer/read_buffer calls (the copy-path diagnostics count them)."""
        self.copy_log: CopyPathLog | None = None
        """Copy-path records, once :meth:`copy_paths` turned them on (None: the submit path records nothing)."""

    # ------------------------------------------------------------------ plumbing

    def _check(self, handle: Any, kind: type[T], what: str) -> T:
        """``handle`` is a live ``kind`` of this open instance (INVALID_ARGUMENT naming ``what`` otherwise)."""
        if type(handle) is not kind and not isinstance(handle, kind):
            raise wrong_handle(what, kind.__name__, handle)
        record: Any = handle
        if record.state is not _LIVE:
            raise released_handle(what)
        if kind is VulkanContext:
            owner = record.owner
        elif kind is VulkanEvent:
            owner = record.queue.context.owner
        else:
            owner = record.context.owner
        if owner is not self._token:
            raise foreign_handle(what)
        if self._closed:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, "this provider instance was closed")
        return handle

    @staticmethod
    def _context_of(handle: Any) -> VulkanContext:
        if isinstance(handle, VulkanEvent):
            return handle.queue.context
        context: VulkanContext = handle.context
        return context

    def _live_context(self, context: Any) -> VulkanContext:
        return self._check(context, VulkanContext, "context")

    def _release(self, handle: T, work: Callable[[], None]) -> None:
        """Run a release; a native failure after the handle was checked is indeterminate."""
        try:
            work()
        except BackendError as error:
            raise ReleaseIndeterminate(error) from error

    @property
    def validation_messages(self) -> list[ValidationMessage]:
        """Messages of the shared log that arrived while this instance was open (empty when validation is off).

        The window runs from open to the end of :meth:`close` (so teardown messages count); messages of
        another instance open at the same time in this process fall in it too.
        """
        log = self._instance.log
        if log is None:
            return []
        return log.window(self._mark, self._mark_end)

    @property
    def validation_enabled(self) -> bool:
        return self._instance.validation_enabled

    def live_resources(self) -> dict[str, int]:
        """Live native objects per kind (the instance itself is not counted)."""
        with self._lock:
            return self._ledger.snapshot()

    # ------------------------------------------------------------------ metadata

    def device_info(self) -> DeviceInfo:
        return self._info

    @property
    def artifact_formats(self) -> tuple[ArtifactFormat, ...]:
        """The artifact formats ``load_program`` accepts: kernel packages holding Vulkan SPIR-V."""
        return (format_for(ModuleKind.SPIRV_VULKAN),)

    # ------------------------------------------------------------------ contexts

    def create_context(self, desc: ContextDesc) -> VulkanContext:
        with self._lock:
            if self._closed:
                raise BackendError(ErrorKind.INVALID_ARGUMENT, "this provider instance was closed")
            self._info.validate_context_desc(desc)
            live = sum(1 for c in self._contexts if c.state is HandleState.LIVE)
            if live >= MAX_CONTEXTS:
                raise limit_reached("max_contexts", MAX_CONTEXTS)
            created = context_ops.create(self._token, self._physical, self.description, self._ledger)
            self._contexts.append(created)
            return created

    def destroy_context(self, context: VulkanContext) -> None:
        with self._lock:
            try:
                ctx = self._live_context(context)
            except BackendError as error:
                raise ReleaseRejected(error, context) from error
            if ctx.buffers or ctx.programs or ctx.queues or ctx.events:
                raise ReleaseRejected(context_not_empty(ctx.buffers, ctx.programs, ctx.queues, ctx.events), context)
            self._release(ctx, lambda: self._destroy_context(ctx))
            ctx.state = HandleState.RELEASED
            self._contexts.remove(ctx)

    # ------------------------------------------------------------------ buffers

    def allocate_buffer(self, context: VulkanContext, desc: BufferDesc) -> AllocatedBuffer[VulkanBuffer]:
        with self._lock:
            ctx = self._live_context(context)
            if not isinstance(desc, BufferDesc):
                raise BackendError(ErrorKind.INVALID_ARGUMENT, f"desc must be a BufferDesc, got {type(desc).__name__}")
            self._info.validate_buffer_desc(desc)
            limit = self._info.limits.max_buffers_per_context
            if ctx.buffers >= limit:
                raise limit_reached("max_buffers_per_context", limit)
            made = memory.allocate(ctx, self.description, desc, self._ledger, map_device_domain=self._map_device_domain)
            try:
                self._info.validate_buffer_info(desc, made.info)
            except BaseException:
                memory.release(made, self._ledger)
                raise
            ctx.buffers += 1
            self._live["buffer"][made] = None
            return AllocatedBuffer(made, made.info)

    def write_buffer(self, buffer: VulkanBuffer, offset: int, data: ByteSource) -> None:
        with self._lock:
            buf = self._check(buffer, VulkanBuffer, "buffer")
            transfer.write(buf, offset, data, self.description, self._ledger)
            self.transferred += data.len()

    def read_buffer(self, buffer: VulkanBuffer, offset: int, data: ByteSink) -> None:
        with self._lock:
            buf = self._check(buffer, VulkanBuffer, "buffer")
            transfer.read(buf, offset, data, self.description, self._ledger)
            self.transferred += data.len()

    def free_buffer(self, buffer: VulkanBuffer) -> None:
        with self._lock:
            try:
                buf = self._check(buffer, VulkanBuffer, "buffer")
            except BackendError as error:
                raise ReleaseRejected(error, buffer) from error
            if buf.events:
                raise ReleaseRejected(still_referenced("buffer", buf.events), buffer)
            self._release(buf, lambda: self._free_buffer(buf))
            self._forget(buf)

    # ------------------------------------------------------------------ programs

    def load_program(self, context: VulkanContext, artifact: ArtifactRef) -> VulkanProgram:
        with self._lock:
            ctx = self._live_context(context)
            if not isinstance(artifact, ArtifactRef):
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT, f"artifact must be an ArtifactRef, got {type(artifact).__name__}"
                )
            limit = self._info.limits.max_programs_per_context
            if ctx.programs >= limit:
                raise limit_reached("max_programs_per_context", limit)
            program = pipeline.load(ctx, self.description, artifact, self._ledger)
            ctx.programs += 1
            self._live["program"][program] = None
            return program

    def unload_program(self, program: VulkanProgram) -> None:
        with self._lock:
            try:
                prog = self._check(program, VulkanProgram, "program")
            except BackendError as error:
                raise ReleaseRejected(error, program) from error
            if prog.events:
                raise ReleaseRejected(still_referenced("program", prog.events), program)
            self._release(prog, lambda: self._unload_program(prog))
            self._forget(prog)

    # ------------------------------------------------------------------ queues

    def create_queue(self, context: VulkanContext, desc: QueueDesc) -> VulkanQueue:
        with self._lock:
            ctx = self._live_context(context)
            self._info.validate_queue_desc(desc)
            limit = self._info.limits.max_queues_per_context
            if ctx.queues >= limit:
                raise limit_reached("max_queues_per_context", limit)
            semaphore, counter = submission.create_queue(ctx, self._ledger)
            index = ctx.queue_cursor % len(ctx.native_queues)
            ctx.queue_cursor += 1
            queue = VulkanQueue(
                ctx,
                ctx.native_queues[index],
                index,
                semaphore,
                counter,
                submit_native=submission.submit_native(semaphore),
                gate_closed=self._held_all,
            )
            ctx.queues += 1
            self._live["queue"][queue] = None
            return queue

    def destroy_queue(self, queue: VulkanQueue) -> None:
        with self._lock:
            try:
                q = self._check(queue, VulkanQueue, "queue")
            except BackendError as error:
                raise ReleaseRejected(error, queue) from error
            if q.events:
                raise ReleaseRejected(still_referenced("queue", q.events), queue)
            self._release(q, lambda: submission.destroy_queue(q, self._ledger))
            self._forget(q)

    # ------------------------------------------------------------------ submission

    def submit(
        self,
        queue: VulkanQueue,
        program: VulkanProgram,
        bindings: Sequence[BindingRef[VulkanBuffer]],
        timeout: Timeout,
    ) -> VulkanEvent:
        admitted_ns = time.monotonic_ns()
        with self._lock:
            try:
                q, prog, refs, plan = self._validate_submission(queue, program, bindings, timeout)
                deadline = None if timeout.ns is None else admitted_ns + timeout.ns
                ctx = q.context
                if ctx.events >= ctx.descriptor_sets_max:
                    raise limit_reached("max_events_per_context", ctx.descriptor_sets_max)
                recording = submission.acquire(q, prog, refs, plan, self._ledger)
                event = submission.new_event(q, prog, recording, deadline)
            except BackendError as error:
                raise SubmitRejected(error) from error
            self._retain(event)
            if q.gate_closed:
                q.held.append(event)
                if self.copy_log is not None:
                    self._note_copy_path(refs, recording)
                return event
            if submission.expired(event):
                self._drop(event, keep=recording.from_cache)
                raise SubmitRejected(
                    BackendError(ErrorKind.DEADLINE_EXPIRED, "the deadline passed before the batch reached the device")
                )
            try:
                submission.hand_over(event)
            except BackendError as error:
                if error.kind in (ErrorKind.OUT_OF_MEMORY, ErrorKind.RESOURCE_LIMIT):
                    # vkQueueSubmit failing with an out-of-memory result leaves nothing submitted.
                    self._drop(event, keep=recording.from_cache)
                    raise SubmitRejected(error) from error
                # Acceptance unknown: wait (best effort) until the queue holds nothing of ours before the
                # event can be released, so its command buffer is never freed while in use.
                try:
                    native("vkQueueWaitIdle", q.native_queue)
                except BackendError:
                    pass
                recording.reusable = False  # its state after a failed vkQueueSubmit is unknown: freed, never cached
                submission.finish(event, EventState.failed(error))
                raise SubmitIndeterminate(error, event) from error
            if self.copy_log is not None:
                self._note_copy_path(refs, recording)
            return event

    def _validate_submission(
        self, queue: Any, program: Any, bindings: Sequence[BindingRef[Any]], timeout: Any
    ) -> tuple[VulkanQueue, VulkanProgram, tuple[BindingRef[VulkanBuffer], ...], Plan]:
        """Handles on every call; the value checks and the grid once per distinct binding set (see PlanMemo)."""
        q = self._check(queue, VulkanQueue, "queue")
        prog = self._check(program, VulkanProgram, "program")
        if not isinstance(timeout, Timeout):
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"timeout must be a Timeout, got {timeout!r}")
        context = q.context
        if prog.context is not context:
            raise other_context("the program")
        refs = tuple(bindings)
        exact = True  # only plain BindingRefs key the memo: a subclass could redefine equality
        for ref in refs:
            if type(ref) is not BindingRef:
                if not isinstance(ref, BindingRef):
                    raise BackendError(
                        ErrorKind.INVALID_ARGUMENT, f"bindings must be BindingRef, got {type(ref).__name__}"
                    )
                exact = False
            buf = ref.buffer
            # Fast path: a live buffer of the queue's (already checked) context; anything else gets the full check.
            if type(buf) is not VulkanBuffer or buf.state is not _LIVE or buf.context is not context:
                buf = self._check(buf, VulkanBuffer, f"slot {ref.slot}: the buffer")
                if buf.context is not context:
                    raise other_context(f"slot {ref.slot}: the buffer")
        memo: PlanMemo = context.plans
        plan = memo.get(prog, refs) if exact else None
        if plan is None:
            self._check_values(prog, refs)
            plan = submission.plan_of(prog, refs, self.description)
            if exact:
                memo.put(prog, refs, plan)
        return q, prog, refs, plan

    def _check_values(self, prog: VulkanProgram, refs: tuple[BindingRef[VulkanBuffer], ...]) -> None:
        """Every check that depends only on the binding values, the buffers' descriptions and the program."""
        descs = [ref.buffer.desc for ref in refs]
        BindingRef.validate_for_submit(refs, descs, self._info.limits.max_bindings_per_submission)
        validate_binding_ranges(refs, descs)
        validate_program_bindings(refs, prog.access, prog.package.entry_point)
        submission.check_ranges(prog, refs, self.description)

    def _free_buffer(self, buf: VulkanBuffer) -> None:
        submission.forget(buf.context, buf, self._ledger)
        memory.release(buf, self._ledger)

    def _unload_program(self, prog: VulkanProgram) -> None:
        submission.forget(prog.context, prog, self._ledger)
        pipeline.unload(prog, self._ledger)
        if self._flush_destroys:
            try:
                context_ops.flush_deferred_destroys(prog.context)
            except BackendError:
                pass  # the program is gone either way; a lost device shows on the next submission

    def _destroy_context(self, ctx: VulkanContext) -> None:
        submission.forget_all(ctx, self._ledger)
        context_ops.destroy(ctx, self._ledger)

    def _forget(self, handle: VulkanBuffer | VulkanProgram | VulkanQueue) -> None:
        handle.state = HandleState.RELEASED
        if isinstance(handle, VulkanBuffer):
            handle.context.buffers -= 1
            del self._live["buffer"][handle]
        elif isinstance(handle, VulkanProgram):
            handle.context.programs -= 1
            del self._live["program"][handle]
        else:
            handle.context.queues -= 1
            del self._live["queue"][handle]

    def _retain(self, event: VulkanEvent) -> None:
        self._live["event"][event] = None
        event.queue.events += 1
        event.program.events += 1
        event.queue.context.events += 1
        for buf in event.buffers:
            buf.events += 1

    def _drop(self, event: VulkanEvent, *, keep: bool | None = None) -> None:
        """Forget a terminal event (or one never handed to the device); its recording is cached or freed.

        ``keep`` None: cache the recording when the event completed or never reached the device
        (its command buffer is certainly not pending and was not touched by a failed submit).
        """
        submission.finish(event, EventState.CANCELLED)
        if keep is None:
            keep = event.value == 0 or event.result == EventState.COMPLETE
        submission.release(event, self._ledger, keep=keep)
        event.state = HandleState.RELEASED
        del self._live["event"][event]
        event.queue.events -= 1
        event.program.events -= 1
        event.queue.context.events -= 1
        for buf in event.buffers:
            buf.events -= 1

    # ------------------------------------------------------------------ events

    def poll_event(self, event: VulkanEvent) -> EventState:
        with self._lock:
            ev = self._check(event, VulkanEvent, "event")
            return submission.poll(ev)

    def wait_event(self, event: VulkanEvent, timeout_ns: int | None) -> bool:
        """Optional blocking wait (:class:`accelcore.contract.waiting.EventWaiter`): ``vkWaitSemaphores`` on the
        event's timeline value for at most ``timeout_ns``, outside the instance lock; False at once for a
        batch still held host-side or an event already ended."""
        with self._lock:
            ev = self._check(event, VulkanEvent, "event")
            found = submission.wait_info(ev)
        if found is None:
            return False
        submission.wait(*found, timeout_ns)
        return True

    def cancel_event(self, event: VulkanEvent) -> None:
        with self._lock:
            ev = self._check(event, VulkanEvent, "event")
            submission.cancel(ev)

    def destroy_event(self, event: VulkanEvent) -> None:
        with self._lock:
            try:
                ev = self._check(event, VulkanEvent, "event")
                state = submission.poll(ev)
            except BackendError as error:
                raise ReleaseRejected(error, event) from error
            if not state.is_terminal:
                raise ReleaseRejected(event_still_pending(), event)
            self._release(ev, lambda: self._drop(ev))

    # ------------------------------------------------------------------ test control

    def hold(self, queue: VulkanQueue | None = None) -> None:
        """Close a gate: one queue's, or (None) every queue's, existing and future.

        While closed, new submissions stay host-side: pending and cancellable.
        """
        with self._lock:
            if queue is not None:
                self._check(queue, VulkanQueue, "queue").gate_closed = True
                return
            self._held_all = True
            for live in self._live["queue"]:
                live.gate_closed = True

    def release(self, event: VulkanEvent | None = None, *, queue: VulkanQueue | None = None) -> None:
        """Hand one held event to the device; or open ``queue``'s gate (None: every gate) and hand over its batches."""
        with self._lock:
            if event is not None:
                ev = self._check(event, VulkanEvent, "event")
                if ev.stage is EventStage.HELD:
                    submission.hand_over(ev)
                    ev.queue.held.remove(ev)
                return
            if queue is None:
                self._held_all = False
                queues = list(self._live["queue"])
            else:
                queues = [self._check(queue, VulkanQueue, "queue")]
            for q in queues:
                q.gate_closed = False
                while q.held:
                    submission.hand_over(q.held[0])
                    q.held.popleft()

    # ------------------------------------------------------------------ copy-path diagnostics

    def copy_paths(self) -> list[dict[str, int]]:
        """One record per submission accepted since the first call (which turns recording on and answers ``[]``).

        Each counts what the submission's descriptor writes name (:meth:`_note_copy_path`) and the bytes
        write_buffer/read_buffer moved since the previous record.
        """
        with self._lock:
            if self.copy_log is None:
                from accelcore.conformance.target import CopyPathLog

                self.copy_log = CopyPathLog(self.transferred)
            return self.copy_log.report()

    def _note_copy_path(self, refs: Sequence[BindingRef[VulkanBuffer]], recording: Any) -> None:
        """Record one accepted submission (diagnostics on): what each binding's descriptor really names.

        In place: the ``VkDescriptorBufferInfo`` the recording wrote for the binding names the binding's own
        ``VkBuffer`` with the bound offset and range; ``direct`` when that buffer's memory type is
        DEVICE_LOCAL, ``shared`` otherwise. A descriptor naming any other buffer is a copy: ``staged``,
        with the bound range's bytes.
        """
        infos = recording.descriptor_infos
        local = vk().VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        direct = shared = staged = staged_bytes = 0
        for position, ref in enumerate(refs):
            written = None if infos is None else infos[position]
            buf = ref.buffer
            if (
                written is not None
                and written.buffer == buf.buffer
                and int(written.offset) == ref.range.offset
                and int(written.range) == ref.range.bytes
            ):
                if buf.memory_flags & local:
                    direct += 1
                else:
                    shared += 1
            else:
                staged += 1
                staged_bytes += ref.range.bytes
        assert self.copy_log is not None
        self.copy_log.records.append((direct, shared, staged, staged_bytes, self.transferred))

    # ------------------------------------------------------------------ teardown

    def close(self) -> None:
        """Wait for every device, destroy whatever is still live (child before parent), then its devices.

        A context whose device still runs a batch :data:`CLOSE_WAIT_S` after the close began (a kernel
        that runs away; the device cannot preempt it) is *abandoned*: nothing of it is destroyed (a
        ``VkDevice`` may not be destroyed while its queue works), its objects stay referenced in
        :data:`ABANDONED` until the process ends, and this instance keeps its hold on the shared
        ``VkInstance`` so the exit hook leaves that to the OS too. The close itself returns. The shared
        ``VkInstance`` stays alive. Idempotent. Handles still held by callers become unusable.
        """
        with self._lock:
            if self._closed:
                return
            abandoned: list[VulkanContext] = []
            try:
                until = time.monotonic_ns() + int(CLOSE_WAIT_S * 1e9)
                for event in list(self._live["event"]):
                    ctx = event.queue.context
                    if ctx not in abandoned and not submission.settle(event, until):
                        abandoned.append(ctx)
                kept = [ctx for ctx in self._contexts if ctx not in abandoned]
                for ctx in kept:
                    native("vkDeviceWaitIdle", ctx.device)
                for event in list(self._live["event"]):
                    if event.queue.context in kept:
                        submission.finish(event, EventState.CANCELLED)
                        self._drop(event, keep=False)
                for ctx in kept:
                    submission.forget_all(ctx, self._ledger)
                for queue in list(self._live["queue"]):
                    if queue.context in kept:
                        submission.destroy_queue(queue, self._ledger)
                        self._forget(queue)
                for program in list(self._live["program"]):
                    if program.context in kept:
                        pipeline.unload(program, self._ledger)
                        self._forget(program)
                for buffer in list(self._live["buffer"]):
                    if buffer.context in kept:
                        memory.release(buffer, self._ledger)
                        self._forget(buffer)
                for ctx in kept:
                    context_ops.destroy(ctx, self._ledger)
                    ctx.state = HandleState.RELEASED
                if abandoned:
                    live = [h for kind in self._live.values() for h in kind if self._context_of(h) in abandoned]
                    ABANDONED.append((self._instance, tuple(abandoned), tuple(live)))
                    for ctx in abandoned:
                        ctx.state = HandleState.RELEASED  # unusable to callers; never destroyed
                self._contexts.clear()
            finally:
                self._closed = True
                log = self._instance.log
                self._mark_end = None if log is None else len(log)
                if not abandoned:
                    instances.release(self._instance)

    @property
    def closed(self) -> bool:
        return self._closed

    def __del__(self) -> None:
        if getattr(self, "_instance", None) is not None and not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:
                pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"VulkanAccelerator({self.description.name!r}, {state}, validation={self.validation_enabled})"
