"""Item 6: re-load with changed arguments (docs/benchmarks.md, "Re-load with changed arguments").

A format-2 package carries its kernel arguments, so changing a scalar means loading
the package again. Per device, side by side in one rotation (each repeat runs every
operation once, so a change in machine load hits them alike):

ours (the engine over a fresh provider instance; packages are built before the clock starts)
    ``cold``: a package whose module no cache has seen (unique comment / unique
    ``OpSourceExtension``), as item 4 does; unloaded after (untimed).
    ``reload, previous kept``: ``load_program`` of a package that differs from the loaded
    one only in one argument value, the previous program still loaded (unloaded after,
    untimed): how a caller swaps a value.
    ``reload, previous unloaded``: the same after the previous program was unloaded.
    ``repack``: building that package (``pack_module`` + ``write_package``): the caller's
    part of changing a value, timed on its own.
    Vulkan also: ``spec cold`` and ``spec reload, previous kept`` on particles.vk.spv with
    another ``DT`` (a specialization constant: a new pipeline, the module checks reused).
raw (the API by hand)
    OpenCL: ``clSetKernelArg`` on the existing kernel (``inner`` calls per repeat);
    ``clCreateKernel`` from the built program + the two by-value arguments; ``program from
    binary`` (clCreateProgramWithBinary + clBuildProgram + clCreateKernel + arguments: what
    our re-load does natively); ``cold build`` from a unique source.
    Vulkan: ``vkCmdPushConstants`` into a command buffer being recorded (``inner`` calls);
    ``re-record`` (reset, begin, bind pipeline and descriptor set, push, dispatch, end);
    ``vkCreateComputePipelines`` from the existing shader module; ``cold`` (shader module +
    pipeline of a unique module); ``spec pipeline`` (vkCreateComputePipelines with a
    ``VkSpecializationInfo`` of another DT).

Every timed call of ours is counted: OpenCL programs loaded from the binary cache
(``from_cache``), Vulkan pipelines created (``pipelines_created``) and module / agreement
checks run (``module_check.counters``), so the JSON shows what a re-load really did.
"""

from __future__ import annotations

import gc
import itertools
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from accelcore import Accelerator, ArtifactRef, ContextDesc
from accelcore.conformance import corpus
from accelcore.devices.registry import DeviceEntry, ProviderFamily
from accelcore.engine import CommandEngine
from accelcore.kernels.package import ModuleKind
from accelcore.kernels.package_codec import write_package

from . import kernels
from .config import Config
from .contract_side import artifact_of
from .stats import Stat

if TYPE_CHECKING:
    from .raw_opencl import RawOpenCL
    from .raw_vulkan import RawVulkan

__all__ = ["OPENCL_KERNEL", "SPEC_KERNEL", "VULKAN_KERNEL", "measure_device"]

OPENCL_KERNEL = "saxpy_args"
"""artifacts/src/opencl/saxpy_args.cl: ``saxpy(const float a, x, y, const int n)``; ``a`` is changed."""
VULKAN_KERNEL = "saxpy_pc"
"""artifacts/spirv/saxpy_pc.vk.spv: push constants ``{float a; uint n}``; ``a`` is changed."""
SPEC_KERNEL = "particles"
"""artifacts/spirv/particles.vk.spv: specialization constant 1 ``DT`` is changed."""

Counts = dict[str, int]


def _nothing() -> None:
    return None


def _drop(handle: object) -> None:
    return None


@dataclass
class Op:
    """One timed operation: ``before`` and ``after`` run outside the clock, ``run`` inside (``inner`` times)."""

    what: str
    run: Callable[[], object]
    before: Callable[[], None] = _nothing
    after: Callable[[object], None] = _drop
    inner: int = 1
    counters: Callable[[], Counts] | None = None
    """Cumulative counters read before and after every call (untimed); the deltas are summed."""
    counted: Counts = field(default_factory=dict)


