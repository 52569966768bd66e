"""Raw Vulkan compute through the ``vulkan`` cffi binding, written by hand.

Transfers map the memory once (persistently) and ``memmove`` straight into or
out of it; a dispatch resubmits one pre-recorded command buffer with
``vkQueueSubmit`` and waits on a fence (the cheapest honest round trip). Only
host-visible memory is measured: a device-local-only memory type would need a
staging copy that this hand-written baseline does not implement (recorded as
such, never faked).

Typing: the binding ships no types, so every ``vk.*`` value is ``Any``. The
boundary is kept narrow: each value that comes out of the binding is assigned
to an annotated name right away — an opaque :data:`Handle`, one of the few
struct shapes below (only the fields read here), or a ``Buffer`` for the
mapping. Annotations cost nothing at run time, so the timed calls stay raw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias, TypedDict

import numpy as np
import vulkan as vk  # type: ignore[import-untyped]
from typing_extensions import Buffer

from . import kernels
from .sides import NotMeasured

__all__ = ["RawVulkan", "RawVulkanDispatch", "list_devices"]

_U64_MAX = 0xFFFFFFFFFFFFFFFF

Handle: TypeAlias = object
"""An opaque Vulkan handle or binding struct (a cffi object): only ever handed back to ``vk.*`` calls."""


class _QueueFamilyProperties(Protocol):
    queueFlags: int  # noqa: N815 (the Vulkan struct's field name)


class _PhysicalDeviceProperties(Protocol):
    deviceName: object  # noqa: N815 (the Vulkan struct's field name)
    """A cffi char array (``str()`` gives the name)."""
    apiVersion: int  # noqa: N815 (the Vulkan struct's field name)
    driverVersion: int  # noqa: N815 (the Vulkan struct's field name)
    vendorID: int  # noqa: N815 (the Vulkan struct's field name)


class _MemoryType(Protocol):
    propertyFlags: int  # noqa: N815 (the Vulkan struct's field name)


class _MemoryProperties(Protocol):
    memoryTypeCount: int  # noqa: N815 (the Vulkan struct's field name)

    @property
    def memoryTypes(self) -> Sequence[_MemoryType]: ...  # noqa: N802 (the Vulkan struct's field name)


class _MemoryRequirements(Protocol):
    size: int
    memoryTypeBits: int  # noqa: N815 (the Vulkan struct's field name)


_DOMAIN_PROPERTIES: dict[str, int] = {
    "host": vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
    "device": vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
    "shared": vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
}


def _instance() -> Handle:
    app = vk.VkApplicationInfo(
        pApplicationName="accel-bench",
        applicationVersion=1,
        pEngineName="raw",
        engineVersion=1,
        apiVersion=vk.VK_MAKE_VERSION(1, 2, 0),
    )
    return vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)


def _uuid_of(physical: Handle) -> bytes:
    id_props = vk.VkPhysicalDeviceIDProperties()
    props2 = vk.VkPhysicalDeviceProperties2(pNext=id_props)
    vk.vkGetPhysicalDeviceProperties2(physical, props2)
    return bytes(vk.ffi.buffer(id_props.deviceUUID, 16))


def list_devices() -> list[tuple[str, bytes]]:
    """(device name, 16-byte deviceUUID) of every physical device with a compute queue."""
    instance = _instance()
    try:
        found: list[tuple[str, bytes]] = []
        for physical in vk.vkEnumeratePhysicalDevices(instance):
            props: _PhysicalDeviceProperties = vk.vkGetPhysicalDeviceProperties(physical)
            families: list[_QueueFamilyProperties] = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
            if any(f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT for f in families):
                found.append((str(props.deviceName), _uuid_of(physical)))
        return found
    finally:
        vk.vkDestroyInstance(instance, None)


@dataclass
class MappedBuffer:
    buffer: Handle
    memory: Handle
    nbytes: int
    mapped: Buffer
    """The persistent mapping (a cffi buffer over the whole allocation)."""


@dataclass
class Pipeline:
    shader: Handle
    pipeline: Handle


class _Tiny(TypedDict):
    """The tiny kernel's objects (a plain dict at run time: the timed ``round_trip`` indexes it as before)."""

    set_layout: Handle
    pipeline_layout: Handle
    pipeline: Pipeline
    data: MappedBuffer
    pool: Handle
    command_pool: Handle
    command_buffer: Handle
    fence: Handle
    submit: Handle


