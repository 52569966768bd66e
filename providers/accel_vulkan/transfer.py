"""Explicit transfers: straight into mapped memory, or through a bounded staging buffer.

Promise: for a mapped buffer, ``write`` asks the source to fill the mapped
range itself (``read_at`` into a view of the mapping — a segmented source
copies segment by segment, no temporary) and ``read`` hands the mapped range
to the sink's ``write_at``; a single-segment :class:`~accelcore.MemorySource`
/ :class:`~accelcore.MemorySink` is copied with one ``memmove`` between its
``contiguous()`` view and the mapping instead (same bytes, fewer calls); non-coherent memory is flushed / invalidated
around it. Memory that is not mapped — and, for reads, mapped memory that is not host-cached (see
:func:`reads_mapped`) — goes through one staging buffer of
:data:`STAGING_BYTES` per context (host-visible, coherent, cached where offered) in chunks, each
chunk a ``vkCmdCopyBuffer`` on the context's first queue waited with a fence.
Bounds and usage are checked before any byte moves. A failed write leaves the
range unspecified; a failed read leaves the sink partly written (callers do
not publish it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelcore import BackendError, ByteSink, ByteSource, ErrorKind, MemorySink, MemorySource, validate_transfer

from ._binding import ffi, vk
from .accounting import Ledger
from .device_info import domain_flags
from .errors import check, native
from .handles import VulkanBuffer, VulkanContext
from .instance import PhysicalDescription

STAGING_BYTES = 256 << 10
"""Size of a context's staging buffer: the most bytes one staged chunk moves."""

FENCE_WAIT_NS = 10_000_000_000
"""How long one staged chunk may take before the transfer fails with DEADLINE_EXPIRED."""


@dataclass(eq=False)
class Staging:
    buffer: Any
    memory: Any
    mapping: Any
    view: memoryview
    command_buffer: Any
    fence: Any
    prebuilt: StagedCopy | None = None
    """The cffi structures every staged chunk reuses (built once with the staging objects)."""


@dataclass(eq=False)
class StagedCopy:
    """Structures for one staged chunk, built once per context: each chunk only writes ``region``.

    ``barriers[to_host]`` are the (before, after) memory barriers of a copy to / from the host.
    """

    command_buffers: Any
    fences: Any
    begin: Any
    submit: Any
    region: Any
    barriers: dict[bool, tuple[Any, Any]]


def _prebuild(command_buffer: Any, fence: Any) -> StagedCopy:
    binding = vk()
    f = ffi()
    command_buffers = f.new("VkCommandBuffer[1]", [command_buffer])

    def barrier(src: int, dst: int) -> Any:
        return f.new(
            "VkMemoryBarrier*",
            {"sType": binding.VK_STRUCTURE_TYPE_MEMORY_BARRIER, "srcAccessMask": src, "dstAccessMask": dst},
        )

    # Earlier shader writes to the buffer become visible to the copy; the copy's writes become visible to
    # the host (read) or to later shaders (write).
    before = barrier(
        binding.VK_ACCESS_SHADER_WRITE_BIT | binding.VK_ACCESS_TRANSFER_WRITE_BIT,
        binding.VK_ACCESS_TRANSFER_READ_BIT | binding.VK_ACCESS_TRANSFER_WRITE_BIT,
    )
    return StagedCopy(
        command_buffers=command_buffers,
        fences=f.new("VkFence[1]", [fence]),
        begin=f.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": binding.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                "flags": binding.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            },
        ),
        submit=f.new(
            "VkSubmitInfo*",
            {
                "sType": binding.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                "commandBufferCount": 1,
                "pCommandBuffers": command_buffers,
            },
        ),
        region=f.new("VkBufferCopy*"),
        barriers={
            True: (before, barrier(binding.VK_ACCESS_TRANSFER_WRITE_BIT, binding.VK_ACCESS_HOST_READ_BIT)),
            False: (
                before,
                barrier(
                    binding.VK_ACCESS_TRANSFER_WRITE_BIT,
                    binding.VK_ACCESS_SHADER_READ_BIT | binding.VK_ACCESS_SHADER_WRITE_BIT,
                ),
            ),
        },
    )


_HOST_CACHED = 0x8
"""VK_MEMORY_PROPERTY_HOST_CACHED_BIT."""


