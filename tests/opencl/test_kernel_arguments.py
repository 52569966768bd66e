"""Version-2 packages on every OpenCL device: by-value and __local arguments, GLOBAL dispatches,
"driver chooses" local sizes, non-uniform work-groups, and the refusals that keep a wrong package
from reaching a driver that would crash on it."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from accel_opencl import programs
from accel_opencl.kernel_arguments import DeviceLaunchFacts, non_uniform_refusal

from accelcore import AccessMode, ErrorKind, SubmitRejected
from accelcore.kernels.pack import pack_module
from accelcore.kernels.package import (
    ANY_LOCAL_SIZE,
    Dispatch,
    DispatchKind,
    KernelArgument,
    KernelPackage,
    ModuleKind,
    PackageBinding,
)
from accelcore.kernels.values import ScalarType, ValueType, encode_value

F32 = ValueType(ScalarType.F32)
I32 = ValueType(ScalarType.I32)
I64 = ValueType(ScalarType.I64)
F32X4 = ValueType(ScalarType.F32, 4)
SENTINEL = 0xA5A5A5A5

AXPB_SOURCE = """
__kernel void axpb(__global const float *x, __global float *y, const uint n, float a, int b, float4 v) {
    uint i = (uint)get_global_id(0);
    if (i < n) { y[i] = a * x[i] + (float)b + v.x + v.y * v.z - v.w; }
}
"""


def axpb_package(
    a: float = 2.5, b: int = -3, v: tuple[float, ...] = (0.5, 2.0, 0.25, 1.0), options: str = ""
) -> KernelPackage:
    return KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point="axpb",
        local_size=(64, 1, 1),
        bindings=(PackageBinding(0, 0, AccessMode.READ), PackageBinding(1, 1, AccessMode.WRITE)),
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=2),
        module=AXPB_SOURCE.encode(),
        build_options=options,
        arguments=(
            KernelArgument.value(3, F32, encode_value(F32, a)),
            KernelArgument.value(4, I32, encode_value(I32, b)),
            KernelArgument.value(5, F32X4, encode_value(F32X4, list(v))),
        ),
    )


def axpb_expected(x: np.ndarray, a: float, b: int, v: tuple[float, ...]) -> np.ndarray:
    return (
        np.float32(a) * x + np.float32(b) + np.float32(v[0]) + np.float32(v[1]) * np.float32(v[2]) - np.float32(v[3])
    ).astype(np.float32)


def _run_axpb(rig: Any, program: Any, n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    x = (np.arange(n, dtype=np.float32) - 500) * np.float32(0.25)  # quarters: a*x+b is exact in f32
    xb = rig.buffer(x, "r")
    yb = rig.buffer(np.full(n, SENTINEL, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (xb, "r"), 1: (yb, "w")}))) == "Complete"
    return x, np.frombuffer(rig.read(yb), dtype=np.float32)


def test_float_int_and_float4_values_reach_the_kernel(rig: Any) -> None:
    program = rig.load(axpb_package())
    x, y = _run_axpb(rig, program)
    assert np.array_equal(y, axpb_expected(x, 2.5, -3, (0.5, 2.0, 0.25, 1.0)))


def test_values_are_per_program_and_submit_does_not_reset_them(rig: Any) -> None:
    first = rig.load(axpb_package(a=2.5, b=-3))
    second = rig.load(axpb_package(a=-1.0, b=7))
    for _ in range(2):  # interleaved: each program keeps its own values across submissions
        x, y1 = _run_axpb(rig, first)
        _, y2 = _run_axpb(rig, second)
        assert np.array_equal(y1, axpb_expected(x, 2.5, -3, (0.5, 2.0, 0.25, 1.0)))
        assert np.array_equal(y2, axpb_expected(x, -1.0, 7, (0.5, 2.0, 0.25, 1.0)))


def test_a_reload_with_other_values_does_not_recompile(rig: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The binary cache key is (source, options, entry point): values are not in it, and nothing of
    the second load compiles OpenCL C — not the program, not an argument-info twin."""
    import pyopencl

    compiled: list[str] = []

    class Counting(pyopencl._cl._Program):
        def __init__(self, *args: Any) -> None:
            if len(args) == 2 and isinstance(args[1], str):  # clCreateProgramWithSource
                compiled.append(args[1][:40])
            super().__init__(*args)

    options = f"-DRELOAD_PROBE={id(rig)}"
    first = rig.load(axpb_package(a=1.0, options=options))
    assert not first.from_cache
    monkeypatch.setattr(pyopencl._cl, "_Program", Counting)
    second = rig.load(axpb_package(a=3.0, b=5, v=(1.0, 1.0, 1.0, 1.0), options=options))
    monkeypatch.undo()
    assert second.from_cache and second.binary == first.binary
    assert compiled == [], compiled
    x, y = _run_axpb(rig, second)
    assert np.array_equal(y, axpb_expected(x, 3.0, 5, (1.0, 1.0, 1.0, 1.0)))
    _, y = _run_axpb(rig, first)
    assert np.array_equal(y, axpb_expected(x, 1.0, -3, (0.5, 2.0, 0.25, 1.0)))


