"""pack_module with kernel arguments: by-value and __local OpenCL arguments, push-constant members,
specialization constants, uniform buffers and sets, global sizes — typed from the declaration,
refused naming the argument when they do not match. Modules are compiled from source at test time."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from accelcore import AccessMode, ErrorKind
from accelcore.kernels.pack import TypedValue, pack_module
from accelcore.kernels.package import ANY_LOCAL_SIZE, Coverage, DescriptorType, Dispatch, DispatchKind, KernelArgument
from accelcore.kernels.package_codec import parse_package, write_package
from accelcore.kernels.values import ScalarType, ValueType
from accelcore.testing.pytest_support import RaisesKind

from .conftest import run_tool

SAXPY = b"""
__kernel void saxpy(const float a, __global const float *x, __global float *y, const int n, __local float *tmp)
{
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
POLYBENCH = b"""
#define DATA_TYPE float
__kernel void gemm(__global DATA_TYPE *a, __global DATA_TYPE *b, __global DATA_TYPE *c,
                   DATA_TYPE alpha, DATA_TYPE beta, int ni, int nj, int nk) { }
__kernel void typed(__global REAL *out, REAL s, float4 v, size_t count) { }
"""
F32, I32 = ValueType(ScalarType.F32), ValueType(ScalarType.I32)


def test_opencl_values_by_name_are_typed_from_the_declaration() -> None:
    pkg = pack_module(SAXPY, arguments={"a": 2.5, "n": "1024"}, local_memory={"tmp": 1024}, global_size=1024)
    assert pkg.local_size == ANY_LOCAL_SIZE
    assert pkg.dispatch == Dispatch.global_items(1024)
    assert pkg.arguments == (
        KernelArgument.value(0, F32, struct.pack("<f", 2.5)),
        KernelArgument.value(3, I32, struct.pack("<i", 1024)),
        KernelArgument.local(4, 1024),
    )
    assert [(b.slot, b.access) for b in pkg.bindings] == [(1, AccessMode.READ), (2, AccessMode.READ_WRITE)]
    assert parse_package(write_package(pkg)) == pkg
    # Indices, explicit matching types, numpy scalars of the declared dtype all work.
    same = pack_module(
        SAXPY,
        arguments={0: "f32:2.5", "3": np.int32(1024)},
        local_memory={4: 1024},
        global_size=1024,
    )
    assert same.arguments == pkg.arguments


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"a": "i32:2", "n": 1}, r"argument a \(const float a\) declares f32 but was given i32:2"),
        ({"a": 2.5, "n": 2.5}, r"argument n \(const int n\) declares i32 but was given float 2\.5"),
        ({"a": 2.5, "n": "2.5"}, r"argument n .*not an integer \(an integer type takes no fraction\)"),
        ({"a": np.float64(2.5), "n": 1}, r"numpy float64"),
        ({"a": 2.5}, r"argument 3 \(const int n\) is by value and has no value"),
        ({"a": 2.5, "n": 1, "b": 1}, r"no kernel argument 'b' \(it has: 0 \(a\), 1 \(x\)"),
        ({"a": 2.5, "n": 1, "x": 1}, r"names argument 1 \(__global const float \*x\), which is a buffer"),
        ({"a": 2.5, "n": 2**31}, r"outside -2147483648\.\.2147483647"),
        ({"a": 1e39, "n": 1}, r"finite range"),
    ],
)
def test_opencl_value_mismatches_are_refused(arguments: dict[str, object], match: str, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=match):
        pack_module(SAXPY, arguments=arguments, local_memory={"tmp": 64}, global_size=64)


def test_local_memory_and_count_argument_rules(raises_kind: RaisesKind) -> None:
    with raises_kind(
        ErrorKind.INVALID_ARGUMENT, match=r"argument 4 \(__local float \*tmp\) is a __local pointer without"
    ):
        pack_module(SAXPY, arguments={"a": 1, "n": 1}, global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="local_memory= names argument 0 .*not a __local"):
        pack_module(SAXPY, arguments={"n": 1}, local_memory={"a": 4, "tmp": 4}, global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="declared f32; the element count is a 32-bit integer"):
        pack_module(
            SAXPY,
            arguments={"n": 1},
            local_memory={"tmp": 4},
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=2),
            count_argument="a",
        )
    counted = pack_module(
        SAXPY,
        arguments={"a": 1.0},
        local_memory={"tmp": 4},
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=2),
        count_argument="n",
    )
    assert counted.dispatch.count_argument == 3
    assert [a.index for a in counted.arguments] == [0, 4]


