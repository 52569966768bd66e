"""OpenCL-specific conformance cases, run after the standard suite.

* ``opencl.source-binary-reload`` - the target's OpenCL C package, built, its
  device binary wrapped as an OPENCL_BINARY package and loaded again, gives
  byte-identical results.
* ``opencl.foreign-binary-refused`` - a binary recording another target is
  INCOMPATIBLE before any driver sees it (its bytes are garbage: a driver
  here would abort the process on them).
* ``opencl.malformed-artifacts`` - malformed binaries and sources give
  INVALID_ARGUMENT or INCOMPATIBLE, and the instance still runs the target.
* ``opencl.corpus-numpy`` - every corpus kernel's OpenCL C package matches
  its numpy reference: integers bit-exact, floats within the ulp bound the
  corpus states per kernel (saxpy 1 ulp, matmul exact by construction); on a
  device that takes OpenCL SPIR-V (Intel's CPU runtime here) every committed
  ``*.cl.spv.kpkg`` package too, and a device without IL must refuse one
  UNSUPPORTED naming CL_DEVICE_IL_VERSION.
* ``opencl.long-loop`` - 100,000-iteration loops run to the end.
* ``opencl.argument-layouts`` - struct, nested-struct, packed, ``float3`` and union buffers in the
  layouts Clang reports give numpy's answer bit for bit; the mismatches users make are refused
  (:mod:`accel_opencl.layout_case`).
* ``opencl.kernel-arguments`` - version-2 packages built with ``pack_module``:
  float, int and float4 by-value arguments, a ``__local`` scratch reduction,
  a 2-D GLOBAL gemm with alpha/beta, a 1-D GLOBAL size that is not a
  multiple of 64 with the driver choosing the local size - all exact against
  numpy - and an 8-byte value for an ``int`` argument refused at load.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from accelcore import (
    AccessMode,
    ArtifactRef,
    BackendError,
    ErrorKind,
    EventState,
    MemoryDomain,
    MemorySource,
    TargetIdentity,
)
from accelcore.conformance.case import CaseContext, ConformanceCase, FixtureBuffer, Session, describe_exception
from accelcore.kernels.package import (
    Dispatch,
    DispatchKind,
    KernelArgument,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    format_for,
)
from accelcore.kernels.package_codec import parse_package, write_package
from accelcore.kernels.values import ScalarType, ValueType
from accelcore.support.text import plain

from .layout_case import argument_layouts

__all__ = ["opencl_cases"]

_ANY_KERNEL_RESIDENT = 64 << 20


def _artifact(pkg: KernelPackage, resident: int) -> ArtifactRef:
    return ArtifactRef(pkg.format, pkg.target, MemorySource(write_package(pkg)), resident)


def _run_target(ctx: CaseContext, session: Session, context: Any, program: Any, what: str) -> list[bytes]:
    """Run the target's fixtures through ``program``; return every fixture's bytes afterwards."""
    queue = session.create_queue(context)
    fixtures = session.fixtures(context)
    event = session.submit(queue, program, session.bindings(fixtures))
    state = session.wait_terminal(event, what=what)
    ctx.check(state == EventState.COMPLETE, f"{what}: ended {state}, expected Complete")
    session.check_contents(fixtures, expect="expected", what=what)
    contents = [session.read(fb.buffer, fb.size) for fb in fixtures]
    session.destroy_event(event)
    _release_fixtures(session, fixtures)
    session.destroy_queue(queue)
    return contents


def _release_fixtures(session: Session, fixtures: list[FixtureBuffer]) -> None:
    for fb in fixtures:
        session.free_buffer(fb.buffer)


def _binary_package(session: Session, program: Any, source_pkg: KernelPackage) -> KernelPackage:
    provider = session.provider
    return dataclasses.replace(
        source_pkg,
        module_kind=ModuleKind.OPENCL_BINARY,
        module=provider.program_binary(program),
        target=provider.binary_target,
    )


def source_binary_reload(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    source_pkg = parse_package(ctx.target.artifact)
    source_program = session.load_program(context)
    from_source = _run_target(ctx, session, context, source_program, "the OpenCL C program")
    binary_pkg = _binary_package(session, source_program, source_pkg)
    try:
        binary_program = session.load_program(context, _artifact(binary_pkg, ctx.target.resident_bytes))
    except BackendError as exc:
        ctx.fail(f"reloading the program's own device binary failed: {describe_exception(exc)}")
    from_binary = _run_target(ctx, session, context, binary_program, "the reloaded device binary")
    ctx.check(from_source == from_binary, "the reloaded binary gave different bytes than the source build")
    session.unload_program(binary_program)
    session.unload_program(source_program)
    session.destroy_context(context)


def foreign_binary_refused(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    source_pkg = parse_package(ctx.target.artifact)
    words = list(session.provider.binary_target.words)
    words[3] ^= 0x1  # the same device under another driver version
    for label, target in (("another driver version", TargetIdentity(tuple(words))), ("no target", TargetIdentity())):
        foreign = dataclasses.replace(
            source_pkg, module_kind=ModuleKind.OPENCL_BINARY, module=b"\xde\xad\xbe\xef" * 256, target=target
        )
        ctx.expect_error(
            ErrorKind.INCOMPATIBLE,
            f"a device binary recording {label}",
            session.load_program,
            context,
            _artifact(foreign, ctx.target.resident_bytes),
        )
    session.destroy_context(context)


def malformed_artifacts(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    source_pkg = parse_package(ctx.target.artifact)
    good = session.load_program(context)
    binary = session.provider.program_binary(good)
    session.unload_program(good)
    target = session.provider.binary_target
    cut = binary[: max(64, len(binary) // 3)]
    flipped = bytearray(binary)
    for offset in range(48, len(flipped) - 8, 89):
        flipped[offset] ^= 0xA5
    broken_binaries = {
        "a binary with a foreign header": b"\x7fELF" + bytes(252),
        "a truncated binary": cut,
        "a bit-flipped binary": bytes(flipped),
    }
    for label, module in broken_binaries.items():
        pkg = dataclasses.replace(source_pkg, module_kind=ModuleKind.OPENCL_BINARY, module=module, target=target)
        _expect_refused(ctx, session, context, pkg, label)
    broken_sources = {
        "source that is not UTF-8": b"\xff\xfe\xfd",
        "source with a syntax error": b"__kernel void conformance(__global uint *a { }",
        "source without the entry point": b"__kernel void other(__global uint *a) { a[0] = 1u; }",
    }
    for label, module in broken_sources.items():
        _expect_refused(ctx, session, context, dataclasses.replace(source_pkg, module=module), label)
    program = session.load_program(context)
    _run_target(ctx, session, context, program, "the target after the malformed artifacts")
    session.unload_program(program)
    session.destroy_context(context)


def _expect_refused(ctx: CaseContext, session: Session, context: Any, pkg: KernelPackage, label: str) -> None:
    try:
        program = session.load_program(context, _artifact(pkg, ctx.target.resident_bytes))
    except BackendError as exc:
        ctx.check(
            exc.kind in (ErrorKind.INVALID_ARGUMENT, ErrorKind.INCOMPATIBLE),
            f"{label}: expected INVALID_ARGUMENT or INCOMPATIBLE, got {exc.kind.name} ({exc.message[:200]})",
        )
        return
    except Exception as exc:
        ctx.fail(f"{label}: expected a BackendError, got {describe_exception(exc)}")
    session.unload_program(program)
    ctx.fail(f"{label}: the load succeeded")


def _run_case(
    session: Any,
    context: Any,
    queue: Any,
    kernel: str,
    case: Any,
    domain: MemoryDomain,
    kind: ModuleKind = ModuleKind.OPENCL_SOURCE,
) -> str | None:
    """Run corpus ``kernel``'s ``kind`` package on ``case``'s inputs; None when every expected slot matches numpy."""
    from accelcore.conformance.corpus import compare, kernel_spec, load_package

    spec = kernel_spec(kernel)
    raw = load_package(kernel, kind)
    ref = ArtifactRef(format_for(kind), TargetIdentity(), MemorySource(raw), _ANY_KERNEL_RESIDENT)
    program = session.load_program(context, ref)
    slots = {row.slot: (case.initial_bytes(row.slot), row.access) for row in spec.bindings}
    state, contents = session.run_once(context, queue, program, slots, domain, what=f"corpus kernel {kernel}")
    problem: str | None = None
    if state != EventState.COMPLETE:
        problem = f"{kernel}: ended {state}"
    else:
        for slot in case.expected:
            found = compare(case, slot, contents[slot])
            if found is not None:
                problem = f"{kernel}: {found}"
                break
    session.unload_program(program)
    return problem


def corpus_numpy(ctx: CaseContext) -> None:
    from accelcore.conformance.corpus import KERNELS, make_case

    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    domain = ctx.target.fixtures[0].domain if ctx.target.fixtures else MemoryDomain.HOST
    kinds = [ModuleKind.OPENCL_SOURCE]
    if format_for(ModuleKind.SPIRV_OPENCL) in getattr(session.provider, "artifact_formats", ()):
        kinds.append(ModuleKind.SPIRV_OPENCL)
        ctx.note(f"OpenCL C and OpenCL SPIR-V packages of {len(KERNELS)} kernels")
    else:
        from accelcore.conformance.corpus import load_package

        raw = load_package(KERNELS[0], ModuleKind.SPIRV_OPENCL)
        ref = ArtifactRef(
            format_for(ModuleKind.SPIRV_OPENCL), TargetIdentity(), MemorySource(raw), _ANY_KERNEL_RESIDENT
        )
        error = ctx.expect_error(
            ErrorKind.UNSUPPORTED, "an OpenCL SPIR-V package without IL", session.load_program, context, ref
        )
        ctx.check(
            "CL_DEVICE_IL_VERSION" in error.message,
            f"the refusal of SPIR-V does not name CL_DEVICE_IL_VERSION: {error}",
        )
    problems = [
        f"{kind.name}: {problem}"
        for kind in kinds
        for kernel in KERNELS
        if (problem := _run_case(session, context, queue, kernel, make_case(kernel, 1000, seed=7), domain, kind))
    ]
    session.destroy_queue(queue)
    session.destroy_context(context)
    ctx.check(not problems, "; ".join(problems))


LONG_LOOP_ITERATIONS = 100_000
"""Past 65,535: llvmpipe-based drivers (rusticl, lavapipe) silently end every loop there."""


def long_loop(ctx: CaseContext) -> None:
    """The spin kernel with 100,000 iterations per item gives numpy's answer (no silent loop cap)."""
    from accelcore.conformance.corpus import spin_case

    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    domain = ctx.target.fixtures[0].domain if ctx.target.fixtures else MemoryDomain.HOST
    problem = _run_case(session, context, queue, "spin", spin_case(64, LONG_LOOP_ITERATIONS), domain)
    session.destroy_queue(queue)
    session.destroy_context(context)
    ctx.check(problem is None, f"{LONG_LOOP_ITERATIONS} iterations: {problem}")


