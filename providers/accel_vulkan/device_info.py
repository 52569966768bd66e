"""``DeviceInfo`` from a physical device's own answers, plus this provider's documented policy limits.

Promise: identity is the device's ``deviceUUID``, vendor and device ids and a
class from its device type; byte and binding limits come from the device's
limits (``maxStorageBufferRange``, ``maxMemoryAllocationSize``,
``maxMemoryAllocationCount``, ``maxPerStageDescriptorStorageBuffers``,
``maxDescriptorSetStorageBuffers``, ``maxPerStageResources``); counts Vulkan
has no limit for are this provider's policy (the constants below), which it
enforces. Memory domains are offered only when a memory type honours them.
"""

from __future__ import annotations

from typing import Any

from accelcore import (
    AcceleratorClass,
    BackendError,
    Capabilities,
    DeviceIdentity,
    DeviceInfo,
    DeviceLimits,
    MemoryDomain,
)
from accelcore.devices.native_facts import NativeFacts

from ._binding import ffi, version_text, vk
from .instance import MemoryType, PhysicalDescription

MAX_CONTEXTS = 64
"""Policy: contexts per instance (each context is its own ``VkDevice``)."""
MAX_PROGRAMS_PER_CONTEXT = 4096
"""Policy: programs (compute pipelines) per context."""
MAX_QUEUES_PER_CONTEXT = 64
"""Policy: contract queues per context (each has a timeline semaphore; they share the native queues)."""
MAX_EVENTS_PER_CONTEXT = 256
"""Policy: live events per context = the descriptor pool's set count (one set per event)."""
MAX_BINDINGS = 64
"""Policy: at most this many bindings per submission even where the device allows more (NVIDIA reports
2^20 storage buffers per stage); it sizes each context's descriptor pool (events x bindings descriptors)."""
MAX_DESCRIPTOR_SETS = 8
"""Policy: descriptor sets a program may use (sets 0..7) even where the device binds more (NVIDIA: 32); with
the events it sizes each context's descriptor pool (events x sets)."""
MAX_ARTIFACT_BYTES = 16 << 20
"""Policy: the largest kernel package accepted (SPIR-V modules are kilobytes)."""
RESERVED_ALLOCATIONS = 1
"""Allocations a context keeps for itself (the staging buffer) out of ``maxMemoryAllocationCount``."""
U32_MAX = 0xFFFFFFFF
_LAZILY_ALLOCATED = 0x10
_PROTECTED = 0x20
"""VkMemoryPropertyFlagBits the binding does not export (Vulkan registry values)."""


def domain_flags() -> dict[MemoryDomain, int]:
    """Memory property flags each domain needs (Host: visible + coherent; Device: local; Shared: local + visible)."""
    binding = vk()
    visible = binding.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
    coherent = binding.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
    local = binding.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
    return {MemoryDomain.HOST: visible | coherent, MemoryDomain.DEVICE: local, MemoryDomain.SHARED: local | visible}


def usable_types(memory_types: tuple[MemoryType, ...]) -> tuple[MemoryType, ...]:
    """Types a buffer may use: protected and lazily-allocated types are excluded."""
    excluded = _LAZILY_ALLOCATED | _PROTECTED
    return tuple(t for t in memory_types if not t.flags & excluded)


def offered_domains(description: PhysicalDescription) -> dict[MemoryDomain, bool]:
    needs = domain_flags()
    types = usable_types(description.memory_types)
    return {domain: any(t.flags & flags == flags for t in types) for domain, flags in needs.items()}


def accelerator_class(device_type: int) -> AcceleratorClass:
    binding = vk()
    gpu_types = (
        binding.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU,
        binding.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
        binding.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU,
    )
    return AcceleratorClass.GPU if device_type in gpu_types else AcceleratorClass.OTHER


def max_bindings(description: PhysicalDescription) -> int:
    return min(
        MAX_BINDINGS,
        description.max_per_stage_storage_buffers,
        description.max_set_storage_buffers,
        description.max_per_stage_resources,
    )


def max_sets(description: PhysicalDescription) -> int:
    """Descriptor sets a program may use: ``maxBoundDescriptorSets``, at most :data:`MAX_DESCRIPTOR_SETS`."""
    return max(1, min(MAX_DESCRIPTOR_SETS, description.max_bound_descriptor_sets))


def max_uniform_bindings(description: PhysicalDescription) -> int:
    """Uniform-buffer rows a program may have (the per-stage and per-set uniform limits, at most MAX_BINDINGS)."""
    return min(
        MAX_BINDINGS,
        description.max_per_stage_uniform_buffers,
        description.max_set_uniform_buffers,
        description.max_per_stage_resources,
    )


