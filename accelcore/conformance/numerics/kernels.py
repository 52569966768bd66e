"""The numerics suite's committed kernels (artifacts/, docs/artifact-format.md) and how a case runs one.

OpenCL: ``src/opencl/numerics_*.cl`` as OpenCL C source packages, built by the driver with the default
build options. Vulkan: ``spirv/numerics_*.vk.spv`` (glslangValidator from ``src/glsl/numerics_*.comp``;
the function chosen by specialization constant 0). Either way one GLOBAL launch computes every value
of a sweep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ...contract.buffers import BufferDesc, BufferRange
from ...contract.errors import BackendError
from ...contract.flags import BufferUsage, MemoryDomain
from ...contract.ports import MemorySource
from ...contract.program import ArtifactRef
from ...contract.submission import BindingRef, EventState
from ...kernels.package import KernelPackage, ModuleKind
from ...kernels.package_codec import write_package
from ..case import CaseContext, Session, describe_exception
from ..corpus import corpus_root

__all__ = ["OPENCL", "VULKAN", "Verdict", "conclude", "launch", "module_bytes", "package_for"]

OPENCL = "opencl"
VULKAN = "vulkan"
_RESIDENT = 64 << 20


def module_bytes(api: str, name: str) -> bytes:
    """The committed module ``numerics_<name>`` for ``api`` (OpenCL C text or Vulkan SPIR-V)."""
    root = corpus_root()
    path = (
        root / "src" / "opencl" / f"numerics_{name}.cl" if api == OPENCL else root / "spirv" / f"numerics_{name}.vk.spv"
    )
    return path.read_bytes()


def opencl_kernel_source(source: bytes, entry: str) -> bytes:
    """The part of a committed numerics .cl file a kernel needs: everything before the first kernel
    (comments, pragmas) and the kernel ``entry`` itself, so a driver compiles one small program per
    case (seconds saved per case on CPU drivers; the code is the committed text, unchanged)."""
    text = source.decode("utf-8")
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("__kernel ")]
    if not starts:
        return source
    preamble = "".join(lines[: starts[0]])
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        block = "".join(lines[start:end])
        if f" {entry}(" in block.split("{", 1)[0]:
            return (preamble + block).encode("utf-8")
    return source


def package_for(
    api: str,
    module: str,
    *,
    entry: str | None = None,
    selector: int | None = None,
    global_size: int,
    spec: Mapping[int | str, object] | None = None,
    build_options: str = "",
) -> KernelPackage:
    """A GLOBAL-dispatch package of kernel ``entry`` (OpenCL) or selector ``selector`` (Vulkan FN)."""
    from ...kernels.pack import pack_module

    data = module_bytes(api, module)
    if api == OPENCL:
        data = opencl_kernel_source(data, entry or "")
        return pack_module(
            data, kind=ModuleKind.OPENCL_SOURCE, entry_point=entry, global_size=global_size, build_options=build_options
        )
    constants: dict[int | str, object] = {key: value for key, value in (spec or {}).items()}
    if selector is not None:
        constants["FN"] = selector
    return pack_module(data, kind=ModuleKind.SPIRV_VULKAN, spec_constants=constants or None, global_size=global_size)


def _domain(ctx: CaseContext) -> MemoryDomain:
    if ctx.target.fixtures:
        return ctx.target.fixtures[0].domain
    return MemoryDomain.HOST if ctx.info.capabilities.supports_memory_domain(MemoryDomain.HOST) else MemoryDomain.DEVICE


def launch(
    ctx: CaseContext,
    session: Session,
    context: Any,
    queue: Any,
    pkg: KernelPackage,
    buffers: Sequence[npt.NDArray[Any]],
    what: str,
) -> list[bytes]:
    """Load ``pkg``, bind ``buffers`` to its slots in order, run once, return every buffer's bytes afterwards.

    A load that fails fails the case naming the driver's words (callers that probe support catch
    :class:`BackendError` themselves)."""
    artifact = ArtifactRef(pkg.format, pkg.target, MemorySource(write_package(pkg)), _RESIDENT)
    program = session.load_program(context, artifact)
    domain = _domain(ctx)
    handles = []
    bindings = []
    for row, array in zip(pkg.bindings, buffers, strict=True):
        data = np.ascontiguousarray(array).tobytes()
        usage = BufferUsage.for_access(row.access) | BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
        handle = session.allocate_buffer(context, BufferDesc(len(data), 16, domain, usage)).buffer
        session.write(handle, data)
        handles.append((handle, len(data)))
        bindings.append(BindingRef(row.slot, handle, BufferRange(0, len(data)), row.access))
    event = session.submit(queue, program, bindings)
    state = session.wait_terminal(event, what=what)
    ctx.check(state == EventState.COMPLETE, f"{what}: the launch ended {state}, expected Complete")
    out = [session.read(handle, size) for handle, size in handles]
    session.destroy_event(event)
    for handle, _ in handles:
        session.free_buffer(handle)
    session.unload_program(program)
    return out


def try_load(session: Session, context: Any, pkg: KernelPackage) -> str | None:
    """Load and unload ``pkg``; None when it loads, else the refusal in one line."""
    artifact = ArtifactRef(pkg.format, pkg.target, MemorySource(write_package(pkg)), _RESIDENT)
    try:
        program = session.load_program(context, artifact)
    except BackendError as exc:
        return describe_exception(exc).splitlines()[0][:300]
    session.unload_program(program)
    return None


class Verdict(Protocol):
    """What a numerics case measured (:class:`~.judge.Measurement`, :class:`~.exact.ExactResult`)."""

    @property
    def passed(self) -> bool: ...

    def summary(self) -> str: ...

    def metrics(self) -> dict[str, Any]: ...


def conclude(ctx: CaseContext, result: Verdict, **extra: Any) -> None:
    """How every numerics case ends: its metrics (and ``extra``) recorded, passed or not; then it fails
    with the one-line summary, or passes noting it."""
    ctx.record({**result.metrics(), **extra})
    ctx.check(result.passed, result.summary())
    ctx.note(result.summary())
