"""Capabilities: which a module needs and which a Vulkan or OpenCL device supports.

:func:`check_capabilities`, :func:`vulkan_supported_capabilities` and :func:`opencl_supported_capabilities`
let a provider refuse a module that names a capability its device lacks (UNSUPPORTED, naming the
capability). The Vulkan tables follow the Vulkan spec's "SPIR-V Environment" appendix.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from ...contract.errors import BackendError, ErrorKind
from .model import SpirvModule


def required_capabilities(module: SpirvModule) -> frozenset[str]:
    """Every capability the module declares (a device must support all of them)."""
    return frozenset(module.capabilities)


def missing_capabilities(module: SpirvModule, supported: Collection[str]) -> tuple[str, ...]:
    """Declared capabilities not in ``supported``, in declaration order."""
    return tuple(name for name in module.capabilities if name not in supported)


def check_capabilities(module: SpirvModule, supported: Collection[str], *, device: str = "this device") -> None:
    """UNSUPPORTED naming the first capability ``device`` lacks; nothing when all are there."""
    missing = missing_capabilities(module, supported)
    if missing:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"SPIR-V module needs capability {missing[0]}"
            + (f" (and {', '.join(missing[1:])})" if missing[1:] else "")
            + f", which {device} does not support",
        )


VULKAN_CORE_CAPABILITIES = frozenset(
    {
        "Matrix",
        "Shader",
        "InputAttachment",
        "Sampled1D",
        "Image1D",
        "SampledBuffer",
        "ImageBuffer",
        "ImageQuery",
        "DerivativeControl",
    }
)
"""Capabilities every Vulkan 1.0 implementation supports."""

VULKAN_FEATURE_CAPABILITIES: Mapping[str, tuple[str, ...]] = {
    "Geometry": ("geometryShader",),
    "Tessellation": ("tessellationShader",),
    "Float64": ("shaderFloat64",),
    "Int64": ("shaderInt64",),
    "Int16": ("shaderInt16",),
    "Int64Atomics": ("shaderBufferInt64Atomics", "shaderSharedInt64Atomics"),
    "Float16": ("shaderFloat16",),
    "Int8": ("shaderInt8",),
    "ImageGatherExtended": ("shaderImageGatherExtended",),
    "StorageImageMultisample": ("shaderStorageImageMultisample",),
    "UniformBufferArrayDynamicIndexing": ("shaderUniformBufferArrayDynamicIndexing",),
    "SampledImageArrayDynamicIndexing": ("shaderSampledImageArrayDynamicIndexing",),
    "StorageBufferArrayDynamicIndexing": ("shaderStorageBufferArrayDynamicIndexing",),
    "StorageImageArrayDynamicIndexing": ("shaderStorageImageArrayDynamicIndexing",),
    "ClipDistance": ("shaderClipDistance",),
    "CullDistance": ("shaderCullDistance",),
    "ImageCubeArray": ("imageCubeArray",),
    "SampleRateShading": ("sampleRateShading",),
    "SparseResidency": ("shaderResourceResidency",),
    "MinLod": ("shaderResourceMinLod",),
    "SampledCubeArray": ("imageCubeArray",),
    "ImageMSArray": ("shaderStorageImageMultisample",),
    "StorageImageExtendedFormats": ("shaderStorageImageExtendedFormats",),
    "InterpolationFunction": ("sampleRateShading",),
    "StorageImageReadWithoutFormat": ("shaderStorageImageReadWithoutFormat",),
    "StorageImageWriteWithoutFormat": ("shaderStorageImageWriteWithoutFormat",),
    "MultiViewport": ("multiViewport",),
    "DrawParameters": ("shaderDrawParameters",),
    "MultiView": ("multiview",),
    "DeviceGroup": (),
    "StorageBuffer16BitAccess": ("storageBuffer16BitAccess",),
    # SPV_KHR_float_controls (Vulkan 1.2): the capability is usable where the device reports the
    # behaviour for some width (VkPhysicalDeviceFloatControlsProperties); the width a module's
    # execution mode names is checked separately (:func:`float_mode_property`).
    "DenormPreserve": tuple(f"shaderDenormPreserveFloat{w}" for w in (16, 32, 64)),
    "DenormFlushToZero": tuple(f"shaderDenormFlushToZeroFloat{w}" for w in (16, 32, 64)),
    "SignedZeroInfNanPreserve": tuple(f"shaderSignedZeroInfNanPreserveFloat{w}" for w in (16, 32, 64)),
    "RoundingModeRTE": tuple(f"shaderRoundingModeRTEFloat{w}" for w in (16, 32, 64)),
    "RoundingModeRTZ": tuple(f"shaderRoundingModeRTZFloat{w}" for w in (16, 32, 64)),
    "UniformAndStorageBuffer16BitAccess": ("uniformAndStorageBuffer16BitAccess",),
    "StoragePushConstant16": ("storagePushConstant16",),
    "StorageInputOutput16": ("storageInputOutput16",),
    "StorageBuffer8BitAccess": ("storageBuffer8BitAccess",),
    "UniformAndStorageBuffer8BitAccess": ("uniformAndStorageBuffer8BitAccess",),
    "StoragePushConstant8": ("storagePushConstant8",),
    "VariablePointersStorageBuffer": ("variablePointersStorageBuffer",),
    "VariablePointers": ("variablePointers",),
    "VulkanMemoryModel": ("vulkanMemoryModel",),
    "VulkanMemoryModelDeviceScope": ("vulkanMemoryModelDeviceScope",),
    "PhysicalStorageBufferAddresses": ("bufferDeviceAddress",),
    "ShaderNonUniform": ("descriptorIndexing",),
    "RuntimeDescriptorArray": ("runtimeDescriptorArray",),
    "StorageBufferArrayNonUniformIndexing": ("shaderStorageBufferArrayNonUniformIndexing",),
    "UniformBufferArrayNonUniformIndexing": ("shaderUniformBufferArrayNonUniformIndexing",),
    "SampledImageArrayNonUniformIndexing": ("shaderSampledImageArrayNonUniformIndexing",),
    "StorageImageArrayNonUniformIndexing": ("shaderStorageImageArrayNonUniformIndexing",),
    "DemoteToHelperInvocation": ("shaderDemoteToHelperInvocation",),
    "DotProduct": ("shaderIntegerDotProduct",),
    "DotProductInputAll": ("shaderIntegerDotProduct",),
    "DotProductInput4x8Bit": ("shaderIntegerDotProduct",),
    "DotProductInput4x8BitPacked": ("shaderIntegerDotProduct",),
    "ShaderClockKHR": ("shaderSubgroupClock", "shaderDeviceClock"),
    "AtomicFloat32AddEXT": ("shaderBufferFloat32AtomicAdd", "shaderSharedFloat32AtomicAdd"),
    "AtomicFloat64AddEXT": ("shaderBufferFloat64AtomicAdd", "shaderSharedFloat64AtomicAdd"),
}
"""Capability → the Vulkan feature names (any one suffices) that enable it (Vulkan spec, "SPIR-V Environment")."""

VULKAN_SUBGROUP_CAPABILITIES: Mapping[str, int] = {
    "GroupNonUniform": 0x1,
    "GroupNonUniformVote": 0x2,
    "GroupNonUniformArithmetic": 0x4,
    "GroupNonUniformBallot": 0x8,
    "GroupNonUniformShuffle": 0x10,
    "GroupNonUniformShuffleRelative": 0x20,
    "GroupNonUniformClustered": 0x40,
    "GroupNonUniformQuad": 0x80,
}
"""Capability → VkSubgroupFeatureFlagBits bit in VkPhysicalDeviceSubgroupProperties.supportedOperations."""


def float_mode_property(mode: str, width: int) -> str:
    """The VkPhysicalDeviceFloatControlsProperties member that allows execution mode ``mode`` (a
    :data:`FLOAT_CONTROL_MODES` name) for ``width``-bit floats, e.g. ``shaderDenormPreserveFloat32``."""
    return f"shader{mode}Float{width}"


def vulkan_supported_capabilities(features: Mapping[str, bool], subgroup_operations: int = 0) -> frozenset[str]:
    """The SPIR-V capabilities a Vulkan device supports, from its enabled feature booleans.

    ``features`` maps Vulkan feature names (as in VkPhysicalDeviceFeatures and
    the 1.1/1.2/1.3 feature structs) to their values; ``subgroup_operations``
    is VkPhysicalDeviceSubgroupProperties.supportedOperations. Capabilities
    not listed here (e.g. Kernel, Addresses) are never supported by Vulkan.
    """
    supported = set(VULKAN_CORE_CAPABILITIES)
    for capability, names in VULKAN_FEATURE_CAPABILITIES.items():
        if not names or any(features.get(name, False) for name in names):
            supported.add(capability)
    for capability, bit in VULKAN_SUBGROUP_CAPABILITIES.items():
        if subgroup_operations & bit:
            supported.add(capability)
    return frozenset(supported)


def opencl_supported_capabilities(
    extensions: Iterable[str],
    *,
    images: bool = False,
    opencl_c_major: int = 1,
) -> frozenset[str]:
    """The SPIR-V capabilities an OpenCL device supports (OpenCL SPIR-V environment spec).

    Always: Addresses, Linkage, Kernel, Vector16, Int8, Int16, Int64,
    Float16Buffer. ``cl_khr_fp16`` → Float16; ``cl_khr_fp64`` → Float64;
    ``cl_khr_int64_base_atomics`` → Int64Atomics; ``images`` → ImageBasic,
    LiteralSampler, Sampled1D, Image1D, SampledBuffer, ImageBuffer; OpenCL C
    2.x → GenericPointer, Groups, DeviceEnqueue, Pipes.
    """
    names = set(extensions)
    supported = {"Addresses", "Linkage", "Kernel", "Vector16", "Int8", "Int16", "Int64", "Float16Buffer"}
    if "cl_khr_fp16" in names:
        supported.add("Float16")
    if "cl_khr_fp64" in names:
        supported.add("Float64")
    if "cl_khr_int64_base_atomics" in names:
        supported.add("Int64Atomics")
    if images:
        supported |= {"ImageBasic", "LiteralSampler", "Sampled1D", "Image1D", "SampledBuffer", "ImageBuffer"}
    if opencl_c_major >= 2:
        supported |= {"GenericPointer", "Groups", "DeviceEnqueue", "Pipes"}
    return frozenset(supported)
