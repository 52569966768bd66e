"""Context lifecycle: one ``VkDevice`` per context, with its native queues and pools.

Promise: :func:`create` makes a device on the instance's chosen compute
queue family (up to :data:`MAX_NATIVE_QUEUES` queues), enabling timeline
semaphores and every shader feature the device reports (so modules that need
them can run: 8/16-bit storage in storage buffers, uniform buffers and push
constants, 8/16/64-bit integers, 16/64-bit floats, scalar and standard
uniform-buffer block layouts, variable pointers, the Vulkan memory model), a
resettable command pool and a descriptor pool sized for
``MAX_EVENTS_PER_CONTEXT`` recordings (each up to :func:`~accel_vulkan.device_info.max_sets`
sets and :func:`~accel_vulkan.device_info.max_bindings` storage or uniform
descriptors); on any failure everything made so far is
destroyed. :func:`destroy` tears down in reverse order; the caller has
checked that no child is alive. :func:`flush_deferred_destroys` hands the
device one empty batch, for drivers that free destroyed pipelines only on a
queue submission (:func:`defers_pipeline_destroy`).
"""

from __future__ import annotations

from typing import Any

from ._binding import ffi, vk
from .accounting import Ledger
from .device_info import MAX_EVENTS_PER_CONTEXT, max_bindings, max_sets, max_uniform_bindings
from .errors import check, native
from .handles import VulkanContext
from .instance import PhysicalDescription
from .recording import PlanMemo, RecordingCache

MAX_NATIVE_QUEUES = 4
"""At most this many ``VkQueue``s per context; contract queues are spread over them round-robin."""


def _features(description: PhysicalDescription) -> tuple[Any, Any, Any]:
    binding = vk()
    on = description.features
    f12 = binding.VkPhysicalDeviceVulkan12Features(
        timelineSemaphore=True,
        shaderFloat16="shaderFloat16" in on,
        shaderInt8="shaderInt8" in on,
        storageBuffer8BitAccess="storageBuffer8BitAccess" in on,
        uniformAndStorageBuffer8BitAccess="uniformAndStorageBuffer8BitAccess" in on,
        storagePushConstant8="storagePushConstant8" in on,
        scalarBlockLayout="scalarBlockLayout" in on,
        uniformBufferStandardLayout="uniformBufferStandardLayout" in on,
        shaderBufferInt64Atomics="shaderBufferInt64Atomics" in on,
        shaderSharedInt64Atomics="shaderSharedInt64Atomics" in on,
        vulkanMemoryModel="vulkanMemoryModel" in on,
        vulkanMemoryModelDeviceScope="vulkanMemoryModelDeviceScope" in on,
    )
    f11 = binding.VkPhysicalDeviceVulkan11Features(
        pNext=f12,
        storageBuffer16BitAccess="storageBuffer16BitAccess" in on,
        uniformAndStorageBuffer16BitAccess="uniformAndStorageBuffer16BitAccess" in on,
        storagePushConstant16="storagePushConstant16" in on,
        variablePointersStorageBuffer="variablePointersStorageBuffer" in on,
        variablePointers="variablePointers" in on,
    )
    base = binding.VkPhysicalDeviceFeatures(
        shaderFloat64="shaderFloat64" in on,
        shaderInt64="shaderInt64" in on,
        shaderInt16="shaderInt16" in on,
    )
    return f11, f12, base


