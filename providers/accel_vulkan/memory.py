"""Exact allocation: one ``VkBuffer`` bound at offset 0 to its own ``VkDeviceMemory``.

Promise: the memory type is chosen by domain from the types the buffer's
``memoryTypeBits`` allow (Host: host-visible + coherent, preferring types
that are not device-local; Device: device-local, preferring types that are
not host-visible; Shared: device-local + host-visible, preferring coherent).
``BufferInfo`` reports ``VkMemoryRequirements.size``, the chosen type's real
flags and the alignment the buffer really has: it is bound at offset 0 of its
own allocation, so it is aligned to at least the larger of its own
``VkMemoryRequirements.alignment`` and the allocation base alignment every
``vkAllocateMemory`` meets (``PhysicalDescription.allocation_alignment``; NVIDIA
asks only 16 for a storage buffer but aligns allocations to 64 or more). A
domain no allowed type honours, or an alignment stronger than that, is refused
(UNSUPPORTED) before any memory is allocated. Host-visible memory is mapped once, for the buffer's
life. Nothing is copied; on failure nothing is retained.

Usage: every buffer may be bound as a storage buffer and be a copy source and
destination; it is also created usable as a uniform buffer where that costs
nothing. The first allocation of a context decides it once (:func:`uniform_usage`):
a small probe buffer is created with and without ``UNIFORM_BUFFER``, and the bit
is used only when the memory requirements agree — the same ``memoryTypeBits``
and size, and an alignment no stronger than the allocation base alignment the
buffer gets anyway (the usual case; NVIDIA and Mesa report identical
requirements). Otherwise buffers are storage-only and a submission that binds
one as a uniform buffer is refused (INCOMPATIBLE).
"""

from __future__ import annotations

from typing import Any

from accelcore import BackendError, BufferDesc, BufferInfo, BufferProperties, BufferUsage, ErrorKind, MemoryDomain

from ._binding import vk
from .accounting import Ledger
from .device_info import domain_flags, usable_types
from .errors import native
from .handles import VulkanBuffer, VulkanContext
from .instance import MemoryType, PhysicalDescription


def buffer_usage_flags(uniform: bool = False) -> int:
    """Every buffer may be bound as a storage buffer and be a copy source/destination (staging); ``uniform``
    adds ``UNIFORM_BUFFER``."""
    binding = vk()
    flags = (
        binding.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
        | binding.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
        | binding.VK_BUFFER_USAGE_TRANSFER_DST_BIT
    )
    return int(flags | (binding.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT if uniform else 0))


PROBE_BYTES = 4096 + 4
"""Size of the probe buffers :func:`uniform_usage` compares (not a multiple of a typical page or alignment)."""


def _requirements(device: Any, usage: int) -> tuple[int, int, int]:
    binding = vk()
    info = binding.VkBufferCreateInfo(size=PROBE_BYTES, usage=usage, sharingMode=binding.VK_SHARING_MODE_EXCLUSIVE)
    probe = native("vkCreateBuffer", device, info, None, what="probe buffer")
    try:
        needs = native("vkGetBufferMemoryRequirements", device, probe)
        return int(needs.memoryTypeBits), int(needs.size), int(needs.alignment)
    finally:
        native("vkDestroyBuffer", device, probe, None)


def uniform_usage(context: VulkanContext, description: PhysicalDescription) -> bool:
    """Whether the context's buffers also get ``UNIFORM_BUFFER`` usage (decided once per context, see above)."""
    if context.uniform_usage is None:
        plain_bits, plain_size, plain_alignment = _requirements(context.device, buffer_usage_flags())
        bits, size, alignment = _requirements(context.device, buffer_usage_flags(uniform=True))
        floor = max(plain_alignment, description.allocation_alignment)
        context.uniform_usage = bits == plain_bits and size == plain_size and alignment <= floor
    return context.uniform_usage


