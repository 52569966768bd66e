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
  corpus states per kernel (saxpy 1 ulp, matmul exact by construction).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from accelcore import (
    ArtifactRef,
    BackendError,
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    ErrorKind,
    EventState,
    MemoryDomain,
    MemorySource,
    TargetIdentity,
)
from accelcore.conformance.case import CaseContext, ConformanceCase, FixtureBuffer, Session, describe_exception
from accelcore.package import KernelPackage, ModuleKind, format_for
from accelcore.package_codec import parse_package, write_package

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


def _run_case(session: Any, context: Any, queue: Any, kernel: str, case: Any, domain: MemoryDomain) -> str | None:
    """Run corpus ``kernel`` on ``case``'s inputs; None when every expected slot matches numpy."""
    from accelcore.corpus import compare, kernel_spec, load_package

    spec = kernel_spec(kernel)
    raw = load_package(kernel, ModuleKind.OPENCL_SOURCE)
    ref = ArtifactRef(format_for(ModuleKind.OPENCL_SOURCE), TargetIdentity(), MemorySource(raw), _ANY_KERNEL_RESIDENT)
    program = session.load_program(context, ref)
    buffers: dict[int, Any] = {}
    bindings = []
    for row in spec.bindings:
        data = case.initial_bytes(row.slot)
        usage = BufferUsage.for_access(row.access) | BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
        buffer = session.allocate_buffer(context, BufferDesc(len(data), 16, domain, usage)).buffer
        session.write(buffer, data)
        buffers[row.slot] = buffer
        bindings.append(BindingRef(row.slot, buffer, BufferRange(0, len(data)), row.access))
    event = session.submit(queue, program, bindings)
    state = session.wait_terminal(event, what=f"corpus kernel {kernel}")
    problem: str | None = None
    if state != EventState.COMPLETE:
        problem = f"{kernel}: ended {state}"
    else:
        for slot in case.expected:
            size = len(case.initial_bytes(slot))
            found = compare(case, slot, session.read(buffers[slot], size))
            if found is not None:
                problem = f"{kernel}: {found}"
                break
    session.destroy_event(event)
    for buffer in buffers.values():
        session.free_buffer(buffer)
    session.unload_program(program)
    return problem


def corpus_numpy(ctx: CaseContext) -> None:
    from accelcore.corpus import KERNELS, make_case

    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    domain = ctx.target.fixtures[0].domain if ctx.target.fixtures else MemoryDomain.HOST
    problems = [
        problem
        for kernel in KERNELS
        if (problem := _run_case(session, context, queue, kernel, make_case(kernel, 1000, seed=7), domain))
    ]
    session.destroy_queue(queue)
    session.destroy_context(context)
    ctx.check(not problems, "; ".join(problems))


LONG_LOOP_ITERATIONS = 100_000
"""Past 65,535: llvmpipe-based drivers (rusticl, lavapipe) silently end every loop there."""


def long_loop(ctx: CaseContext) -> None:
    """The spin kernel with 100,000 iterations per item gives numpy's answer (no silent loop cap)."""
    from accelcore.corpus import spin_case

    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    domain = ctx.target.fixtures[0].domain if ctx.target.fixtures else MemoryDomain.HOST
    problem = _run_case(session, context, queue, "spin", spin_case(64, LONG_LOOP_ITERATIONS), domain)
    session.destroy_queue(queue)
    session.destroy_context(context)
    ctx.check(problem is None, f"{LONG_LOOP_ITERATIONS} iterations: {problem}")


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
    )