REDUCE_SOURCE = """
__kernel void group_sum(__global const uint *in, __global uint *out, const uint n, __local uint *scratch) {
    uint lid = (uint)get_local_id(0), gid = (uint)get_global_id(0), size = (uint)get_local_size(0);
    scratch[lid] = gid < n ? in[gid] : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = size / 2u; stride > 0u; stride >>= 1) {
        if (lid < stride) { scratch[lid] += scratch[lid + stride]; }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0u) { out[get_group_id(0)] = scratch[0]; }
}
"""


def reduce_package(local: int = 64, scratch_bytes: int | None = None) -> KernelPackage:
    return KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point="group_sum",
        local_size=(local, 1, 1),
        bindings=(PackageBinding(0, 0, AccessMode.READ), PackageBinding(1, 1, AccessMode.WRITE)),
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0, count_argument=2),
        module=REDUCE_SOURCE.encode(),
        arguments=(KernelArgument.local(3, 4 * local if scratch_bytes is None else scratch_bytes),),
    )


def test_local_scratch_work_group_reduction(rig: Any) -> None:
    n = 1000
    data = (np.arange(n, dtype=np.uint64) * 2654435761 % 100003).astype(np.uint32)
    program = rig.load(reduce_package())
    groups = -(-n // 64)
    inb = rig.buffer(data, "r")
    outb = rig.buffer(np.full(groups, SENTINEL, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (inb, "r"), 1: (outb, "w")}))) == "Complete"
    padded = np.zeros(groups * 64, np.uint64)
    padded[:n] = data
    expected = (padded.reshape(groups, 64).sum(axis=1) % (1 << 32)).astype(np.uint32)
    assert np.array_equal(np.frombuffer(rig.read(outb), np.uint32), expected)


def test_local_memory_past_the_device_limit_is_refused_before_the_driver(rig: Any, raises_kind: Any) -> None:
    # PoCL 3.1 aborts the process (an assert in setup_kernel_arg_array_with_locals) on a __local
    # argument well past CL_DEVICE_LOCAL_MEM_SIZE, so this must never reach the driver.
    device_bytes = int(rig.accel._device.local_mem_size)
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as info:
        rig.load(reduce_package(scratch_bytes=device_bytes + 1))
    message = info.value.message
    assert "argument 3" in message and str(device_bytes) in message and "CL_KERNEL_LOCAL_MEM_SIZE" in message


GEMM_SOURCE = """
__kernel void gemm(__global const float *A, __global const float *B, __global float *C,
                   const uint M, const uint N, const uint K, float alpha, float beta) {
    uint col = (uint)get_global_id(0), row = (uint)get_global_id(1);
    if (row >= M || col >= N) { return; }
    float acc = 0.0f;
    for (uint k = 0; k < K; ++k) { acc += A[row * K + k] * B[k * N + col]; }
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
"""


@pytest.mark.parametrize("local", [(8, 4, 1), ANY_LOCAL_SIZE], ids=["local-8x4", "any-local"])
def test_gemm_with_alpha_beta_on_a_2d_global_dispatch(rig: Any, local: tuple[int, int, int]) -> None:
    m, n, k = 24, 40, 16
    rng = np.random.default_rng(3)
    a = (rng.integers(-8, 9, (m, k)) / 4).astype(np.float32)  # quarters: the sums are exact in f32
    b = (rng.integers(-8, 9, (k, n)) / 4).astype(np.float32)
    c = (rng.integers(-8, 9, (m, n)) / 4).astype(np.float32)
    package = pack_module(
        GEMM_SOURCE.encode(),
        bindings=(
            PackageBinding(0, 0, AccessMode.READ),
            PackageBinding(1, 1, AccessMode.READ),
            PackageBinding(2, 2, AccessMode.READ_WRITE),
        ),
        arguments={"M": m, "N": n, "K": k, "alpha": 0.5, "beta": -2.0},
        global_size=(n, m),
        local_size=None if local == ANY_LOCAL_SIZE else local,
    )
    assert package.dispatch.kind is DispatchKind.GLOBAL and tuple(package.local_size) == local
    program = rig.load(package)
    ab, bb, cb = rig.buffer(a, "r"), rig.buffer(b, "r"), rig.buffer(c, "rw")
    assert str(rig.wait(rig.submit(program, {0: (ab, "r"), 1: (bb, "r"), 2: (cb, "rw")}))) == "Complete"
    expected = (np.float32(0.5) * (a @ b) + np.float32(-2.0) * c).astype(np.float32)
    assert np.array_equal(np.frombuffer(rig.read(cb), np.float32).reshape(m, n), expected)