class RawVulkan:
    """Instance, device, one compute queue, and the objects of the tiny kernel."""

    def __init__(self, uuid: bytes | None = None) -> None:
        self.instance = _instance()
        chosen: Handle | None = None
        for physical in vk.vkEnumeratePhysicalDevices(self.instance):
            if uuid is None or _uuid_of(physical) == uuid:
                chosen = physical
                break
        if chosen is None:
            vk.vkDestroyInstance(self.instance, None)
            raise LookupError(f"no Vulkan device with UUID {uuid!r}")
        self.physical: Handle = chosen
        families: list[_QueueFamilyProperties] = vk.vkGetPhysicalDeviceQueueFamilyProperties(chosen)
        self.family = next(i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0])
        self.device: Handle = vk.vkCreateDevice(
            chosen, vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=[queue_info]), None
        )
        self.queue: Handle = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.memory_properties: _MemoryProperties = vk.vkGetPhysicalDeviceMemoryProperties(chosen)
        self._tiny: _Tiny | None = None

    # ------------------------------------------------------------------ memory
    def memory_type(self, type_bits: int, domain: str) -> tuple[int, int]:
        """(index, property flags) of the first allowed memory type with the domain's properties."""
        wanted = _DOMAIN_PROPERTIES[domain]
        props = self.memory_properties
        for index in range(props.memoryTypeCount):
            flags = props.memoryTypes[index].propertyFlags
            if type_bits & (1 << index) and flags & wanted == wanted:
                return index, flags
        raise LookupError(f"no memory type for domain {domain}")

    def host_visible(self, domain: str) -> bool:
        try:
            _, flags = self.memory_type(0xFFFFFFFF, domain)
        except LookupError:
            return False
        return bool(flags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)

    name = "raw"

    def open_buffer(self, nbytes: int, domain: str) -> MappedBuffer:
        """TransferSide: a buffer with its own memory, mapped once; NotMeasured when not host-visible."""
        try:
            return self.buffer(nbytes, domain)
        except LookupError as exc:
            raise NotMeasured(str(exc)) from exc

    def writer(self, buffer: MappedBuffer, host: np.ndarray) -> Callable[[], None]:
        mapped, nbytes, memmove = buffer.mapped, host.nbytes, vk.ffi.memmove

        def write() -> None:
            memmove(mapped, host, nbytes)

        return write

    def reader(self, buffer: MappedBuffer, host: np.ndarray) -> Callable[[], None]:
        mapped, nbytes, memmove = buffer.mapped, host.nbytes, vk.ffi.memmove

        def read() -> None:
            memmove(host, mapped, nbytes)

        return read

    def close_buffer(self, buffer: MappedBuffer) -> None:
        self.free(buffer)

    def buffer(self, nbytes: int, domain: str) -> MappedBuffer:
        """A buffer with its own memory, mapped once; LookupError when not host-visible."""
        usage = (
            vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        )
        buffer: Handle = vk.vkCreateBuffer(
            self.device,
            vk.VkBufferCreateInfo(size=nbytes, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE),
            None,
        )
        requirements: _MemoryRequirements = vk.vkGetBufferMemoryRequirements(self.device, buffer)
        try:
            index, flags = self.memory_type(requirements.memoryTypeBits, domain)
            if not flags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT:
                raise LookupError(f"{domain} memory is not host-visible; raw staging is not implemented")
        except LookupError:
            vk.vkDestroyBuffer(self.device, buffer, None)
            raise
        memory: Handle = vk.vkAllocateMemory(
            self.device, vk.VkMemoryAllocateInfo(allocationSize=requirements.size, memoryTypeIndex=index), None
        )
        vk.vkBindBufferMemory(self.device, buffer, memory, 0)
        mapped: Buffer = vk.vkMapMemory(self.device, memory, 0, nbytes, 0)
        return MappedBuffer(buffer, memory, nbytes, mapped)

    def free(self, mapped: MappedBuffer) -> None:
        vk.vkUnmapMemory(self.device, mapped.memory)
        vk.vkDestroyBuffer(self.device, mapped.buffer, None)
        vk.vkFreeMemory(self.device, mapped.memory, None)

    # ------------------------------------------------------------------ programs
    def _layouts(self) -> tuple[Handle, Handle]:
        binding = vk.VkDescriptorSetLayoutBinding(
            binding=0,
            descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
        )
        set_layout: Handle = vk.vkCreateDescriptorSetLayout(
            self.device, vk.VkDescriptorSetLayoutCreateInfo(bindingCount=1, pBindings=[binding]), None
        )
        pipeline_layout: Handle = vk.vkCreatePipelineLayout(
            self.device, vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=[set_layout]), None
        )
        return set_layout, pipeline_layout

    def destroy_layouts(self, set_layout: Handle, pipeline_layout: Handle) -> None:
        """Destroy what :meth:`_layouts` made."""
        vk.vkDestroyPipelineLayout(self.device, pipeline_layout, None)
        vk.vkDestroyDescriptorSetLayout(self.device, set_layout, None)

    def create_pipeline_cache(self) -> Handle:
        cache: Handle = vk.vkCreatePipelineCache(self.device, vk.VkPipelineCacheCreateInfo(), None)
        return cache

    def destroy_pipeline_cache(self, cache: Handle) -> None:
        vk.vkDestroyPipelineCache(self.device, cache, None)

    def pipeline(self, spirv: bytes, pipeline_layout: Handle, cache: Handle | None = None) -> Pipeline:
        """Shader module + compute pipeline (through ``cache`` when given)."""
        shader: Handle = vk.vkCreateShaderModule(
            self.device, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None
        )
        stage = vk.VkPipelineShaderStageCreateInfo(
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=shader, pName=kernels.SPIRV_ENTRY
        )
        info = vk.VkComputePipelineCreateInfo(stage=stage, layout=pipeline_layout)
        pipelines: list[Handle] = vk.vkCreateComputePipelines(self.device, cache or vk.VK_NULL_HANDLE, 1, [info], None)
        return Pipeline(shader, pipelines[0])

    def destroy_pipeline(self, pipeline: Pipeline) -> None:
        vk.vkDestroyPipeline(self.device, pipeline.pipeline, None)
        vk.vkDestroyShaderModule(self.device, pipeline.shader, None)

    # ------------------------------------------------------------------ dispatch
    def tiny(self) -> _Tiny:
        """Build (once) the tiny kernel's pipeline, buffer, descriptor set, recorded command buffer and fence."""
        if self._tiny is not None:
            return self._tiny
        set_layout, pipeline_layout = self._layouts()
        pipe = self.pipeline(kernels.tiny_spirv(), pipeline_layout)
        data = self.buffer(kernels.ELEMENTS * 4, "host")
        vk.ffi.memmove(data.mapped, bytes(data.nbytes), data.nbytes)
        pool_size = vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1)
        pool: Handle = vk.vkCreateDescriptorPool(
            self.device, vk.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=1, pPoolSizes=[pool_size]), None
        )
        descriptor_set: Handle = vk.vkAllocateDescriptorSets(
            self.device,
            vk.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=1, pSetLayouts=[set_layout]),
        )[0]
        buffer_info = vk.VkDescriptorBufferInfo(buffer=data.buffer, offset=0, range=data.nbytes)
        write = vk.VkWriteDescriptorSet(
            dstSet=descriptor_set,
            dstBinding=0,
            descriptorCount=1,
            descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            pBufferInfo=[buffer_info],
        )
        vk.vkUpdateDescriptorSets(self.device, 1, [write], 0, None)
        command_pool: Handle = vk.vkCreateCommandPool(
            self.device,
            vk.VkCommandPoolCreateInfo(
                queueFamilyIndex=self.family, flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
            ),
            None,
        )
        command_buffer: Handle = vk.vkAllocateCommandBuffers(
            self.device,
            vk.VkCommandBufferAllocateInfo(
                commandPool=command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
            ),
        )[0]
        # Simultaneous use: sustained runs resubmit this buffer while earlier copies are pending.
        vk.vkBeginCommandBuffer(
            command_buffer, vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT)
        )
        # Order this dispatch after the previous submission's writes (same buffer, read-modify-write).
        barrier = vk.VkMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
            dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
        )
        vk.vkCmdPipelineBarrier(
            command_buffer,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            0,
            1,
            [barrier],
            0,
            None,
            0,
            None,
        )
        vk.vkCmdBindPipeline(command_buffer, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline)
        vk.vkCmdBindDescriptorSets(
            command_buffer, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout, 0, 1, [descriptor_set], 0, None
        )
        vk.vkCmdDispatch(command_buffer, kernels.ELEMENTS // kernels.LOCAL_SIZE, 1, 1)
        vk.vkEndCommandBuffer(command_buffer)
        fence: Handle = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)
        submit: Handle = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[command_buffer])
        self._tiny = {
            "set_layout": set_layout,
            "pipeline_layout": pipeline_layout,
            "pipeline": pipe,
            "data": data,
            "pool": pool,
            "command_pool": command_pool,
            "command_buffer": command_buffer,
            "fence": fence,
            "submit": submit,
        }
        return self._tiny

    def round_trip(self) -> None:
        """Submit the pre-recorded dispatch and wait for its fence."""
        tiny = self._tiny
        assert tiny is not None
        fence = tiny["fence"]
        vk.vkQueueSubmit(self.queue, 1, [tiny["submit"]], fence)
        vk.vkWaitForFences(self.device, 1, [fence], vk.VK_TRUE, _U64_MAX)
        vk.vkResetFences(self.device, 1, [fence])

    def round_trip_polled(self) -> None:
        """Submit the pre-recorded dispatch and busy-poll its fence (the binding raises VkNotReady until done)."""
        tiny = self._tiny
        assert tiny is not None
        fence = tiny["fence"]
        device = self.device
        vk.vkQueueSubmit(self.queue, 1, [tiny["submit"]], fence)
        while True:
            try:
                vk.vkGetFenceStatus(device, fence)
                break
            except vk.VkNotReady:
                pass
        vk.vkResetFences(device, 1, [fence])

    def dispatch_side(self) -> RawVulkanDispatch:
        return RawVulkanDispatch(self)

    def driver_facts(self) -> dict[str, str]:
        """API version, driver version and vendor ID of the chosen physical device, as the results record them."""
        props: _PhysicalDeviceProperties = vk.vkGetPhysicalDeviceProperties(self.physical)
        version = props.apiVersion
        return {
            "api_version": f"{version >> 22}.{(version >> 12) & 0x3FF}.{version & 0xFFF}",
            "driver_version": hex(props.driverVersion),
            "vendor_id": hex(props.vendorID),
        }

    def tiny_values(self) -> np.ndarray:
        tiny = self.tiny()
        return np.frombuffer(memoryview(tiny["data"].mapped), dtype=np.uint32).copy()

    def close(self) -> None:
        vk.vkDeviceWaitIdle(self.device)
        tiny = self._tiny
        if tiny is not None:
            vk.vkDestroyFence(self.device, tiny["fence"], None)
            vk.vkDestroyCommandPool(self.device, tiny["command_pool"], None)
            vk.vkDestroyDescriptorPool(self.device, tiny["pool"], None)
            self.destroy_pipeline(tiny["pipeline"])
            vk.vkDestroyPipelineLayout(self.device, tiny["pipeline_layout"], None)
            vk.vkDestroyDescriptorSetLayout(self.device, tiny["set_layout"], None)
            self.free(tiny["data"])
            self._tiny = None
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)


