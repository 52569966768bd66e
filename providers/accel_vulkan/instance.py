"""The process's ``VkInstance`` per validation mode, and what its physical devices answer.

Promise: :class:`VulkanInstance` owns exactly one instance and, with
validation, one debug-utils messenger feeding a :class:`ValidationLog`;
``close()`` destroys both once. :func:`shared_instance` / :func:`acquire`
create at most one instance per validation mode per process (thread-safe)
and never destroy it while the process runs: NVIDIA's driver refuses every
``vkCreateInstance`` after ~30 create/destroy cycles in one process
(docs/vulkan.md, "One instance per process"). An ``atexit`` hook destroys a
shared instance only when no user still holds it; otherwise the OS reclaims
it. :func:`instances_created` counts the instances this process created.
:func:`describe` reads a physical device's
own answers (properties, IDs, limits, features, memory types, queue families)
into an immutable :class:`PhysicalDescription`, including ``not_offered``:
why the device is below this provider's baseline (Vulkan 1.2 with timeline
semaphores and a compute queue), or None.
"""

from __future__ import annotations

import atexit
import os
import threading
from dataclasses import dataclass
from typing import Any

from accelcore.kernels.spirv import FLOAT_CONTROL_MODES

from . import validation
from ._binding import ffi, version, version_text, vk
from .errors import native

BASELINE = version(1, 2)
"""Vulkan 1.2: timeline semaphores (per-queue completion tracking) are core there."""

VALIDATION_ENV = "ACCEL_VULKAN_VALIDATION"
"""Set to 1 to enable the Khronos validation layer for instances that do not say otherwise."""


_count_lock = threading.Lock()
_created = 0