def create(owner: object, physical: Any, description: PhysicalDescription, ledger: Ledger) -> VulkanContext:
    binding = vk()
    assert description.compute_family is not None
    count = max(1, min(description.compute_queue_count, MAX_NATIVE_QUEUES))
    priorities = [1.0] * count
    queue_info = binding.VkDeviceQueueCreateInfo(
        queueFamilyIndex=description.compute_family, queueCount=count, pQueuePriorities=priorities
    )
    f11, f12, base = _features(description)
    create_info = binding.VkDeviceCreateInfo(
        pNext=f11, queueCreateInfoCount=1, pQueueCreateInfos=[queue_info], pEnabledFeatures=base
    )
    device = native("vkCreateDevice", physical, create_info, None)
    del create_info, queue_info, f11, f12, base
    ledger.add("VkDevice")
    made: list[tuple[str, Any]] = []
    try:
        queues = [native("vkGetDeviceQueue", device, description.compute_family, i) for i in range(count)]
        pool_info = binding.VkCommandPoolCreateInfo(
            flags=binding.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=description.compute_family,
        )
        command_pool = native("vkCreateCommandPool", device, pool_info, None)
        made.append(("VkCommandPool", command_pool))
        ledger.add("VkCommandPool")
        sizes = [
            binding.VkDescriptorPoolSize(
                type=binding.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                descriptorCount=MAX_EVENTS_PER_CONTEXT * max_bindings(description),
            ),
            binding.VkDescriptorPoolSize(
                type=binding.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                descriptorCount=MAX_EVENTS_PER_CONTEXT * max_uniform_bindings(description),
            ),
        ]
        descriptor_info = binding.VkDescriptorPoolCreateInfo(
            flags=binding.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
            maxSets=MAX_EVENTS_PER_CONTEXT * max_sets(description),
            poolSizeCount=len(sizes),
            pPoolSizes=sizes,
        )
        descriptor_pool = native("vkCreateDescriptorPool", device, descriptor_info, None)
        made.append(("VkDescriptorPool", descriptor_pool))
        ledger.add("VkDescriptorPool")
    except BaseException:
        _destroy_made(device, made, ledger)
        native("vkDestroyDevice", device, None)
        ledger.remove("VkDevice")
        raise
    return VulkanContext(
        owner=owner,
        device=device,
        native_queues=queues,
        queue_family=description.compute_family,
        command_pool=command_pool,
        descriptor_pool=descriptor_pool,
        descriptor_sets_max=MAX_EVENTS_PER_CONTEXT,
        recordings=RecordingCache(),
        plans=PlanMemo(),
    )


def _destroy_made(device: Any, made: list[tuple[str, Any]], ledger: Ledger) -> None:
    for kind, handle in reversed(made):
        if kind == "VkCommandPool":
            native("vkDestroyCommandPool", device, handle, None)
        elif kind == "VkDescriptorPool":
            native("vkDestroyDescriptorPool", device, handle, None)
        ledger.remove(kind)


def destroy(context: VulkanContext, ledger: Ledger) -> None:
    """Destroy the staging objects, pools and the device (no child may be alive)."""
    from .transfer import destroy_staging

    device = context.device
    if context.staging is not None:
        destroy_staging(context, ledger)
    _destroy_made(
        device, [("VkCommandPool", context.command_pool), ("VkDescriptorPool", context.descriptor_pool)], ledger
    )
    native("vkDestroyDevice", device, None)
    ledger.remove("VkDevice")


def defers_pipeline_destroy(description: PhysicalDescription) -> bool:
    """Whether the driver frees a destroyed ``VkPipeline`` only at the device's next queue submission.

    Mesa's lavapipe does: ``vkDestroyPipeline`` queues the pipeline and the driver frees it in its
    queue-submit path or at ``vkDestroyDevice`` (Mesa 22.3: every pipeline; later releases: those a
    submitted command buffer used). Load/unload with no submission in between keeps every compiled
    pipeline, about 130 KiB of RSS each for the conformance kernel (docs/vulkan.md, "Pipeline memory on
    lavapipe"; ``tools/repro/lavapipe_pipeline_leak.py`` shows it with the ``vulkan`` binding alone).
    """
    return description.driver.startswith("llvmpipe") or description.name.startswith("llvmpipe")


def flush_deferred_destroys(context: VulkanContext) -> None:
    """Submit one empty batch (no command buffer, no semaphore, no fence) to the context's first queue.

    It does no work and signals nothing of ours; a driver that defers destroys runs them in that submission.
    The caller holds the provider lock (the ``VkQueue`` is externally synchronised).
    """
    binding = vk()
    c_ffi = ffi()
    info = c_ffi.new("VkSubmitInfo*", {"sType": binding.VK_STRUCTURE_TYPE_SUBMIT_INFO})
    check(binding.lib.vkQueueSubmit(context.native_queues[0], 1, info, c_ffi.NULL), "vkQueueSubmit", "empty batch")