def measure(ops: Mapping[str, Op], *, warmup: int, repeats: int) -> dict[str, Stat]:
    """``warmup`` untimed rounds, then ``repeats`` rounds; every round runs each op once, in turn.

    Garbage collection is paused around each timed call only (cold loads and pyopencl's
    ``Kernel`` make garbage that must not pile up over a run). Counters include warm-up calls.
    """
    runs: dict[str, list[float]] = {name: [] for name in ops}
    for round_index in range(warmup + repeats):
        for name, op in ops.items():
            op.before()
            start_counts = op.counters() if op.counters is not None else None
            enabled = gc.isenabled()
            gc.disable()
            try:
                start = time.perf_counter_ns()
                handle = None
                for _ in range(op.inner):
                    handle = op.run()
                elapsed = time.perf_counter_ns() - start
            finally:
                if enabled:
                    gc.enable()
            if op.counters is not None and start_counts is not None:
                end_counts = op.counters()
                for key, value in end_counts.items():
                    op.counted[key] = op.counted.get(key, 0) + value - start_counts.get(key, 0)
            op.after(handle)
            if round_index >= warmup:
                runs[name].append(elapsed / 1e9 / op.inner)
    return {name: Stat.from_runs(values, warmup=warmup, inner=ops[name].inner) for name, values in runs.items()}


class _Recorder:
    """The provider as the engine sees it, keeping the program handles ``load_program`` returns and
    the context handles ``create_context`` returns (to read ``from_cache`` / ``pipelines_created``).

    One extra Python call per load (well under a microsecond) against loads of milliseconds.
    """

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.loaded: list[Any] = []
        self.contexts: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.provider, name)

    def create_context(self, desc: ContextDesc) -> Any:
        context = self.provider.create_context(desc)
        self.contexts.append(context)
        return context

    def load_program(self, context: Any, artifact: ArtifactRef) -> Any:
        handle = self.provider.load_program(context, artifact)
        self.loaded.append(handle)
        return handle


class _Ours:
    """The engine over a fresh provider instance, one context, the program currently held."""

    def __init__(self, family: ProviderFamily, entry: DeviceEntry) -> None:
        self.recorder = _Recorder(family.open(entry))
        self.engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(
            cast("Accelerator[Any, Any, Any, Any, Any]", self.recorder)
        )
        self.context = self.engine.create_context(ContextDesc())
        self.held: dict[str, int] = {}
        """kernel → the program ID loaded and kept (the one a re-load replaces)."""

    def load(self, artifact: ArtifactRef) -> int:
        return self.engine.load_program(self.context, artifact)

    def unload(self, program: object) -> None:
        self.engine.unload_program(cast(int, program))

    def unload_held(self, kernel: str) -> None:
        program = self.held.pop(kernel, None)
        if program is not None:
            self.unload(program)

    def close(self) -> None:
        for kernel in list(self.held):
            self.unload_held(kernel)
        self.engine.destroy_context(self.context)


_drawn = itertools.count(1)
"""Shared by every :class:`_Values` of the process: the providers' memos (the Vulkan agreement check is
remembered per spec-constant values) live as long as the process, so a value must not come back."""


class _Values:
    """A value never used before in this process (so no two loads carry the same package)."""

    def __init__(self, start: float, step: float) -> None:
        self.start, self.step = start, step

    def next(self) -> float:
        return self.start + self.step * next(_drawn)


def _package(kernel: str, module: bytes, values: Mapping[str, float | int]) -> bytes:
    return write_package(corpus.argument_package(kernel, values=dict(values), module=module))