def reads_mapped(memory_flags: int) -> bool:
    """Whether reads may use the mapping: only host-cached memory.

    Uncached host-visible memory (a discrete GPU's BAR: device-local, write-combined) is fine to
    write through a mapping but reads from it cross the bus uncached, one load at a time (0.02 GB/s
    on the H200, 2026-11-30); those reads go through the staging buffer, which is host-cached where
    the device has such a type. Writes always use the mapping.
    """
    return bool(memory_flags & _HOST_CACHED)


def check_transfer(buffer: VulkanBuffer, offset: int, length: int, *, write: bool) -> None:
    """accelcore's transfer check: usage (PERMISSION_DENIED) and bounds (OUT_OF_BOUNDS)."""
    validate_transfer(buffer.desc, offset, length, write=write)


def _atom_range(buffer: VulkanBuffer, offset: int, length: int, atom: int) -> Any:
    binding = vk()
    start = offset - offset % atom
    end = offset + length
    end = buffer.allocation_bytes if end + atom >= buffer.allocation_bytes else end + (-end % atom)
    return binding.VkMappedMemoryRange(memory=buffer.memory, offset=start, size=end - start)


def write(
    buffer: VulkanBuffer, offset: int, source: ByteSource, description: PhysicalDescription, ledger: Ledger
) -> None:
    length = source.len()
    size = buffer.desc.bytes
    # Fast path: a valid transfer is decided with plain ints; anything else gets accelcore's full check.
    if not (buffer.can_write and type(offset) is int and 0 <= offset < size and offset + length <= size):
        check_transfer(buffer, offset, length, write=True)
    if buffer.mapped is not None:
        view = source.contiguous() if type(source) is MemorySource else None
        if view is not None:
            ffi().memmove(buffer.address + offset, view, length)
        else:
            source.read_at(0, buffer.mapped[offset : offset + length])
        if not buffer.coherent:
            ranges = [_atom_range(buffer, offset, length, description.non_coherent_atom_size)]
            native("vkFlushMappedMemoryRanges", buffer.context.device, 1, ranges)
        return
    staging = _staging(buffer.context, description, ledger)
    position = 0
    while position < length:
        take = min(STAGING_BYTES, length - position)
        source.read_at(position, staging.view[:take])
        _copy(
            buffer.context,
            staging,
            src=staging.buffer,
            dst=buffer.buffer,
            src_offset=0,
            dst_offset=offset + position,
            size=take,
            to_host=False,
        )
        position += take


def read(buffer: VulkanBuffer, offset: int, sink: ByteSink, description: PhysicalDescription, ledger: Ledger) -> None:
    length = sink.len()
    size = buffer.desc.bytes
    if not (buffer.can_read and type(offset) is int and 0 <= offset < size and offset + length <= size):
        check_transfer(buffer, offset, length, write=False)
    if buffer.mapped is not None and reads_mapped(buffer.memory_flags):
        if not buffer.coherent:
            ranges = [_atom_range(buffer, offset, length, description.non_coherent_atom_size)]
            native("vkInvalidateMappedMemoryRanges", buffer.context.device, 1, ranges)
        view = sink.contiguous() if type(sink) is MemorySink else None
        if view is not None:
            ffi().memmove(view, buffer.address + offset, length)
        else:
            sink.write_at(0, buffer.mapped[offset : offset + length])
        return
    staging = _staging(buffer.context, description, ledger)
    position = 0
    while position < length:
        take = min(STAGING_BYTES, length - position)
        _copy(
            buffer.context,
            staging,
            src=buffer.buffer,
            dst=staging.buffer,
            src_offset=offset + position,
            dst_offset=0,
            size=take,
            to_host=True,
        )
        sink.write_at(position, staging.view[:take])
        position += take


