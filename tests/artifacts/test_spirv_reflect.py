"""SPIR-V reflection for packing, on modules compiled at test time by glslangValidator and clang-15 + llvm-spirv-15.

The compilers are the oracles: glslangValidator's own reflection (``-q``) for
Vulkan block sizes and offsets, and OpenCL C ``sizeof``/``offsetof`` smuggled
out through ``reqd_work_group_size`` for the OpenCL C ABI layout. The tools are
installed by ``make setup``; a missing tool fails these tests, it does not
skip them.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from accelcore import ErrorKind
from accelcore.kernels.spirv import Flavour, SpirvModule, SpirvType, inspect_spirv
from accelcore.testing.pytest_support import RaisesKind


def require(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed; `make setup` installs it")
    return path


def run(*command: str, cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}"
    return done.stdout + done.stderr


def glsl(tmp_path: Path, source: str, env: str = "vulkan1.1") -> tuple[SpirvModule, str]:
    """Compile with glslangValidator; returns the inspection and glslang's own reflection text (-q)."""
    (tmp_path / "shader.comp").write_text(source)
    reflection = run(
        require("glslangValidator"), "-V", "-q", "--target-env", env, "-o", "shader.spv", "shader.comp", cwd=tmp_path
    )
    return inspect_spirv((tmp_path / "shader.spv").read_bytes()), reflection


def opencl(tmp_path: Path, source: str, *flags: str) -> SpirvModule:
    """OpenCL C → LLVM bitcode (clang-15, the corpus flags) → SPIR-V (llvm-spirv-15)."""
    (tmp_path / "k.cl").write_text(source)
    run(
        require("clang-15"), "-c", "-target", "spir64", "-cl-std=CL1.2", "-O0", "-Xclang",
        "-finclude-default-header", *flags, "-emit-llvm", "-o", "k.bc", "k.cl", cwd=tmp_path,
    )  # fmt: skip
    run(require("llvm-spirv-15"), "k.bc", "-o", "k.spv", cwd=tmp_path)
    run(require("spirv-val"), "k.spv", cwd=tmp_path)
    return inspect_spirv((tmp_path / "k.spv").read_bytes())


def assemble(tmp_path: Path, source: str, env: str) -> SpirvModule:
    (tmp_path / "m.spvasm").write_text(source)
    run(require("spirv-as"), "--target-env", env, "-o", "m.spv", "m.spvasm", cwd=tmp_path)
    return inspect_spirv((tmp_path / "m.spv").read_bytes())


def glslang_blocks(reflection: str) -> dict[str, int]:
    """Block name → size from glslangValidator -q's "Uniform block reflection" section."""
    section = reflection.split("Uniform block reflection:")[1].split("reflection:")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+): offset -?\d+, type \w+, size (\d+)", section, re.M)}


def glslang_offsets(reflection: str) -> dict[str, int]:
    """ "Block.member" → offset from glslangValidator -q's "Uniform reflection" section."""
    section = reflection.split("Uniform reflection:")[1].split("Uniform block reflection:")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^([\w.]+): offset (\d+),", section, re.M)}


def scalar(t: SpirvType) -> tuple[str, int, bool]:
    return (t.kind, t.width, t.signed)


# --------------------------------------------------------------------------- Vulkan (glslangValidator)

GLSL_REFLECT = """
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 32, local_size_x_id = 0, local_size_y = 4, local_size_z_id = 7) in;
layout(constant_id = 1) const float A = 1.0;
layout(constant_id = 2) const bool B = true;
layout(constant_id = 3) const int C = -5;
layout(constant_id = 4) const bool F = false;
layout(constant_id = 5) const int64_t L = -7;
layout(constant_id = 6) const double D = 2.5;
layout(constant_id = 8) const uint16_t H = 0xBEEFus;
layout(push_constant) uniform P { float a; uint n; vec4 v; float arr[3]; mat3 m; } p;
layout(std140, set = 1, binding = 2) uniform U { vec3 scale; mat2 rot; layout(row_major) mat2x3 rm; float after; } u;
layout(std140, set = 1, binding = 4) uniform R { layout(row_major) mat2x3 last; } r;
layout(std430, set = 0, binding = 0) buffer Data { float values[]; } data;
layout(set = 1, binding = 3) uniform sampler2D textures[4];
void main() {
    uint i = gl_GlobalInvocationID.x;
    float extra = float(C) + float(L) + float(D) + float(H) + (F ? 1.0 : 0.0) + texture(textures[1], vec2(0.5)).x;
    if (B) {
        data.values[i] = p.a * A + p.v.x + p.arr[1] + float(p.n) + p.m[0][0]
            + u.scale.y + u.rot[1][0] + u.rm[1][2] + u.after + r.last[0][1] + extra;
    }
}
"""