def _preference(domain: MemoryDomain, flags: int) -> tuple[int, ...]:
    binding = vk()
    local = bool(flags & binding.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
    visible = bool(flags & binding.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
    coherent = bool(flags & binding.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
    cached = bool(flags & binding.VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
    if domain is MemoryDomain.HOST:
        return (local, not cached)
    if domain is MemoryDomain.DEVICE:
        return (visible,)
    return (not coherent, not cached)


def choose_type(description: PhysicalDescription, domain: MemoryDomain, type_bits: int, size: int) -> MemoryType | None:
    """The best allowed memory type for ``domain`` whose heap can hold ``size`` bytes, or None."""
    needed = domain_flags()[domain]
    candidates = [
        t
        for t in usable_types(description.memory_types)
        if type_bits & (1 << t.index) and t.flags & needed == needed and t.heap_bytes >= size
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda t: (_preference(domain, t.flags), t.index))


def properties_of(flags: int) -> BufferProperties:
    binding = vk()
    props = BufferProperties.DIRECT_BINDING
    if flags & binding.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT:
        props |= BufferProperties.HOST_VISIBLE
    if flags & binding.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT:
        props |= BufferProperties.DEVICE_LOCAL
    return props


def allocate(
    context: VulkanContext,
    description: PhysicalDescription,
    desc: BufferDesc,
    ledger: Ledger,
    *,
    map_device_domain: bool = True,
) -> VulkanBuffer:
    """Create, allocate, bind and (if host-visible) map one buffer for ``desc``.

    ``map_device_domain`` False keeps Device-domain buffers unmapped even when
    their memory is host-visible, so transfers use the bounded staging path.
    """
    binding = vk()
    device = context.device
    uniform = uniform_usage(context, description)
    create_info = binding.VkBufferCreateInfo(
        size=desc.bytes, usage=buffer_usage_flags(uniform), sharingMode=binding.VK_SHARING_MODE_EXCLUSIVE
    )
    buffer = native("vkCreateBuffer", device, create_info, None, what=f"{desc.bytes}-byte buffer")
    del create_info
    ledger.add("VkBuffer")
    memory = None
    try:
        requirements = native("vkGetBufferMemoryRequirements", device, buffer)
        size = int(requirements.size)
        alignment = max(int(requirements.alignment), description.allocation_alignment)
        if desc.alignment > alignment:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"alignment {desc.alignment} is stronger than this device guarantees for buffers "
                f"(VkMemoryRequirements.alignment {int(requirements.alignment)}, allocation base alignment "
                f"{description.allocation_alignment}); request {alignment} or less",
            )
        chosen = choose_type(description, desc.domain, int(requirements.memoryTypeBits), size)
        if chosen is None:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"no memory type allowed for this buffer honours the {desc.domain.name} domain "
                f"(memoryTypeBits {int(requirements.memoryTypeBits):#x}) with a heap of {size} bytes",
            )
        allocate_info = binding.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=chosen.index)
        memory = native("vkAllocateMemory", device, allocate_info, None, what=f"{size} bytes of {desc.domain.name}")
        del allocate_info
        ledger.add("VkDeviceMemory")
        native("vkBindBufferMemory", device, buffer, memory, 0)
        visible = bool(chosen.flags & binding.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
        coherent = bool(chosen.flags & binding.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
        mapping: Any = None
        view: memoryview | None = None
        address: Any = None
        if visible and (map_device_domain or desc.domain is not MemoryDomain.DEVICE):
            mapping = native("vkMapMemory", device, memory, 0, size, 0)
            view = memoryview(mapping).cast("B")
            address = binding.ffi.cast("char *", binding.ffi.from_buffer(mapping))
        info = BufferInfo(desc, size, alignment, properties_of(chosen.flags))
    except BaseException:
        if memory is not None:
            native("vkFreeMemory", device, memory, None)
            ledger.remove("VkDeviceMemory")
        native("vkDestroyBuffer", device, buffer, None)
        ledger.remove("VkBuffer")
        raise
    return VulkanBuffer(
        context=context,
        desc=desc,
        info=info,
        buffer=buffer,
        memory=memory,
        memory_type=chosen.index,
        memory_flags=chosen.flags,
        allocation_bytes=size,
        mapped=view,
        mapping=mapping,
        address=address,
        coherent=coherent,
        can_write=bool(desc.usage & BufferUsage.TRANSFER_DESTINATION),
        can_read=bool(desc.usage & BufferUsage.TRANSFER_SOURCE),
        can_uniform=uniform,
    )


def release(buffer: VulkanBuffer, ledger: Ledger) -> None:
    """Unmap, destroy the buffer and free its memory."""
    device = buffer.context.device
    if buffer.mapped is not None:
        buffer.address = None
        buffer.mapped.release()
        buffer.mapped = None
        native("vkUnmapMemory", device, buffer.memory)
        buffer.mapping = None
    native("vkDestroyBuffer", device, buffer.buffer, None)
    ledger.remove("VkBuffer")
    native("vkFreeMemory", device, buffer.memory, None)
    ledger.remove("VkDeviceMemory")