def build_device_info(description: PhysicalDescription) -> DeviceInfo:
    """The DeviceInfo of ``description`` (validated by the caller)."""
    capabilities = Capabilities(0)
    domains = offered_domains(description)
    if domains[MemoryDomain.HOST]:
        capabilities |= Capabilities.HOST_VISIBLE_MEMORY
    if domains[MemoryDomain.DEVICE]:
        capabilities |= Capabilities.DEVICE_LOCAL_MEMORY
    if domains[MemoryDomain.SHARED]:
        capabilities |= Capabilities.SHARED_MEMORY
    # Cancellation is host-side: a batch held at the gate never reached vkQueueSubmit,
    # so withdrawing it cannot race the device (tests/vulkan/test_submission.py proves it per device).
    capabilities |= Capabilities.EVENT_CANCELLATION
    max_buffer = min(description.max_storage_buffer_range, description.max_memory_allocation_size)
    local_heaps = [t.heap_bytes for t in description.memory_types if t.flags & _DEVICE_LOCAL]
    all_heaps = [t.heap_bytes for t in description.memory_types]
    total_memory = max(local_heaps or all_heaps or [0]) or None  # the global memory native_facts reports
    limits = DeviceLimits(
        max_contexts=MAX_CONTEXTS,
        max_buffers_per_context=min(U32_MAX, description.max_memory_allocation_count - RESERVED_ALLOCATIONS),
        max_programs_per_context=MAX_PROGRAMS_PER_CONTEXT,
        max_queues_per_context=MAX_QUEUES_PER_CONTEXT,
        max_events_per_context=MAX_EVENTS_PER_CONTEXT,
        max_bindings_per_submission=max_bindings(description),
        max_buffer_bytes=max_buffer,
        max_artifact_bytes=MAX_ARTIFACT_BYTES,
        total_memory_bytes=total_memory,
    )
    identity = DeviceIdentity(
        uuid=description.uuid,
        class_=accelerator_class(description.device_type),
        vendor_id=description.vendor_id,
        device_id=description.device_id,
    )
    return DeviceInfo(identity, capabilities, limits)


_VULKAN_DEVICE_TYPES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
_SPIRV_OF_VULKAN = {(1, 0): "1.0", (1, 1): "1.3", (1, 2): "1.5", (1, 3): "1.6", (1, 4): "1.6"}
"""The highest SPIR-V version each Vulkan core version must accept (Vulkan spec, "Versions")."""
_DEVICE_LOCAL = 0x1  # VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT


def native_facts(description: PhysicalDescription, physical: Any) -> NativeFacts:
    """The device's own answers as :class:`NativeFacts` (read once, by discovery).

    Local memory is ``maxComputeSharedMemorySize``, global memory the largest device-local heap (the
    largest heap when none is device-local), the work-group size ``maxComputeWorkGroupInvocations``;
    Vulkan has no compute-unit count. The SPIR-V version is the one the API version guarantees.
    """
    from .errors import native

    props = native("vkGetPhysicalDeviceProperties", physical)
    try:
        extensions = tuple(
            sorted(
                str(ffi().string(e.extensionName).decode() if not isinstance(e.extensionName, str) else e.extensionName)
                for e in native("vkEnumerateDeviceExtensionProperties", physical, None)
            )
        )
    except BackendError:
        extensions = ()
    heaps = {t.heap_index: t.heap_bytes for t in description.memory_types}
    local_heaps = [t.heap_bytes for t in description.memory_types if t.flags & _DEVICE_LOCAL]
    global_bytes = max(local_heaps or list(heaps.values()) or [0]) or None
    api = description.api_version
    major, minor = api >> 22 & 0x7F, api >> 12 & 0x3FF
    versions = {"Vulkan": version_text(api)}
    spirv = _SPIRV_OF_VULKAN.get((major, minor))
    if spirv:
        versions["SPIR-V"] = spirv
    return NativeFacts(
        device_type=_VULKAN_DEVICE_TYPES.get(description.device_type, f"type {description.device_type}"),
        api=f"Vulkan {version_text(api)}",
        driver_version=description.driver or f"driverVersion {int(props.driverVersion):#x}",
        uuid_derived=False,
        uuid_source="VkPhysicalDeviceIDProperties.deviceUUID",
        compute_units=None,
        global_memory_bytes=global_bytes,
        local_memory_bytes=int(props.limits.maxComputeSharedMemorySize),
        max_work_group_size=description.max_workgroup_invocations,
        max_push_constant_bytes=description.max_push_constants_size,
        fp16="shaderFloat16" in description.features,
        fp64="shaderFloat64" in description.features,
        int64="shaderInt64" in description.features,
        versions=versions,
        extensions=extensions,
    )
