"""The argument kernels of the corpus: files and manifest, packages for recorded and other values,
numpy references (checked against f32 models of each kernel and, for OpenCL C, a real driver)."""

from __future__ import annotations

import json
import struct
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accelcore import AccessMode, ErrorKind, TargetIdentity
from accelcore.conformance.corpus import (
    ARGUMENT_KERNELS,
    KERNELS,
    SENTINEL,
    ArgumentKernelSpec,
    KernelCase,
    argument_case,
    argument_package,
    argument_spec,
    argument_values,
    compare,
    corpus_root,
    gemm_ulp_tolerance,
    kernel_spec,
    load_module,
    load_package,
    make_case,
    module_path,
    package_path,
    particles_ulp_tolerance,
)
from accelcore.kernels.package import (
    ANY_LOCAL_SIZE,
    ArgumentKind,
    Coverage,
    DescriptorType,
    DispatchKind,
    KernelPackage,
    ModuleKind,
)
from accelcore.kernels.package_codec import parse_package, validate_package, write_package
from accelcore.kernels.values import decode_value
from accelcore.testing.pytest_support import RaisesKind

from .conftest import opencl_devices, run_tool

ROOT = corpus_root()
MANIFEST = json.loads((ROOT / "manifest.json").read_text())
OUTPUTS = {entry["path"]: entry for entry in MANIFEST["outputs"]}
SUFFIX = {ModuleKind.SPIRV_VULKAN: "vk.spv", ModuleKind.OPENCL_SOURCE: "cl"}
SHIPPED = [(kernel, kind) for kernel in ARGUMENT_KERNELS for kind in argument_spec(kernel).kinds]
OPENCL_KERNELS = [k for k in ARGUMENT_KERNELS if ModuleKind.OPENCL_SOURCE in argument_spec(k).kinds]

OTHER_VALUES: dict[str, dict[str, int | float]] = {
    "saxpy_args": {"a": -1.25, "n": 1000, "global_size": 1024},
    "reduce_local": {"n": 1000, "group_size": 128},
    "gemm": {"alpha": 0.3, "beta": -1.7, "ni": 33, "nj": 47, "nk": 29},
    "saxpy_pc": {"a": 0.1, "n": 77},
    "particles": {"count": 300, "gravity": -9.81, "DT": 0.016, "local_size": 32},
    "transpose_tile": {"width": 17, "height": 33},
}
"""Values unlike the recorded ones (sizes off the tile/group multiples, inexact floats)."""


def shipped_id(item: tuple[str, ModuleKind]) -> str:
    return f"{item[0]}.{SUFFIX[item[1]]}"


# --------------------------------------------------------------------------- files, manifest, packages


def test_the_collections_are_separate() -> None:
    assert len(ARGUMENT_KERNELS) == 6
    assert not set(KERNELS) & set(ARGUMENT_KERNELS)
    assert KERNELS == ("conformance", "saxpy", "intops", "reduce", "histogram", "matmul", "spin")
    for kernel in ARGUMENT_KERNELS:
        spec = argument_spec(kernel)
        assert isinstance(spec, ArgumentKernelSpec) and len(spec.kinds) == 1
        assert set(spec.defaults) | set(spec.optional) == set(spec.knobs)