_AXPB = b"""
__kernel void axpb(__global const float *x, __global float *y, const uint n, float a, int b, float4 v) {
    uint i = (uint)get_global_id(0);
    if (i < n) { y[i] = a * x[i] + (float)b + v.x + v.y * v.z - v.w; }
}
"""
_GROUP_SUM = b"""
__kernel void group_sum(__global const uint *in, __global uint *out, const uint n, __local uint *scratch) {
    uint lid = (uint)get_local_id(0), gid = (uint)get_global_id(0);
    scratch[lid] = gid < n ? in[gid] : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = (uint)get_local_size(0) / 2u; stride > 0u; stride >>= 1) {
        if (lid < stride) { scratch[lid] += scratch[lid + stride]; }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0u) { out[get_group_id(0)] = scratch[0]; }
}
"""
_GEMM = b"""
__kernel void gemm(__global const float *A, __global const float *B, __global float *C,
                   const uint M, const uint N, const uint K, float alpha, float beta) {
    uint col = (uint)get_global_id(0), row = (uint)get_global_id(1);
    if (row >= M || col >= N) { return; }
    float acc = 0.0f;
    for (uint k = 0; k < K; ++k) { acc += A[row * K + k] * B[k * N + col]; }
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
"""
_STAMP = b"""
__kernel void stamp(__global uint *out, uint base) {
    size_t i = get_global_id(0);
    out[i] = base + (uint)i;
}
"""
_SENTINEL_WORD = 0xA5A5A5A5