def _ours_ops(
    ours: _Ours,
    kernel: str,
    knob: str,
    values: _Values,
    unique: Callable[[str], bytes],
    counters: Callable[[], Counts],
    prefix: str = "",
    *,
    unloaded: bool = True,
    repack: bool = True,
) -> dict[str, Op]:
    """Cold, re-load (previous kept / unloaded) and repack ops of ours for ``kernel``, changing ``knob``."""
    module = corpus.load_module(kernel, corpus.argument_spec(kernel).kinds[0])
    ours.held[kernel] = ours.load(artifact_of(_package(kernel, module, {knob: values.next()})))
    pending: dict[str, ArtifactRef] = {}

    def prepare_cold() -> None:
        pending["cold"] = artifact_of(_package(kernel, unique(kernels.nonce()), {knob: values.next()}))

    def prepare_reload() -> None:
        pending["reload"] = artifact_of(_package(kernel, module, {knob: values.next()}))

    def prepare_reload_unloaded() -> None:
        ours.unload_held(kernel)
        prepare_reload()

    def swap(program: object) -> None:
        ours.unload_held(kernel)
        ours.held[kernel] = cast(int, program)

    def keep(program: object) -> None:
        ours.held[kernel] = cast(int, program)

    ops = {
        f"{prefix}cold": Op(
            "load_program of a package whose module no cache has seen (unloaded after, untimed)",
            lambda: ours.load(pending.pop("cold")),
            prepare_cold,
            ours.unload,
            counters=counters,
        ),
        f"{prefix}reload, previous kept": Op(
            f"load_program of a package differing only in {knob}, the previous program still loaded "
            "(it is unloaded after the timed load)",
            lambda: ours.load(pending.pop("reload")),
            prepare_reload,
            swap,
            counters=counters,
        ),
    }
    if unloaded:
        ops[f"{prefix}reload, previous unloaded"] = Op(
            f"load_program of a package differing only in {knob}, the previous program unloaded first (untimed)",
            lambda: ours.load(pending.pop("reload")),
            prepare_reload_unloaded,
            keep,
            counters=counters,
        )
    if repack:
        ops[f"{prefix}repack"] = Op(
            f"pack_module + write_package for another {knob} (the caller's part of a change; not in reload)",
            lambda: _package(kernel, module, {knob: values.next()}),
        )
    return ops


# ---------------------------------------------------------------------------------------------- OpenCL


def _opencl(ours: _Ours | None, raw: RawOpenCL | None, config: Config) -> dict[str, Any]:
    ops: dict[str, dict[str, Op]] = {"ours": {}, "raw": {}}
    source = corpus.load_module(OPENCL_KERNEL, ModuleKind.OPENCL_SOURCE)
    values = _Values(2.5, 0.125)
    if ours is not None:
        loaded = ours.recorder.loaded

        def counters() -> Counts:
            return {"loads": len(loaded), "from_cache": sum(1 for h in loaded if h.from_cache)}

        def unique(nonce: str) -> bytes:
            return f"/* accel-bench cold load {nonce} */\n".encode() + source

        ops["ours"] = _ours_ops(ours, OPENCL_KERNEL, "a", values, unique, counters)
    if raw is not None:
        ops["raw"] = _raw_opencl_ops(raw, source.decode(), values, config)
    return _finish(ops, config, _OPENCL_RATIOS)


def _raw_opencl_ops(raw: RawOpenCL, source: str, values: _Values, config: Config) -> dict[str, Op]:
    import numpy as np
    import pyopencl as cl

    entry = corpus.argument_spec(OPENCL_KERNEL).entry_point
    n = np.int32(int(corpus.argument_spec(OPENCL_KERNEL).defaults["n"]))
    program = cl.Program(raw.context, source).build()
    binary = bytes(cast("list[bytes]", program.get_info(cl.program_info.BINARIES))[0])
    kernel = cl.Kernel(program, entry)
    kernel.set_arg(3, n)
    scalar = {"a": np.float32(values.next())}
    pending: dict[str, str] = {}

    def next_scalar() -> None:
        scalar["a"] = np.float32(values.next())

    def set_arg() -> None:
        kernel.set_arg(0, scalar["a"])

    def with_arguments(built: cl.Program) -> cl.Kernel:
        made = cl.Kernel(built, entry)
        made.set_arg(0, scalar["a"])
        made.set_arg(3, n)
        return made

    def prepare_cold() -> None:
        next_scalar()
        pending["cold"] = f"/* accel-bench raw cold {kernels.nonce()} */\n{source}"

    return {
        "clSetKernelArg": Op(
            "kernel.set_arg(0, a) on the existing kernel (clSetKernelArg; inner calls per repeat)",
            set_arg,
            next_scalar,
            inner=config.reload_inner,
        ),
        "clCreateKernel": Op(
            "clCreateKernel from the built program + set_arg of a and n (the raw re-create)",
            lambda: with_arguments(program),
            next_scalar,
        ),
        "program from binary": Op(
            "clCreateProgramWithBinary + clBuildProgram + clCreateKernel + set_arg of a and n "
            "(natively what a re-load from the binary cache does)",
            lambda: with_arguments(cl.Program(raw.context, [raw.device], [binary]).build()),
            next_scalar,
        ),
        "cold build": Op(
            "pyopencl Program(unique source).build() + clCreateKernel + set_arg of a and n",
            lambda: with_arguments(cl.Program(raw.context, pending.pop("cold")).build()),
            prepare_cold,
        ),
    }