INDEX_SOURCE = """
__kernel void stamp(__global uint *out, uint base) {
    size_t i = get_global_id(0);
    out[i] = base + (uint)i + 1000000u * (uint)get_global_size(0);
}
"""


def stamp_package(global_size: int, local: tuple[int, int, int], options: str = "") -> KernelPackage:
    return KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point="stamp",
        local_size=local,
        bindings=(PackageBinding(0, 0, AccessMode.WRITE),),
        dispatch=Dispatch.global_items(global_size),
        module=INDEX_SOURCE.encode(),
        build_options=options,
        arguments=(KernelArgument.value(1, ValueType(ScalarType.U32), encode_value(ValueType(ScalarType.U32), 7)),),
    )


def test_global_size_not_a_multiple_of_64_with_any_local_size_runs_exactly(rig: Any) -> None:
    n = 1000  # no guard in the kernel: exactly n work-items must run
    program = rig.load(stamp_package(n, ANY_LOCAL_SIZE))
    assert program.launch.local is None
    out = rig.buffer(np.full(n + 64, SENTINEL, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (out, "w")}))) == "Complete"
    got = np.frombuffer(rig.read(out), np.uint32)
    assert np.array_equal(got[:n], 7 + np.arange(n, dtype=np.uint32) + 1000000 * n)
    assert np.all(got[n:] == SENTINEL)


@pytest.mark.parametrize("options", ["", "-cl-std=CL2.0", "-cl-std=CL3.0"])
def test_global_size_not_a_multiple_of_a_given_local_size_is_refused_at_load(
    rig: Any, raises_kind: Any, options: str
) -> None:
    # Measured 2026-12-01: PoCL 3.1 and rusticl 22.3 are OpenCL 3.0 devices reporting
    # CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT false; both refuse (100,) / (64,) with
    # CL_INVALID_WORK_GROUP_SIZE whatever -cl-std the program was built with.
    facts = DeviceLaunchFacts.of(rig.accel._cl, rig.accel._device)
    if facts.non_uniform and options in ("-cl-std=CL2.0", "-cl-std=CL3.0"):
        # Intel's CPU runtime 2026.2 (OpenCL 3.1) reports non-uniform work-group support (measured
        # 2026-12-01): a CL2.0+ program takes (1000,) / (64,) and the last, partial group runs.
        program = rig.load(stamp_package(1000, (64, 1, 1), options))
        assert program.launch.local == (64, 1, 1) and program.launch.non_uniform_refusal is None
        out = rig.buffer(np.full(1064, SENTINEL, np.uint32), "w")
        assert str(rig.wait(rig.submit(program, {0: (out, "w")}))) == "Complete"
        got = np.frombuffer(rig.read(out), np.uint32)
        assert np.array_equal(got[:1000], 7 + np.arange(1000, dtype=np.uint32) + 1000000 * 1000)
        assert np.all(got[1000:] == SENTINEL)
        return
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(stamp_package(1000, (64, 1, 1), options))
    message = info.value.message
    assert "(1000, 1, 1)" in message and "(64, 1, 1)" in message and "non-uniform" in message
    assert "CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT" in message or "-cl-std=CL2.0" in message


def test_global_size_that_is_a_multiple_runs_with_the_given_local_size(rig: Any) -> None:
    program = rig.load(stamp_package(1024, (64, 1, 1)))
    assert program.launch.local == (64, 1, 1)
    out = rig.buffer(np.full(1024, SENTINEL, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (out, "w")}))) == "Complete"
    assert np.array_equal(np.frombuffer(rig.read(out), np.uint32), 7 + np.arange(1024, dtype=np.uint32) + 1024000000)


FIXED_SIZE_SOURCE = """
__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void fixed16(__global uint *out, const uint n) {
    size_t i = get_global_id(0);
    if (i < n) { out[i] = (uint)get_local_size(0); }
}
"""


def fixed16_package(dispatch: Dispatch) -> KernelPackage:
    return KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point="fixed16",
        local_size=ANY_LOCAL_SIZE,
        bindings=(PackageBinding(0, 0, AccessMode.WRITE),),
        dispatch=dispatch,
        module=FIXED_SIZE_SOURCE.encode(),
    )