def _run_packed(
    session: Session,
    context: Any,
    queue: Any,
    pkg: KernelPackage,
    slots: dict[int, tuple[bytes, AccessMode]],
    domain: MemoryDomain,
    what: str,
) -> dict[int, bytes] | str:
    """Load ``pkg``, bind one buffer per slot (initial bytes, access), run once; every slot's bytes, or a problem."""
    try:
        program = session.load_program(context, _artifact(pkg, _ANY_KERNEL_RESIDENT))
    except BackendError as exc:
        return f"{what}: the load failed: {describe_exception(exc)}"
    state, contents = session.run_once(context, queue, program, slots, domain, what=what)
    result = contents if state == EventState.COMPLETE else f"{what}: ended {state}"
    session.unload_program(program)
    return result


def _axpb_expected(x: Any, a: float, b: int, v: tuple[float, float, float, float]) -> Any:
    import numpy as np

    f = np.float32
    return (f(a) * x + f(b) + f(v[0]) + f(v[1]) * f(v[2]) - f(v[3])).astype(np.float32)


def _argument_checks(session: Session, context: Any, queue: Any, domain: MemoryDomain) -> list[str]:
    """Each kernel of ``opencl.kernel-arguments`` against numpy; the problems found."""
    import numpy as np

    from accelcore.kernels.pack import pack_module

    problems: list[str] = []
    read, write, rw = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE

    def run(pkg: KernelPackage, slots: dict[int, tuple[bytes, AccessMode]], what: str) -> dict[int, bytes] | None:
        out = _run_packed(session, context, queue, pkg, slots, domain, what)
        if isinstance(out, str):
            problems.append(out)
            return None
        return out

    def same(what: str, got: bytes, expected: Any) -> None:
        found = np.frombuffer(got, dtype=expected.dtype).reshape(expected.shape)
        if not np.array_equal(found, expected):
            flat, want = found.reshape(-1), expected.reshape(-1)
            bad = int(np.flatnonzero(flat != want)[0])
            problems.append(f"{what}: element {bad} is {plain(flat[bad])}, numpy says {plain(want[bad])}")

    # float, int and float4 by value; FROM_BINDING, the driver chooses the local size.
    n = 1000
    x = (np.arange(n, dtype=np.float32) - 500) * np.float32(0.25)  # quarters: every result is exact in f32
    v = (0.5, 2.0, 0.25, 1.0)
    axpb = pack_module(
        _AXPB,
        arguments={"a": 2.5, "b": -3, "v": v},
        count_argument="n",
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1),
        bindings=(PackageBinding(0, 0, read), PackageBinding(1, 1, write)),
    )
    out = run(axpb, {0: (x.tobytes(), read), 1: (bytes(4 * n), write)}, "axpb (float a, int b, float4 v)")
    if out is not None:
        same("axpb", out[1], _axpb_expected(x, 2.5, -3, v))

    # A __local scratch argument: a work-group reduction over 64-item groups.
    data = (np.arange(n, dtype=np.uint64) * 2654435761 % 100003).astype(np.uint32)
    groups = -(-n // 64)
    group_sum = pack_module(
        _GROUP_SUM,
        local_memory={"scratch": 64 * 4},
        local_size=(64, 1, 1),
        count_argument="n",
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0),
        bindings=(PackageBinding(0, 0, read), PackageBinding(1, 1, write)),
    )
    out = run(group_sum, {0: (data.tobytes(), read), 1: (bytes(4 * groups), write)}, "group_sum (__local scratch)")
    if out is not None:
        padded = np.zeros(groups * 64, np.uint64)
        padded[:n] = data
        same("group_sum", out[1], (padded.reshape(groups, 64).sum(axis=1) % (1 << 32)).astype(np.uint32))

    # A 2-D GLOBAL dispatch: C = alpha * A @ B + beta * C (quarters: exact in any summation order).
    m, cols, k = 24, 40, 16
    rng = np.random.default_rng(11)
    a_m = (rng.integers(-8, 9, (m, k)) / 4).astype(np.float32)
    b_m = (rng.integers(-8, 9, (k, cols)) / 4).astype(np.float32)
    c_m = (rng.integers(-8, 9, (m, cols)) / 4).astype(np.float32)
    gemm = pack_module(
        _GEMM,
        arguments={"M": m, "N": cols, "K": k, "alpha": 0.5, "beta": -2.0},
        global_size=(cols, m),
        local_size=(8, 8, 1),
        bindings=(PackageBinding(0, 0, read), PackageBinding(1, 1, read), PackageBinding(2, 2, rw)),
    )
    out = run(
        gemm,
        {0: (a_m.tobytes(), read), 1: (b_m.tobytes(), read), 2: (c_m.tobytes(), rw)},
        "gemm (2-D GLOBAL, alpha/beta)",
    )
    if out is not None:
        same("gemm", out[2], (np.float32(0.5) * (a_m @ b_m) + np.float32(-2.0) * c_m).astype(np.float32))

    # A 1-D GLOBAL size that is not a multiple of 64, the driver choosing the local size: exactly
    # 1000 work-items (the kernel has no bounds check; the words after them keep the sentinel).
    stamp = pack_module(_STAMP, arguments={"base": 7}, global_size=1000, bindings=(PackageBinding(0, 0, write),))
    sentinel = np.full(1064, _SENTINEL_WORD, np.uint32)
    out = run(stamp, {0: (sentinel.tobytes(), write)}, "stamp (GLOBAL 1000, any local size)")
    if out is not None:
        expected = sentinel.copy()
        expected[:1000] = 7 + np.arange(1000, dtype=np.uint32)
        same("stamp", out[0], expected)

    # The mismatch: an 8-byte value for `int b` (pack_module refuses it; a package can still carry it).
    wrong = dataclasses.replace(
        axpb,
        arguments=tuple(
            KernelArgument.value(4, ValueType(ScalarType.I64), (-3).to_bytes(8, "little", signed=True))
            if argument.index == 4
            else argument
            for argument in axpb.arguments
        ),
    )
    try:
        program = session.load_program(context, _artifact(wrong, _ANY_KERNEL_RESIDENT))
    except BackendError as exc:
        if exc.kind not in (ErrorKind.INCOMPATIBLE, ErrorKind.INVALID_ARGUMENT) or "argument 4" not in exc.message:
            problems.append(
                f"an i64 value for `int b` (argument 4): expected INCOMPATIBLE or INVALID_ARGUMENT naming "
                f"argument 4, got {exc.kind.name} ({exc.message[:300]})"
            )
    else:
        session.unload_program(program)
        problems.append("an i64 value for `int b` (argument 4) was loaded; it must be refused")
    return problems