@pytest.fixture(scope="module")
def reflected(tmp_path_factory: pytest.TempPathFactory) -> tuple[SpirvModule, str]:
    return glsl(tmp_path_factory.mktemp("reflect"), GLSL_REFLECT)


def test_push_constant_block(reflected: tuple[SpirvModule, str]) -> None:
    found, reflection = reflected
    block = found.push_constant_block
    assert block is not None
    assert (block.type_name, block.variable_name, block.size) == ("P", "p", 96)
    assert found.push_constant_bytes == 96 == glslang_blocks(reflection)["P"]
    offsets = glslang_offsets(reflection)
    assert [(m.name, m.offset) for m in block.members] == [(n, offsets[f"P.{n}"]) for n in ("a", "n", "v", "arr", "m")]
    a, n, v, arr, m = (member.type for member in block.members)
    assert scalar(a) == ("float", 32, False) and a.size == 4
    assert scalar(n) == ("int", 32, False) and n.size == 4
    assert (v.kind, v.count, v.size, v.component) == ("vector", 4, 16, a)
    assert v.component is a  # one shared object per type id
    assert (arr.kind, arr.count, arr.stride, arr.size, arr.component) == ("array", 3, 4, 12, a)
    assert (m.kind, m.count, block.members[4].matrix_stride, block.members[4].row_major) == ("matrix", 3, 16, False)
    assert m.component is not None and (m.component.kind, m.component.count) == ("vector", 3)
    assert block.type is found.push_constant_block.type and block.members == block.type.members


def test_uniform_block_descriptor_type(reflected: tuple[SpirvModule, str]) -> None:
    found, reflection = reflected
    uniform = found.descriptor(2, set=1)
    assert uniform is not None and uniform.descriptor_type == "uniform_buffer"
    assert (uniform.name, uniform.block_name) == ("u", "U")
    assert uniform.type is not None and uniform.type.kind == "struct"
    assert uniform.type.size == glslang_blocks(reflection)["U"] == 100
    offsets = glslang_offsets(reflection)
    members = uniform.type.members
    names = ("scale", "rot", "rm", "after")
    assert [(m.name, m.offset) for m in members] == [(n, offsets[f"U.{n}"]) for n in names]
    assert [(m.matrix_stride, m.row_major) for m in members] == [(None, False), (16, False), (16, True), (None, False)]
    # A row-major mat2x3 is 3 rows of MatrixStride 16: glslang's own Offsets put `after` 48 bytes past `rm`.
    # (glslang -q reports block R, where it is last, as 32 bytes, sizing it as 2 columns; its layout says 48.)
    assert offsets["U.after"] - offsets["U.rm"] == 48
    row_major = found.descriptor(4, set=1)
    assert row_major is not None and row_major.type is not None and row_major.type.size == 48
    assert glslang_blocks(reflection)["R"] == 32
    storage = found.descriptor(0)
    assert storage is not None and (storage.block_name, storage.name) == ("Data", "data")
    assert storage.type is not None and storage.type.size is None  # a runtime array has no size
    (values,) = storage.type.members
    assert (values.name, values.type.kind, values.type.stride, values.type.count) == (
        "values",
        "runtime_array",
        4,
        None,
    )
    textures = found.descriptor(3, set=1)
    assert textures is not None and textures.count == 4 and textures.block_name is None
    assert textures.type is not None and textures.type.kind == "other"


