"""Submissions: recorded dispatches, a host-side gate, timeline-semaphore completion.

Recording: :func:`acquire` takes an idle recording for exactly this
dispatch from the context's :class:`~accel_vulkan.recording.RecordingCache`
or records one (one descriptor set per set the program uses, each binding
written with its row's descriptor type, + a reusable command buffer that
binds the pipeline and the sets, pushes the program's push-constant bytes —
with the element count in bytes 0..4 when the package passes one — and
dispatches); the event owns it
until it is destroyed (:func:`release` gives it back or frees it;
:func:`forget` frees those naming a buffer or program being released).
Hand-over and the counter read call the loader directly through prebuilt
structures (one raw call each, nothing marshalled per submission).

Completion: each contract queue owns one timeline semaphore; a batch handed
to ``vkQueueSubmit`` signals the queue's next value, so an event is complete
exactly when the semaphore's counter reaches its value (one
``vkGetSemaphoreCounterValue`` into a preallocated cell: non-blocking,
nothing allocated per poll). Timeline semaphores rather than fences: one
object per queue instead of one per submission, and a single counter read
answers for every event of the queue.

Gating: a batch is recorded at admission and kept host-side while its
queue's gate is closed (the conformance hold control closes it). A held
batch has not reached the device, so :func:`cancel` withdraws it and the
event is Cancelled; once handed over it cannot be revoked, and cancel
raises BUSY while the event runs to completion. A held batch whose deadline
passes is withdrawn and fails with DEADLINE_EXPIRED; one on the device runs
to completion and reports it. Exactly one terminal state is ever recorded.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from accelcore import BackendError, BindingRef, ErrorKind, EventState, Timeout
from accelcore.contract.refusals import cancellation_lost
from accelcore.kernels.package import NO_COUNT_ARGUMENT

from ._binding import ffi, vk
from .accounting import Ledger
from .errors import check, native
from .handles import EventStage, VulkanBuffer, VulkanContext, VulkanEvent, VulkanProgram, VulkanQueue
from .instance import PhysicalDescription
from .recording import Plan, Recording, RecordingCache, key_of

DEADLINE_FAILED = EventState.failed(
    BackendError(ErrorKind.DEADLINE_EXPIRED, "the submission's deadline passed before it reached the device")
)


def create_queue(queue_owner: Any, ledger: Ledger) -> tuple[Any, Any]:
    """A timeline semaphore starting at 0 and its preallocated counter cell."""
    binding = vk()
    type_info = binding.VkSemaphoreTypeCreateInfo(semaphoreType=binding.VK_SEMAPHORE_TYPE_TIMELINE, initialValue=0)
    info = binding.VkSemaphoreCreateInfo(pNext=type_info)
    semaphore = native("vkCreateSemaphore", queue_owner.device, info, None)
    ledger.add("VkSemaphore")
    return semaphore, ffi().new("uint64_t*")


@dataclass(eq=False)
class SubmitNative:
    """One queue's prebuilt ``VkSubmitInfo`` (+ timeline info) and the cells it points to.

    :func:`hand_over` writes the command buffer and the timeline value into
    the cells and passes ``info`` to ``vkQueueSubmit``: nothing is allocated
    or marshalled per submission. Every cell is referenced here, so the
    pointers inside ``info`` stay valid for the queue's life.
    """

    info: Any
    value: Any
    command_buffers: Any
    keep: tuple[Any, ...]


def submit_native(semaphore: Any) -> SubmitNative:
    binding = vk()
    f = ffi()
    value = f.new("uint64_t[1]")
    command_buffers = f.new("VkCommandBuffer[1]")
    semaphores = f.new("VkSemaphore[1]", [semaphore])
    timeline = f.new(
        "VkTimelineSemaphoreSubmitInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            "signalSemaphoreValueCount": 1,
            "pSignalSemaphoreValues": value,
        },
    )
    info = f.new(
        "VkSubmitInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_SUBMIT_INFO,
            "pNext": timeline,
            "commandBufferCount": 1,
            "pCommandBuffers": command_buffers,
            "signalSemaphoreCount": 1,
            "pSignalSemaphores": semaphores,
        },
    )
    return SubmitNative(info, value, command_buffers, (semaphores, timeline))


def destroy_queue(queue: VulkanQueue, ledger: Ledger) -> None:
    native("vkDestroySemaphore", queue.context.device, queue.semaphore, None)
    ledger.remove("VkSemaphore")


def dispatch_of(
    program: VulkanProgram, bindings: Sequence[BindingRef[VulkanBuffer]], description: PhysicalDescription
) -> tuple[int, tuple[int, int, int]]:
    """(element count, workgroup grid); a grid over the device's limits → RESOURCE_LIMIT."""
    package = program.package
    dispatch = package.dispatch
    range_bytes = 0
    element_size = 1
    for ref in bindings:
        if ref.slot == dispatch.slot:
            range_bytes = ref.range.bytes
            row = package.binding_for_slot(ref.slot)
            element_size = row.element_size if row is not None else 1
    elements, groups = dispatch.elements_and_groups(tuple(package.local_size), range_bytes, element_size)  # type: ignore[arg-type]
    for axis, count, limit in zip("xyz", groups, description.max_workgroup_count, strict=True):
        if count > limit:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"dispatch needs {count} workgroups along {axis}, over the device's maxComputeWorkGroupCount {limit}",
            )
    if dispatch.count_argument != NO_COUNT_ARGUMENT and elements > 0xFFFFFFFF:
        raise BackendError(ErrorKind.RESOURCE_LIMIT, f"element count {elements} does not fit the u32 count")
    return elements, groups


