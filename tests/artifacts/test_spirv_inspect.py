"""SPIR-V inspector: every corpus module, modules built at test time, malformed input and fuzzing."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelcore import AccessMode, BackendError, ErrorKind
from accelcore.conformance.corpus import KERNELS, kernel_spec, load_module
from accelcore.kernels.package import NO_COUNT_ARGUMENT, ModuleKind
from accelcore.kernels.spirv import (
    Flavour,
    capability_name,
    check_capabilities,
    inspect_spirv,
    is_spirv,
    missing_capabilities,
    opencl_supported_capabilities,
    required_capabilities,
    vulkan_supported_capabilities,
)

from .conftest import SPIRV_MAGIC as MAGIC
from .conftest import op, text, words
from .conftest import spirv_module as module


@pytest.fixture
def tool() -> Callable[[str], str]:
    """Overrides the conftest fixture: a missing tool fails these tests (``make setup`` installs them), never skips."""

    def find(name: str) -> str:
        path = shutil.which(name)
        if path is None:
            pytest.fail(f"{name} is not installed; `make setup` installs it")
        return path

    return find


OPENCL_FIXED_SIZE = {"reduce", "histogram", "matmul"}  # reqd_work_group_size in the OpenCL C


MINIMAL_SHADER = [
    op(17, 1),  # OpCapability Shader
    op(14, 0, 1),  # OpMemoryModel Logical GLSL450
    op(15, 5, 4, *text("main")),  # OpEntryPoint GLCompute %4 "main"
    op(19, 2),  # %2 = OpTypeVoid
    op(33, 3, 2),  # %3 = OpTypeFunction %2
    op(54, 2, 4, 0, 3),  # %4 = OpFunction %2 None %3
    op(248, 5),  # OpLabel
    op(253),  # OpReturn
    op(56),  # OpFunctionEnd
]


# --------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("kernel", KERNELS)
def test_vulkan_corpus_modules(kernel: str) -> None:
    spec = kernel_spec(kernel)
    found = inspect_spirv(load_module(kernel, ModuleKind.SPIRV_VULKAN))
    assert found.flavour is Flavour.VULKAN
    assert found.version == (1, 3)  # glslangValidator --target-env vulkan1.1
    assert "Shader" in found.capabilities and "Kernel" not in found.capabilities
    (entry,) = found.compute_entry_points()
    assert (entry.name, entry.execution_model_name, entry.local_size) == ("main", "GLCompute", spec.local_size)
    assert [(d.set, d.binding) for d in found.descriptors] == [(0, b.native_index) for b in spec.bindings]
    for binding in spec.bindings:
        descriptor = found.descriptor(binding.native_index)
        assert descriptor is not None
        assert descriptor.descriptor_type == "storage_buffer"
        assert descriptor.access is binding.access, f"{kernel} binding {binding.native_index}"
        if descriptor.array_stride is not None:
            assert descriptor.array_stride == binding.element_size
    uses_count = spec.dispatch.count_argument != NO_COUNT_ARGUMENT
    assert found.push_constant_bytes == (4 if uses_count else 0)


@pytest.mark.parametrize("kernel", KERNELS)
def test_opencl_corpus_modules(kernel: str) -> None:
    spec = kernel_spec(kernel)
    found = inspect_spirv(load_module(kernel, ModuleKind.SPIRV_OPENCL))
    assert found.flavour is Flavour.OPENCL
    assert {"Kernel", "Addresses"} <= set(found.capabilities)
    assert found.descriptors == ()
    (entry,) = found.compute_entry_points()
    assert (entry.name, entry.execution_model_name) == (spec.opencl_entry, "Kernel")
    assert entry.local_size == (spec.local_size if kernel in OPENCL_FIXED_SIZE else None)
    buffers = [p for p in entry.parameters if p.is_global_buffer]
    assert [p.index for p in buffers] == [b.native_index for b in spec.bindings]
    assert [p.value_bytes for p in buffers] == [b.element_size for b in spec.bindings]
    scalars = [p.index for p in entry.parameters if p.storage_class is None]
    expected = [] if spec.dispatch.count_argument == NO_COUNT_ARGUMENT else [spec.dispatch.count_argument]
    assert scalars == expected


def test_byte_swapped_module_inspects_the_same() -> None:
    data = load_module("conformance", ModuleKind.SPIRV_VULKAN)
    swapped = b"".join(data[i : i + 4][::-1] for i in range(0, len(data), 4))
    assert is_spirv(swapped)
    little, big = inspect_spirv(data), inspect_spirv(swapped)
    assert not little.big_endian and big.big_endian
    assert (big.entry_points, big.descriptors, big.capabilities) == (
        little.entry_points,
        little.descriptors,
        little.capabilities,
    )


# --------------------------------------------------------------------------- modules never seen before

GLSL_RESOURCES = """
#version 450
layout(local_size_x = 8, local_size_y = 4, local_size_z = 2) in;
layout(std140, set = 0, binding = 3) uniform U { vec4 scale; } u;
layout(std430, set = 0, binding = 5) buffer RW { float data[]; } rw;
layout(std430, set = 0, binding = 7) writeonly buffer WO { vec2 values[]; } wo;
layout(std430, set = 0, binding = 9) buffer Mixed { readonly uint head; uint tail[]; } mixed_block;
layout(std430, set = 0, binding = 11) readonly buffer RO { uvec4 items[]; } ro;
layout(set = 1, binding = 0, r32ui) uniform uimage2D image;
layout(set = 1, binding = 1) uniform sampler2D tex;
layout(push_constant) uniform P { uint n; float f; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    rw.data[i] = rw.data[i] * u.scale.x + pc.f + texture(tex, vec2(0.5)).x;
    wo.values[i] = vec2(float(mixed_block.head), float(ro.items[i].x));
    mixed_block.tail[i] = imageLoad(image, ivec2(i, 0)).x + pc.n;
}
"""

GLSL_SPEC_SIZE = """
#version 450
layout(local_size_x = 32, local_size_x_id = 0, local_size_y = 2) in;
layout(set = 0, binding = 0) buffer Data { uint values[]; } data;
void main() { data.values[gl_GlobalInvocationID.x] += 1u; }
"""


def compile_glsl(tool: Callable[[str], str], tmp_path: Path, source: str, env: str) -> bytes:
    import subprocess

    compiler = tool("glslangValidator")
    src = tmp_path / f"shader_{env}.comp"
    out = tmp_path / f"shader_{env}.spv"
    src.write_text(source)
    done = subprocess.run(
        [compiler, "-V", "--target-env", env, "-o", str(out), str(src)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_bytes()


@pytest.mark.parametrize("env", ["vulkan1.0", "vulkan1.2"])
def test_glsl_resources_built_at_test_time(env: str, tool: Callable[[str], str], tmp_path: Path) -> None:
    found = inspect_spirv(compile_glsl(tool, tmp_path, GLSL_RESOURCES, env))
    assert found.flavour is Flavour.VULKAN
    assert found.version == {"vulkan1.0": (1, 0), "vulkan1.2": (1, 5)}[env]
    (entry,) = found.compute_entry_points()
    assert entry.local_size == (8, 4, 2)
    table = {(d.set, d.binding): (d.descriptor_type, d.access, d.array_stride) for d in found.descriptors}
    assert table == {
        (0, 3): ("uniform_buffer", AccessMode.READ, None),
        (0, 5): ("storage_buffer", AccessMode.READ_WRITE, 4),
        (0, 7): ("storage_buffer", AccessMode.WRITE, 8),
        (0, 9): ("storage_buffer", AccessMode.READ_WRITE, 4),
        (0, 11): ("storage_buffer", AccessMode.READ, 16),
        (1, 0): ("storage_image", AccessMode.READ_WRITE, None),
        (1, 1): ("combined_image_sampler", AccessMode.READ, None),
    }
    assert found.push_constant_bytes == 8
    names = {d.binding: d.name for d in found.descriptors if d.set == 0}
    assert names[9] == "mixed_block"


GLSL_BUFFER_REFERENCE = """
#version 450
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 16) in;
layout(buffer_reference) buffer Node;
layout(buffer_reference, std430) buffer Node { Node next; uint value; };
layout(set = 0, binding = 0) buffer Root { Node head; } root;
void main() { root.head.value = root.head.next.value + 1u; }
"""


def test_forward_pointers_are_not_duplicate_types(tool: Callable[[str], str], tmp_path: Path) -> None:
    found = inspect_spirv(compile_glsl(tool, tmp_path, GLSL_BUFFER_REFERENCE, "vulkan1.2"))
    assert "PhysicalStorageBufferAddresses" in found.capabilities
    assert found.entry_point("main").local_size == (16, 1, 1)
    assert [(d.binding, d.access) for d in found.descriptors] == [(0, AccessMode.READ_WRITE)]


def test_specialisable_local_size_reports_the_default(tool: Callable[[str], str], tmp_path: Path) -> None:
    found = inspect_spirv(compile_glsl(tool, tmp_path, GLSL_SPEC_SIZE, "vulkan1.1"))
    assert found.compute_entry_points()[0].local_size == (32, 2, 1)


def assemble(tool: Callable[[str], str], tmp_path: Path, source: str, env: str) -> bytes:
    import subprocess

    assembler = tool("spirv-as")
    src = tmp_path / "module.spvasm"
    out = tmp_path / "module.spv"
    src.write_text(source)
    done = subprocess.run(
        [assembler, "--target-env", env, "-o", str(out), str(src)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_bytes()


ASM_TWO_COMPUTE_ENTRIES = """
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %f1 "first"
OpEntryPoint GLCompute %f2 "second"
OpEntryPoint Fragment %f3 "frag"
OpExecutionMode %f1 LocalSize 16 1 1
OpExecutionMode %f2 LocalSize 4 4 4
OpExecutionMode %f3 OriginUpperLeft
OpName %buf "pairs"
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 2
OpDecorate %buf NonWritable
OpDecorate %S Block
OpMemberDecorate %S 0 Offset 0
OpDecorate %arr ArrayStride 8
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%uint2 = OpTypeVector %uint 2
%arr = OpTypeRuntimeArray %uint2
%S = OpTypeStruct %arr
%ptr = OpTypePointer StorageBuffer %S
%buf = OpVariable %ptr StorageBuffer
%f1 = OpFunction %void None %fn
%l1 = OpLabel
OpReturn
OpFunctionEnd
%f2 = OpFunction %void None %fn
%l2 = OpLabel
OpReturn
OpFunctionEnd
%f3 = OpFunction %void None %fn
%l3 = OpLabel
OpReturn
OpFunctionEnd
"""

ASM_LOCAL_SIZE_ID = """
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionModeId %main LocalSizeId %c8 %c2 %c1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%c8 = OpConstant %uint 8
%c2 = OpConstant %uint 2
%c1 = OpConstant %uint 1
%main = OpFunction %void None %fn
%l = OpLabel
OpReturn
OpFunctionEnd
"""

ASM_OPENCL_KERNEL = """
OpCapability Addresses
OpCapability Kernel
OpCapability Int64
OpCapability Float64
OpMemoryModel Physical64 OpenCL
OpEntryPoint Kernel %k "scale"
OpExecutionMode %k LocalSize 32 1 1
OpDecorate %p0 FuncParamAttr NoWrite
%void = OpTypeVoid
%float = OpTypeFloat 32
%v4 = OpTypeVector %float 4
%gptr = OpTypePointer CrossWorkgroup %v4
%uint = OpTypeInt 32 0
%lptr = OpTypePointer Workgroup %float
%fn = OpTypeFunction %void %gptr %gptr %lptr %uint
%k = OpFunction %void None %fn
%p0 = OpFunctionParameter %gptr
%p1 = OpFunctionParameter %gptr
%p2 = OpFunctionParameter %lptr
%p3 = OpFunctionParameter %uint
%l = OpLabel
OpReturn
OpFunctionEnd
"""


def test_assembled_module_with_several_entry_points(tool: Callable[[str], str], tmp_path: Path) -> None:
    found = inspect_spirv(assemble(tool, tmp_path, ASM_TWO_COMPUTE_ENTRIES, "vulkan1.1"))
    assert [(e.name, e.execution_model_name) for e in found.entry_points] == [
        ("first", "GLCompute"),
        ("second", "GLCompute"),
        ("frag", "Fragment"),
    ]
    assert [e.name for e in found.compute_entry_points()] == ["first", "second"]
    assert found.entry_point("second").local_size == (4, 4, 4)
    assert found.entry_point("first").local_size == (16, 1, 1)
    with pytest.raises(BackendError, match="'first', 'second'") as info:
        found.entry_point("frag")
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT
    (descriptor,) = found.descriptors
    assert (descriptor.binding, descriptor.access, descriptor.array_stride, descriptor.name) == (
        2,
        AccessMode.READ,
        8,
        "pairs",
    )
    assert descriptor.storage_class_name == "StorageBuffer"


def test_assembled_local_size_id(tool: Callable[[str], str], tmp_path: Path) -> None:
    found = inspect_spirv(assemble(tool, tmp_path, ASM_LOCAL_SIZE_ID, "spv1.5"))
    assert found.version == (1, 5)
    assert found.entry_point("main").local_size == (8, 2, 1)


def test_local_size_id_edge_cases(raises_kind) -> None:
    def with_mode(*constants: list[int]) -> bytes:
        return module(
            *MINIMAL_SHADER[:3],
            op(331, 4, 38, 10, 11, 12),  # OpExecutionModeId %4 LocalSizeId %10 %11 %12
            op(21, 9, 32, 0),  # %9 = OpTypeInt 32 0
            *constants,
            *MINIMAL_SHADER[3:],
            version=0x00010500,
        )

    plain = with_mode(op(43, 9, 10, 4), op(43, 9, 11, 2), op(50, 9, 12, 3))
    assert inspect_spirv(plain).entry_points[0].local_size == (4, 2, 3)
    computed = with_mode(op(43, 9, 10, 4), op(43, 9, 11, 2), op(52, 9, 12, 128, 10, 11))  # OpSpecConstantOp
    assert inspect_spirv(computed).entry_points[0].local_size is None
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="zero dimension"):
        inspect_spirv(with_mode(op(43, 9, 10, 4), op(43, 9, 11, 0), op(43, 9, 12, 1)))


def test_assembled_opencl_kernel_parameters(tool: Callable[[str], str], tmp_path: Path) -> None:
    found = inspect_spirv(assemble(tool, tmp_path, ASM_OPENCL_KERNEL, "spv1.0"))
    assert found.flavour is Flavour.OPENCL
    entry = found.entry_point("scale")
    assert entry.local_size == (32, 1, 1)
    params = [(p.index, p.storage_class, p.value_bytes, p.no_write) for p in entry.parameters]
    assert params == [(0, 5, 16, True), (1, 5, 16, False), (2, 4, 4, False), (3, None, 4, False)]
    assert found.capabilities == ("Addresses", "Kernel", "Int64", "Float64")


def test_opencl_c_compiled_at_test_time(tool: Callable[[str], str], tmp_path: Path) -> None:
    import subprocess

    clang, translator = tool("clang-15"), tool("llvm-spirv-15")
    (tmp_path / "k.cl").write_text(
        "__kernel __attribute__((reqd_work_group_size(16, 2, 1)))\n"
        "void never_seen(__global const short *a, __global long *b, float scale) {\n"
        "    b[get_global_id(0)] = (long)(a[get_global_id(0)] * scale);\n}\n"
    )
    for command in (
        [clang, "-c", "-target", "spir64", "-cl-std=CL1.2", "-O0", "-Xclang", "-finclude-default-header",
         "-emit-llvm", "-o", "k.bc", "k.cl"],
        [translator, "k.bc", "-o", "k.spv"],
    ):  # fmt: skip
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    found = inspect_spirv((tmp_path / "k.spv").read_bytes())
    entry = found.entry_point("never_seen")
    assert entry.local_size == (16, 2, 1)
    assert [(p.storage_class, p.value_bytes) for p in entry.parameters] == [(5, 2), (5, 8), (None, 4)]


# --------------------------------------------------------------------------- malformed input


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "shorter than"),
        (words(MAGIC, 0x00010000, 0, 1), "shorter than"),
        (words(MAGIC, 0x00010000, 0, 1, 0) + b"\0", "whole number"),
        (words(0xDEADBEEF, 0x00010000, 0, 1, 0), "magic"),
        (module(*MINIMAL_SHADER, version=0x00020000), "version"),
        (module(*MINIMAL_SHADER, version=0x00010700), "version"),
        (module(*MINIMAL_SHADER, version=0x00010001), "version"),
        (module(*MINIMAL_SHADER, bound=0), "bound is 0"),
        (words(MAGIC, 0x00010000, 0, 10, 1), "schema"),
        (module([0x00000011]), "word count 0"),
        (module(*MINIMAL_SHADER, [0x00000000]), "word count 0"),
        (module([0x00100011, 1]), "past the end"),
        (module(*MINIMAL_SHADER[:1], *MINIMAL_SHADER[2:]), "no OpMemoryModel"),
        (module(op(17, 11), *MINIMAL_SHADER[1:]), "neither the Shader nor the Kernel"),
        (module(*MINIMAL_SHADER[:2]), "no OpEntryPoint"),
        (module(op(17, 1), op(14, 0, 1), op(14, 0, 1)), "second OpMemoryModel"),
        (module(op(17, 1), op(14, 0, 1), op(15, 5, 4, 0x6E69616D)), "no terminating NUL"),
        (module(op(17, 1), op(14, 0, 1), op(15, 5, 4, 0x0000FFFF)), "UTF-8"),
        (module(op(17, 1), op(14, 0, 1), op(15, 5, 400, *text("main"))), "outside 1..99"),
        (module(op(17, 1), op(14, 0, 1), op(15, 5)), "needs 3"),
        (module(*MINIMAL_SHADER, op(16, 4, 17, 0, 1, 1)), "zero dimension"),
        (module(*MINIMAL_SHADER, op(16, 4, 17, 8)), "needs 5"),
        (module(*MINIMAL_SHADER, op(21, 7, 32, 0), op(21, 7, 32, 0)), "defined twice"),
        (module(*MINIMAL_SHADER, op(55, 1, 2)), "outside a function"),
        (module(*MINIMAL_SHADER, op(54, 2, 6, 0, 3), op(54, 2, 7, 0, 3)), "inside another function"),
        (module(*MINIMAL_SHADER, op(54, 2, 6, 0, 3), op(248, 8)), "ends inside function 6"),
        (module(*MINIMAL_SHADER, op(56)), "OpFunctionEnd at word .* outside"),
        (module(*MINIMAL_SHADER[:3]), "no OpFunction defines"),
        (module(*MINIMAL_SHADER[:6], op(57, 2, 9, 42), *MINIMAL_SHADER[6:]), "function id 42"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_malformed_modules_are_invalid_argument(data: bytes, match: str) -> None:
    with pytest.raises(BackendError, match=match) as info:
        inspect_spirv(data)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT


def test_descriptor_without_binding_is_rejected() -> None:
    data = module(
        *MINIMAL_SHADER,
        op(71, 10, 34, 0),  # DescriptorSet only
        op(21, 7, 32, 0),
        op(30, 8, 7),
        op(32, 9, 2, 8),
        op(59, 9, 10, 2),
    )
    with pytest.raises(BackendError, match="lacks a DescriptorSet or Binding") as info:
        inspect_spirv(data)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT


def test_long_runs_of_tiny_instructions_end() -> None:
    nops = [0x00010000] * 200_000  # OpNop, word count 1
    found = inspect_spirv(module(*MINIMAL_SHADER, nops))
    assert found.entry_points[0].name == "main"


def test_non_bytes_input_is_invalid_argument() -> None:
    with pytest.raises(BackendError) as info:
        inspect_spirv(12345)  # type: ignore[arg-type]
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT


# --------------------------------------------------------------------------- fuzzing

CORPUS_MODULES = [load_module(k, kind) for k in KERNELS for kind in (ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL)]
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def survives(data: bytes) -> None:
    try:
        inspect_spirv(data)
    except BackendError as error:
        assert error.kind is ErrorKind.INVALID_ARGUMENT, str(error)


@settings(FUZZ, max_examples=1500)
@given(st.sampled_from(CORPUS_MODULES), st.lists(st.tuples(st.integers(0, 1 << 15), st.integers(0, 7)), max_size=4))
def test_bit_flipped_modules(data: bytes, flips: list[tuple[int, int]]) -> None:
    mutated = bytearray(data)
    for position, bit in flips:
        mutated[position % len(mutated)] ^= 1 << bit
    survives(bytes(mutated))


@settings(FUZZ, max_examples=1000)
@given(
    st.sampled_from(CORPUS_MODULES),
    st.integers(0, 1 << 12),
    st.sampled_from([0, 1, 0x00010000, 0xFFFF0000, 0x00020000, 0x7FFFFFFF, 0xFFFFFFFF]) | st.integers(0, 2**32 - 1),
)
def test_word_overwrites(data: bytes, word: int, value: int) -> None:
    mutated = bytearray(data)
    struct.pack_into("<I", mutated, (word % (len(data) // 4)) * 4, value)
    survives(bytes(mutated))


@settings(FUZZ, max_examples=500)
@given(st.sampled_from(CORPUS_MODULES), st.integers(0, 1 << 14), st.binary(max_size=64))
def test_truncations_and_garbage_tails(data: bytes, cut: int, tail: bytes) -> None:
    survives(data[: cut % (len(data) + 1)] + tail)


@pytest.mark.parametrize("index", range(len(CORPUS_MODULES)))
def test_every_truncation_of_a_corpus_module(index: int) -> None:
    data = CORPUS_MODULES[index]
    whole = inspect_spirv(data)
    accepted = []
    for length in range(0, len(data)):
        try:
            prefix = inspect_spirv(data[:length])
        except BackendError as error:
            assert error.kind is ErrorKind.INVALID_ARGUMENT
            continue
        # Only a cut between whole instructions can leave a well-formed (smaller) module.
        assert length % 4 == 0
        assert len(prefix.entry_points) <= len(whole.entry_points)
        accepted.append(length)
    assert len(accepted) < len(data) // 40, f"too many truncations accepted: {accepted}"


# --------------------------------------------------------------------------- capabilities


def test_capability_helpers() -> None:
    opencl_module = inspect_spirv(load_module("conformance", ModuleKind.SPIRV_OPENCL))
    vulkan_module = inspect_spirv(load_module("conformance", ModuleKind.SPIRV_VULKAN))
    assert required_capabilities(opencl_module) == {"Addresses", "Linkage", "Kernel", "Int64"}
    vulkan = vulkan_supported_capabilities({"shaderInt64": True, "shaderFloat64": False}, subgroup_operations=0x3)
    assert {"Shader", "Int64", "GroupNonUniform", "GroupNonUniformVote"} <= vulkan
    assert "Float64" not in vulkan and "Kernel" not in vulkan and "GroupNonUniformBallot" not in vulkan
    check_capabilities(vulkan_module, vulkan)
    assert missing_capabilities(opencl_module, vulkan) == ("Addresses", "Linkage", "Kernel")
    with pytest.raises(BackendError, match=r"capability Addresses .*which lavapipe does not support") as info:
        check_capabilities(opencl_module, vulkan, device="lavapipe")
    assert info.value.kind is ErrorKind.UNSUPPORTED
    opencl = opencl_supported_capabilities(["cl_khr_fp64"], images=True)
    check_capabilities(opencl_module, opencl)
    assert "Float64" in opencl and "Float16" not in opencl and "GenericPointer" not in opencl
    assert "GenericPointer" in opencl_supported_capabilities([], opencl_c_major=2)
    assert capability_name(5345) == "VulkanMemoryModel"
    assert capability_name(99999) == "Capability(99999)"