def kernel_arguments(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    domain = ctx.target.fixtures[0].domain if ctx.target.fixtures else MemoryDomain.HOST
    problems = _argument_checks(session, context, queue, domain)
    session.destroy_queue(queue)
    session.destroy_context(context)
    ctx.check(not problems, "; ".join(problems))


def numerics_claims(native: Any) -> dict[str, object]:
    """What the device says about its number formats, for the numerics suite: CL_FP_DENORM in
    CL_DEVICE_SINGLE_FP_CONFIG, cl_khr_fp16 / cl_khr_fp64 (or a double FP config, or the OpenCL 3.0 feature
    __opencl_c_fp64), CL_FP_DENORM in the double and half FP configs (f64_denormals / f16_denormals)."""
    device = native.device

    def ask(name: str) -> Any:
        try:
            return getattr(device, name)
        except Exception:  # pyopencl raises for a query the driver does not answer
            return None

    single = int(ask("single_fp_config") or 0)
    double = int(ask("double_fp_config") or 0)  # numerics.support.f64 and the f64 cases
    half = int(ask("half_fp_config") or 0)  # numerics.support.f16 and the f16 cases
    extensions = str(ask("extensions") or "").split()
    c_features = {str(getattr(f, "name", f)) for f in (ask("opencl_c_features") or ())}  # OpenCL 3.0
    return {
        "f32_denormals": bool(single & 1),
        "fp16": "cl_khr_fp16" in extensions,
        "fp64": bool(double) or "cl_khr_fp64" in extensions or "__opencl_c_fp64" in c_features,
        "f64_denormals": bool(double & 1),  # CL_FP_DENORM in CL_DEVICE_DOUBLE_FP_CONFIG
        "f16_denormals": bool(half & 1),  # CL_FP_DENORM in CL_DEVICE_HALF_FP_CONFIG
        **subgroup_claims(ask, extensions),
    }


def subgroup_claims(ask: Any, extensions: list[str]) -> dict[str, object]:
    """Subgroup support as the device states it (numerics.subgroup-*): cl_khr_subgroups in CL_DEVICE_EXTENSIONS
    or __opencl_c_subgroups in CL_DEVICE_OPENCL_C_FEATURES (OpenCL 3.0), CL_DEVICE_MAX_NUM_SUB_GROUPS, and
    the -cl-std a kernel using the built-ins needs (CL3.0 for the feature, CL2.0 for the extension)."""
    features = [str(getattr(f, "name", f)) for f in (ask("opencl_c_features") or ())]
    version = str(ask("opencl_c_version") or "")
    try:
        major = int(version.split()[2].split(".")[0]) if version.startswith("OpenCL C ") else 1
    except (IndexError, ValueError):
        major = 1
    feature = "__opencl_c_subgroups" in features and major >= 3
    extension = "cl_khr_subgroups" in extensions
    source = "__opencl_c_subgroups" if feature else "cl_khr_subgroups" if extension else ""
    return {
        "subgroups": bool(source),
        "subgroup_source": source,
        "subgroup_build_options": "-cl-std=CL3.0" if feature else "-cl-std=CL2.0" if extension and major >= 2 else "",
        "max_num_sub_groups": int(ask("max_num_sub_groups") or 0),
        "opencl_c_version": version.strip(),
    }


def opencl_cases() -> tuple[ConformanceCase, ...]:
    """The OpenCL provider's extra cases (stable ids)."""
    return (
        ConformanceCase(
            "opencl.source-binary-reload", source_binary_reload, description="OpenCL C -> binary -> reload"
        ),
        ConformanceCase(
            "opencl.foreign-binary-refused", foreign_binary_refused, description="foreign binary before the driver"
        ),
        ConformanceCase(
            "opencl.malformed-artifacts", malformed_artifacts, description="malformed binaries and sources refused"
        ),
        ConformanceCase("opencl.corpus-numpy", corpus_numpy, description="corpus kernels vs numpy references"),
        ConformanceCase("opencl.long-loop", long_loop, description="100,000-iteration loops run to the end"),
        ConformanceCase(
            "opencl.kernel-arguments",
            kernel_arguments,
            description="by-value, vector and __local arguments, GLOBAL dispatches vs numpy; a type mismatch refused",
        ),
        ConformanceCase(
            "opencl.argument-layouts",
            argument_layouts,
            description="struct, nested, packed, float3, union buffers in Clang's layout vs numpy; mismatches refused",
        ),
    )