def _free(context: VulkanContext, recording: Recording, ledger: Ledger) -> None:
    """Free a recording's command buffer and descriptor sets (it is idle or its event is terminal)."""
    f = ffi()
    lib = vk().lib
    lib.vkFreeCommandBuffers(
        context.device, context.command_pool, 1, f.new("VkCommandBuffer[1]", [recording.command_buffer])
    )
    ledger.remove("VkCommandBuffer")
    sets = recording.descriptor_sets
    context.descriptor_sets_live -= 1
    if sets:
        ledger.remove("VkDescriptorSet", len(sets))
        check(
            lib.vkFreeDescriptorSets(
                context.device, context.descriptor_pool, len(sets), f.new("VkDescriptorSet[]", list(sets))
            ),
            "vkFreeDescriptorSets",
        )


def _free_all(context: VulkanContext, recordings: list[Recording], ledger: Ledger) -> None:
    for recording in recordings:
        _free(context, recording, ledger)


def plan_of(
    program: VulkanProgram, bindings: Sequence[BindingRef[VulkanBuffer]], description: PhysicalDescription
) -> Plan:
    """The grid (:func:`dispatch_of`, which may refuse it) and the recording key of a validated binding set."""
    elements, groups = dispatch_of(program, bindings, description)
    push = elements if program.push_count else None
    key = key_of(
        program,
        tuple((ref.slot, ref.buffer, ref.range.offset, ref.range.bytes) for ref in bindings),
        groups,
        push,
    )
    return Plan(elements, groups, key)


def check_ranges(
    program: VulkanProgram, bindings: Sequence[BindingRef[VulkanBuffer]], description: PhysicalDescription
) -> None:
    """Each bound range against its descriptor type's device limits (INCOMPATIBLE naming the slot and the limit).

    Storage rows: ``minStorageBufferOffsetAlignment``, ``maxStorageBufferRange``. Uniform rows: the buffer
    was created with the uniform usage, ``minUniformBufferOffsetAlignment``, ``maxUniformBufferRange``,
    and the range holds the module's uniform block (INVALID_ARGUMENT otherwise).
    """
    uniform = program.uniform
    for ref in bindings:
        offset, size = ref.range.offset, ref.range.bytes
        block = uniform.get(ref.slot)
        if block is None:
            alignment, limit = description.min_storage_buffer_offset_alignment, description.max_storage_buffer_range
            names = ("minStorageBufferOffsetAlignment", "maxStorageBufferRange")
        else:
            if not ref.buffer.can_uniform:
                raise BackendError(
                    ErrorKind.INCOMPATIBLE,
                    f"slot {ref.slot} is a uniform buffer but the bound buffer was not created usable as one "
                    "(this device's memory requirements for uniform buffers differ; see docs/vulkan.md)",
                )
            alignment, limit = description.min_uniform_buffer_offset_alignment, description.max_uniform_buffer_range
            names = ("minUniformBufferOffsetAlignment", "maxUniformBufferRange")
        if offset % alignment:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"slot {ref.slot}: range offset {offset} is not a multiple of the device's {names[0]} {alignment}",
            )
        if size > limit:
            raise BackendError(
                ErrorKind.INCOMPATIBLE, f"slot {ref.slot}: range of {size} bytes exceeds {names[1]} {limit}"
            )
        if block and size < block:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"slot {ref.slot}: range of {size} bytes is shorter than the module's {block}-byte uniform block",
            )