@pytest.mark.parametrize("item", SHIPPED, ids=shipped_id)
def test_manifest_lists_source_module_and_package(item: tuple[str, ModuleKind]) -> None:
    kernel, kind = item
    package = f"packages/{kernel}.{SUFFIX[kind]}.kpkg"
    assert package in OUTPUTS
    if kind is ModuleKind.SPIRV_VULKAN:
        source = f"src/glsl/{kernel}.comp"
        module = OUTPUTS[f"spirv/{kernel}.vk.spv"]
        assert module["commands"] == [f"glslangValidator -V --target-env vulkan1.1 -o spirv/{kernel}.vk.spv {source}"]
        assert module["sources"][0]["path"] == source
        assert not (ROOT / "src" / "opencl" / f"{kernel}.cl").exists()
    else:
        source = f"src/opencl/{kernel}.cl"
        assert f"spirv/{kernel}.cl.spv" not in OUTPUTS and f"spirv/{kernel}.vk.spv" not in OUTPUTS
        assert not (ROOT / "src" / "glsl" / f"{kernel}.comp").exists()
    assert (ROOT / source).is_file()
    entry = OUTPUTS[package]
    assert entry["commands"] == [f"python ../tools/build_artifacts.py --package {kernel} {kind.name}"]
    recorded = entry["package"]
    pkg = parse_package(load_package(kernel, kind))
    assert recorded["values"] == argument_values(kernel)
    assert recorded["module_kind"] == kind.name and recorded["entry_point"] == pkg.entry_point
    assert recorded["format_version"] == pkg.version == 2
    assert recorded["local_size"] == list(pkg.local_size)
    assert [(b["slot"], b["set"], b["native_index"], b["access"]) for b in recorded["bindings"]] == [
        (b.slot, b.set, b.native_index, b.access.name) for b in pkg.bindings
    ]
    assert recorded["push_constants"] == pkg.push_constants.hex()
    assert [a["index"] for a in recorded["arguments"]] == [a.index for a in pkg.arguments]


@pytest.mark.parametrize("item", SHIPPED, ids=shipped_id)
def test_committed_package_is_the_recorded_values_packed(item: tuple[str, ModuleKind]) -> None:
    kernel, kind = item
    spec = argument_spec(kernel)
    raw = load_package(kernel, kind)
    assert raw == package_path(kernel, kind).read_bytes()
    pkg = argument_package(kernel)
    assert write_package(pkg) == raw == write_package(argument_package(kernel, kind, dict(spec.defaults)))
    assert parse_package(raw) == pkg
    validate_package(pkg)
    assert pkg.module == load_module(kernel, kind) == module_path(kernel, kind).read_bytes()
    assert pkg.module_kind is kind and pkg.entry_point == spec.entry_point
    assert pkg.target == TargetIdentity.any() and pkg.dispatch.kind is DispatchKind.GLOBAL
    case = argument_case(kernel)
    assert set(case.initial) == {b.slot for b in pkg.bindings}
    for binding in pkg.bindings:
        assert binding.coverage is Coverage.EXACT
        assert case.initial[binding.slot].nbytes >= binding.coverage_elements * binding.element_size
        if binding.access is AccessMode.WRITE:
            assert np.all(case.initial[binding.slot].view(np.uint32) == SENTINEL)


def decoded_arguments(pkg: KernelPackage) -> dict[int, object]:
    out: dict[int, object] = {}
    for argument in pkg.arguments:
        if argument.kind is ArgumentKind.LOCAL:
            out[argument.index] = ("local", argument.local_bytes)
        else:
            assert argument.value_type is not None
            out[argument.index] = (str(argument.value_type), decode_value(argument.value_type, argument.data))
    return out


def test_recorded_package_fields() -> None:
    saxpy = argument_package("saxpy_args")
    assert decoded_arguments(saxpy) == {0: ("f32", 2.5), 3: ("i32", 1024)}
    assert saxpy.local_size == ANY_LOCAL_SIZE and saxpy.dispatch.global_size == (1024, 1, 1)
    assert [(b.slot, b.access, b.coverage_elements) for b in saxpy.bindings] == [
        (1, AccessMode.READ, 1024),
        (2, AccessMode.READ_WRITE, 1024),
    ]
    reduce = argument_package("reduce_local")
    assert decoded_arguments(reduce) == {2: ("local", 256), 3: ("i32", 1024)}
    assert reduce.local_size == (64, 1, 1) and reduce.dispatch.global_size == (1024, 1, 1)
    gemm = argument_package("gemm")
    assert decoded_arguments(gemm) == {3: ("f32", 1.5), 4: ("f32", 0.5), 5: ("i32", 64), 6: ("i32", 48), 7: ("i32", 40)}
    assert gemm.local_size == (32, 8, 1) and gemm.dispatch.global_size == (64, 64, 1)
    assert [b.access for b in gemm.bindings] == [AccessMode.READ_WRITE] * 3  # PolyBench declares no const
    pc = argument_package("saxpy_pc")
    assert struct.unpack("<fI", pc.push_constants) == (2.5, 1024) and pc.local_size == (64, 1, 1)
    particles = argument_package("particles")
    assert particles.local_size == (64, 1, 1)
    assert [(s.spec_id, str(s.value_type), s.data) for s in particles.spec_constants] == [
        (0, "u32", struct.pack("<I", 64)),
        (1, "f32", struct.pack("<f", 0.015625)),
    ]
    ubo, positions, velocities = particles.bindings
    assert (ubo.set, ubo.native_index, ubo.descriptor_type, ubo.access) == (
        0,
        0,
        DescriptorType.UNIFORM_BUFFER,
        AccessMode.READ,
    )
    assert (positions.set, positions.native_index, positions.element_size) == (1, 0, 16)
    assert (velocities.set, velocities.native_index, velocities.element_size) == (1, 1, 16)
    transpose = argument_package("transpose_tile")
    assert transpose.local_size == (16, 16, 1) and transpose.dispatch.global_size == (100, 60, 1)
    assert struct.unpack("<II", transpose.push_constants) == (100, 60)