def test_macros_from_the_source_and_the_build_options(raises_kind: RaisesKind) -> None:
    args = {"alpha": 1.5, "beta": 0.5, "ni": 64, "nj": 64, "nk": 64}
    pkg = pack_module(POLYBENCH, entry_point="gemm", arguments=args, global_size=(64, 64))
    assert pkg.dispatch.global_size == (64, 64, 1)
    assert pkg.arguments[0] == KernelArgument.value(3, F32, struct.pack("<f", 1.5))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="cannot tell the element size"):
        pack_module(
            POLYBENCH, entry_point="typed", arguments={"s": "f32:1", "v": [1, 2, 3, 4], "count": "u64:1"}, global_size=4
        )
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=r"cannot tell the type of argument s \(REAL s\)"):
        pack_module(POLYBENCH, entry_point="typed", arguments={"s": 1.0}, global_size=4)
    typed = pack_module(
        POLYBENCH,
        entry_point="typed",
        build_options="-DREAL=double",
        arguments={"s": 1.0, "v": [1, 2, 3, 4], "count": "u64:7"},
        global_size=4,
    )
    assert [str(a.value_type) for a in typed.arguments] == ["f64", "f32x4", "u64"]
    sized = pack_module(  # Clang knows size_t: 64 bits on the SPIR64 target every device here reports
        POLYBENCH,
        entry_point="typed",
        build_options="-D REAL=float",
        arguments={"s": 1, "v": [1, 2, 3, 4], "count": 7},
        global_size=4,
    )
    assert [str(a.value_type) for a in sized.arguments] == ["f32", "f32x4", "u64"]


def test_binary_arguments_need_explicit_types(raises_kind: RaisesKind) -> None:
    rows = pack_module(SAXPY, arguments={"a": 1, "n": 1}, local_memory={"tmp": 4}, global_size=4).bindings
    pkg = pack_module(
        b"poclbin\x00\x01",
        entry_point="saxpy",
        bindings=rows,
        global_size=4,
        arguments={0: TypedValue(F32, 2.5), 3: "i32:4"},
        local_memory={4: 16},
    )
    assert [a.index for a in pkg.arguments] == [0, 3, 4]
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="write the value as TYPE:VALUE"):
        pack_module(b"poclbin\x00\x01", entry_point="saxpy", bindings=rows, global_size=4, arguments={0: 2.5})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="has no argument names"):
        pack_module(b"poclbin\x00\x01", entry_point="saxpy", bindings=rows, global_size=4, arguments={"a": "f32:1"})


# --------------------------------------------------------------------------- Vulkan

SAXPY_PC = """#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform Params { float a; uint n; vec3 v; float w[3]; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = p.a * x[i] + y[i] + p.v.x + p.w[2]; }
"""
COUNTED = """#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform Params { uint count; float scale; } p;
layout(set = 0, binding = 0) buffer Y { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.count) y[i] *= p.scale; }
"""
PARTICLES = """#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const float DT = 0.5;
layout(constant_id = 2) const bool DAMP = true;
layout(constant_id = 3) const int STEPS = 1;
layout(set = 0, binding = 0) uniform Params { float gravity; uint count; } params;
layout(set = 1, binding = 0) buffer Pos { vec4 pos[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < params.count) pos[i].y += DT * params.gravity * float(STEPS) * (DAMP ? 0.5 : 1.0);
}
"""


def compile_glsl(tmp_path: Path, tool: object, text: str, name: str = "k") -> bytes:
    source = tmp_path / f"{name}.comp"
    source.write_text(text)
    out = tmp_path / f"{name}.spv"
    run_tool(tool("glslangValidator"), "--target-env", "vulkan1.1", "-o", str(out), str(source))  # type: ignore[operator]
    return out.read_bytes()


def test_push_constant_members_by_name(tmp_path: Path, tool: object, raises_kind: RaisesKind) -> None:
    spv = compile_glsl(tmp_path, tool, SAXPY_PC)
    pkg = pack_module(spv, push_constants={"a": 2.5, "n": 1024, "v": "1,2,3", "w": [4, 5, 6]}, global_size=1024)
    block = pkg.push_constants
    assert len(block) % 4 == 0
    assert struct.unpack_from("<fI", block, 0) == (2.5, 1024)
    assert struct.unpack_from("<3f", block, 16) == (1.0, 2.0, 3.0)  # vec3 at its std430 offset 16
    assert pkg.version == 2 and parse_package(write_package(pkg)) == pkg
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=r"push constant member n \(u32 at offset 4\) has no value"):
        pack_module(spv, push_constants={"a": 2.5, "v": "1,2,3", "w": [4, 5, 6]}, global_size=64)
    with raises_kind(
        ErrorKind.INVALID_ARGUMENT, match=r"push constant member n \(u32\) declares u32 but was given f32:1"
    ):
        pack_module(spv, push_constants={"a": 2.5, "n": "f32:1", "v": "1,2,3", "w": [4, 5, 6]}, global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=r"declares f32\[3\] \(3 values\) but was given 2"):
        pack_module(spv, push_constants={"a": 2.5, "n": 1, "v": "1,2,3", "w": [4, 5]}, global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="no push constant member 'm'"):
        pack_module(spv, push_constants={"m": 1}, global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="push_constants= is 8 bytes"):
        pack_module(spv, push_constants=b"\0" * 8, global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="the module reads a push-constant block"):
        pack_module(spv, global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="where the module has a \\(f32\\); the count must be"):
        pack_module(spv, dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=0))