# ---------------------------------------------------------------------------------------------- Vulkan


def _vulkan(ours: _Ours | None, raw: RawVulkan | None, config: Config) -> dict[str, Any]:
    ops: dict[str, dict[str, Op]] = {"ours": {}, "raw": {}}
    values = _Values(2.5, 0.125)
    dts = _Values(0.015625, 2.0**-12)
    raw_objects: _RawVulkanObjects | None = None
    try:
        if ours is not None:
            from accel_vulkan import module_check

            loaded = ours.recorder.loaded
            contexts = ours.recorder.contexts

            def counters() -> Counts:
                return {
                    "loads": len(loaded),
                    "pipelines_created": int(contexts[0].pipelines_created),
                    "module_checks": module_check.counters["modules"],
                    "agreement_checks": module_check.counters["agreements"],
                }

            def unique_pc(nonce: str) -> bytes:
                return kernels.with_source_extension(corpus.load_module(VULKAN_KERNEL, ModuleKind.SPIRV_VULKAN), nonce)

            def unique_spec(nonce: str) -> bytes:
                return kernels.with_source_extension(corpus.load_module(SPEC_KERNEL, ModuleKind.SPIRV_VULKAN), nonce)

            ops["ours"] = _ours_ops(ours, VULKAN_KERNEL, "a", values, unique_pc, counters)
            ops["ours"].update(
                _ours_ops(ours, SPEC_KERNEL, "DT", dts, unique_spec, counters, "spec ", unloaded=False, repack=False)
            )
        if raw is not None:
            raw_objects = _RawVulkanObjects(raw)
            ops["raw"] = raw_objects.ops(values, dts, config)
        return _finish(ops, config, _VULKAN_RATIOS)
    finally:
        if raw_objects is not None:
            raw_objects.close()


def _vk() -> Any:
    """The ``vulkan`` cffi binding (imported only for Vulkan devices; it ships no types)."""
    import vulkan  # type: ignore[import-untyped]

    return vulkan


