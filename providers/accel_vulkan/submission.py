"""Submissions: descriptor set + recorded command buffer, a host-side gate, timeline-semaphore completion.

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
from collections.abc import Sequence
from typing import Any

from accelcore import BackendError, BindingRef, ErrorKind, EventState, Timeout
from accelcore.package import NO_COUNT_ARGUMENT
from accelcore.refusals import cancellation_lost

from ._binding import ffi, vk
from .accounting import Ledger
from .errors import native
from .handles import EventStage, VulkanBuffer, VulkanEvent, VulkanProgram, VulkanQueue
from .instance import PhysicalDescription

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


def record(
    queue: VulkanQueue,
    program: VulkanProgram,
    bindings: Sequence[BindingRef[VulkanBuffer]],
    elements: int,
    groups: tuple[int, int, int],
    deadline_ns: int | None,
    ledger: Ledger,
) -> VulkanEvent:
    """Allocate a descriptor set and a command buffer, write and record them; nothing is submitted."""
    binding = vk()
    context = queue.context
    device = context.device
    set_alloc = binding.VkDescriptorSetAllocateInfo(
        descriptorPool=context.descriptor_pool, descriptorSetCount=1, pSetLayouts=[program.set_layout]
    )
    descriptor_set = native("vkAllocateDescriptorSets", device, set_alloc)[0]
    context.descriptor_sets_live += 1
    ledger.add("VkDescriptorSet")
    command_buffer = None
    try:
        infos = [
            binding.VkDescriptorBufferInfo(buffer=ref.buffer.buffer, offset=ref.range.offset, range=ref.range.bytes)
            for ref in bindings
        ]
        writes = [
            binding.VkWriteDescriptorSet(
                dstSet=descriptor_set,
                dstBinding=program.native_index[ref.slot],
                dstArrayElement=0,
                descriptorCount=1,
                descriptorType=binding.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                pBufferInfo=[info],
            )
            for ref, info in zip(bindings, infos, strict=True)
        ]
        native("vkUpdateDescriptorSets", device, len(writes), writes, 0, None)
        del writes, infos
        cb_alloc = binding.VkCommandBufferAllocateInfo(
            commandPool=context.command_pool, level=binding.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
        )
        command_buffer = native("vkAllocateCommandBuffers", device, cb_alloc)[0]
        ledger.add("VkCommandBuffer")
        begin = binding.VkCommandBufferBeginInfo(flags=binding.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        native("vkBeginCommandBuffer", command_buffer, begin)
        native("vkCmdBindPipeline", command_buffer, binding.VK_PIPELINE_BIND_POINT_COMPUTE, program.pipeline)
        native(
            "vkCmdBindDescriptorSets",
            command_buffer,
            binding.VK_PIPELINE_BIND_POINT_COMPUTE,
            program.pipeline_layout,
            0,
            1,
            [descriptor_set],
            0,
            None,
        )
        if program.package.dispatch.count_argument != NO_COUNT_ARGUMENT:
            count = ffi().new("uint32_t*", elements)
            native(
                "vkCmdPushConstants",
                command_buffer,
                program.pipeline_layout,
                binding.VK_SHADER_STAGE_COMPUTE_BIT,
                0,
                4,
                count,
            )
        # Host writes and earlier transfers are visible to the shader; its writes become visible to the host
        # and to later transfers once the semaphore signal is observed.
        before = binding.VkMemoryBarrier(
            srcAccessMask=binding.VK_ACCESS_HOST_WRITE_BIT | binding.VK_ACCESS_TRANSFER_WRITE_BIT,
            dstAccessMask=binding.VK_ACCESS_SHADER_READ_BIT | binding.VK_ACCESS_SHADER_WRITE_BIT,
        )
        native(
            "vkCmdPipelineBarrier",
            command_buffer,
            binding.VK_PIPELINE_STAGE_HOST_BIT | binding.VK_PIPELINE_STAGE_TRANSFER_BIT,
            binding.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            0,
            1,
            [before],
            0,
            None,
            0,
            None,
        )
        native("vkCmdDispatch", command_buffer, *groups)
        after = binding.VkMemoryBarrier(
            srcAccessMask=binding.VK_ACCESS_SHADER_WRITE_BIT,
            dstAccessMask=binding.VK_ACCESS_HOST_READ_BIT | binding.VK_ACCESS_TRANSFER_READ_BIT,
        )
        native(
            "vkCmdPipelineBarrier",
            command_buffer,
            binding.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            binding.VK_PIPELINE_STAGE_HOST_BIT | binding.VK_PIPELINE_STAGE_TRANSFER_BIT,
            0,
            1,
            [after],
            0,
            None,
            0,
            None,
        )
        native("vkEndCommandBuffer", command_buffer)
    except BaseException:
        if command_buffer is not None:
            native("vkFreeCommandBuffers", device, context.command_pool, 1, [command_buffer])
            ledger.remove("VkCommandBuffer")
        native("vkFreeDescriptorSets", device, context.descriptor_pool, 1, [descriptor_set])
        context.descriptor_sets_live -= 1
        ledger.remove("VkDescriptorSet")
        raise
    return VulkanEvent(
        queue=queue,
        program=program,
        buffers=tuple(ref.buffer for ref in bindings),
        command_buffer=command_buffer,
        descriptor_set=descriptor_set,
        deadline_ns=deadline_ns,
    )


def hand_over(event: VulkanEvent) -> None:
    """``vkQueueSubmit`` the event's batch, signalling the queue's next timeline value.

    On failure the queue's value is unchanged and the batch is still held.
    """
    binding = vk()
    queue = event.queue
    value = queue.signalled + 1
    timeline = binding.VkTimelineSemaphoreSubmitInfo(signalSemaphoreValueCount=1, pSignalSemaphoreValues=[value])
    submit = binding.VkSubmitInfo(
        pNext=timeline,
        commandBufferCount=1,
        pCommandBuffers=[event.command_buffer],
        signalSemaphoreCount=1,
        pSignalSemaphores=[queue.semaphore],
    )
    native("vkQueueSubmit", queue.native_queue, 1, [submit], None, what="submission")
    del submit, timeline
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
    try:
        native("vkGetSemaphoreCounterValue", queue.context.device, queue.semaphore, queue.counter)
    except BackendError as error:
        if error.kind is ErrorKind.DEVICE_LOST:
            return finish(event, EventState.failed(error))
        raise
    if queue.counter[0] >= event.value:
        return finish(event, EventState.COMPLETE)
    return EventState.PENDING


def cancel(event: VulkanEvent) -> None:
    """Withdraw a held batch (→ Cancelled); BUSY once the batch reached the device or the event ended."""
    if event.stage is EventStage.HELD:
        finish(event, EventState.CANCELLED)
        return
    if event.stage is EventStage.TERMINAL and event.result == EventState.CANCELLED:
        return
    raise cancellation_lost()


def release(event: VulkanEvent, ledger: Ledger) -> None:
    """Free the command buffer and descriptor set of a terminal event."""
    context = event.queue.context
    device = context.device
    native("vkFreeCommandBuffers", device, context.command_pool, 1, [event.command_buffer])
    ledger.remove("VkCommandBuffer")
    native("vkFreeDescriptorSets", device, context.descriptor_pool, 1, [event.descriptor_set])
    context.descriptor_sets_live -= 1
    ledger.remove("VkDescriptorSet")
