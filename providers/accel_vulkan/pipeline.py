"""Programs: a checked kernel package becomes a reference to one compute pipeline.

Promise: :func:`load` parses the package (format, size, table — before any
driver call), checks the module (:mod:`accel_vulkan.module_check`), then
finds or creates a :class:`SharedPipeline`: descriptor-set layouts for sets
0 to the highest set the binding table uses (binding = ``native_index``,
each row's descriptor type; a set without rows gets an empty layout), a
pipeline layout with a push-constant range of the module's block size (4
bytes for a version-1 count; none when neither), a shader module and the
pipeline, specialised with the package's constants (``VkSpecializationInfo``
built per load, alive for the call). The shader module is destroyed before
returning. What a program retains is charged as the SPIR-V size (drivers may
keep a translation of it) plus the serialised size of the pipeline in a
pipeline cache plus :data:`HOST_RECORD_BYTES`; over ``resident_bytes`` →
RESOURCE_LIMIT with everything it created destroyed. The payload is read
once; the driver reads ``pCode`` straight from the parsed module; no
reference to the payload is kept.

Sharing: a pipeline depends on (module digest, entry point, spec constants,
set layouts, push range) — its :func:`pipeline_key` — and not on the
push-constant values, access modes or element sizes. Programs of one context
with the same key share one pipeline, counted once in ``live_resources()``;
each program holds a reference and :func:`unload` destroys the pipeline, its
layout and set layouts with the last one. ``VulkanContext.pipelines_created``
counts the pipelines created. So re-loading a package with other push-constant
values creates nothing and re-checks nothing; other spec constants create a
pipeline but reuse the module checks.

Warm loads: the first creation of a key on a context goes through a pipeline
cache made for that load, measures the cache's data size
(``vkGetPipelineCacheData``) and remembers it for the context (at most
:data:`SIZES_CAPACITY` entries, emptied when full); a later creation of the
same key creates the pipeline without a cache and charges the remembered
size — the same number, so the same RESOURCE_LIMIT refusal, which a
remembered size (or a live shared pipeline) lets us give before any driver
call. The module checks are remembered too
(:func:`~accel_vulkan.module_check.check_module_remembered`). Create/destroy
calls go to the loader directly with cffi structures; failures raise the same
kinds and messages as :func:`accel_vulkan.errors.call` gives.
"""

from __future__ import annotations

import hashlib
import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from accelcore import ArtifactRef, BackendError, ErrorKind
from accelcore.kernels.package import NO_COUNT_ARGUMENT, DescriptorType, KernelPackage, ModuleKind
from accelcore.kernels.package_codec import parse_artifact
from accelcore.kernels.spirv import vulkan_supported_capabilities

from ._binding import ffi, vk
from .accounting import Ledger
from .device_info import MAX_ARTIFACT_BYTES, max_bindings, max_sets, max_uniform_bindings
from .errors import call, check
from .handles import VulkanContext, VulkanProgram
from .instance import PhysicalDescription
from .module_check import Agreement, DeviceTerms, check_module_remembered

HOST_RECORD_BYTES = 512
"""Host-side bytes charged per program (the handle, its slot table and native handles)."""

SIZES_CAPACITY = 256
"""How many measured pipeline-cache data sizes a context remembers."""

_sizes: weakref.WeakKeyDictionary[VulkanContext, dict[tuple[object, ...], int]] = weakref.WeakKeyDictionary()
"""Per context: :func:`pipeline_key` → measured pipeline-cache data bytes."""


@lru_cache(maxsize=64)
def _capabilities(features: frozenset[str], subgroup_operations: int) -> frozenset[str]:
    return frozenset(vulkan_supported_capabilities(dict.fromkeys(features, True), subgroup_operations))


def supported_capabilities(description: PhysicalDescription) -> frozenset[str]:
    """SPIR-V capabilities of the features a context enables (see :mod:`accel_vulkan.context`); computed once."""
    return _capabilities(description.features | description.float_controls, description.subgroup_operations)