def acquire(
    queue: VulkanQueue, program: VulkanProgram, bindings: Sequence[BindingRef[VulkanBuffer]], plan: Plan, ledger: Ledger
) -> Recording:
    """An idle cached recording for exactly this dispatch, or a newly recorded one; nothing is submitted."""
    context = queue.context
    cache: RecordingCache = context.recordings
    cached = cache.take(plan.key)
    if cached is not None:
        return cached
    if context.descriptor_sets_live >= context.descriptor_sets_max:
        oldest = cache.pop_oldest()
        if oldest is not None:
            _free(context, oldest, ledger)
    push = plan.elements if program.push_count else None
    return _record(context, program, bindings, plan.key, push, plan.groups, ledger)


def _record(
    context: VulkanContext,
    program: VulkanProgram,
    bindings: Sequence[BindingRef[VulkanBuffer]],
    key: Hashable,
    push: int | None,
    groups: tuple[int, int, int],
    ledger: Ledger,
) -> Recording:
    """Allocate the descriptor sets and a command buffer, write and record them (reusable: no ONE_TIME_SUBMIT)."""
    binding = vk()
    f = ffi()
    lib = binding.lib
    null = f.NULL
    device = context.device
    compute = binding.VK_PIPELINE_BIND_POINT_COMPUTE
    numbers = program.sets
    layouts = program.shared.set_layouts
    sets = f.new("VkDescriptorSet[]", max(len(numbers), 1))
    if numbers:
        set_alloc = f.new(
            "VkDescriptorSetAllocateInfo*",
            {
                "sType": binding.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                "descriptorPool": context.descriptor_pool,
                "descriptorSetCount": len(numbers),
                "pSetLayouts": f.new("VkDescriptorSetLayout[]", [layouts[n] for n in numbers]),
            },
        )
        check(lib.vkAllocateDescriptorSets(device, set_alloc, sets), "vkAllocateDescriptorSets")
        ledger.add("VkDescriptorSet", len(numbers))
    context.descriptor_sets_live += 1
    position_of = {number: position for position, number in enumerate(numbers)}
    command_buffers = f.new("VkCommandBuffer[1]")
    allocated = False
    try:
        count = len(bindings)
        infos = f.new(
            "VkDescriptorBufferInfo[]",
            [{"buffer": ref.buffer.buffer, "offset": ref.range.offset, "range": ref.range.bytes} for ref in bindings],
        )
        index = program.native_index
        set_of = program.set_of
        uniform = program.uniform
        storage_type = binding.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
        uniform_type = binding.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
        writes = f.new(
            "VkWriteDescriptorSet[]",
            [
                {
                    "sType": binding.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                    "dstSet": sets[position_of[set_of[ref.slot]]],
                    "dstBinding": index[ref.slot],
                    "dstArrayElement": 0,
                    "descriptorCount": 1,
                    "descriptorType": uniform_type if ref.slot in uniform else storage_type,
                    "pBufferInfo": infos + position,
                }
                for position, ref in enumerate(bindings)
            ],
        )
        if count:
            lib.vkUpdateDescriptorSets(device, count, writes, 0, null)
        cb_alloc = f.new(
            "VkCommandBufferAllocateInfo*",
            {
                "sType": binding.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                "commandPool": context.command_pool,
                "level": binding.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                "commandBufferCount": 1,
            },
        )
        check(lib.vkAllocateCommandBuffers(device, cb_alloc, command_buffers), "vkAllocateCommandBuffers")
        allocated = True
        ledger.add("VkCommandBuffer")
        command_buffer = command_buffers[0]
        begin = f.new("VkCommandBufferBeginInfo*", {"sType": binding.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO})
        check(lib.vkBeginCommandBuffer(command_buffer, begin), "vkBeginCommandBuffer")
        lib.vkCmdBindPipeline(command_buffer, compute, program.pipeline)
        for position, number in enumerate(numbers):
            lib.vkCmdBindDescriptorSets(
                command_buffer, compute, program.pipeline_layout, number, 1, sets + position, 0, null
            )
        if program.push:
            data = bytearray(program.push)
            if push is not None:
                data[0:4] = push.to_bytes(4, "little")
            lib.vkCmdPushConstants(
                command_buffer,
                program.pipeline_layout,
                binding.VK_SHADER_STAGE_COMPUTE_BIT,
                0,
                len(data),
                f.new("char[]", bytes(data)),
            )
        # Host writes and earlier transfers are visible to the shader; its writes become visible to the host
        # and to later transfers once the semaphore signal is observed.
        before = f.new(
            "VkMemoryBarrier*",
            {
                "sType": binding.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                "srcAccessMask": binding.VK_ACCESS_HOST_WRITE_BIT | binding.VK_ACCESS_TRANSFER_WRITE_BIT,
                "dstAccessMask": binding.VK_ACCESS_SHADER_READ_BIT
                | binding.VK_ACCESS_SHADER_WRITE_BIT
                | (binding.VK_ACCESS_UNIFORM_READ_BIT if uniform else 0),
            },
        )
        lib.vkCmdPipelineBarrier(
            command_buffer,
            binding.VK_PIPELINE_STAGE_HOST_BIT | binding.VK_PIPELINE_STAGE_TRANSFER_BIT,
            binding.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            0,
            1,
            before,
            0,
            null,
            0,
            null,
        )
        lib.vkCmdDispatch(command_buffer, *groups)
        after = f.new(
            "VkMemoryBarrier*",
            {
                "sType": binding.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                "srcAccessMask": binding.VK_ACCESS_SHADER_WRITE_BIT,
                "dstAccessMask": binding.VK_ACCESS_HOST_READ_BIT | binding.VK_ACCESS_TRANSFER_READ_BIT,
            },
        )
        lib.vkCmdPipelineBarrier(
            command_buffer,
            binding.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            binding.VK_PIPELINE_STAGE_HOST_BIT | binding.VK_PIPELINE_STAGE_TRANSFER_BIT,
            0,
            1,
            after,
            0,
            null,
            0,
            null,
        )
        check(lib.vkEndCommandBuffer(command_buffer), "vkEndCommandBuffer")
    except BaseException:
        if allocated:
            lib.vkFreeCommandBuffers(device, context.command_pool, 1, command_buffers)
            ledger.remove("VkCommandBuffer")
        if numbers:
            lib.vkFreeDescriptorSets(device, context.descriptor_pool, len(numbers), sets)
            ledger.remove("VkDescriptorSet", len(numbers))
        context.descriptor_sets_live -= 1
        raise
    return Recording(
        key=key,
        program=program,
        buffers=tuple(ref.buffer for ref in bindings),
        command_buffer=command_buffer,
        descriptor_sets=tuple(sets[position] for position in range(len(numbers))),
        descriptor_infos=infos,
    )


