"""Programs: a checked kernel package becomes one compute pipeline.

Promise: :func:`load` parses the package (format, size, table — before any
driver call), checks the module (:mod:`accel_vulkan.module_check`), then
creates a shader module, a descriptor-set layout from the package's binding
table (set 0, binding = ``native_index``, one storage buffer each), a
pipeline layout (plus a 4-byte push-constant range when the package passes a
count) and the pipeline. The shader module is destroyed before returning.
What the program retains is charged as the SPIR-V size (drivers may keep a
translation of it) plus the serialised size of the pipeline in a pipeline
cache plus :data:`HOST_RECORD_BYTES`; over ``resident_bytes`` →
RESOURCE_LIMIT with everything destroyed. The payload is read once; the
driver reads ``pCode`` straight from the parsed module; no reference to the
payload is kept.

Warm loads: the first load of a (module digest, entry point, binding table,
count) on a context creates the pipeline through a pipeline cache made for
that load, measures the cache's data size (``vkGetPipelineCacheData``) and
remembers it for the context (at most :data:`SIZES_CAPACITY` entries,
emptied when full); a later load of the same key creates the pipeline
without a cache and charges the remembered size — the same number, so the
same RESOURCE_LIMIT refusal, which a remembered size lets us give before any
driver call. The module checks are remembered by digest too
(:func:`~accel_vulkan.module_check.check_module_remembered`). Nothing native
outlives :func:`unload`: every pipeline, layout and module is created per
load and destroyed by unload. Create/destroy calls go to the loader directly
with cffi structures; failures raise the same kinds and messages as
:func:`accel_vulkan.errors.call` gives.
"""

from __future__ import annotations

import hashlib
import weakref
from functools import lru_cache
from typing import Any

from accelcore import ArtifactRef, BackendError, ErrorKind
from accelcore.package import NO_COUNT_ARGUMENT, KernelPackage, ModuleKind
from accelcore.package_codec import parse_artifact
from accelcore.spirv import vulkan_supported_capabilities

from ._binding import ffi, vk
from .accounting import Ledger
from .device_info import MAX_ARTIFACT_BYTES, max_bindings
from .errors import call, check
from .handles import VulkanContext, VulkanProgram
from .instance import PhysicalDescription
from .module_check import check_module_remembered

HOST_RECORD_BYTES = 512
"""Host-side bytes charged per program (the handle, its slot table and native handles)."""

SIZES_CAPACITY = 256
"""How many measured pipeline-cache data sizes a context remembers."""

_sizes: weakref.WeakKeyDictionary[VulkanContext, dict[tuple[object, ...], int]] = weakref.WeakKeyDictionary()
"""Per context: (module digest, entry point, binding table, count) → measured pipeline-cache data bytes."""


@lru_cache(maxsize=64)
def _capabilities(features: frozenset[str], subgroup_operations: int) -> frozenset[str]:
    return frozenset(vulkan_supported_capabilities(dict.fromkeys(features, True), subgroup_operations))


def supported_capabilities(description: PhysicalDescription) -> frozenset[str]:
    """SPIR-V capabilities of the features a context enables (see :mod:`accel_vulkan.context`); computed once."""
    return _capabilities(description.features, description.subgroup_operations)


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


def _refuse_retained(code_bytes: int, cache_bytes: int, resident_bytes: int) -> None:
    retained = code_bytes + cache_bytes + HOST_RECORD_BYTES
    if retained > resident_bytes:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"the program retains {retained} bytes (SPIR-V {code_bytes} + pipeline cache data {cache_bytes} + "
            f"host record {HOST_RECORD_BYTES}), over resident_bytes {resident_bytes}",
        )


def load(
    context: VulkanContext, description: PhysicalDescription, artifact: ArtifactRef, ledger: Ledger
) -> VulkanProgram:
    package = parse_artifact(
        artifact,
        max_bindings=max_bindings(description),
        max_bytes=MAX_ARTIFACT_BYTES,
        accepted_kinds=(ModuleKind.SPIRV_VULKAN,),
    )
    code = package.module
    digest = hashlib.sha256(code).digest()
    check_module_remembered(
        package, digest, supported_capabilities(description), description.name, description.max_push_constants_size
    )
    if len(code) + HOST_RECORD_BYTES > artifact.resident_bytes:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"the program would retain at least {len(code) + HOST_RECORD_BYTES} bytes "
            f"(SPIR-V + host record), over resident_bytes {artifact.resident_bytes}",
        )
    has_count = package.dispatch.count_argument != NO_COUNT_ARGUMENT
    size_key = (digest, package.entry_point, tuple(package.bindings), has_count)
    sizes = _sizes.get(context)
    known = None if sizes is None else sizes.get(size_key)
    if known is not None:
        _refuse_retained(len(code), known, artifact.resident_bytes)
    device = context.device
    made: list[tuple[str, Any]] = []
    try:
        pipeline, set_layout, pipeline_layout, cache_bytes = _create(device, package, has_count, known, made, ledger)
        if known is None:
            if sizes is None:
                sizes = _sizes.setdefault(context, {})
            if len(sizes) >= SIZES_CAPACITY:
                sizes.clear()
            sizes[size_key] = cache_bytes
        _refuse_retained(len(code), cache_bytes, artifact.resident_bytes)
    except BaseException:
        _destroy_all(device, made, ledger)
        raise
    return VulkanProgram(
        context=context,
        package=package,
        pipeline=pipeline,
        pipeline_layout=pipeline_layout,
        set_layout=set_layout,
        resident_bytes=len(code) + cache_bytes + HOST_RECORD_BYTES,
        access={row.slot: row.access for row in package.bindings},
        native_index={row.slot: row.native_index for row in package.bindings},
    )


