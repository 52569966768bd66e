"""A Vulkan physical device at ``vulkaninfo`` depth: the limits, features and subgroup properties compute uses.

Promise: :func:`device_details` reads one physical device (found by its ``deviceUUID`` on the
process's shared instance; no ``VkDevice`` is created) with ``vkGetPhysicalDeviceProperties``,
``vkGetPhysicalDeviceProperties2`` (ID, driver, subgroup, subgroup-size-control, float-controls
and maintenance-3 properties), ``vkGetPhysicalDeviceFeatures2`` (1.0, 1.1 and 1.2 features),
``vkGetPhysicalDeviceMemoryProperties``, ``vkGetPhysicalDeviceQueueFamilyProperties`` and
``vkEnumerateDeviceExtensionProperties``, and returns
:class:`~accelcore.devices.native_facts.DeviceDetails`. A structure the device or this instance cannot be
asked for (below its Vulkan version, without its extension) or a call that fails makes its facts
not reported, with the reason; nothing raises for it. Keys are the Vulkan names in snake case with
their unit (``max_compute_shared_memory_bytes``, ``timestamp_period_ns``); flag fields are decoded
to short lowercase names (``compute``, ``shuffle_relative``, ``device_local``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from accelcore import BackendError
from accelcore.devices.native_facts import DeviceDetails, Fact, FactSection

from ._binding import ffi, version, version_text, vk
from .errors import native
from .instance import BASELINE, shared_instance

__all__ = ["SHADER_STAGES", "SUBGROUP_OPERATIONS", "device_details"]

SHADER_STAGES = {
    0x1: "vertex",
    0x2: "tessellation_control",
    0x4: "tessellation_evaluation",
    0x8: "geometry",
    0x10: "fragment",
    0x20: "compute",
    0x40: "task",
    0x80: "mesh",
    0x100: "raygen",
    0x200: "any_hit",
    0x400: "closest_hit",
    0x800: "miss",
    0x1000: "intersection",
    0x2000: "callable",
}
"""``VkShaderStageFlagBits`` by bit, as short names (vulkaninfo: ``SHADER_STAGE_<NAME>_BIT``)."""
SUBGROUP_OPERATIONS = {
    0x1: "basic",
    0x2: "vote",
    0x4: "arithmetic",
    0x8: "ballot",
    0x10: "shuffle",
    0x20: "shuffle_relative",
    0x40: "clustered",
    0x80: "quad",
    0x100: "partitioned",
    0x200: "rotate",
    0x400: "rotate_clustered",
}
"""``VkSubgroupFeatureFlagBits`` by bit (vulkaninfo: ``SUBGROUP_FEATURE_<NAME>_BIT``; partitioned is NV's)."""
MEMORY_PROPERTIES = {
    0x1: "device_local",
    0x2: "host_visible",
    0x4: "host_coherent",
    0x8: "host_cached",
    0x10: "lazily_allocated",
    0x20: "protected",
    0x40: "device_coherent_amd",
    0x80: "device_uncached_amd",
    0x100: "rdma_capable_nv",
}
HEAP_FLAGS = {0x1: "device_local", 0x2: "multi_instance"}
QUEUE_FLAGS = {0x1: "graphics", 0x2: "compute", 0x4: "transfer", 0x8: "sparse_binding", 0x10: "protected"}
_DEVICE_TYPES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
_INDEPENDENCE = {0: "32_bit_only", 1: "all", 2: "none"}
_FLOAT_CONTROLS = (
    ("denorm_preserve", "shaderDenormPreserveFloat"),
    ("denorm_flush_to_zero", "shaderDenormFlushToZeroFloat"),
    ("signed_zero_inf_nan_preserve", "shaderSignedZeroInfNanPreserveFloat"),
    ("rounding_mode_rte", "shaderRoundingModeRTEFloat"),
    ("rounding_mode_rtz", "shaderRoundingModeRTZFloat"),
)
_NVIDIA = 0x10DE


def _flags(value: int, names: dict[int, str]) -> list[str]:
    found = [name for bit, name in names.items() if value & bit]
    unknown = value & ~sum(names)
    if unknown:
        found.append(f"{unknown:#x}")
    return found


def _snake(name: str) -> str:
    """``maxComputeWorkGroupCount`` -> ``max_compute_work_group_count`` (names with digits get explicit keys)."""
    return "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in name).lstrip("_")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(ffi().string(value).decode("utf-8", "replace"))


def _uuid(value: Any) -> str:
    h = bytes(ffi().buffer(value, 16)).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _major_minor(packed: int) -> str:
    return f"{packed >> 22 & 0x7F}.{packed >> 12 & 0x3FF}"


def driver_version_text(raw: int, vendor_id: int) -> str:
    """``driverVersion`` as vulkaninfo shows it: NVIDIA's 10.8.8.6-bit packing, else the API-version packing."""
    if vendor_id == _NVIDIA:
        return f"{raw >> 22 & 0x3FF}.{raw >> 14 & 0xFF}.{raw >> 6 & 0xFF}.{raw & 0x3F}"
    return version_text(raw)


class _Reader:
    """One physical device's answers, each structure read once; a refused structure keeps its reason."""

    def __init__(self, physical: Any) -> None:
        binding = vk()
        self.binding = binding
        self.props = native("vkGetPhysicalDeviceProperties", physical)
        self.limits = self.props.limits
        self.api = int(self.props.apiVersion)
        self.extensions, self.extensions_reason = self._extensions(physical)
        effective = min(self.api, BASELINE)  # the instance asks for Vulkan 1.2 (instance.BASELINE)
        self.structs: dict[str, Any] = {}
        self.missing: dict[str, str] = {}
        wanted: list[tuple[str, str | None, int]] = [
            ("VkPhysicalDeviceIDProperties", None, version(1, 1)),
            ("VkPhysicalDeviceSubgroupProperties", None, version(1, 1)),
            ("VkPhysicalDeviceMaintenance3Properties", None, version(1, 1)),
            ("VkPhysicalDeviceDriverProperties", None, version(1, 2)),
            ("VkPhysicalDeviceFloatControlsProperties", None, version(1, 2)),
            ("VkPhysicalDeviceSubgroupSizeControlProperties", "VK_EXT_subgroup_size_control", version(1, 3)),
        ]
        chain = None
        for struct, extension, core in wanted:
            if effective >= core or (extension is not None and extension in self.extensions):
                chain = getattr(binding, struct)(pNext=chain)
                self.structs[struct] = chain
            else:
                why = f"{struct} is core in Vulkan {_major_minor(core)}; device and instance: {_major_minor(effective)}"
                if extension is not None:
                    why += f" and the device offers no {extension}"
                self.missing[struct] = why
        self._fill("vkGetPhysicalDeviceProperties2", physical, binding.VkPhysicalDeviceProperties2, chain)
        feature_chain = None
        for struct, core in (("VkPhysicalDeviceVulkan11Features", 1), ("VkPhysicalDeviceVulkan12Features", 2)):
            if effective >= version(1, core):
                feature_chain = getattr(binding, struct)(pNext=feature_chain)
                self.structs[struct] = feature_chain
            else:
                self.missing[struct] = f"{struct} needs Vulkan 1.{core}; the device gives {_major_minor(effective)}"
        features2 = binding.VkPhysicalDeviceFeatures2(pNext=feature_chain)
        self._features2 = features2  # owns the memory of features2.features
        try:
            native("vkGetPhysicalDeviceFeatures2", physical, features2)
            self.structs["VkPhysicalDeviceFeatures"] = features2.features
        except BackendError as error:
            for struct in (
                "VkPhysicalDeviceFeatures",
                "VkPhysicalDeviceVulkan11Features",
                "VkPhysicalDeviceVulkan12Features",
            ):
                self.structs.pop(struct, None)
                self.missing[struct] = f"vkGetPhysicalDeviceFeatures2 failed: {error}"
        self.memory = native("vkGetPhysicalDeviceMemoryProperties", physical)
        families = native("vkGetPhysicalDeviceQueueFamilyProperties", physical)
        self.families = [  # read while the returned array (which owns the elements' memory) is alive
            {
                "index": index,
                "queue_count": int(family.queueCount),
                "flags": _flags(int(family.queueFlags), QUEUE_FLAGS),
                "timestamp_valid_bits": int(family.timestampValidBits),
            }
            for index, family in enumerate(families)
        ]

    def _fill(self, call: str, physical: Any, wrapper: Any, chain: Any) -> None:
        try:
            native(call, physical, wrapper(pNext=chain))
        except BackendError as error:
            for struct in list(self.structs):
                self.missing[struct] = f"{call} failed: {error}"
            self.structs.clear()

    def _extensions(self, physical: Any) -> tuple[list[str], str]:
        try:
            found = native("vkEnumerateDeviceExtensionProperties", physical, None)
        except BackendError as error:
            return [], f"vkEnumerateDeviceExtensionProperties failed: {error}"
        return sorted({_text(e.extensionName) for e in found}), ""

    def field(
        self,
        struct: str,
        name: str,
        key: str | None = None,
        label: str | None = None,
        *,
        unit: str = "",
        layout: str = "",
        convert: Callable[[Any], Any] = int,
    ) -> Fact:
        """The fact of ``<struct>.<name>`` (the key defaults to the snake-case name, the label to the Vulkan name,
        as vulkaninfo shows it)."""
        key = key or _snake(name)
        label = label or name
        query = f"{struct}.{name}"
        source = self.limits if struct == "VkPhysicalDeviceLimits" else self.structs.get(struct)
        if struct == "VkPhysicalDeviceProperties":
            source = self.props
        if source is None:
            return Fact(key, label, None, query, unit, self.missing.get(struct, f"{struct} was not read"), layout)
        return Fact(key, label, convert(getattr(source, name)), query, unit, layout=layout)

    def limit(self, name: str, key: str | None = None, *, unit: str = "", layout: str = "", convert: Any = int) -> Fact:
        return self.field("VkPhysicalDeviceLimits", name, key, unit=unit, layout=layout, convert=convert)

    def struct_or_reason(self, struct: str) -> tuple[Any, str]:
        source = self.structs.get(struct)
        return source, "" if source is not None else self.missing.get(struct, f"{struct} was not read")


def _axes(value: Any) -> list[int]:
    return [int(value[i]) for i in range(3)]


def _device(r: _Reader) -> FactSection:
    binding = r.binding
    props = r.props
    driver, driver_reason = r.struct_or_reason("VkPhysicalDeviceDriverProperties")
    ids, ids_reason = r.struct_or_reason("VkPhysicalDeviceIDProperties")
    driver_ids = {
        int(getattr(binding, n)): n.removeprefix("VK_DRIVER_ID_")
        for n in dir(binding)
        if n.startswith("VK_DRIVER_ID_") and not n.endswith(("_KHR", "_RANGE", "_ENUM", "_SIZE"))
    }

    def from_driver(key: str, label: str, name: str, convert: Callable[[Any], Any]) -> Fact:
        query = f"VkPhysicalDeviceDriverProperties.{name}"
        if driver is None:
            return Fact(key, label, None, query, reason=driver_reason)
        return Fact(key, label, convert(getattr(driver, name)), query)

    def conformance(value: Any) -> str:
        return f"{value.major}.{value.minor}.{value.subminor}.{value.patch}"

    raw_driver = int(props.driverVersion)
    vendor_id = int(props.vendorID)
    return FactSection(
        "device",
        "Device",
        (
            Fact("name", "name", _text(props.deviceName), "VkPhysicalDeviceProperties.deviceName"),
            Fact(
                "type",
                "type",
                _DEVICE_TYPES.get(int(props.deviceType), str(int(props.deviceType))),
                "VkPhysicalDeviceProperties.deviceType",
            ),
            Fact("vendor_id", "vendor id", vendor_id, "VkPhysicalDeviceProperties.vendorID"),
            Fact("device_id", "device id", int(props.deviceID), "VkPhysicalDeviceProperties.deviceID"),
            Fact("api_version", "API version", version_text(r.api), "VkPhysicalDeviceProperties.apiVersion"),
            Fact(
                "driver_version",
                "driver version",
                driver_version_text(raw_driver, vendor_id),
                "VkPhysicalDeviceProperties.driverVersion",
            ),
            Fact("driver_version_raw", "driver version (raw)", raw_driver, "VkPhysicalDeviceProperties.driverVersion"),
            from_driver("driver_id", "driver id", "driverID", lambda v: driver_ids.get(int(v), str(int(v)))),
            from_driver("driver_name", "driver name", "driverName", _text),
            from_driver("driver_info", "driver info", "driverInfo", _text),
            from_driver("conformance_version", "conformance version", "conformanceVersion", conformance),
            Fact(
                "device_uuid",
                "device UUID",
                _uuid(ids.deviceUUID) if ids is not None else None,
                "VkPhysicalDeviceIDProperties.deviceUUID",
                reason=ids_reason,
            ),
            Fact(
                "driver_uuid",
                "driver UUID",
                _uuid(ids.driverUUID) if ids is not None else None,
                "VkPhysicalDeviceIDProperties.driverUUID",
                reason=ids_reason,
            ),
        ),
    )


def _compute(r: _Reader) -> FactSection:
    return FactSection(
        "compute",
        "Compute",
        (
            r.limit("maxComputeWorkGroupCount", convert=_axes, layout="axes"),
            r.limit("maxComputeWorkGroupSize", convert=_axes, layout="axes"),
            r.limit("maxComputeWorkGroupInvocations"),
            r.limit("maxComputeSharedMemorySize", "max_compute_shared_memory_bytes", unit="bytes"),
            r.limit("maxPushConstantsSize", "max_push_constants_bytes", unit="bytes"),
            r.limit("maxBoundDescriptorSets"),
            r.limit("maxPerStageDescriptorStorageBuffers"),
            r.limit("maxPerStageDescriptorUniformBuffers"),
            r.limit("maxPerStageResources"),
            r.limit("maxDescriptorSetStorageBuffers"),
            r.limit("timestampPeriod", "timestamp_period_ns", unit="ns", convert=float),
            r.limit("timestampComputeAndGraphics", convert=bool),
            Fact(
                "queue_families",
                "queue families",
                r.families,
                "vkGetPhysicalDeviceQueueFamilyProperties",
                layout="lines",
            ),
        ),
    )


def _memory(r: _Reader) -> FactSection:
    memory = r.memory
    heaps = [
        {
            "index": i,
            "size_bytes": int(memory.memoryHeaps[i].size),
            "flags": _flags(int(memory.memoryHeaps[i].flags), HEAP_FLAGS),
        }
        for i in range(int(memory.memoryHeapCount))
    ]
    types = [
        {
            "index": i,
            "heap_index": int(memory.memoryTypes[i].heapIndex),
            "flags": _flags(int(memory.memoryTypes[i].propertyFlags), MEMORY_PROPERTIES),
        }
        for i in range(int(memory.memoryTypeCount))
    ]
    return FactSection(
        "memory",
        "Memory",
        (
            r.limit("maxStorageBufferRange", "max_storage_buffer_range_bytes", unit="bytes"),
            r.limit("maxUniformBufferRange", "max_uniform_buffer_range_bytes", unit="bytes"),
            r.limit("minStorageBufferOffsetAlignment", "min_storage_buffer_offset_alignment_bytes", unit="bytes"),
            r.limit("minUniformBufferOffsetAlignment", "min_uniform_buffer_offset_alignment_bytes", unit="bytes"),
            r.limit("nonCoherentAtomSize", "non_coherent_atom_size_bytes", unit="bytes"),
            r.limit("maxMemoryAllocationCount"),
            r.field(
                "VkPhysicalDeviceMaintenance3Properties",
                "maxMemoryAllocationSize",
                "max_memory_allocation_bytes",
                unit="bytes",
            ),
            Fact("heaps", "heaps", heaps, "VkPhysicalDeviceMemoryProperties.memoryHeaps", layout="lines"),
            Fact("types", "types", types, "VkPhysicalDeviceMemoryProperties.memoryTypes", layout="lines"),
        ),
    )


def _images(r: _Reader) -> FactSection:
    return FactSection(
        "images",
        "Images",
        (
            r.limit("maxImageDimension1D", "max_image_dimension_1d_pixels", unit="pixels"),
            r.limit("maxImageDimension2D", "max_image_dimension_2d_pixels", unit="pixels"),
            r.limit("maxImageDimension3D", "max_image_dimension_3d_pixels", unit="pixels"),
            r.limit("maxImageArrayLayers"),
            r.limit("maxTexelBufferElements"),
            r.limit("maxPerStageDescriptorStorageImages"),
            r.limit("maxPerStageDescriptorSampledImages"),
            r.limit("maxPerStageDescriptorSamplers"),
            r.limit("maxSamplerAllocationCount"),
        ),
    )


_FEATURES = (
    ("VkPhysicalDeviceFeatures", "shaderFloat64", "shader_float64"),
    ("VkPhysicalDeviceVulkan12Features", "shaderFloat16", "shader_float16"),
    ("VkPhysicalDeviceFeatures", "shaderInt64", "shader_int64"),
    ("VkPhysicalDeviceFeatures", "shaderInt16", "shader_int16"),
    ("VkPhysicalDeviceVulkan12Features", "shaderInt8", "shader_int8"),
    ("VkPhysicalDeviceVulkan11Features", "storageBuffer16BitAccess", "storage_buffer_16bit_access"),
    (
        "VkPhysicalDeviceVulkan11Features",
        "uniformAndStorageBuffer16BitAccess",
        "uniform_and_storage_buffer_16bit_access",
    ),
    ("VkPhysicalDeviceVulkan11Features", "storagePushConstant16", "storage_push_constant_16"),
    ("VkPhysicalDeviceVulkan12Features", "storageBuffer8BitAccess", "storage_buffer_8bit_access"),
    (
        "VkPhysicalDeviceVulkan12Features",
        "uniformAndStorageBuffer8BitAccess",
        "uniform_and_storage_buffer_8bit_access",
    ),
    ("VkPhysicalDeviceVulkan12Features", "storagePushConstant8", "storage_push_constant_8"),
    ("VkPhysicalDeviceVulkan12Features", "shaderBufferInt64Atomics", "shader_buffer_int64_atomics"),
    ("VkPhysicalDeviceVulkan12Features", "shaderSharedInt64Atomics", "shader_shared_int64_atomics"),
    ("VkPhysicalDeviceVulkan12Features", "shaderSubgroupExtendedTypes", "shader_subgroup_extended_types"),
    ("VkPhysicalDeviceVulkan12Features", "scalarBlockLayout", "scalar_block_layout"),
    ("VkPhysicalDeviceVulkan12Features", "vulkanMemoryModel", "vulkan_memory_model"),
    ("VkPhysicalDeviceVulkan12Features", "bufferDeviceAddress", "buffer_device_address"),
    ("VkPhysicalDeviceVulkan12Features", "timelineSemaphore", "timeline_semaphore"),
    ("VkPhysicalDeviceVulkan11Features", "variablePointers", "variable_pointers"),
)
"""(structure, Vulkan field, JSON key) of each shader feature shown."""


def _features(r: _Reader) -> FactSection:
    return FactSection(
        "features",
        "Shader features",
        tuple(r.field(struct, name, key, convert=bool) for struct, name, key in _FEATURES),
    )


def _floating_point(r: _Reader) -> FactSection:
    controls, reason = r.struct_or_reason("VkPhysicalDeviceFloatControlsProperties")
    facts = []
    for width in (16, 32, 64):
        query = f"VkPhysicalDeviceFloatControlsProperties.shader*Float{width}"
        key, label = f"float{width}_controls", f"float{width} controls"
        if controls is None:
            facts.append(Fact(key, label, None, query, reason=reason))
        else:
            value = [name for name, field in _FLOAT_CONTROLS if getattr(controls, f"{field}{width}")]
            facts.append(Fact(key, label, value, query))
    for name in ("denormBehaviorIndependence", "roundingModeIndependence"):
        facts.append(
            r.field(
                "VkPhysicalDeviceFloatControlsProperties",
                name,
                convert=lambda v: _INDEPENDENCE.get(int(v), str(int(v))),
            )
        )
    return FactSection("floating_point", "Floating point", tuple(facts))


def _subgroups(r: _Reader) -> FactSection:
    sub = "VkPhysicalDeviceSubgroupProperties"
    size = "VkPhysicalDeviceSubgroupSizeControlProperties"
    return FactSection(
        "subgroups",
        "Subgroups",
        (
            r.field(sub, "subgroupSize"),
            r.field(sub, "supportedStages", convert=lambda v: _flags(int(v), SHADER_STAGES)),
            r.field(sub, "supportedOperations", convert=lambda v: _flags(int(v), SUBGROUP_OPERATIONS)),
            r.field(sub, "quadOperationsInAllStages", convert=bool),
            r.field(size, "minSubgroupSize"),
            r.field(size, "maxSubgroupSize"),
            r.field(size, "maxComputeWorkgroupSubgroups"),
            r.field(size, "requiredSubgroupSizeStages", convert=lambda v: _flags(int(v), SHADER_STAGES)),
        ),
    )


def _extensions(r: _Reader) -> FactSection:
    value = r.extensions if not r.extensions_reason else None
    return FactSection(
        "extensions",
        "Extensions",
        (
            Fact(
                "device",
                "device",
                value,
                "vkEnumerateDeviceExtensionProperties",
                reason=r.extensions_reason,
                layout="lines",
            ),
        ),
    )


def _loader() -> FactSection:
    try:
        loader: Any = version_text(int(native("vkEnumerateInstanceVersion")))
        reason = ""
    except BackendError as error:
        loader, reason = None, f"vkEnumerateInstanceVersion failed: {error}"
    return FactSection(
        "loader",
        "Loader / ICD",
        (
            Fact("loader_version", "loader version", loader, "vkEnumerateInstanceVersion", reason=reason),
            Fact(
                "instance_api_version",
                "instance API version",
                version_text(BASELINE),
                "VkApplicationInfo.apiVersion",
            ),
            Fact(
                "icd_manifest",
                "ICD manifest",
                None,
                "",
                reason="the Vulkan loader does not say which ICD manifest a physical device came from "
                "(VK_LOADER_DEBUG=driver makes it log them)",
            ),
        ),
    )


def _find(uuid: bytes) -> Any:
    binding = vk()
    for physical in shared_instance(False).physical_devices():
        ids = binding.VkPhysicalDeviceIDProperties()
        native("vkGetPhysicalDeviceProperties2", physical, binding.VkPhysicalDeviceProperties2(pNext=ids))
        if bytes(ffi().buffer(ids.deviceUUID, 16)) == uuid:
            return physical
    from accelcore.devices.registry import ProviderUnavailable

    raise ProviderUnavailable("vulkan", f"no physical device has deviceUUID {uuid.hex()} any more")


def device_details(uuid: bytes) -> DeviceDetails:
    """Every section of the facts of the physical device with ``deviceUUID`` ``uuid`` (read now)."""
    reader = _Reader(_find(uuid))
    sections: Sequence[FactSection] = (
        _device(reader),
        _compute(reader),
        _memory(reader),
        _images(reader),
        _features(reader),
        _floating_point(reader),
        _subgroups(reader),
        _extensions(reader),
        _loader(),
    )
    return DeviceDetails(
        source="vkGetPhysicalDeviceProperties(2), vkGetPhysicalDeviceFeatures2, vkGetPhysicalDeviceMemoryProperties, "
        "vkGetPhysicalDeviceQueueFamilyProperties, vkEnumerateDeviceExtensionProperties",
        sections=tuple(sections),
    )