@pytest.mark.parametrize("kernel", ARGUMENT_KERNELS)
def test_repacking_with_other_values(kernel: str) -> None:
    values = OTHER_VALUES[kernel]
    pkg = argument_package(kernel, values=values)
    assert parse_package(write_package(pkg)) == pkg
    assert write_package(pkg) != load_package(kernel, pkg.module_kind)
    case = argument_case(kernel, values)
    assert set(case.initial) == {b.slot for b in pkg.bindings}
    for binding in pkg.bindings:
        assert case.initial[binding.slot].nbytes >= binding.coverage_elements * binding.element_size


def test_repacked_values_reach_the_package() -> None:
    saxpy = argument_package("saxpy_args", values={"a": -1.25, "n": 1000, "global_size": 1024})
    assert decoded_arguments(saxpy) == {0: ("f32", -1.25), 3: ("i32", 1000)}
    assert saxpy.dispatch.global_size == (1024, 1, 1)
    assert {b.coverage_elements for b in saxpy.bindings} == {1000}
    reduce = argument_package("reduce_local", values={"n": 1000, "group_size": 128})
    assert decoded_arguments(reduce) == {2: ("local", 512), 3: ("i32", 1000)}
    assert reduce.local_size == (128, 1, 1) and reduce.dispatch.global_size == (1024, 1, 1)
    assert [b.coverage_elements for b in reduce.bindings] == [1000, 8]
    gemm = argument_package("gemm", values={"ni": 33, "nj": 47, "nk": 29})
    assert gemm.dispatch.global_size == (64, 40, 1)
    pc = argument_package("saxpy_pc", values={"a": 0.1, "n": 77})
    assert struct.unpack("<fI", pc.push_constants) == (np.float32(0.1), 77)
    particles = argument_package("particles", values={"local_size": 32, "DT": 0.016})
    assert particles.local_size == (32, 1, 1)
    assert particles.spec_constants[1].data == struct.pack("<f", 0.016)


def test_bad_values_are_refused(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="saxpy_args has no value 'b'; it takes: a, n, global_size"):
        argument_package("saxpy_args", values={"b": 1})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=r"n = 0 is outside 1\.\.16777216"):
        argument_case("saxpy_pc", {"n": 0})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="must be an integer"):
        argument_values("gemm", {"ni": 2.0})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="must be an integer"):
        argument_values("gemm", {"ni": True})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="not a finite f32"):
        argument_values("gemm", {"alpha": 1e39})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="must be a number"):
        argument_values("particles", {"DT": "0.1"})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="power of two"):
        argument_package("reduce_local", values={"group_size": 96})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="covers fewer work-items than n"):
        argument_package("saxpy_args", values={"n": 100, "global_size": 64})
    assert argument_values("saxpy_pc", {"a": 0.1})["a"] == float(np.float32(0.1))


def test_kinds_and_names_across_the_collections(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.UNSUPPORTED, match="gemm is written for OPENCL_SOURCE only"):
        load_package("gemm", ModuleKind.SPIRV_VULKAN)
    with raises_kind(ErrorKind.UNSUPPORTED, match="particles is written for SPIRV_VULKAN only"):
        argument_package("particles", ModuleKind.OPENCL_SOURCE)
    with raises_kind(ErrorKind.UNSUPPORTED, match="built per device"):
        module_path("saxpy_pc", ModuleKind.OPENCL_BINARY)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="takes kernel arguments: use argument_spec"):
        make_case("saxpy_args")
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="takes kernel arguments"):
        kernel_spec("gemm")
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="it takes no arguments: use kernel_spec"):
        argument_spec("saxpy")
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="known: conformance.*with arguments: saxpy_args"):
        load_package("nope", ModuleKind.SPIRV_VULKAN)