class RawVulkanDispatch:
    """DispatchSide: the pre-recorded tiny dispatch, one fence per submission in flight."""

    name = "raw"

    def __init__(self, raw: RawVulkan) -> None:
        self.raw = raw
        self.start = int(raw.tiny_values()[0])
        self.count = 0
        self._fences: list[Handle] = []

    def round_trip(self) -> None:
        self.raw.round_trip()
        self.count += 1

    def sustained(self, submits: int, window: int) -> int:
        device, queue = self.raw.device, self.raw.queue
        tiny = self.raw.tiny()
        while len(self._fences) < window:
            self._fences.append(vk.vkCreateFence(device, vk.VkFenceCreateInfo(), None))
        submit = [tiny["submit"]]
        in_flight: list[Handle] = []
        free = list(self._fences[:window])
        for _ in range(submits):
            if not free:
                oldest = in_flight.pop(0)
                vk.vkWaitForFences(device, 1, [oldest], vk.VK_TRUE, _U64_MAX)
                vk.vkResetFences(device, 1, [oldest])
                free.append(oldest)
            fence = free.pop()
            vk.vkQueueSubmit(queue, 1, submit, fence)
            in_flight.append(fence)
        if in_flight:
            vk.vkWaitForFences(device, len(in_flight), in_flight, vk.VK_TRUE, _U64_MAX)
            vk.vkResetFences(device, len(in_flight), in_flight)
        self.count += submits
        return submits

    def verify(self) -> bool:
        return bool(np.all(self.raw.tiny_values() == self.start + self.count))

    def polled(self) -> RawVulkanPolled:
        """A round-trip side that busy-polls the fence instead of waiting on it (shares this side's count)."""
        return RawVulkanPolled(self)

    def close(self) -> None:
        vk.vkDeviceWaitIdle(self.raw.device)
        for fence in self._fences:
            vk.vkDestroyFence(self.raw.device, fence, None)
        self._fences = []


class RawVulkanPolled:
    """RoundTripSide ``raw-poll``: the pre-recorded dispatch, fence busy-polled (the wait our layer does)."""

    name = "raw-poll"

    def __init__(self, dispatch: RawVulkanDispatch) -> None:
        self.dispatch = dispatch

    def round_trip(self) -> None:
        self.dispatch.raw.round_trip_polled()
        self.dispatch.count += 1

    def verify(self) -> bool:
        return self.dispatch.verify()