def test_any_local_size_with_reqd_work_group_size_uses_the_required_size(rig: Any, raises_kind: Any) -> None:
    program = rig.load(fixed16_package(Dispatch.global_items(64, count_argument=1)))
    assert program.launch.local == (16, 1, 1)
    out = rig.buffer(np.full(64, SENTINEL, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (out, "w")}))) == "Complete"
    assert np.all(np.frombuffer(rig.read(out), np.uint32) == 16)
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(fixed16_package(Dispatch.global_items(100, count_argument=1)))
    assert "(100, 1, 1)" in info.value.message and "(16, 1, 1)" in info.value.message


def test_from_binding_any_local_size_with_reqd_size_refuses_an_uneven_count_at_submit(rig: Any) -> None:
    program = rig.load(fixed16_package(Dispatch(DispatchKind.FROM_BINDING, slot=0, count_argument=1)))
    even = rig.buffer(np.full(96, SENTINEL, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (even, "w")}))) == "Complete"
    assert np.all(np.frombuffer(rig.read(even), np.uint32) == 16)
    uneven = rig.buffer(np.full(100, SENTINEL, np.uint32), "w")
    with pytest.raises(SubmitRejected) as info:
        rig.submit(program, {0: (uneven, "w")})
    assert info.value.error.kind is ErrorKind.INCOMPATIBLE and "(100, 1, 1)" in info.value.error.message


def test_from_binding_with_any_local_size_launches_exactly_the_element_count(rig: Any) -> None:
    package = KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point="stamp",
        local_size=ANY_LOCAL_SIZE,
        bindings=(PackageBinding(0, 0, AccessMode.WRITE),),
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0),
        module=INDEX_SOURCE.encode(),
        arguments=(KernelArgument.value(1, ValueType(ScalarType.U32), encode_value(ValueType(ScalarType.U32), 0)),),
    )
    program = rig.load(package)
    out = rig.buffer(np.full(997, SENTINEL, np.uint32), "w")  # a prime count: no guard, no rounding
    assert str(rig.wait(rig.submit(program, {0: (out, "w")}))) == "Complete"
    assert np.array_equal(np.frombuffer(rig.read(out), np.uint32), np.arange(997, dtype=np.uint32) + 997000000)


# --------------------------------------------------------------------------- refusals


def _with_arguments(*arguments: KernelArgument) -> KernelPackage:
    return dataclasses.replace(axpb_package(), arguments=arguments)


def _good_arguments() -> list[KernelArgument]:
    return list(axpb_package().arguments)


def test_an_8_byte_value_for_an_int_argument_is_refused_naming_it(rig: Any, raises_kind: Any) -> None:
    arguments = _good_arguments()
    arguments[1] = KernelArgument.value(4, I64, encode_value(I64, -3))
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(_with_arguments(*arguments))
    assert "argument 4" in info.value.message and "i64" in info.value.message


def test_without_argument_info_the_driver_size_check_refuses_it(
    rig: Any, raises_kind: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(programs, "read_argument_info", lambda cl, kernel, num_args: None)
    monkeypatch.setattr(programs, "remembered_argument_info", lambda key: None)
    arguments = _good_arguments()
    arguments[1] = KernelArgument.value(4, I64, encode_value(I64, -3))
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(_with_arguments(*arguments))
    assert info.value.native_call == "clSetKernelArg" and info.value.native_code == -51  # CL_INVALID_ARG_SIZE
    assert "argument 4" in info.value.message


def test_a_same_size_value_of_another_type_is_refused(rig: Any, raises_kind: Any) -> None:
    arguments = _good_arguments()
    arguments[0] = KernelArgument.value(3, I32, encode_value(I32, 2))  # kernel: float a
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(_with_arguments(*arguments))
    assert "argument 3" in info.value.message and "float" in info.value.message


POINTERS_SOURCE = """
__kernel void pointers(__global uint *out, __global const uint *extra, __local uint *scratch, uint k) {
    size_t i = get_global_id(0);
    scratch[get_local_id(0)] = k;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = extra[i] + scratch[get_local_id(0)];
}
"""


@pytest.mark.parametrize(
    ("index", "argument", "needle"),
    [
        # Both drivers segfault in clSetKernelArg on an 8-byte value at a __global pointer, and run
        # an 8-byte __local allocation set at one as a NULL buffer (measured 2026-12-01).
        (1, KernelArgument.value(1, ValueType(ScalarType.U64), bytes(8)), "__global"),
        (1, KernelArgument.local(1, 8), "__global"),
        (2, KernelArgument.value(2, ValueType(ScalarType.U32), bytes(4)), "__local"),
        (3, KernelArgument.local(3, 64), "by value"),
    ],
    ids=["value-at-global", "local-at-global", "value-at-local", "local-at-value"],
)
def test_an_argument_of_the_wrong_kind_is_refused_before_the_driver(
    rig: Any, raises_kind: Any, index: int, argument: KernelArgument, needle: str
) -> None:
    bindings = {0: PackageBinding(0, 0, AccessMode.WRITE), 1: PackageBinding(1, 1, AccessMode.READ)}
    arguments = {2: KernelArgument.local(2, 64), 3: KernelArgument.value(3, ValueType(ScalarType.U32), bytes(4))}
    bindings.pop(index, None)
    arguments[index] = argument
    package = KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point="pointers",
        local_size=(16, 1, 1),
        bindings=tuple(bindings.values()),
        dispatch=Dispatch.global_items(16),
        module=POINTERS_SOURCE.encode(),
        arguments=tuple(arguments[i] for i in sorted(arguments)),
    )
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(package)
    assert f"argument {index}" in info.value.message and needle in info.value.message