# --------------------------------------------------------------------------- modules


@pytest.mark.parametrize("kernel", OPENCL_KERNELS)
def test_opencl_sources_compile_to_valid_spirv(kernel: str, tool: Callable[[str], str], tmp_path: Path) -> None:
    """clang-15 (a strict OpenCL C 1.2 front end) and spirv-val accept the OpenCL C kernels (the
    committed Vulkan modules are checked by test_corpus.py's spirv-val test over every output)."""
    bitcode, spv = tmp_path / f"{kernel}.bc", tmp_path / f"{kernel}.spv"
    source = str(module_path(kernel, ModuleKind.OPENCL_SOURCE))
    clang = [tool("clang-15"), "-c", "-target", "spir64", "-cl-std=CL1.2", "-O0", "-Werror"]
    run_tool(*clang, "-Xclang", "-finclude-default-header", "-emit-llvm", "-o", str(bitcode), source)
    run_tool(tool("llvm-spirv-15"), str(bitcode), "-o", str(spv))
    run_tool(tool("spirv-val"), str(spv))


@pytest.mark.parametrize("kernel", [k for k in ARGUMENT_KERNELS if k not in OPENCL_KERNELS])
def test_vulkan_modules_pass_spirv_val(kernel: str, tool: Callable[[str], str]) -> None:
    path = module_path(kernel, ModuleKind.SPIRV_VULKAN)
    run_tool(tool("spirv-val"), "--target-env", "vulkan1.1", str(path))


# --------------------------------------------------------------------------- references