def new_event(queue: VulkanQueue, program: VulkanProgram, recording: Recording, deadline_ns: int | None) -> VulkanEvent:
    """An event (HELD) that owns ``recording`` until it is destroyed."""
    return VulkanEvent(
        queue=queue, program=program, buffers=recording.buffers, recording=recording, deadline_ns=deadline_ns
    )


def hand_over(event: VulkanEvent) -> None:
    """``vkQueueSubmit`` the event's batch, signalling the queue's next timeline value.

    Uses the queue's prebuilt :class:`SubmitNative` (one raw call, nothing
    marshalled). On failure the queue's value is unchanged and the batch is
    still held.
    """
    queue = event.queue
    value = queue.signalled + 1
    prebuilt: SubmitNative = queue.submit_native
    prebuilt.value[0] = value
    prebuilt.command_buffers[0] = event.recording.command_buffer
    lib = vk().lib
    check(lib.vkQueueSubmit(queue.native_queue, 1, prebuilt.info, ffi().NULL), "vkQueueSubmit", "submission")
    queue.signalled = value
    event.value = value
    event.stage = EventStage.ON_DEVICE


def expired(event: VulkanEvent, now_ns: int | None = None) -> bool:
    if event.deadline_ns is None:
        return False
    return (time.monotonic_ns() if now_ns is None else now_ns) >= event.deadline_ns


def deadline_for(timeout: Timeout, admitted_ns: int) -> int | None:
    return None if timeout.ns is None else admitted_ns + timeout.ns


def finish(event: VulkanEvent, state: EventState) -> EventState:
    """Record the one terminal state (the first one wins) and take it out of its queue's held list."""
    if event.stage is EventStage.TERMINAL:
        return event.result
    if event.stage is EventStage.HELD:
        try:
            event.queue.held.remove(event)
        except ValueError:
            pass
    event.stage = EventStage.TERMINAL
    event.result = state
    return state


def poll(event: VulkanEvent) -> EventState:
    """Non-blocking observation; a device-lost counter read makes the event Failed(DEVICE_LOST)."""
    if event.stage is EventStage.TERMINAL:
        return event.result
    if event.stage is EventStage.HELD:
        if expired(event):
            return finish(event, DEADLINE_FAILED)
        return EventState.PENDING
    queue = event.queue
    counter = queue.counter
    if counter[0] >= event.value:
        # The counter only grows: an earlier read (for any event of this queue) already answers.
        return finish(event, EventState.COMPLETE)
    try:
        check(
            vk().lib.vkGetSemaphoreCounterValue(queue.context.device, queue.semaphore, queue.counter),
            "vkGetSemaphoreCounterValue",
        )
    except BackendError as error:
        if error.kind is ErrorKind.DEVICE_LOST:
            return finish(event, EventState.failed(error))
        raise
    if counter[0] >= event.value:
        return finish(event, EventState.COMPLETE)
    return EventState.PENDING