class _RawVulkanObjects:
    """saxpy_pc's and particles' layouts, shader modules, a pipeline, buffers, a descriptor set and a
    command buffer, made by hand once; destroyed by :meth:`close`."""

    def __init__(self, raw: RawVulkan) -> None:
        vk = _vk()

        self.raw = raw
        device = raw.device
        self.made: list[tuple[Callable[..., object], object]] = []
        compute = vk.VK_SHADER_STAGE_COMPUTE_BIT

        def bindings(kind: int, count: int) -> Any:
            rows = [
                vk.VkDescriptorSetLayoutBinding(binding=i, descriptorType=kind, descriptorCount=1, stageFlags=compute)
                for i in range(count)
            ]
            made = vk.vkCreateDescriptorSetLayout(
                device, vk.VkDescriptorSetLayoutCreateInfo(bindingCount=count, pBindings=rows), None
            )
            self.made.append((vk.vkDestroyDescriptorSetLayout, made))
            return made

        def shader(module: bytes) -> Any:
            made = vk.vkCreateShaderModule(
                device, vk.VkShaderModuleCreateInfo(codeSize=len(module), pCode=module), None
            )
            self.made.append((vk.vkDestroyShaderModule, made))
            return made

        # saxpy_pc: set 0 = x, y (storage); push constants {float a; uint n} (8 bytes).
        self.pc_module = corpus.load_module(VULKAN_KERNEL, ModuleKind.SPIRV_VULKAN)
        storage = bindings(vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2)
        push = vk.VkPushConstantRange(stageFlags=compute, offset=0, size=8)
        self.pc_layout = vk.vkCreatePipelineLayout(
            device,
            vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=1, pSetLayouts=[storage], pushConstantRangeCount=1, pPushConstantRanges=[push]
            ),
            None,
        )
        self.made.append((vk.vkDestroyPipelineLayout, self.pc_layout))
        self.pc_shader = shader(self.pc_module)
        self.pc_pipeline = self.pipeline(self.pc_shader, self.pc_layout)
        self.made.append((vk.vkDestroyPipeline, self.pc_pipeline))
        self.n = int(corpus.argument_spec(VULKAN_KERNEL).defaults["n"])
        self.buffers = [raw.buffer(4 * self.n, "host") for _ in range(2)]
        pool_size = vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=2)
        self.pool = vk.vkCreateDescriptorPool(
            device, vk.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=1, pPoolSizes=[pool_size]), None
        )
        self.made.append((vk.vkDestroyDescriptorPool, self.pool))
        self.descriptor_set = vk.vkAllocateDescriptorSets(
            device,
            vk.VkDescriptorSetAllocateInfo(descriptorPool=self.pool, descriptorSetCount=1, pSetLayouts=[storage]),
        )[0]
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=self.descriptor_set,
                dstBinding=i,
                descriptorCount=1,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=b.buffer, offset=0, range=b.nbytes)],
            )
            for i, b in enumerate(self.buffers)
        ]
        vk.vkUpdateDescriptorSets(device, len(writes), writes, 0, None)
        self.command_pool = vk.vkCreateCommandPool(
            device,
            vk.VkCommandPoolCreateInfo(
                queueFamilyIndex=raw.family, flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
            ),
            None,
        )
        self.made.append((vk.vkDestroyCommandPool, self.command_pool))
        self.command_buffer = vk.vkAllocateCommandBuffers(
            device,
            vk.VkCommandBufferAllocateInfo(
                commandPool=self.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
            ),
        )[0]
        # particles: set 0 = the UBO, set 1 = positions, velocities; spec 0 local_size_x_id (u32), 1 DT (f32).
        ubo = bindings(vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1)
        particles = bindings(vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2)
        self.spec_layout = vk.vkCreatePipelineLayout(
            device, vk.VkPipelineLayoutCreateInfo(setLayoutCount=2, pSetLayouts=[ubo, particles]), None
        )
        self.made.append((vk.vkDestroyPipelineLayout, self.spec_layout))
        self.spec_shader = shader(corpus.load_module(SPEC_KERNEL, ModuleKind.SPIRV_VULKAN))
        self.local_size = int(corpus.argument_spec(SPEC_KERNEL).defaults["local_size"])

    def pipeline(self, shader: object, layout: object, specialization: object = None) -> Any:
        vk = _vk()

        extra = {} if specialization is None else {"pSpecializationInfo": specialization}
        stage = vk.VkPipelineShaderStageCreateInfo(
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=shader, pName="main", **extra
        )
        info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)
        return vk.vkCreateComputePipelines(self.raw.device, vk.VK_NULL_HANDLE, 1, [info], None)[0]

    def ops(self, values: _Values, dts: _Values, config: Config) -> dict[str, Op]:
        vk = _vk()

        device, compute, lib = self.raw.device, vk.VK_SHADER_STAGE_COMPUTE_BIT, vk.lib
        command_buffer, layout = self.command_buffer, self.pc_layout
        block = {"data": vk.ffi.new("char[]", struct.pack("<fI", values.next(), self.n))}
        groups = -(-self.n // 64)
        pending: dict[str, Any] = {}
        push = lib.vkCmdPushConstants

        def next_block() -> None:
            block["data"] = vk.ffi.new("char[]", struct.pack("<fI", values.next(), self.n))

        def begin_recording() -> None:
            next_block()
            vk.vkResetCommandBuffer(command_buffer, 0)
            vk.vkBeginCommandBuffer(command_buffer, vk.VkCommandBufferBeginInfo())
            vk.vkCmdBindPipeline(command_buffer, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pc_pipeline)

        def end_recording(handle: object) -> None:
            vk.vkEndCommandBuffer(command_buffer)

        def push_constants() -> None:
            push(command_buffer, layout, compute, 0, 8, block["data"])

        begin_info = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        sets = [self.descriptor_set]
        bind_point = vk.VK_PIPELINE_BIND_POINT_COMPUTE

        def re_record() -> None:
            lib.vkResetCommandBuffer(command_buffer, 0)
            vk.vkBeginCommandBuffer(command_buffer, begin_info)
            lib.vkCmdBindPipeline(command_buffer, bind_point, self.pc_pipeline)
            vk.vkCmdBindDescriptorSets(command_buffer, bind_point, layout, 0, 1, sets, 0, None)
            push(command_buffer, layout, compute, 0, 8, block["data"])
            lib.vkCmdDispatch(command_buffer, groups, 1, 1)
            vk.vkEndCommandBuffer(command_buffer)

        def destroy_pipeline(pipeline: object) -> None:
            vk.vkDestroyPipeline(device, pipeline, None)

        def prepare_cold() -> None:
            pending["cold"] = kernels.with_source_extension(self.pc_module, kernels.nonce())

        def cold() -> tuple[object, object]:
            module = pending.pop("cold")
            shader = vk.vkCreateShaderModule(
                device, vk.VkShaderModuleCreateInfo(codeSize=len(module), pCode=module), None
            )
            return shader, self.pipeline(shader, layout)

        def destroy_cold(made: object) -> None:
            shader, pipeline = cast("tuple[object, object]", made)
            vk.vkDestroyPipeline(device, pipeline, None)
            vk.vkDestroyShaderModule(device, shader, None)

        entries = [
            vk.VkSpecializationMapEntry(constantID=0, offset=0, size=4),
            vk.VkSpecializationMapEntry(constantID=1, offset=4, size=4),
        ]

        def prepare_spec() -> None:
            data = vk.ffi.new("char[]", struct.pack("<If", self.local_size, dts.next()))
            pending["spec"] = (
                vk.VkSpecializationInfo(mapEntryCount=2, pMapEntries=entries, dataSize=8, pData=data),
                data,
            )

        def spec_pipeline() -> object:
            info, _data = pending.pop("spec")
            return self.pipeline(self.spec_shader, self.spec_layout, info)

        return {
            "vkCmdPushConstants": Op(
                "vkCmdPushConstants of {a, n} into a command buffer being recorded (the loader's entry "
                "point through cffi; inner calls per repeat)",
                push_constants,
                begin_recording,
                end_recording,
                inner=config.reload_inner,
            ),
            "re-record": Op(
                "reset + begin + bind pipeline + bind descriptor set + vkCmdPushConstants + dispatch + end: "
                "a submit-ready command buffer with the new value",
                re_record,
                next_block,
            ),
            "vkCreateComputePipelines": Op(
                "vkCreateComputePipelines from the existing shader module and layout, no pipeline cache "
                "(the raw re-create; destroyed after, untimed)",
                lambda: self.pipeline(self.pc_shader, layout),
                next_block,
                destroy_pipeline,
            ),
            "cold": Op(
                "vkCreateShaderModule + vkCreateComputePipelines of a unique module (no validation, no cache)",
                cold,
                prepare_cold,
                destroy_cold,
            ),
            "spec pipeline": Op(
                "vkCreateComputePipelines of particles from the existing shader module with a "
                "VkSpecializationInfo of another DT",
                spec_pipeline,
                prepare_spec,
                destroy_pipeline,
            ),
        }

    def close(self) -> None:
        vk = _vk()

        device = self.raw.device
        vk.vkDeviceWaitIdle(device)
        for buffer in self.buffers:
            self.raw.free(buffer)
        self.buffers = []
        for destroy, handle in reversed(self.made):
            destroy(device, handle, None)
        self.made = []


# ---------------------------------------------------------------------------------------------- results

_OPENCL_RATIOS = (
    ("ours cold / ours reload (kept)", ("ours", "cold"), ("ours", "reload, previous kept")),
    ("ours reload (kept) / raw clSetKernelArg", ("ours", "reload, previous kept"), ("raw", "clSetKernelArg")),
    ("ours reload (kept) / raw clCreateKernel", ("ours", "reload, previous kept"), ("raw", "clCreateKernel")),
    (
        "ours reload (kept) / raw program from binary",
        ("ours", "reload, previous kept"),
        ("raw", "program from binary"),
    ),
    (
        "ours reload (unloaded) / raw program from binary",
        ("ours", "reload, previous unloaded"),
        ("raw", "program from binary"),
    ),
    ("ours cold / raw cold build", ("ours", "cold"), ("raw", "cold build")),
)
_VULKAN_RATIOS = (
    ("ours cold / ours reload (kept)", ("ours", "cold"), ("ours", "reload, previous kept")),
    ("ours reload (kept) / raw vkCmdPushConstants", ("ours", "reload, previous kept"), ("raw", "vkCmdPushConstants")),
    ("ours reload (kept) / raw re-record", ("ours", "reload, previous kept"), ("raw", "re-record")),
    (
        "ours reload (kept) / raw vkCreateComputePipelines",
        ("ours", "reload, previous kept"),
        ("raw", "vkCreateComputePipelines"),
    ),
    (
        "ours reload (unloaded) / raw vkCreateComputePipelines",
        ("ours", "reload, previous unloaded"),
        ("raw", "vkCreateComputePipelines"),
    ),
    ("ours cold / raw cold", ("ours", "cold"), ("raw", "cold")),
    ("ours spec cold / ours spec reload (kept)", ("ours", "spec cold"), ("ours", "spec reload, previous kept")),
    ("ours spec reload (kept) / raw spec pipeline", ("ours", "spec reload, previous kept"), ("raw", "spec pipeline")),
)

Ratio = tuple[str, tuple[str, str], tuple[str, str]]


def _finish(ops: dict[str, dict[str, Op]], config: Config, ratios: tuple[Ratio, ...]) -> dict[str, Any]:
    """Run every side's ops in one rotation; stats, counters and the ratios of medians."""
    everything = {(side, name): op for side, side_ops in ops.items() for name, op in side_ops.items()}
    keyed = {f"{side}\0{name}": op for (side, name), op in everything.items()}
    stats = measure(keyed, warmup=config.reload_warmup, repeats=config.reload_repeats)
    out: dict[str, Any] = {side: {} for side in ops}
    for (side, name), op in everything.items():
        entry = stats[f"{side}\0{name}"].as_dict()
        entry["what"] = op.what
        if op.counters is not None:
            entry["counts"] = dict(op.counted)
        out[side][name] = entry
    out["ratios"] = {
        label: out[a][b]["median_s"] / out[c][d]["median_s"]
        for label, (a, b), (c, d) in ratios
        if b in out.get(a, {}) and d in out.get(c, {})
    }
    return out


def measure_device(
    api: str | None,
    family: ProviderFamily | None,
    entry: DeviceEntry | None,
    raw: RawOpenCL | RawVulkan | None,
    config: Config,
) -> dict[str, Any]:
    """The group for one device: ours on a fresh provider instance (when ``family`` and ``entry``), raw on ``raw``."""
    ours = _Ours(family, entry) if family is not None and entry is not None else None
    try:
        if api == "opencl":
            from .raw_opencl import RawOpenCL

            result = _opencl(ours, raw if isinstance(raw, RawOpenCL) else None, config)
            result["kernel"] = f"{OPENCL_KERNEL} (a: by-value argument 0)"
        elif api == "vulkan":
            from .raw_vulkan import RawVulkan

            result = _vulkan(ours, raw if isinstance(raw, RawVulkan) else None, config)
            result["kernel"] = f"{VULKAN_KERNEL} (a: push-constant member); spec: {SPEC_KERNEL} (DT: spec constant 1)"
        else:
            raise LookupError(f"no argument-carrying corpus kernel for API {api!r}")
    finally:
        if ours is not None:
            ours.close()
    missing = {
        side: reason
        for side, reason in (("ours", "no provider family for this device"), ("raw", "no raw API side"))
        if not result.get(side)
    }
    if missing:
        result["not_measured"] = missing
    return result