def test_a_missing_argument_index_is_named(rig: Any, raises_kind: Any) -> None:
    arguments = _good_arguments()
    del arguments[1]  # nothing sets argument 4
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(_with_arguments(*arguments))
    assert "argument 4" in info.value.message and "0..5" in info.value.message


def test_an_argument_past_the_last_index_is_named(rig: Any, raises_kind: Any) -> None:
    arguments = [*_good_arguments(), KernelArgument.value(6, I32, encode_value(I32, 1))]
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(_with_arguments(*arguments))
    assert "argument index 6" in info.value.message


def test_a_device_binary_package_keeps_its_arguments_and_their_checks(rig: Any, raises_kind: Any) -> None:
    source_program = rig.load(axpb_package(a=0.75, b=2))
    binary_pkg = dataclasses.replace(
        axpb_package(a=0.75, b=2),
        module_kind=ModuleKind.OPENCL_BINARY,
        module=rig.accel.program_binary(source_program),
        target=rig.accel.binary_target,
    )
    x, y = _run_axpb(rig, rig.load(binary_pkg))
    assert np.array_equal(y, axpb_expected(x, 0.75, 2, (0.5, 2.0, 0.25, 1.0)))
    wrong = list(binary_pkg.arguments)
    wrong[0] = KernelArgument.value(3, ValueType(ScalarType.U64), bytes(8))
    with raises_kind(ErrorKind.INCOMPATIBLE):
        rig.load(dataclasses.replace(binary_pkg, arguments=tuple(wrong)))


# --------------------------------------------------------------------------- non-uniform decision (no driver)


@pytest.mark.parametrize(
    ("version", "device_support", "kind", "options", "runs"),
    [
        ((3, 0), False, ModuleKind.OPENCL_SOURCE, "-cl-std=CL3.0", False),
        ((3, 0), True, ModuleKind.OPENCL_SOURCE, "", False),
        ((3, 0), True, ModuleKind.OPENCL_SOURCE, "-cl-std=CL1.2", False),
        ((3, 0), True, ModuleKind.OPENCL_SOURCE, "-cl-std=CL2.0", True),
        ((3, 0), True, ModuleKind.OPENCL_BINARY, "-O2 -cl-std=CL3.0", True),
        ((3, 0), True, ModuleKind.OPENCL_SOURCE, "-cl-std=CL3.0 -cl-uniform-work-group-size", False),
        ((3, 0), True, ModuleKind.SPIRV_OPENCL, "", True),
        ((2, 1), True, ModuleKind.OPENCL_SOURCE, "-cl-std=CL2.0", True),
        ((1, 2), False, ModuleKind.OPENCL_SOURCE, "-cl-std=CL2.0", False),
    ],
)
def test_non_uniform_work_groups_need_device_support_and_a_cl2_build(
    version: tuple[int, int], device_support: bool, kind: ModuleKind, options: str, runs: bool
) -> None:
    facts = DeviceLaunchFacts(version, device_support, 32768)
    refusal = non_uniform_refusal(facts, kind, options)
    assert (refusal is None) is runs, refusal


def test_measured_device_facts(accel: Any, entry: Any) -> None:
    """What the drivers here report (2026-12-01): both OpenCL 3.0 without non-uniform work-groups."""
    facts = DeviceLaunchFacts.of(accel._cl, accel._device)
    assert facts.local_mem_bytes == int(accel._device.local_mem_size) > 0
    if entry.native.get("tag", "") in ("pocl", "rusticl"):
        assert facts.version == (3, 0) and not facts.non_uniform