@lru_cache(maxsize=64)
def device_terms(description: PhysicalDescription) -> DeviceTerms:
    """What the module checks read about ``description`` (the features every context enables, its limits)."""
    return DeviceTerms(
        name=description.name,
        capabilities=supported_capabilities(description),
        features=description.features,
        float_controls=description.float_controls,
        max_push_constants_size=description.max_push_constants_size,
        max_bound_descriptor_sets=description.max_bound_descriptor_sets,
        max_sets=max_sets(description),
        max_uniform_buffers=max_uniform_bindings(description),
        max_workgroup_size=description.max_workgroup_size,
        max_workgroup_invocations=description.max_workgroup_invocations,
        max_shared_memory=description.max_shared_memory,
    )


@dataclass(eq=False)
class SharedPipeline:
    """One compute pipeline with its layouts, shared by the programs of one context with the same key."""

    key: tuple[object, ...]
    pipeline: Any
    pipeline_layout: Any
    set_layouts: tuple[Any, ...]
    """One per set 0 .. set_count - 1 (empty layouts for sets without rows)."""
    cache_bytes: int
    users: int = 0


def pipeline_key(digest: bytes, package: KernelPackage, agreement: Agreement) -> tuple[object, ...]:
    """What the pipeline depends on: module, entry, spec constants, set layouts, push range."""
    layout = tuple(sorted((row.set, row.native_index, int(row.descriptor_type)) for row in package.bindings))
    specs = tuple((spec.spec_id, spec.value_type.code, bytes(spec.data)) for spec in package.spec_constants)
    return (digest, package.entry_point, specs, layout, agreement.set_count, agreement.push_range)


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
    agreement = check_module_remembered(package, digest, device_terms(description))
    if len(code) + HOST_RECORD_BYTES > artifact.resident_bytes:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"the program would retain at least {len(code) + HOST_RECORD_BYTES} bytes "
            f"(SPIR-V + host record), over resident_bytes {artifact.resident_bytes}",
        )
    key = pipeline_key(digest, package, agreement)
    shared: SharedPipeline | None = context.pipelines.get(key)
    if shared is not None:
        _refuse_retained(len(code), shared.cache_bytes, artifact.resident_bytes)
    else:
        shared = _make_shared(context, package, agreement, key, artifact.resident_bytes, ledger)
    shared.users += 1
    has_count = package.dispatch.count_argument != NO_COUNT_ARGUMENT
    rows = package.bindings
    return VulkanProgram(
        context=context,
        package=package,
        shared=shared,
        pipeline=shared.pipeline,
        pipeline_layout=shared.pipeline_layout,
        resident_bytes=len(code) + shared.cache_bytes + HOST_RECORD_BYTES,
        access={row.slot: row.access for row in rows},
        native_index={row.slot: row.native_index for row in rows},
        set_of={row.slot: row.set for row in rows},
        uniform=dict(agreement.uniform_bytes),
        sets=tuple(sorted({row.set for row in rows})),
        push=bytes(package.push_constants) or (bytes(4) if has_count else b""),
        push_count=has_count,
    )


def _make_shared(
    context: VulkanContext,
    package: KernelPackage,
    agreement: Agreement,
    key: tuple[object, ...],
    resident_bytes: int,
    ledger: Ledger,
) -> SharedPipeline:
    """Create the pipeline of ``key`` (refused from a remembered size before any driver call) and register it."""
    code = package.module
    sizes = _sizes.get(context)
    known = None if sizes is None else sizes.get(key)
    if known is not None:
        _refuse_retained(len(code), known, resident_bytes)
    device = context.device
    made: list[tuple[str, Any]] = []
    try:
        pipeline, set_layouts, pipeline_layout, cache_bytes = _create(device, package, agreement, known, made, ledger)
        context.pipelines_created += 1
        if known is None:
            if sizes is None:
                sizes = _sizes.setdefault(context, {})
            if len(sizes) >= SIZES_CAPACITY:
                sizes.clear()
            sizes[key] = cache_bytes
        _refuse_retained(len(code), cache_bytes, resident_bytes)
    except BaseException:
        _destroy_all(device, made, ledger)
        raise
    shared = SharedPipeline(key, pipeline, pipeline_layout, set_layouts, cache_bytes)
    context.pipelines[key] = shared
    return shared