@pytest.mark.parametrize("kernel", ARGUMENT_KERNELS)
def test_cases_are_deterministic_and_seeded(kernel: str) -> None:
    for values in ({}, OTHER_VALUES[kernel]):
        one, again, other = (argument_case(kernel, values, seed) for seed in (1, 1, 2))
        for slot in one.initial:
            assert one.initial_bytes(slot) == again.initial_bytes(slot)
        assert any(one.initial_bytes(s) != other.initial_bytes(s) for s in one.initial)
        for slot, expected in one.expected.items():
            assert compare(one, slot, expected.tobytes()) is None
            wrong = expected.copy().view(np.uint32)
            wrong[len(wrong) // 2] ^= 0x00400000  # far more than any tolerance
            assert compare(one, slot, wrong.tobytes()) is not None
            assert compare(one, slot, expected.tobytes()[:-4]) is not None


def test_tolerances_follow_the_values() -> None:
    assert argument_case("saxpy_args").ulp_tolerance == argument_case("saxpy_pc").ulp_tolerance == 1
    assert argument_case("reduce_local").ulp_tolerance == argument_case("transpose_tile").ulp_tolerance == 0
    assert argument_case("gemm").ulp_tolerance == 0
    assert argument_case("gemm", OTHER_VALUES["gemm"]).ulp_tolerance == 29 + 4
    assert gemm_ulp_tolerance(0.125, -64.0, 256) == 0 and gemm_ulp_tolerance(1.5, 0.5, 257) == 261
    assert argument_case("particles").ulp_tolerance == 0
    assert argument_case("particles", OTHER_VALUES["particles"]).ulp_tolerance == 4
    assert particles_ulp_tolerance(16.0, 1.0) == 0 and particles_ulp_tolerance(16.015625, 1.0) == 4


def test_references_by_hand() -> None:
    saxpy = argument_case("saxpy_args", {"a": -2.0, "n": 5})
    x, y = saxpy.initial[1], saxpy.initial[2]
    assert np.all(x >= 0) and np.all(y <= 0)
    assert [float(v) for v in saxpy.expected[2]] == [float(np.float32(-2.0 * a + b)) for a, b in zip(x, y, strict=True)]
    assert saxpy.elements == 5
    reduce = argument_case("reduce_local", {"n": 130, "group_size": 64})
    values = [float(v) for v in reduce.initial[0]]
    assert [float(v) for v in reduce.expected[1]] == [sum(values[0:64]), sum(values[64:128]), sum(values[128:130])]
    gemm = argument_case("gemm", {"ni": 3, "nj": 2, "nk": 4, "alpha": 2.0, "beta": -1.0})
    a, b, c0 = (gemm.initial[s].astype(np.float64) for s in (0, 1, 2))
    for i in range(3):
        for j in range(2):
            want = -1.0 * c0[i * 2 + j] + sum(2.0 * a[i * 4 + k] * b[k * 2 + j] for k in range(4))
            assert float(gemm.expected[2][i * 2 + j]) == want
    assert gemm.elements == 6
    particles = argument_case("particles", {"count": 3})
    gravity, count = struct.unpack("<fI", particles.initial[0].tobytes())
    assert (gravity, count) == (9.75, 3)
    pos, vel = particles.initial[1].reshape(3, 4), particles.initial[2].reshape(3, 4)
    new_pos, new_vel = particles.expected[1].reshape(3, 4), particles.expected[2].reshape(3, 4)
    dt = 0.015625
    for i in range(3):
        assert new_vel[i, 1] == vel[i, 1] - 9.75 * dt and new_vel[i, 0] == vel[i, 0] and new_vel[i, 3] == vel[i, 3]
        assert list(new_pos[i, :3]) == [pos[i, k] + new_vel[i, k] * dt for k in range(3)]
        assert new_pos[i, 3] == pos[i, 3]
    transpose = argument_case("transpose_tile", {"width": 3, "height": 2})
    src = transpose.initial[0].reshape(2, 3)
    assert transpose.expected[1].reshape(3, 2).tolist() == src.T.tolist()
    assert transpose.elements == 6


# f32 models of each kernel (what a device computes, in the kernel's own order, with and without
# fused multiply-add): the references must accept them within the stated tolerance, bit-exactly
# where the tolerance is 0.


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """f32 fused multiply-add (a*b is exact in f64; the sum is rounded once more than a true FMA,
    which can differ from it only in a double-rounding tie — far inside any stated tolerance)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def mul_add32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32)).astype(np.float32)


def model(kernel: str, pkg: KernelPackage, case: KernelCase, fused: bool) -> dict[int, np.ndarray]:
    mad = fma32 if fused else mul_add32
    f32 = np.float32
    if kernel in ("saxpy_args", "saxpy_pc"):
        if kernel == "saxpy_args":
            x, y = case.initial[1], case.initial[2]
            a = f32(decode_value(pkg.arguments[0].value_type, pkg.arguments[0].data))  # type: ignore[arg-type]
            out_slot = 2
        else:
            x, y = case.initial[0], case.initial[1]
            a = f32(struct.unpack_from("<f", pkg.push_constants)[0])
            out_slot = 1
        return {out_slot: mad(np.full_like(x, a), x, y)}
    if kernel == "reduce_local":
        group = pkg.local_size[0]
        values = case.initial[0]
        groups = -(-values.size // group)
        scratch = np.zeros((groups, group), dtype=np.float32)
        scratch.reshape(-1)[: values.size] = values
        offset = group // 2
        while offset > 0:
            scratch[:, :offset] = scratch[:, :offset] + scratch[:, offset : 2 * offset]
            offset //= 2
        return {1: scratch[:, 0].copy()}
    if kernel == "gemm":
        alpha = f32(decode_value(pkg.arguments[0].value_type, pkg.arguments[0].data))  # type: ignore[arg-type]
        beta = f32(decode_value(pkg.arguments[1].value_type, pkg.arguments[1].data))  # type: ignore[arg-type]
        ni, nj, nk = (int(decode_value(a.value_type, a.data)) for a in pkg.arguments[2:])  # type: ignore[arg-type]
        mat_a = case.initial[0].reshape(ni, nk)
        mat_b = case.initial[1].reshape(nk, nj)
        c = (case.initial[2].reshape(ni, nj) * beta).astype(np.float32)
        for k in range(nk):  # c[i][j] += alpha * a[i][k] * b[k][j], left to right
            scaled = (alpha * mat_a[:, k]).astype(np.float32)[:, None] * np.ones((1, nj), np.float32)
            c = mad(scaled, np.broadcast_to(mat_b[k][None, :], (ni, nj)), c)
        return {2: c.reshape(-1)}
    if kernel == "particles":
        gravity = f32(struct.unpack("<f", case.initial[0][:1].tobytes())[0])
        dt = f32(struct.unpack("<f", pkg.spec_constants[1].data)[0])
        pos = case.initial[1].reshape(-1, 4).copy()
        vel = case.initial[2].reshape(-1, 4).copy()
        vel[:, 1] = mad(np.full_like(vel[:, 1], -gravity), np.full_like(vel[:, 1], dt), vel[:, 1])
        pos[:, :3] = mad(vel[:, :3], np.full_like(vel[:, :3], dt), pos[:, :3])
        return {1: pos.reshape(-1), 2: vel.reshape(-1)}
    assert kernel == "transpose_tile"
    width, height = struct.unpack("<II", pkg.push_constants)
    return {1: case.initial[0].reshape(height, width).T.copy().reshape(-1)}


@pytest.mark.parametrize("fused", [False, True], ids=["mul-add", "fma"])
@pytest.mark.parametrize("other", [False, True], ids=["recorded", "other-values"])
@pytest.mark.parametrize("kernel", ARGUMENT_KERNELS)
def test_f32_models_match_the_references(kernel: str, other: bool, fused: bool) -> None:
    values = OTHER_VALUES[kernel] if other else {}
    pkg = argument_package(kernel, values=values)
    case = argument_case(kernel, values, seed=3)
    got = model(kernel, pkg, case, fused)
    for slot, array in got.items():
        assert compare(case, slot, array.astype(np.float32).tobytes()) is None, compare(case, slot, array.tobytes())
        if case.ulp_tolerance == 0:
            assert array.astype(np.float32).tobytes() == case.expected_bytes(slot)


# --------------------------------------------------------------------------- a real OpenCL driver


DEVICES = opencl_devices()


def run_opencl(device: Any, pkg: KernelPackage, case: KernelCase) -> dict[int, bytes]:
    """The package run directly through pyopencl: its buffers, values, __local sizes, global and local size."""
    import pyopencl as cl

    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = cl.Program(context, pkg.module.decode()).build(options=pkg.build_options)
    kernel = cl.Kernel(program, pkg.entry_point)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    buffers = {}
    for binding in pkg.bindings:
        buffers[binding.slot] = cl.Buffer(context, flags, hostbuf=case.initial[binding.slot])
        kernel.set_arg(binding.native_index, buffers[binding.slot])
    for argument in pkg.arguments:
        if argument.kind is ArgumentKind.LOCAL:
            kernel.set_arg(argument.index, cl.LocalMemory(argument.local_bytes))
        else:
            assert argument.value_type is not None
            kernel.set_arg(argument.index, np.frombuffer(argument.data, argument.value_type.scalar.numpy_dtype)[0])
    local = None if pkg.local_size == ANY_LOCAL_SIZE else pkg.local_size
    cl.enqueue_nd_range_kernel(queue, kernel, pkg.dispatch.global_size, local)
    out = {}
    for slot, buffer in buffers.items():
        host = np.empty_like(case.initial[slot])
        cl.enqueue_copy(queue, host, buffer)
        out[slot] = host.tobytes()
    queue.finish()
    return out


@pytest.mark.opencl
@pytest.mark.skipif(not DEVICES, reason="no OpenCL device (install pocl-opencl-icd)")
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: f"{d.platform.name}:{d.name}".replace(" ", "_"))
@pytest.mark.parametrize("other", [False, True], ids=["recorded", "other-values"])
@pytest.mark.parametrize("kernel", OPENCL_KERNELS)
def test_opencl_packages_match_the_references_on_a_driver(device: Any, kernel: str, other: bool) -> None:
    values = OTHER_VALUES[kernel] if other else {}
    pkg = parse_package(write_package(argument_package(kernel, values=values)))
    case = argument_case(kernel, values, seed=5)
    outputs = run_opencl(device, pkg, case)
    for slot in case.expected:
        assert compare(case, slot, outputs[slot]) is None, f"{kernel}: {compare(case, slot, outputs[slot])}"