def _copy(
    context: VulkanContext,
    staging: Staging,
    *,
    src: Any,
    dst: Any,
    src_offset: int,
    dst_offset: int,
    size: int,
    to_host: bool,
) -> None:
    """Record and run one buffer copy on the context's first queue; wait for it with the fence.

    Raw loader calls over the staging's prebuilt structures; results → :func:`~accel_vulkan.errors.check`.
    """
    binding = vk()
    lib = binding.lib
    null = ffi().NULL
    device = context.device
    cmd = staging.command_buffer
    prebuilt = staging.prebuilt
    assert prebuilt is not None
    check(lib.vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer")
    check(lib.vkBeginCommandBuffer(cmd, prebuilt.begin), "vkBeginCommandBuffer")
    before, after = prebuilt.barriers[to_host]
    lib.vkCmdPipelineBarrier(
        cmd,
        binding.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | binding.VK_PIPELINE_STAGE_TRANSFER_BIT,
        binding.VK_PIPELINE_STAGE_TRANSFER_BIT,
        0,
        1,
        before,
        0,
        null,
        0,
        null,
    )
    region = prebuilt.region
    region.srcOffset = src_offset
    region.dstOffset = dst_offset
    region.size = size
    lib.vkCmdCopyBuffer(cmd, src, dst, 1, region)
    lib.vkCmdPipelineBarrier(
        cmd,
        binding.VK_PIPELINE_STAGE_TRANSFER_BIT,
        binding.VK_PIPELINE_STAGE_HOST_BIT if to_host else binding.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
        0,
        1,
        after,
        0,
        null,
        0,
        null,
    )
    check(lib.vkEndCommandBuffer(cmd), "vkEndCommandBuffer")
    check(lib.vkQueueSubmit(context.native_queues[0], 1, prebuilt.submit, staging.fence), "vkQueueSubmit")
    try:
        check(
            lib.vkWaitForFences(device, 1, prebuilt.fences, binding.VK_TRUE, FENCE_WAIT_NS),
            "vkWaitForFences",
            "staged copy",
        )
    finally:
        check(lib.vkResetFences(device, 1, prebuilt.fences), "vkResetFences")


def _staging(context: VulkanContext, description: PhysicalDescription, ledger: Ledger) -> Staging:
    if context.staging is not None:
        staging: Staging = context.staging
        return staging
    binding = vk()
    from .memory import choose_type

    device = context.device
    made: list[tuple[str, Any]] = []
    try:
        create_info = binding.VkBufferCreateInfo(
            size=STAGING_BYTES,
            usage=binding.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | binding.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
            sharingMode=binding.VK_SHARING_MODE_EXCLUSIVE,
        )
        buffer = native("vkCreateBuffer", device, create_info, None, what="staging buffer")
        made.append(("VkBuffer", buffer))
        ledger.add("VkBuffer")
        requirements = native("vkGetBufferMemoryRequirements", device, buffer)
        from accelcore import MemoryDomain

        chosen = choose_type(description, MemoryDomain.HOST, int(requirements.memoryTypeBits), int(requirements.size))
        if chosen is None:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"no host-visible coherent memory type (flags {domain_flags()[MemoryDomain.HOST]:#x}) for staging",
            )
        allocate_info = binding.VkMemoryAllocateInfo(
            allocationSize=int(requirements.size), memoryTypeIndex=chosen.index
        )
        memory = native("vkAllocateMemory", device, allocate_info, None, what="staging memory")
        made.append(("VkDeviceMemory", memory))
        ledger.add("VkDeviceMemory")
        native("vkBindBufferMemory", device, buffer, memory, 0)
        mapping = native("vkMapMemory", device, memory, 0, STAGING_BYTES, 0)
        alloc = binding.VkCommandBufferAllocateInfo(
            commandPool=context.command_pool, level=binding.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
        )
        command_buffer = native("vkAllocateCommandBuffers", device, alloc)[0]
        made.append(("VkCommandBuffer", command_buffer))
        ledger.add("VkCommandBuffer")
        fence = native("vkCreateFence", device, binding.VkFenceCreateInfo(), None)
        made.append(("VkFence", fence))
        ledger.add("VkFence")
    except BaseException:
        _destroy(context, made, ledger)
        raise
    made_staging = Staging(
        buffer, memory, mapping, memoryview(mapping).cast("B"), command_buffer, fence, _prebuild(command_buffer, fence)
    )
    context.staging = made_staging
    return made_staging


def _destroy(context: VulkanContext, made: list[tuple[str, Any]], ledger: Ledger) -> None:
    device = context.device
    for kind, handle in reversed(made):
        if kind == "VkBuffer":
            native("vkDestroyBuffer", device, handle, None)
        elif kind == "VkDeviceMemory":
            native("vkFreeMemory", device, handle, None)
        elif kind == "VkCommandBuffer":
            native("vkFreeCommandBuffers", device, context.command_pool, 1, [handle])
        elif kind == "VkFence":
            native("vkDestroyFence", device, handle, None)
        ledger.remove(kind)


def destroy_staging(context: VulkanContext, ledger: Ledger) -> None:
    staging: Staging = context.staging
    staging.view.release()
    native("vkUnmapMemory", context.device, staging.memory)
    _destroy(
        context,
        [
            ("VkBuffer", staging.buffer),
            ("VkDeviceMemory", staging.memory),
            ("VkCommandBuffer", staging.command_buffer),
            ("VkFence", staging.fence),
        ],
        ledger,
    )
    context.staging = None