def _specialization(package: KernelPackage) -> tuple[Any, list[Any]]:
    """A ``VkSpecializationInfo*`` for the package's constants (NULL when none) and the cffi objects it points to."""
    f = ffi()
    if not package.spec_constants:
        return f.NULL, []
    entries = []
    blob = bytearray()
    for spec in package.spec_constants:
        size = len(spec.data)
        blob += bytes(-len(blob) % min(size, 8))  # each value at its natural alignment
        entries.append({"constantID": spec.spec_id, "offset": len(blob), "size": size})
        blob += spec.data
    map_entries = f.new("VkSpecializationMapEntry[]", entries)
    data = f.new("char[]", bytes(blob))
    info = f.new(
        "VkSpecializationInfo*",
        {"mapEntryCount": len(entries), "pMapEntries": map_entries, "dataSize": len(blob), "pData": data},
    )
    return info, [map_entries, data, info]


def _create(
    device: Any,
    package: KernelPackage,
    agreement: Agreement,
    known_cache_bytes: int | None,
    made: list[tuple[str, Any]],
    ledger: Ledger,
) -> tuple[Any, tuple[Any, ...], Any, int]:
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
    descriptor_types = {
        DescriptorType.STORAGE_BUFFER: binding.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        DescriptorType.UNIFORM_BUFFER: binding.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
    }

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

    set_count = agreement.set_count
    set_handles = f.new("VkDescriptorSetLayout[]", max(set_count, 1))
    for number in range(set_count):
        rows = [row for row in package.bindings if row.set == number]
        layout_bindings = f.new(
            "VkDescriptorSetLayoutBinding[]",
            [
                {
                    "binding": row.native_index,
                    "descriptorType": descriptor_types[DescriptorType(row.descriptor_type)],
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
        check(
            lib.vkCreateDescriptorSetLayout(device, set_info, null, set_handles + number), "vkCreateDescriptorSetLayout"
        )
        track("VkDescriptorSetLayout", set_handles[number])
        del set_info, layout_bindings
    set_layouts = tuple(set_handles[number] for number in range(set_count))

    push_bytes = agreement.push_range
    push_range = f.new("VkPushConstantRange*", {"stageFlags": compute, "offset": 0, "size": push_bytes})
    layout_info = f.new(
        "VkPipelineLayoutCreateInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
            "setLayoutCount": set_count,
            "pSetLayouts": set_handles if set_count else null,
            "pushConstantRangeCount": 1 if push_bytes else 0,
            "pPushConstantRanges": push_range if push_bytes else null,
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
    specialization, keep_alive = _specialization(package)
    pipeline_info = f.new(
        "VkComputePipelineCreateInfo*",
        {
            "sType": binding.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            "stage": {
                "sType": binding.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                "stage": compute,
                "module": shader,
                "pName": name,
                "pSpecializationInfo": specialization,
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
    del pipeline_info, name, specialization, keep_alive
    if known_cache_bytes is None:
        cache_bytes = call("vkGetPipelineCacheData", _cache_data_bytes, device, cache)
        lib.vkDestroyPipelineCache(device, cache, null)
        _forget(made, ledger, "VkPipelineCache")
    else:
        cache_bytes = known_cache_bytes
    lib.vkDestroyShaderModule(device, shader, null)
    _forget(made, ledger, "VkShaderModule")
    return pipeline, set_layouts, pipeline_layout, cache_bytes


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
    """Drop the program's reference; the last one destroys the shared pipeline, its layout and set layouts."""
    shared: SharedPipeline = program.shared
    shared.users -= 1
    if shared.users > 0:
        return
    context = program.context
    if context.pipelines.get(shared.key) is shared:
        del context.pipelines[shared.key]
    _destroy_all(
        context.device,
        [
            *(("VkDescriptorSetLayout", handle) for handle in shared.set_layouts),
            ("VkPipelineLayout", shared.pipeline_layout),
            ("VkPipeline", shared.pipeline),
        ],
        ledger,
    )
