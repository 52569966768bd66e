"""Vulkan-specific conformance cases, run after the standard suite (``accel conformance`` and the tests).

- ``vulkan.corpus-kernels``: every corpus kernel's Vulkan package matches its
  numpy reference (integers bit-exact, floats within the corpus's stated ulp
  bound) on Host and Device buffers.
- ``vulkan.spirv-refused-before-driver``: truncated, garbage and bit-flipped
  modules are refused by the provider's own checks (no native call in the
  error), and the instance still loads and runs the good module afterwards.
- ``vulkan.package-contradicts-module``: binding tables, local sizes and entry
  points that contradict the module → INCOMPATIBLE; an OpenCL module → UNSUPPORTED.
- ``vulkan.queues-independent``: with one queue's gate held, a second queue
  of the same context still runs to completion; then the first completes.
- ``vulkan.kernel-arguments``: version-2 packages with a push-constant block
  (``{ float a; uint n; }`` saxpy, twice with other values; a block whose
  first word is the count), a uniform parameter buffer in descriptor set 1,
  specialization constants that set a float and the work-group size (the
  kernel writes ``gl_WorkGroupSize.x`` and ``gl_LocalInvocationID.x``), and a
  2-D GLOBAL dispatch match numpy; a push block of the wrong size, an
  undeclared SpecId and a local size the spec constants contradict are
  refused INCOMPATIBLE before the driver (kernels: :mod:`accel_vulkan.argument_kernels`,
  compiled with glslangValidator; skipped, with reason, without it).
- ``vulkan.argument-layouts``: a std430 buffer of structs (vec3 then float, an array of structs)
  and a std140 uniform block (``float[3]`` on a 16-byte stride) in the module's layout give numpy's
  answer bit for bit; the mismatches users make are refused (:mod:`accel_vulkan.layout_case`).
- ``vulkan.validation-clean``: when the factory enabled the validation layer,
  no instance it built received a message (skipped, with reason, otherwise).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
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
    Timeout,
)
from accelcore.conformance.case import CaseContext, ConformanceCase, Session
from accelcore.conformance.corpus import (
    KERNELS,
    KernelCase,
    compare,
    kernel_spec,
    load_module,
    load_package,
    make_case,
    spin_case,
)
from accelcore.kernels.package import KernelPackage, ModuleKind, PackageBinding, SpecConstant, format_for
from accelcore.kernels.package_codec import parse_package, write_package

from .layout_case import argument_layouts

VK = ModuleKind.SPIRV_VULKAN
RESIDENT = 64 << 20
REFUSED_KINDS = (ErrorKind.INVALID_ARGUMENT, ErrorKind.UNSUPPORTED, ErrorKind.INCOMPATIBLE)


def artifact(raw: bytes, kind: ModuleKind = VK) -> ArtifactRef:
    return ArtifactRef(format_for(kind), TargetIdentity.any(), MemorySource(raw), RESIDENT)


def run_kernel(
    session: Session,
    context: Any,
    queue: Any,
    kernel: str,
    elements: int,
    domain: MemoryDomain,
    seed: int = 0,
    case: KernelCase | None = None,
) -> str | None:
    """Run one corpus kernel (on ``case``, else a generated one); None when every checked slot
    matches numpy, else what differed."""
    spec = kernel_spec(kernel)
    case = case if case is not None else make_case(kernel, elements, seed)
    program = session.load_program(context, artifact(load_package(kernel, VK)))
    slots = {row.slot: (case.initial_bytes(row.slot), row.access) for row in spec.bindings}
    state, contents = session.run_once(context, queue, program, slots, domain, what=f"{kernel} event")
    session.unload_program(program)
    if state != EventState.COMPLETE:
        return f"{kernel}: event ended {state}"
    for slot in case.expected:
        problem = compare(case, slot, contents[slot])
        if problem is not None:
            return f"{kernel} ({domain.name}, n={elements}): {problem}"
    return None


def _corpus(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    for domain in (MemoryDomain.HOST, MemoryDomain.DEVICE):
        if not ctx.info.capabilities.supports_memory_domain(domain):
            ctx.note(f"{domain.name} domain not offered; kernels not run there")
            continue
        for kernel in KERNELS:
            problem = run_kernel(session, context, queue, kernel, 1000, domain, seed=7)
            ctx.check(problem is None, problem or "")


LONG_LOOP_ITERATIONS = 100_000
"""Past 65,535: llvmpipe-based drivers (lavapipe, rusticl) silently end every loop there."""


def _long_loop(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    domain = (
        MemoryDomain.HOST if ctx.info.capabilities.supports_memory_domain(MemoryDomain.HOST) else MemoryDomain.DEVICE
    )
    case = spin_case(64, LONG_LOOP_ITERATIONS)
    problem = run_kernel(session, context, queue, "spin", 64, domain, case=case)
    ctx.check(problem is None, f"{LONG_LOOP_ITERATIONS} iterations: {problem}")


def _with_module(raw_package: bytes, module: bytes) -> bytes:
    """The package bytes with its module region replaced by ``module`` (same length)."""
    return raw_package[: len(raw_package) - len(module)] + module


def _expect_refused(ctx: CaseContext, session: Session, context: Any, raw: bytes, what: str) -> bool:
    """True when refused by the provider's own checks; False when it loaded (then it is unloaded)."""
    try:
        program = session.load_program(context, artifact(raw))
    except BackendError as error:
        ctx.check(error.kind in REFUSED_KINDS, f"{what}: refused with {error.kind.name}, expected one of "
                  f"{[k.name for k in REFUSED_KINDS]} ({error.message})")  # fmt: skip
        ctx.check(
            error.native_call is None,
            f"{what}: the refusal came from the driver ({error.native_call}), not from the checks before it",
        )
        return True
    session.unload_program(program)
    return False