def test_spec_constants(reflected: tuple[SpirvModule, str]) -> None:
    found, _ = reflected
    table = {c.spec_id: (c.name, scalar(c.type), c.default, c.value) for c in found.spec_constants}
    assert table == {
        0: (None, ("int", 32, False), struct.pack("<I", 32), 32),  # local_size_x_id: glslang names it nothing
        1: ("A", ("float", 32, False), struct.pack("<f", 1.0), 1.0),
        2: ("B", ("bool", 0, False), struct.pack("<I", 1), True),
        3: ("C", ("int", 32, True), struct.pack("<i", -5), -5),
        4: ("F", ("bool", 0, False), struct.pack("<I", 0), False),
        5: ("L", ("int", 64, True), struct.pack("<q", -7), -7),
        6: ("D", ("float", 64, False), struct.pack("<d", 2.5), 2.5),
        7: (None, ("int", 32, False), struct.pack("<I", 1), 1),
        8: ("H", ("int", 16, False), struct.pack("<H", 0xBEEF), 0xBEEF),
    }
    assert [c.spec_id for c in found.spec_constants] == sorted(table)
    constant = found.spec_constant(1)
    assert constant is not None and constant.name == "A" and found.spec_constant(99) is None


def test_local_size_spec_ids(reflected: tuple[SpirvModule, str]) -> None:
    found, _ = reflected
    (entry,) = found.compute_entry_points()
    assert entry.local_size == (32, 4, 1)
    assert entry.local_size_spec_ids == (0, None, 7)


def test_plain_local_size_has_no_spec_ids(tmp_path: Path) -> None:
    found, _ = glsl(tmp_path, "#version 450\nlayout(local_size_x = 8) in;\nvoid main() {}\n")
    (entry,) = found.compute_entry_points()
    assert (entry.local_size, entry.local_size_spec_ids) == ((8, 1, 1), (None, None, None))
    assert found.spec_constants == () and found.push_constant_block is None and found.push_constant_bytes == 0


ASM_LOCAL_SIZE_ID = """
OpCapability Shader
OpCapability Int64
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionModeId %main LocalSizeId %x %c2 %z
OpName %big "big"
OpDecorate %x SpecId 3
OpDecorate %big SpecId 9
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%ulong = OpTypeInt 64 0
%x = OpSpecConstant %uint 16
%c2 = OpConstant %uint 2
%z = OpSpecConstant %uint 4
%big = OpSpecConstant %ulong 0x1122334455667788
%main = OpFunction %void None %fn
%l = OpLabel
OpReturn
OpFunctionEnd
"""


def test_local_size_id_spec_ids_and_64_bit_literals(tmp_path: Path) -> None:
    found = assemble(tmp_path, ASM_LOCAL_SIZE_ID, "spv1.5")
    entry = found.entry_point("main")
    assert entry.local_size == (16, 2, 4)
    assert entry.local_size_spec_ids == (3, None, None)  # %z is a spec constant but has no SpecId
    big = found.spec_constant(9)
    assert big is not None and big.name == "big"
    assert big.default == struct.pack("<Q", 0x1122334455667788) and big.value == 0x1122334455667788


def spec_module(type_line: str, constant_line: str) -> bytes:
    """A minimal shader with one SpecId 0 constant (words, so malformed ones can be built)."""

    def op(opcode: int, *operands: int) -> list[int]:
        return [((len(operands) + 1) << 16) | opcode, *operands]

    types = {"uint32": op(21, 9, 32, 0), "float32": op(22, 9, 32), "bool": op(20, 9), "vec": op(23, 9, 8, 2)}
    constants = {
        "one-word": op(50, 9, 10, 7),
        "two-words": op(50, 9, 10, 7, 0),
        "true": op(48, 9, 10),
    }
    body = [
        op(17, 1),
        op(14, 0, 1),
        op(15, 5, 4, *struct.unpack("<2I", b"main\0\0\0\0")),
        op(71, 10, 1, 0),  # OpDecorate %10 SpecId 0
        op(21, 8, 32, 0),
        types[type_line],
        constants[constant_line],
        op(19, 2),
        op(33, 3, 2),
        op(54, 2, 4, 0, 3),
        op(248, 5),
        op(253),
        op(56),
    ]
    words = [w for ins in body for w in ins]
    return struct.pack(f"<{5 + len(words)}I", 0x07230203, 0x00010300, 0, 20, 0, *words)


@pytest.mark.parametrize(
    ("type_line", "constant_line", "match"),
    [
        ("uint32", "two-words", "2 literal words; a 32-bit value needs 1"),
        ("bool", "one-word", "not an 8/16/32/64-bit int or float"),
        ("vec", "one-word", "not an 8/16/32/64-bit int or float"),
        ("uint32", "true", "non-bool type"),
    ],
)
def test_malformed_spec_constants_are_invalid_argument(
    type_line: str, constant_line: str, match: str, raises_kind: RaisesKind
) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=match):
        inspect_spirv(spec_module(type_line, constant_line))