def test_count_at_push_offset_zero(tmp_path: Path, tool: object) -> None:
    spv = compile_glsl(tmp_path, tool, COUNTED)
    pkg = pack_module(
        spv, push_constants={"scale": 3.0}, dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0), count_argument="count"
    )
    assert pkg.dispatch.count_argument == 0
    assert struct.unpack("<If", pkg.push_constants) == (0, 3.0)


def test_spec_constants_uniform_buffers_and_sets(tmp_path: Path, tool: object, raises_kind: RaisesKind) -> None:
    spv = compile_glsl(tmp_path, tool, PARTICLES)
    pkg = pack_module(spv, spec_constants={0: 256, "DT": "f32:0.01", "DAMP": False}, global_size=1024)
    assert pkg.local_size == (256, 1, 1)
    specs = {s.spec_id: (str(s.value_type), s.data) for s in pkg.spec_constants}
    assert specs == {
        0: ("u32", struct.pack("<I", 256)),
        1: ("f32", struct.pack("<f", 0.01)),
        2: ("bool", struct.pack("<I", 0)),
    }
    rows = {(b.set, b.native_index): b for b in pkg.bindings}
    assert rows[(0, 0)].descriptor_type is DescriptorType.UNIFORM_BUFFER and rows[(0, 0)].access is AccessMode.READ
    assert rows[(1, 0)].descriptor_type is DescriptorType.STORAGE_BUFFER and rows[(1, 0)].element_size == 16
    assert len({b.slot for b in pkg.bindings}) == 2
    assert parse_package(write_package(pkg)) == pkg
    # Unset constants keep the module's default; --local-size sets the work-group size constant.
    default = pack_module(spv, global_size=64)
    assert default.spec_constants == () and default.local_size == (1, 1, 1)
    sized = pack_module(spv, local_size=(32, 1, 1), global_size=64)
    assert sized.local_size == (32, 1, 1) and sized.spec_constants[0].spec_id == 0
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="contradicts the module's work-group size"):
        pack_module(spv, spec_constants={0: 64}, local_size=(32, 1, 1), global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=r"no specialization constant 9 \(it has: 0, 1 \(DT\)"):
        pack_module(spv, spec_constants={9: 1}, global_size=64)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=r"STEPS \(SpecId 3\) \(i32\) declares i32 but was given float"):
        pack_module(spv, spec_constants={"STEPS": 1.5}, global_size=64)


def test_coverage_keyword(tmp_path: Path, tool: object, raises_kind: RaisesKind) -> None:
    pkg = pack_module(
        SAXPY,
        arguments={"a": 1, "n": 1},
        local_memory={"tmp": 4},
        global_size=64,
        coverage={1: Coverage.PER_WORK_ITEM, 2: 64},
    )
    assert [(b.coverage, b.coverage_elements) for b in pkg.bindings] == [
        (Coverage.PER_WORK_ITEM, 0),
        (Coverage.EXACT, 64),
    ]
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="coverage= names slot 7"):
        pack_module(SAXPY, arguments={"a": 1, "n": 1}, local_memory={"tmp": 4}, global_size=64, coverage={7: 1})


def test_options_for_the_other_api_are_refused(tmp_path: Path, tool: object, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="push_constants= is for Vulkan modules"):
        pack_module(SAXPY, push_constants={"a": 1}, global_size=4)
    spv = compile_glsl(tmp_path, tool, COUNTED)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="arguments= is for OpenCL modules"):
        pack_module(spv, arguments={"a": 1}, global_size=4)


def test_opencl_spirv_arguments_by_name(tmp_path: Path, tool: object, raises_kind: RaisesKind) -> None:
    """OpenCL SPIR-V (clang + llvm-spirv; names kept with -cl-kernel-arg-info): integers carry no signedness
    there, so an int parameter takes either signedness of its width, but never another width or a float."""
    source = tmp_path / "saxpy.cl"
    source.write_bytes(SAXPY)
    bc, spv = tmp_path / "saxpy.bc", tmp_path / "saxpy.spv"
    run_tool(
        tool("clang-15"),  # type: ignore[operator]
        "-cl-std=CL1.2",
        "-target",
        "spir64",
        "-O0",
        "-cl-kernel-arg-info",
        "-c",
        "-emit-llvm",
        "-o",
        str(bc),
        str(source),
    )
    run_tool(tool("llvm-spirv-15"), "-o", str(spv), str(bc))  # type: ignore[operator]
    data = spv.read_bytes()
    pkg = pack_module(data, arguments={"a": 2.5, "n": -1}, local_memory={"tmp": 64}, global_size=64)
    assert [(a.index, a.data) for a in pkg.arguments[:2]] == [(0, struct.pack("<f", 2.5)), (3, struct.pack("<i", -1))]
    for text in ("i32:5", "u32:5", "5"):
        assert pack_module(data, arguments={"a": 1, "n": text}, local_memory={"tmp": 4}, global_size=4).arguments[
            1
        ].data == (struct.pack("<I", 5))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="declares u32 but was given f32"):
        pack_module(data, arguments={"a": 1, "n": "f32:5"}, local_memory={"tmp": 4}, global_size=4)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="declares u32 but was given i64"):
        pack_module(data, arguments={"a": 1, "n": "i64:5"}, local_memory={"tmp": 4}, global_size=4)