WAIT_SLICE_NS = 100_000_000
"""An unbounded :func:`wait` blocks in slices of this length, so Ctrl-C is seen between them."""


def wait_info(event: VulkanEvent) -> tuple[Any, Any, tuple[Any, ...]] | None:
    """The event's device, a ``VkSemaphoreWaitInfo`` for its timeline value and the cells that info
    points to (keep them alive while waiting), or None when a wait has nothing to block on: held
    host-side (only the host hands it over) or already ended."""
    if event.stage is not EventStage.ON_DEVICE:
        return None
    queue = event.queue
    if queue.counter[0] >= event.value:
        return None
    binding, f = vk(), ffi()
    semaphores = f.new("VkSemaphore[1]", [queue.semaphore])
    values = f.new("uint64_t[1]", [event.value])
    info = f.new(
        "VkSemaphoreWaitInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
            "semaphoreCount": 1,
            "pSemaphores": semaphores,
            "pValues": values,
        },
    )
    return queue.context.device, info, (semaphores, values)


def wait(device: Any, info: Any, cells: tuple[Any, ...], timeout_ns: int | None) -> None:
    """``vkWaitSemaphores`` (cffi releases the GIL) for at most ``timeout_ns`` (None: until the value is
    reached), in :data:`WAIT_SLICE_NS` slices either way: between them Python runs its signal handlers, so
    Ctrl-C interrupts a long wait at once. Its result is not raised: the next poll reads the counter and
    meets a lost device there. ``cells``: what ``info`` points to, referenced until the wait ends."""
    lib, timed_out = vk().lib, vk().VK_TIMEOUT
    if timeout_ns is None:
        while lib.vkWaitSemaphores(device, info, WAIT_SLICE_NS) == timed_out:
            pass
        return
    ends = time.monotonic_ns() + max(0, timeout_ns)
    while True:
        left = ends - time.monotonic_ns()
        if lib.vkWaitSemaphores(device, info, max(0, min(left, WAIT_SLICE_NS))) != timed_out or left <= WAIT_SLICE_NS:
            return


def settle(event: VulkanEvent, until_ns: int) -> bool:
    """Wait (in slices, as :func:`wait`) until the event's batch has ended on the device or the monotonic
    clock reaches ``until_ns``; whether it ended (True also for a batch held host-side or already ended)."""
    found = wait_info(event)
    if found is not None:
        wait(*found, max(0, until_ns - time.monotonic_ns()))
    return poll(event).is_terminal or event.stage is EventStage.HELD


def cancel(event: VulkanEvent) -> None:
    """Withdraw a held batch (→ Cancelled); BUSY once the batch reached the device or the event ended."""
    if event.stage is EventStage.HELD:
        finish(event, EventState.CANCELLED)
        return
    if event.stage is EventStage.TERMINAL and event.result == EventState.CANCELLED:
        return
    raise cancellation_lost()


def release(event: VulkanEvent, ledger: Ledger, *, keep: bool = True) -> None:
    """Take the recording from a terminal event: back to the context's cache (``keep``) or freed.

    The event is terminal, so its command buffer is not pending. A rejected
    submission passes ``keep=recording.from_cache``: a recording it took
    from the cache goes back, one it recorded is freed (nothing retained).
    """
    recording: Recording | None = event.recording
    if recording is None:
        return
    event.recording = None
    context = event.queue.context
    if keep and recording.reusable:
        _free_all(context, context.recordings.give(recording), ledger)
    else:
        _free(context, recording, ledger)


def forget(context: VulkanContext, handle: VulkanBuffer | VulkanProgram, ledger: Ledger) -> None:
    """Free every idle recording that names ``handle`` (before the buffer is destroyed / the program unloaded).

    Also drops the validated binding sets that name it.
    """
    context.plans.forget(handle)
    cache: RecordingCache = context.recordings
    if len(cache):
        _free_all(context, cache.remove_if(lambda r: r.names(handle)), ledger)


def forget_all(context: VulkanContext, ledger: Ledger) -> None:
    """Free every idle recording of the context (before it is destroyed)."""
    if context.plans is not None:
        context.plans.clear()
    cache: RecordingCache = context.recordings
    if cache is not None and len(cache):
        _free_all(context, cache.remove_if(lambda r: True), ledger)