def _create(
    device: Any,
    package: KernelPackage,
    has_count: bool,
    known_cache_bytes: int | None,
    made: list[tuple[str, Any]],
    ledger: Ledger,
) -> tuple[Any, Any, Any, int]:
    """Shader module, layouts and pipeline (each recorded in ``made`` as created); the shader module is destroyed.

    With ``known_cache_bytes`` the pipeline is created without a pipeline cache and that size is returned;
    otherwise through a fresh cache whose data size is measured, and the cache is destroyed.
    """
    binding = vk()
    lib = binding.lib
    f = ffi()
    null = f.NULL
    code = package.module
    compute = binding.VK_SHADER_STAGE_COMPUTE_BIT

    def track(kind: str, handle: Any) -> Any:
        made.append((kind, handle))
        ledger.add(kind)
        return handle

    out = f.new("VkShaderModule*")
    code_view = f.cast("uint32_t *", f.from_buffer(code))
    if int(f.cast("uintptr_t", code_view)) % 4:  # pCode must be 4-byte aligned; bytes data normally is
        code_view = f.new("uint32_t[]", len(code) // 4)
        f.memmove(code_view, code, len(code))
    shader_info = f.new(
        "VkShaderModuleCreateInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
            "codeSize": len(code),
            "pCode": code_view,
        },
    )
    check(lib.vkCreateShaderModule(device, shader_info, null, out), "vkCreateShaderModule")
    shader = track("VkShaderModule", out[0])
    del shader_info, code_view

    rows = package.bindings
    layout_bindings = f.new(
        "VkDescriptorSetLayoutBinding[]",
        [
            {
                "binding": row.native_index,
                "descriptorType": binding.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                "descriptorCount": 1,
                "stageFlags": compute,
            }
            for row in rows
        ]
        or 1,
    )
    set_info = f.new(
        "VkDescriptorSetLayoutCreateInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            "bindingCount": len(rows),
            "pBindings": layout_bindings if rows else null,
        },
    )
    set_out = f.new("VkDescriptorSetLayout[1]")
    check(lib.vkCreateDescriptorSetLayout(device, set_info, null, set_out), "vkCreateDescriptorSetLayout")
    set_layout = track("VkDescriptorSetLayout", set_out[0])
    del set_info, layout_bindings

    push_range = f.new("VkPushConstantRange*", {"stageFlags": compute, "offset": 0, "size": 4})
    layout_info = f.new(
        "VkPipelineLayoutCreateInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
            "setLayoutCount": 1,
            "pSetLayouts": set_out,
            "pushConstantRangeCount": 1 if has_count else 0,
            "pPushConstantRanges": push_range if has_count else null,
        },
    )
    layout_out = f.new("VkPipelineLayout*")
    check(lib.vkCreatePipelineLayout(device, layout_info, null, layout_out), "vkCreatePipelineLayout")
    pipeline_layout = track("VkPipelineLayout", layout_out[0])
    del layout_info, push_range

    cache = null
    if known_cache_bytes is None:
        cache_info = f.new(
            "VkPipelineCacheCreateInfo*", {"sType": binding.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO}
        )
        cache_out = f.new("VkPipelineCache*")
        check(lib.vkCreatePipelineCache(device, cache_info, null, cache_out), "vkCreatePipelineCache")
        cache = track("VkPipelineCache", cache_out[0])
    name = f.new("char[]", package.entry_point.encode())
    pipeline_info = f.new(
        "VkComputePipelineCreateInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            "stage": {
                "sType": binding.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                "stage": compute,
                "module": shader,
                "pName": name,
            },
            "layout": pipeline_layout,
            "basePipelineIndex": -1,
        },
    )
    pipeline_out = f.new("VkPipeline*")
    check(
        lib.vkCreateComputePipelines(device, cache, 1, pipeline_info, null, pipeline_out),
        "vkCreateComputePipelines",
        "compute pipeline",
    )
    pipeline = track("VkPipeline", pipeline_out[0])
    del pipeline_info, name
    if known_cache_bytes is None:
        cache_bytes = call("vkGetPipelineCacheData", _cache_data_bytes, device, cache)
        lib.vkDestroyPipelineCache(device, cache, null)
        _forget(made, ledger, "VkPipelineCache")
    else:
        cache_bytes = known_cache_bytes
    lib.vkDestroyShaderModule(device, shader, null)
    _forget(made, ledger, "VkShaderModule")
    return pipeline, set_layout, pipeline_layout, cache_bytes


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
    lib = vk().lib
    null = ffi().NULL
    for kind, handle in reversed(made):
        getattr(lib, _DESTROY[kind])(device, handle, null)
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