def _malformed(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    good = load_package("conformance", VK)
    module = parse_package(good).module
    pkg = parse_package(good)
    cases = {
        "garbage words": bytes(random.Random(1).randrange(256) for _ in range(len(module))),
        "zeroed body": module[:20] + bytes(len(module) - 20),
        "header only": module[:20],
        "truncated to half": module[: (len(module) // 8) * 4],
        "last word dropped": module[:-4],
    }
    for what, bad in cases.items():
        same_size = len(bad) == len(module)
        raw = _with_module(good, bad) if same_size else write_package(dataclasses.replace(pkg, module=bad))
        ctx.check(_expect_refused(ctx, session, context, raw, what), f"{what}: the module was accepted")
    rng = random.Random(20261130)
    refused = 0
    flips = 48
    for _ in range(flips):
        position = rng.randrange(len(module) * 8)
        flipped = bytearray(module)
        flipped[position // 8] ^= 1 << (position % 8)
        if _expect_refused(ctx, session, context, _with_module(good, bytes(flipped)), f"bit {position} flipped"):
            refused += 1
    ctx.note(f"{refused} of {flips} single-bit flips refused before the driver; the rest were still valid modules")
    queue = session.create_queue(context)
    problem = run_kernel(session, context, queue, "conformance", 256, MemoryDomain.HOST)
    ctx.check(problem is None, f"after the refusals the good module no longer runs: {problem}")


def _contradictions(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    pkg = parse_package(load_package("conformance", VK))
    read_row, write_row = pkg.bindings
    variants: dict[str, tuple[KernelPackage, ErrorKind]] = {
        "slot 0 declared WRITE on a readonly binding": (
            dataclasses.replace(pkg, bindings=(dataclasses.replace(read_row, access=AccessMode.READ_WRITE), write_row)),
            ErrorKind.INCOMPATIBLE,
        ),
        "slot 1 declared READ_WRITE on a writeonly binding": (
            dataclasses.replace(pkg, bindings=(read_row, dataclasses.replace(write_row, access=AccessMode.READ_WRITE))),
            ErrorKind.INCOMPATIBLE,
        ),
        "binding 1 missing from the table": (
            dataclasses.replace(pkg, bindings=(read_row,), dispatch=dataclasses.replace(pkg.dispatch, slot=0)),
            ErrorKind.INCOMPATIBLE,
        ),
        "a table row naming binding 5": (
            dataclasses.replace(pkg, bindings=(read_row, write_row, PackageBinding(2, 5, AccessMode.READ))),
            ErrorKind.INCOMPATIBLE,
        ),
        "local size 32 instead of 64": (dataclasses.replace(pkg, local_size=(32, 1, 1)), ErrorKind.INCOMPATIBLE),
        "entry point 'mane'": (dataclasses.replace(pkg, entry_point="mane"), ErrorKind.INCOMPATIBLE),
        "OpenCL SPIR-V in a Vulkan package": (
            dataclasses.replace(pkg, module=load_module("conformance", ModuleKind.SPIRV_OPENCL)),
            ErrorKind.UNSUPPORTED,
        ),
    }
    for what, (variant, kind) in variants.items():
        error = ctx.expect_error(kind, what, session.load_program, context, artifact(write_package(variant)))
        ctx.check(error.native_call is None, f"{what}: refused by the driver ({error.native_call}), not before it")


def run_arguments(session: Session, context: Any, queue: Any, run: Any, domain: MemoryDomain) -> str | None:
    """Run one :class:`~accel_vulkan.argument_kernels.ArgumentRun`; None when every checked slot matches."""
    program = session.load_program(context, artifact(write_package(run.package)))
    slots = {slot: (initial, run.access[slot]) for slot, initial in run.initial.items()}
    state, contents = session.run_once(context, queue, program, slots, domain, what=f"{run.what} event")
    session.unload_program(program)
    if state != EventState.COMPLETE:
        return f"{run.what}: event ended {state}"
    for slot in run.expected:
        problem = run.problem(slot, contents[slot])
        if problem is not None:
            return f"{problem} ({domain.name})"
    return None


def _kernel_arguments(ctx: CaseContext) -> None:
    from . import argument_kernels as kernels

    if kernels.glslang_path() is None:
        ctx.skip("glslangValidator is not installed (Debian: glslang-tools); the kernels are compiled at run time")
    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    domain = (
        MemoryDomain.HOST if ctx.info.capabilities.supports_memory_domain(MemoryDomain.HOST) else MemoryDomain.DEVICE
    )
    for run in kernels.standard_runs():
        problem = run_arguments(session, context, queue, run, domain)
        ctx.check(problem is None, problem or "")
    saxpy = kernels.saxpy_package(2.0, 64)
    specialised = kernels.specialised_package(32, 1.0, 1)
    refusals = {
        "a 4-byte push block for the module's 8-byte one": dataclasses.replace(saxpy, push_constants=bytes(4)),
        "a 12-byte push block for the module's 8-byte one": dataclasses.replace(saxpy, push_constants=bytes(12)),
        "SpecId 7, which the module does not declare": dataclasses.replace(
            specialised, spec_constants=(*specialised.spec_constants, SpecConstant(7, kernels.U32, bytes(4)))
        ),
        "local size 64 while local_size_x_id specialises it to 32": kernels.specialised_package(
            32, 1.0, 1, stated_local=64
        ),
    }
    for what, package in refusals.items():
        error = ctx.expect_error(
            ErrorKind.INCOMPATIBLE, what, session.load_program, context, artifact(write_package(package))
        )
        ctx.check(error.native_call is None, f"{what}: refused by the driver ({error.native_call}), not before it")
    error = ctx.expect_error(
        ErrorKind.INCOMPATIBLE,
        "wrong push block size",
        session.load_program,
        context,
        artifact(write_package(refusals["a 4-byte push block for the module's 8-byte one"])),
    )
    ctx.check(
        "8 bytes" in error.message and "4 bytes" in error.message,
        f"the push-block refusal names both sizes: {error.message}",
    )


def _queues(ctx: CaseContext) -> None:
    session = ctx.open()
    provider = session.provider
    context = session.create_context()
    first = session.create_queue(context)
    second = session.create_queue(context)
    program = session.load_program(context)
    runs = []
    for _ in range(2):
        made = session.fixtures(context)
        runs.append(made)
    provider.hold(first)
    try:
        held = session.submit(first, program, session.bindings(runs[0]), Timeout.INFINITE)
        free = session.submit(second, program, session.bindings(runs[1]), Timeout.INFINITE)
        state = session.wait_terminal(free, what="event on the second queue while the first is held")
        ctx.check(state == EventState.COMPLETE, f"second queue's event ended {state}")
        ctx.check(session.poll(held) == EventState.PENDING, "the held queue's event left Pending while held")
        session.check_contents(runs[1], expect="expected", what="second queue")
        session.check_contents(runs[0], expect="initial", what="held queue before release")
    finally:
        provider.release(queue=first)
    state = session.wait_terminal(held, what="first queue's event after release")
    ctx.check(state == EventState.COMPLETE, f"first queue's event ended {state}")
    session.check_contents(runs[0], expect="expected", what="first queue")


def _validation_clean(factory: Any) -> Callable[[CaseContext], None]:
    def run(ctx: CaseContext) -> None:
        if not getattr(factory, "validation_enabled", False):
            ctx.skip("the validation layer is off for this run (set ACCEL_VULKAN_VALIDATION=1 to check)")
        messages = factory.messages
        ctx.check(
            not messages,
            f"{len(messages)} validation message(s) over {factory.instances} instances; first: {messages[:1]}",
        )

    return run


def extra_cases(factory: Any) -> list[ConformanceCase]:
    """The Vulkan cases; ``vulkan.validation-clean`` reads the messages ``factory`` collected."""
    return [
        ConformanceCase("vulkan.corpus-kernels", _corpus, description="corpus kernels match numpy"),
        ConformanceCase(
            "vulkan.spirv-refused-before-driver", _malformed, description="malformed / bit-flipped SPIR-V refused"
        ),
        ConformanceCase(
            "vulkan.package-contradicts-module", _contradictions, description="package vs module → INCOMPATIBLE"
        ),
        ConformanceCase("vulkan.queues-independent", _queues, description="two queues progress independently"),
        ConformanceCase("vulkan.long-loop", _long_loop, description="100,000-iteration loops run to the end"),
        ConformanceCase(
            "vulkan.kernel-arguments",
            _kernel_arguments,
            mandatory=False,
            description="push constants, spec constants, uniform buffers in set 1, 2-D GLOBAL dispatch vs numpy",
        ),
        ConformanceCase(
            "vulkan.argument-layouts",
            argument_layouts,
            mandatory=False,
            description="std430 structs and a std140 uniform block in the module's layout vs numpy; mismatches refused",
        ),
        ConformanceCase(
            "vulkan.validation-clean",
            _validation_clean(factory),
            mandatory=False,
            description="zero validation-layer messages",
        ),
    ]