def validation_default() -> bool:
    return os.environ.get(VALIDATION_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class MemoryType:
    index: int
    flags: int
    heap_index: int
    heap_bytes: int


@dataclass(frozen=True, slots=True)
class PhysicalDescription:
    """A physical device's own answers, read once."""

    index: int
    name: str
    uuid: bytes
    api_version: int
    device_type: int
    vendor_id: int
    device_id: int
    driver: str
    max_storage_buffer_range: int
    max_memory_allocation_size: int
    max_memory_allocation_count: int
    max_per_stage_storage_buffers: int
    max_set_storage_buffers: int
    max_per_stage_resources: int
    max_workgroup_count: tuple[int, int, int]
    max_workgroup_size: tuple[int, int, int]
    """``maxComputeWorkGroupSize``: the largest local size per axis."""
    max_workgroup_invocations: int
    """``maxComputeWorkGroupInvocations``: the largest local-size product."""
    max_shared_memory: int
    """``maxComputeSharedMemorySize``: bytes of ``shared`` (Workgroup) storage a pipeline may declare."""
    min_storage_buffer_offset_alignment: int
    min_uniform_buffer_offset_alignment: int
    max_uniform_buffer_range: int
    max_per_stage_uniform_buffers: int
    max_set_uniform_buffers: int
    max_bound_descriptor_sets: int
    allocation_alignment: int
    """A lower bound on every ``VkDeviceMemory`` base address: the largest of the storage, uniform and
    texel buffer offset alignments. Each is an alignment requirement of the implementation for some
    buffer, and the spec guarantees that ``vkAllocateMemory`` meets every one of those."""
    non_coherent_atom_size: int
    max_push_constants_size: int
    memory_types: tuple[MemoryType, ...]
    compute_family: int | None
    compute_queue_count: int
    timeline_semaphore: bool
    features: frozenset[str]
    """Shader features the device reports (the context enables each one): shaderFloat64, shaderInt64,
    shaderInt16, shaderFloat16, shaderInt8, storageBuffer8BitAccess/16BitAccess,
    uniformAndStorageBuffer8BitAccess/16BitAccess, storagePushConstant8/16, scalarBlockLayout,
    uniformBufferStandardLayout, variablePointers, ..."""
    subgroup_operations: int
    """VkSubgroupFeatureFlags usable in compute shaders (0 when compute lacks subgroup support)."""
    float_controls: frozenset[str]
    """The VkPhysicalDeviceFloatControlsProperties booleans the device reports true
    (shaderDenormPreserveFloat32, shaderRoundingModeRTEFloat16, ...): which SPV_KHR_float_controls
    execution modes, per width, a module may declare."""
    not_offered: str | None
    driver_id: int = 0
    """``VkPhysicalDeviceDriverProperties.driverID`` (a ``VK_DRIVER_ID_*``; 0 below Vulkan 1.2)."""

    @property
    def api_text(self) -> str:
        return version_text(self.api_version)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return str(ffi().string(value).decode("utf-8", "replace"))


_FEATURE_FIELDS_10 = ("shaderFloat64", "shaderInt64", "shaderInt16")
_FEATURE_FIELDS_11 = (
    "storageBuffer16BitAccess",
    "uniformAndStorageBuffer16BitAccess",
    "storagePushConstant16",
    "variablePointersStorageBuffer",
    "variablePointers",
)
_FEATURE_FIELDS_12 = (
    "shaderFloat16",
    "shaderInt8",
    "storageBuffer8BitAccess",
    "uniformAndStorageBuffer8BitAccess",
    "storagePushConstant8",
    "scalarBlockLayout",
    "uniformBufferStandardLayout",
    "timelineSemaphore",
    "shaderBufferInt64Atomics",
    "shaderSharedInt64Atomics",
    "vulkanMemoryModel",
    "vulkanMemoryModelDeviceScope",
)


def _choose_compute_family(families: list[Any]) -> tuple[int | None, int]:
    """Prefer a compute family without graphics (dedicated compute), else the first compute family."""
    binding = vk()
    compute = [(i, f) for i, f in enumerate(families) if f.queueFlags & binding.VK_QUEUE_COMPUTE_BIT and f.queueCount]
    if not compute:
        return None, 0
    dedicated = [(i, f) for i, f in compute if not f.queueFlags & binding.VK_QUEUE_GRAPHICS_BIT]
    index, family = (dedicated or compute)[0]
    return index, int(family.queueCount)


def baseline_problems(api_version: int, timeline_semaphore: bool, has_compute: bool, has_memory: bool) -> list[str]:
    """Why a device with these answers is below the provider's baseline (empty: it is offered)."""
    reasons = []
    if api_version < BASELINE:
        reasons.append(
            f"reports Vulkan {version_text(api_version)}, below the 1.2 baseline (timeline semaphores are core in 1.2)"
        )
    elif not timeline_semaphore:
        reasons.append("does not support timelineSemaphore (needed to track completion per queue)")
    if not has_compute:
        reasons.append("has no queue family with VK_QUEUE_COMPUTE_BIT")
    if not has_memory:
        reasons.append("reports no memory types")
    return reasons


_FLOAT_CONTROL_FIELDS = tuple(
    f"shader{mode}Float{width}" for mode in FLOAT_CONTROL_MODES.values() for width in (16, 32, 64)
)
"""VkPhysicalDeviceFloatControlsProperties' per-width booleans (core in Vulkan 1.2, the baseline)."""


def describe(index: int, physical: Any) -> PhysicalDescription:
    """Read everything the provider needs from one physical device (no device is created)."""
    binding = vk()
    props = native("vkGetPhysicalDeviceProperties", physical)
    limits = props.limits
    api = int(props.apiVersion)
    name = _text(props.deviceName)
    uuid = b"\0" * 16
    max_alloc = 0
    driver = ""
    driver_id = 0
    features: set[str] = set()
    timeline = False
    subgroup_ops = 0
    float_controls: set[str] = set()
    if api >= BASELINE:
        id_props = binding.VkPhysicalDeviceIDProperties()
        controls = binding.VkPhysicalDeviceFloatControlsProperties(pNext=id_props)
        subgroup = binding.VkPhysicalDeviceSubgroupProperties(pNext=controls)
        maint3 = binding.VkPhysicalDeviceMaintenance3Properties(pNext=subgroup)
        driver_props = binding.VkPhysicalDeviceDriverProperties(pNext=maint3)
        props2 = binding.VkPhysicalDeviceProperties2(pNext=driver_props)
        native("vkGetPhysicalDeviceProperties2", physical, props2)
        uuid = bytes(ffi().buffer(id_props.deviceUUID, 16))
        max_alloc = int(maint3.maxMemoryAllocationSize)
        if subgroup.supportedStages & binding.VK_SHADER_STAGE_COMPUTE_BIT:
            subgroup_ops = int(subgroup.supportedOperations)
        driver = f"{_text(driver_props.driverName)} {_text(driver_props.driverInfo)}".strip()
        driver_id = int(driver_props.driverID)
        for field in _FLOAT_CONTROL_FIELDS:
            if getattr(controls, field):
                float_controls.add(field)
        f12 = binding.VkPhysicalDeviceVulkan12Features()
        f11 = binding.VkPhysicalDeviceVulkan11Features(pNext=f12)
        f2 = binding.VkPhysicalDeviceFeatures2(pNext=f11)
        native("vkGetPhysicalDeviceFeatures2", physical, f2)
        for field in _FEATURE_FIELDS_10:
            if getattr(f2.features, field):
                features.add(field)
        for field in _FEATURE_FIELDS_11:
            if getattr(f11, field):
                features.add(field)
        for field in _FEATURE_FIELDS_12:
            if getattr(f12, field):
                features.add(field)
        timeline = bool(f12.timelineSemaphore)
    memory = native("vkGetPhysicalDeviceMemoryProperties", physical)
    types = tuple(
        MemoryType(
            i,
            int(memory.memoryTypes[i].propertyFlags),
            int(memory.memoryTypes[i].heapIndex),
            int(memory.memoryHeaps[memory.memoryTypes[i].heapIndex].size),
        )
        for i in range(memory.memoryTypeCount)
    )
    # The cffi array owns its elements: indexing gives views into it, so it must live while they are read.
    family_array = native("vkGetPhysicalDeviceQueueFamilyProperties", physical)
    family, queue_count = _choose_compute_family(list(family_array))
    reasons = baseline_problems(api, timeline, family is not None, bool(types))
    return PhysicalDescription(
        index=index,
        name=name,
        uuid=uuid,
        api_version=api,
        device_type=int(props.deviceType),
        vendor_id=int(props.vendorID),
        device_id=int(props.deviceID),
        driver=driver,
        driver_id=driver_id,
        max_storage_buffer_range=int(limits.maxStorageBufferRange),
        max_memory_allocation_size=max_alloc,
        max_memory_allocation_count=int(limits.maxMemoryAllocationCount),
        max_per_stage_storage_buffers=int(limits.maxPerStageDescriptorStorageBuffers),
        max_set_storage_buffers=int(limits.maxDescriptorSetStorageBuffers),
        max_per_stage_resources=int(limits.maxPerStageResources),
        max_workgroup_count=(
            int(limits.maxComputeWorkGroupCount[0]),
            int(limits.maxComputeWorkGroupCount[1]),
            int(limits.maxComputeWorkGroupCount[2]),
        ),
        max_workgroup_size=(
            int(limits.maxComputeWorkGroupSize[0]),
            int(limits.maxComputeWorkGroupSize[1]),
            int(limits.maxComputeWorkGroupSize[2]),
        ),
        max_workgroup_invocations=int(limits.maxComputeWorkGroupInvocations),
        max_shared_memory=int(limits.maxComputeSharedMemorySize),
        min_storage_buffer_offset_alignment=int(limits.minStorageBufferOffsetAlignment),
        min_uniform_buffer_offset_alignment=int(limits.minUniformBufferOffsetAlignment),
        max_uniform_buffer_range=int(limits.maxUniformBufferRange),
        max_per_stage_uniform_buffers=int(limits.maxPerStageDescriptorUniformBuffers),
        max_set_uniform_buffers=int(limits.maxDescriptorSetUniformBuffers),
        max_bound_descriptor_sets=int(limits.maxBoundDescriptorSets),
        allocation_alignment=max(
            int(limits.minStorageBufferOffsetAlignment),
            int(limits.minUniformBufferOffsetAlignment),
            int(limits.minTexelBufferOffsetAlignment),
        ),
        non_coherent_atom_size=int(limits.nonCoherentAtomSize),
        max_push_constants_size=int(limits.maxPushConstantsSize),
        memory_types=types,
        compute_family=family,
        compute_queue_count=queue_count,
        timeline_semaphore=timeline,
        features=frozenset(features),
        subgroup_operations=subgroup_ops,
        float_controls=frozenset(float_controls),
        not_offered="; ".join(reasons) or None,
    )


class VulkanInstance:
    """One ``VkInstance`` at API 1.2, with the validation layer and a message log when asked.

    Use :func:`shared_instance` / :func:`acquire` rather than constructing one: each construction is a
    ``vkCreateInstance``, and NVIDIA allows only ~30 of those per process.
    """

    def __init__(self, *, validation_enabled: bool = False, application: str = "accelcore") -> None:
        binding = vk()
        loader = int(native("vkEnumerateInstanceVersion"))
        if loader < BASELINE:
            from accelcore.devices.registry import ProviderUnavailable

            raise ProviderUnavailable(
                "vulkan", f"the Vulkan loader is version {version_text(loader)}; 1.2 or newer is needed"
            )
        self.log: validation.ValidationLog | None = None
        self._handle: Any = None
        self._messenger: Any = None
        layers: list[str] = []
        extensions: list[str] = []
        messenger_info = None
        if validation_enabled:
            validation.require_layer()
            self.log = validation.ValidationLog()
            self._handle = ffi().new_handle(self.log)
            messenger_info = validation.messenger_info(self._handle)
            layers.append(validation.LAYER)
            extensions.append(validation.EXTENSION)
        app = binding.VkApplicationInfo(
            pApplicationName=application,
            applicationVersion=1,
            pEngineName="accelcore",
            engineVersion=1,
            apiVersion=BASELINE,
        )
        create = binding.VkInstanceCreateInfo(
            pNext=messenger_info,
            pApplicationInfo=app,
            enabledLayerCount=len(layers),
            ppEnabledLayerNames=layers or None,
            enabledExtensionCount=len(extensions),
            ppEnabledExtensionNames=extensions or None,
        )
        self.instance = native("vkCreateInstance", create, None)
        global _created
        with _count_lock:
            _created += 1
        del create, app
        if messenger_info is not None:
            try:
                make = native("vkGetInstanceProcAddr", self.instance, "vkCreateDebugUtilsMessengerEXT")
                self._destroy_messenger = native(
                    "vkGetInstanceProcAddr", self.instance, "vkDestroyDebugUtilsMessengerEXT"
                )
                self._messenger = make(self.instance, messenger_info, None)
            except BaseException:
                native("vkDestroyInstance", self.instance, None)
                raise
        self._messenger_info = messenger_info
        self.closed = False

    @property
    def validation_enabled(self) -> bool:
        return self.log is not None

    def physical_devices(self) -> list[Any]:
        return list(native("vkEnumeratePhysicalDevices", self.instance))

    def close(self) -> None:
        """Destroy the messenger and the instance (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self._messenger is not None:
            self._destroy_messenger(self.instance, self._messenger, None)
            self._messenger = None
        native("vkDestroyInstance", self.instance, None)


_registry_lock = threading.Lock()
_shared: dict[bool, VulkanInstance] = {}
_users: dict[bool, int] = {}


def instances_created() -> int:
    """How many ``VkInstance`` objects this process has created through :class:`VulkanInstance` (shared or not)."""
    with _count_lock:
        return _created


def shared_instance(validation_enabled: bool) -> VulkanInstance:
    """The process's instance for this validation mode: created on first use, the same object afterwards.

    Failure (no loader, loader below 1.2, validation layer missing) raises and leaves nothing cached,
    so a later call tries again. The caller does not own the instance and must not close it.
    """
    with _registry_lock:
        return _get(bool(validation_enabled))


def acquire(validation_enabled: bool) -> tuple[VulkanInstance, int]:
    """Hold the shared instance of this mode for one user (an accelerator) until :func:`release`.

    Returns the instance and the user's starting mark in its validation log: 0 when this call
    created the instance (its creation messages belong to the first user), else the log's length.
    """
    mode = bool(validation_enabled)
    with _registry_lock:
        fresh = mode not in _shared
        instance = _get(mode)
        _users[mode] = _users.get(mode, 0) + 1
        mark = 0 if fresh or instance.log is None else len(instance.log)
        return instance, mark


def release(instance: VulkanInstance) -> None:
    """One user of ``instance`` is done with it; the instance stays alive (idempotence is the caller's)."""
    mode = instance.validation_enabled
    with _registry_lock:
        if _shared.get(mode) is instance and _users.get(mode, 0) > 0:
            _users[mode] -= 1


def _get(mode: bool) -> VulkanInstance:
    instance = _shared.get(mode)
    if instance is None:
        instance = VulkanInstance(validation_enabled=mode)
        _shared[mode] = instance
    return instance


@atexit.register
def _close_unused_at_exit() -> None:
    """At interpreter exit, destroy each shared instance nobody holds; a held one is left to the OS."""
    with _registry_lock:
        for mode, instance in list(_shared.items()):
            if _users.get(mode, 0) == 0:
                del _shared[mode]
                try:
                    instance.close()
                except Exception:  # exiting: nothing useful to do with a failed destroy
                    pass