def test_well_formed_spec_module_builder() -> None:
    (constant,) = inspect_spirv(spec_module("float32", "one-word")).spec_constants
    assert (constant.spec_id, constant.id, scalar(constant.type)) == (0, 10, ("float", 32, False))
    assert constant.default == struct.pack("<I", 7)


# --------------------------------------------------------------------------- OpenCL (clang-15 + llvm-spirv-15)

SAXPY = """
__kernel void saxpy(const float a, __global const float* x, __global float* y, const int n, __local float* tmp) {
    size_t i = get_global_id(0);
    tmp[get_local_id(0)] = x[i];
    if (i < n) y[i] = a * tmp[get_local_id(0)] + y[i];
}
"""


def test_opencl_parameter_names_and_types(tmp_path: Path) -> None:
    found = opencl(tmp_path, SAXPY, "-cl-kernel-arg-info")
    assert found.flavour is Flavour.OPENCL
    params = found.entry_point("saxpy").parameters
    assert [p.name for p in params] == ["a", "x", "y", "n", "tmp"]
    assert [p.storage_class for p in params] == [None, 5, 5, None, 4]
    assert [p.value_bytes for p in params] == [4, 4, 4, 4, 4]
    assert [p.byval for p in params] == [False] * 5
    types = [p.type for p in params]
    assert all(t is not None for t in types)
    # OpenCL SPIR-V integers carry no signedness: `int n` is a 32-bit int with signedness 0.
    assert [scalar(t) for t in types if t is not None] == [("float", 32, False)] * 3 + [
        ("int", 32, False),
        ("float", 32, False),
    ]
    assert types[0] is types[1]  # the float by value and the pointee of x are one shared type
    assert found.recursive_functions == ()


def test_opencl_parameter_names_need_kernel_arg_info(tmp_path: Path) -> None:
    # Without -cl-kernel-arg-info (or -fno-discard-value-names) clang drops the names before llvm-spirv sees them.
    found = opencl(tmp_path, SAXPY)
    assert [p.name for p in found.entry_point("saxpy").parameters] == [None] * 5


LAYOUT = """
typedef struct { char c; short s; } Small;
typedef struct { char a; float3 v; Small sm[3]; long l; uchar2 u; } Pod;
typedef struct __attribute__((packed)) { char a; int b; short c; } Packed;
__kernel __attribute__((reqd_work_group_size(sizeof(Pod), __builtin_offsetof(Pod, l), sizeof(Packed))))
void layout(Pod p, Packed q, float3 v, __global float3* out) { out[0] = p.v + v + (float)(p.l + p.sm[1].s + q.b); }
"""


def test_opencl_by_value_structs_follow_the_c_abi(tmp_path: Path) -> None:
    found = opencl(tmp_path, LAYOUT, "-cl-kernel-arg-info")
    entry = found.entry_point("layout")
    assert entry.local_size is not None
    pod_size, l_offset, packed_size = entry.local_size  # clang's sizeof/offsetof, via reqd_work_group_size
    assert (pod_size, l_offset, packed_size) == (64, 48, 7)
    pod, packed, vector, out = entry.parameters
    assert (pod.name, pod.byval, pod.storage_class, pod.value_bytes) == ("p", True, 7, pod_size)
    assert (packed.name, packed.byval, packed.value_bytes) == ("q", True, packed_size)
    assert pod.type is not None and packed.type is not None
    offsets = [m.offset for m in pod.type.members]
    assert offsets == [0, 16, 32, 48, 56]
    assert scalar(pod.type.members[offsets.index(l_offset)].type) == ("int", 64, False)
    small = pod.type.members[2].type
    assert (small.kind, small.count, small.size) == ("array", 3, 12)  # Small is 4 bytes, short-aligned
    assert [m.offset for m in packed.type.members] == [0, 1, 5]  # CPacked: no padding
    assert (vector.value_bytes, out.value_bytes) == (16, 16)  # float3 is sized and aligned as float4
    assert vector.type is not None and vector.type.count == 3
