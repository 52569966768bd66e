"""Programs: SPIR-V checked before the driver, package/module agreement, pipelines, resident bytes."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from accel_vulkan.pipeline import HOST_RECORD_BYTES

from accelcore import AccessMode, ArtifactRef, ErrorKind, MemorySource, PatternSource, TargetIdentity
from accelcore.conformance.corpus import KERNELS, load_package
from accelcore.kernels.package import (
    DescriptorType,
    Dispatch,
    DispatchKind,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    format_for,
)
from accelcore.kernels.package_codec import parse_package, write_package

from .conftest import VK, artifact

R, W = AccessMode.READ, AccessMode.WRITE


def _glslang() -> str:
    path = shutil.which("glslangValidator")
    if path is None:
        pytest.skip("glslangValidator is not installed (Debian: glslang-tools); inline GLSL tests need it")
    return path


@pytest.fixture
def compile_glsl(tmp_path: Path) -> Callable[[str], bytes]:
    """GLSL compute source → SPIR-V words (glslangValidator, Vulkan 1.2 target)."""
    tool = _glslang()

    def build(source: str) -> bytes:
        src = tmp_path / "k.comp"
        out = tmp_path / "k.spv"
        src.write_text(source)
        subprocess.run(
            [tool, "-V", "--target-env", "vulkan1.2", str(src), "-o", str(out)], check=True, capture_output=True
        )
        return out.read_bytes()

    return build


def _package(module: bytes, bindings: tuple[PackageBinding, ...], count: bool = True, local: int = 64) -> bytes:
    dispatch = Dispatch(DispatchKind.FROM_BINDING, slot=bindings[-1].slot, count_argument=2 if count else 0xFFFFFFFF)
    return write_package(KernelPackage(VK, "main", (local, 1, 1), bindings, dispatch, module))


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_corpus_package_loads_into_one_pipeline(rig: Any, kernel: str) -> None:
    program = rig.load(load_package(kernel, VK))
    live = rig.accel.live_resources()
    assert live["VkPipeline"] == 1 and live["VkPipelineLayout"] == 1 and live["VkDescriptorSetLayout"] == 1
    assert live.get("VkShaderModule", 0) == 0 and live.get("VkPipelineCache", 0) == 0
    module_bytes = len(parse_package(load_package(kernel, VK)).module)
    assert program.resident_bytes >= module_bytes + HOST_RECORD_BYTES


def test_resident_bytes_is_enforced(rig: Any, raises_kind: Any) -> None:
    raw = load_package("conformance", VK)
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as info:
        rig.load(raw, resident_bytes=100)
    assert "resident_bytes 100" in info.value.message
    program = rig.load(raw)
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        rig.load(raw, resident_bytes=program.resident_bytes - 1)
    assert rig.load(raw, resident_bytes=program.resident_bytes).resident_bytes == program.resident_bytes
    assert rig.accel.live_resources()["VkPipeline"] == 1  # the two programs share one pipeline
    assert rig.context.pipelines_created == 1


def test_artifact_limits_and_formats(rig: Any, raises_kind: Any) -> None:
    assert rig.accel.artifact_formats == (format_for(VK),)
    limit = rig.accel.device_info().limits.max_artifact_bytes
    huge = ArtifactRef(format_for(VK), TargetIdentity.any(), PatternSource(limit + 1), 1 << 30)
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        rig.accel.load_program(rig.context, huge)
    with raises_kind(ErrorKind.UNSUPPORTED):
        rig.accel.load_program(
            rig.context, artifact(load_package("conformance", ModuleKind.OPENCL_SOURCE), ModuleKind.OPENCL_SOURCE)
        )
    raw = load_package("conformance", VK)
    two = ArtifactRef(format_for(VK), TargetIdentity.any(), MemorySource(raw[:77], raw[77:]), 1 << 20)
    rig.programs.append(rig.accel.load_program(rig.context, two))


def _with_capability(module: bytes, capability: int) -> bytes:
    """Insert ``OpCapability capability`` right after the header (a structurally valid module)."""
    instruction = ((2 << 16) | 17).to_bytes(4, "little") + capability.to_bytes(4, "little")
    return module[:20] + instruction + module[20:]


def test_capability_the_device_lacks_is_unsupported_by_name(rig: Any, raises_kind: Any) -> None:
    pkg = parse_package(load_package("conformance", VK))
    needs_geometry = dataclasses.replace(pkg, module=_with_capability(pkg.module, 2))
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        rig.load(write_package(needs_geometry))
    assert "Geometry" in info.value.message and info.value.native_call is None


def test_opencl_flavoured_spirv_is_unsupported(rig: Any, raises_kind: Any) -> None:
    from accelcore.conformance.corpus import load_module

    pkg = parse_package(load_package("conformance", VK))
    opencl = dataclasses.replace(pkg, module=load_module("conformance", ModuleKind.SPIRV_OPENCL))
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        rig.load(write_package(opencl))
    assert "OpenCL" in info.value.message


def test_a_uniform_buffer_described_as_a_storage_row_is_incompatible(
    rig: Any, raises_kind: Any, compile_glsl: Any
) -> None:
    module = compile_glsl(
        """#version 450
        layout(local_size_x = 64) in;
        layout(set = 0, binding = 0) uniform U { uvec4 v[4]; } u;
        layout(set = 0, binding = 1) writeonly buffer O { uint v[]; } o;
        void main() { o.v[gl_GlobalInvocationID.x] = u.v[0].x; }"""
    )
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(_package(module, (PackageBinding(0, 0, R), PackageBinding(1, 1, W)), count=False))
    assert "STORAGE_BUFFER row" in info.value.message and "uniform_buffer" in info.value.message
    uniform = PackageBinding(0, 0, R, 4, descriptor_type=DescriptorType.UNIFORM_BUFFER)
    rig.load(_package(module, (uniform, PackageBinding(1, 1, W)), count=False))  # described as one, it loads


def test_an_image_descriptor_is_unsupported(rig: Any, raises_kind: Any, compile_glsl: Any) -> None:
    module = compile_glsl(
        """#version 450
        layout(local_size_x = 64) in;
        layout(set = 0, binding = 0, r32ui) uniform readonly uimageBuffer img;
        layout(set = 0, binding = 1) writeonly buffer O { uint v[]; } o;
        void main() { o.v[gl_GlobalInvocationID.x] = imageLoad(img, 0).x; }"""
    )
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        rig.load(_package(module, (PackageBinding(0, 0, R), PackageBinding(1, 1, W)), count=False))
    assert "storage_texel_buffer" in info.value.message


def test_wide_push_constants_contradict_the_count_convention(rig: Any, raises_kind: Any, compile_glsl: Any) -> None:
    module = compile_glsl(
        """#version 450
        layout(local_size_x = 64) in;
        layout(set = 0, binding = 0) writeonly buffer O { uint v[]; } o;
        layout(push_constant) uniform P { uint count; uint scale; } p;
        void main() { uint i = gl_GlobalInvocationID.x; if (i < p.count) o.v[i] = i * p.scale; }"""
    )
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(_package(module, (PackageBinding(0, 0, W),)))
    assert "push constants are 8 bytes" in info.value.message
    with raises_kind(ErrorKind.INCOMPATIBLE):
        rig.load(_package(module, (PackageBinding(0, 0, W),), count=False))


def test_descriptor_outside_set_zero_is_incompatible(rig: Any, raises_kind: Any, compile_glsl: Any) -> None:
    module = compile_glsl(
        """#version 450
        layout(local_size_x = 64) in;
        layout(set = 1, binding = 0) writeonly buffer O { uint v[]; } o;
        void main() { o.v[gl_GlobalInvocationID.x] = 1u; }"""
    )
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(_package(module, (PackageBinding(0, 0, W),), count=False))
    assert "set 1" in info.value.message


def test_inline_kernel_runs(rig: Any, compile_glsl: Any) -> None:
    module = compile_glsl(
        """#version 450
        layout(local_size_x = 32) in;
        layout(set = 0, binding = 3) readonly buffer I { uint v[]; } src;
        layout(set = 0, binding = 1) buffer O { uint v[]; } dst;
        layout(push_constant) uniform P { uint count; } p;
        void main() { uint i = gl_GlobalInvocationID.x; if (i < p.count) dst.v[i] = src.v[i] * 3u + dst.v[i]; }"""
    )
    # Slots need not equal bindings: slot 0 → binding 3, slot 1 → binding 1 (READ_WRITE).
    raw = _package(module, (PackageBinding(0, 3, R), PackageBinding(1, 1, AccessMode.READ_WRITE)), local=32)
    program = rig.load(raw)
    import numpy as np

    src = np.arange(100, dtype=np.uint32)
    dst = np.full(100, 7, dtype=np.uint32)
    a = rig.buffer(src.tobytes(), R)
    b = rig.buffer(dst.tobytes(), AccessMode.READ_WRITE)
    event = rig.submit(program, {0: (a, R), 1: (b, AccessMode.READ_WRITE)})
    assert str(rig.wait(event)) == "Complete"
    assert np.array_equal(np.frombuffer(rig.read(b), dtype=np.uint32), src * 3 + 7)
