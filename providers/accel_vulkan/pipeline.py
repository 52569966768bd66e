"""Programs: a checked kernel package becomes one compute pipeline, created through a pipeline cache.

Promise: :func:`load` parses the package (format, size, table — before any
driver call), checks the module (:mod:`accel_vulkan.module_check`), then
creates a shader module, a descriptor-set layout from the package's binding
table (set 0, binding = ``native_index``, one storage buffer each), a
pipeline layout (plus a 4-byte push-constant range when the package passes a
count) and the pipeline through a pipeline cache made for this load. The
shader module and the cache are destroyed before returning. What the program
retains is charged as the SPIR-V size (drivers may keep a translation of it)
plus the cache's serialised pipeline size plus :data:`HOST_RECORD_BYTES`;
over ``resident_bytes`` → RESOURCE_LIMIT with everything destroyed. The
payload is read once into the module copy the driver needs (contiguous
``pCode``); no reference to the payload is kept.
"""

from __future__ import annotations

from typing import Any

from accelcore import ArtifactRef, BackendError, ErrorKind
from accelcore.package import NO_COUNT_ARGUMENT, ModuleKind
from accelcore.package_codec import parse_artifact
from accelcore.spirv import vulkan_supported_capabilities

from ._binding import ffi, vk
from .accounting import Ledger
from .device_info import MAX_ARTIFACT_BYTES, max_bindings
from .errors import call, native
from .handles import VulkanContext, VulkanProgram
from .instance import PhysicalDescription
from .module_check import check_module

HOST_RECORD_BYTES = 512
"""Host-side bytes charged per program (the handle, its slot table and native handles)."""


def supported_capabilities(description: PhysicalDescription) -> frozenset[str]:
    """SPIR-V capabilities of the features a context enables (see :mod:`accel_vulkan.context`)."""
    return vulkan_supported_capabilities(dict.fromkeys(description.features, True), description.subgroup_operations)


def _cache_data_bytes(device: Any, cache: Any) -> int:
    binding = vk()
    c_ffi = ffi()
    address = binding.lib.vkGetDeviceProcAddr(device, b"vkGetPipelineCacheData")
    if address == c_ffi.NULL:
        return 0
    get_data = c_ffi.cast("PFN_vkGetPipelineCacheData", address)
    size = c_ffi.new("size_t*")
    result = get_data(device, cache, size, c_ffi.NULL)
    if result != 0:
        raise KeyError(result)
    return int(size[0])


def load(
    context: VulkanContext, description: PhysicalDescription, artifact: ArtifactRef, ledger: Ledger
) -> VulkanProgram:
    binding = vk()
    package = parse_artifact(
        artifact,
        max_bindings=max_bindings(description),
        max_bytes=MAX_ARTIFACT_BYTES,
        accepted_kinds=(ModuleKind.SPIRV_VULKAN,),
    )
    check_module(package, supported_capabilities(description), description.name, description.max_push_constants_size)
    if len(package.module) + HOST_RECORD_BYTES > artifact.resident_bytes:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"the program would retain at least {len(package.module) + HOST_RECORD_BYTES} bytes "
            f"(SPIR-V + host record), over resident_bytes {artifact.resident_bytes}",
        )
    device = context.device
    made: list[tuple[str, Any]] = []

    def track(kind: str, handle: Any) -> Any:
        made.append((kind, handle))
        ledger.add(kind)
        return handle

    try:
        code = package.module
        shader_info = binding.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
        shader = track("VkShaderModule", native("vkCreateShaderModule", device, shader_info, None))
        del shader_info
        layout_bindings = [
            binding.VkDescriptorSetLayoutBinding(
                binding=row.native_index,
                descriptorType=binding.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                descriptorCount=1,
                stageFlags=binding.VK_SHADER_STAGE_COMPUTE_BIT,
            )
            for row in package.bindings
        ]
        set_info = binding.VkDescriptorSetLayoutCreateInfo(bindingCount=len(layout_bindings), pBindings=layout_bindings)
        set_layout = track("VkDescriptorSetLayout", native("vkCreateDescriptorSetLayout", device, set_info, None))
        del set_info, layout_bindings
        ranges = []
        if package.dispatch.count_argument != NO_COUNT_ARGUMENT:
            ranges.append(binding.VkPushConstantRange(stageFlags=binding.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=4))
        layout_info = binding.VkPipelineLayoutCreateInfo(
            setLayoutCount=1,
            pSetLayouts=[set_layout],
            pushConstantRangeCount=len(ranges),
            pPushConstantRanges=ranges or None,
        )
        pipeline_layout = track("VkPipelineLayout", native("vkCreatePipelineLayout", device, layout_info, None))
        del layout_info, ranges
        cache = track(
            "VkPipelineCache", native("vkCreatePipelineCache", device, binding.VkPipelineCacheCreateInfo(), None)
        )
        stage = binding.VkPipelineShaderStageCreateInfo(
            stage=binding.VK_SHADER_STAGE_COMPUTE_BIT, module=shader, pName=package.entry_point
        )
        pipeline_info = binding.VkComputePipelineCreateInfo(stage=stage, layout=pipeline_layout, basePipelineIndex=-1)
        pipeline = native("vkCreateComputePipelines", device, cache, 1, [pipeline_info], None, what="compute pipeline")[
            0
        ]
        track("VkPipeline", pipeline)
        del pipeline_info, stage
        cache_bytes = call("vkGetPipelineCacheData", _cache_data_bytes, device, cache)
        retained = len(code) + cache_bytes + HOST_RECORD_BYTES
        if retained > artifact.resident_bytes:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"the program retains {retained} bytes (SPIR-V {len(code)} + pipeline cache data {cache_bytes} + "
                f"host record {HOST_RECORD_BYTES}), over resident_bytes {artifact.resident_bytes}",
            )
        native("vkDestroyShaderModule", device, shader, None)
        _forget(made, ledger, "VkShaderModule")
        native("vkDestroyPipelineCache", device, cache, None)
        _forget(made, ledger, "VkPipelineCache")
    except BaseException:
        _destroy_all(device, made, ledger)
        raise
    return VulkanProgram(
        context=context,
        package=package,
        pipeline=pipeline,
        pipeline_layout=pipeline_layout,
        set_layout=set_layout,
        resident_bytes=retained,
        access={row.slot: row.access for row in package.bindings},
        native_index={row.slot: row.native_index for row in package.bindings},
    )


def _forget(made: list[tuple[str, Any]], ledger: Ledger, kind: str) -> None:
    for index, (made_kind, _) in enumerate(made):
        if made_kind == kind:
            del made[index]
            ledger.remove(kind)
            return


_DESTROY = {
    "VkShaderModule": "vkDestroyShaderModule",
    "VkDescriptorSetLayout": "vkDestroyDescriptorSetLayout",
    "VkPipelineLayout": "vkDestroyPipelineLayout",
    "VkPipelineCache": "vkDestroyPipelineCache",
    "VkPipeline": "vkDestroyPipeline",
}


def _destroy_all(device: Any, made: list[tuple[str, Any]], ledger: Ledger) -> None:
    for kind, handle in reversed(made):
        native(_DESTROY[kind], device, handle, None)
        ledger.remove(kind)
    made.clear()


def unload(program: VulkanProgram, ledger: Ledger) -> None:
    device = program.context.device
    _destroy_all(
        device,
        [
            ("VkDescriptorSetLayout", program.set_layout),
            ("VkPipelineLayout", program.pipeline_layout),
            ("VkPipeline", program.pipeline),
        ],
        ledger,
    )
