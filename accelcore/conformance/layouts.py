"""The body the per-API ``*.argument-layouts`` conformance cases share.

Promise: :func:`layout_problems` takes a package whose buffers hold structs (and vectors, unions,
std140 arrays), numpy arrays built from the layouts the module declares (Clang's for OpenCL C, the
decorations for SPIR-V, read through :func:`accelcore.api.declared_elements`), the output the
device must write, and arrays that do not match. It checks that every matching array passes the one
host check (:func:`accelcore.kernels.layouts.check_array`) and every mismatch is refused with
INVALID_ARGUMENT, then runs the package once on the device and compares the written bytes with
numpy's answer exactly: the device must lay the structs out as the module says. It returns what went
wrong (empty when nothing did). The providers name the kernels (``accel_opencl``, ``accel_vulkan``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..contract.buffers import BufferDesc, BufferRange
from ..contract.errors import BackendError, ErrorKind
from ..contract.flags import AccessMode, BufferUsage, MemoryDomain
from ..contract.ports import MemorySource
from ..contract.program import ArtifactRef
from ..contract.submission import BindingRef, EventState
from ..kernels.package import KernelPackage
from ..kernels.package_codec import write_package
from .case import Session

__all__ = ["layout_problems"]

_RESIDENT = 64 << 20


def layout_problems(
    session: Session,
    context: Any,
    queue: Any,
    package: KernelPackage,
    arrays: Mapping[int, np.ndarray],
    expected: Mapping[int, np.ndarray],
    mismatches: Sequence[tuple[str, int, np.ndarray]],
    domain: MemoryDomain,
) -> list[str]:
    """What differs from the promise (see the module docstring); [] when the device and the checks keep it."""
    from ..api import check_buffer_array, declared_elements

    problems: list[str] = []
    declared = declared_elements(package)
    for slot, array in arrays.items():
        try:
            check_buffer_array(f"slot {slot}", array.dtype, array.shape, declared.get(slot))
        except BackendError as exc:
            problems.append(f"an array in the declared layout was refused: {exc.message}")
    for what, slot, array in mismatches:
        try:
            check_buffer_array(f"slot {slot}", array.dtype, array.shape, declared.get(slot))
        except BackendError as exc:
            if exc.kind is not ErrorKind.INVALID_ARGUMENT:
                problems.append(f"{what}: refused as {exc.kind.name}, not INVALID_ARGUMENT")
        else:
            problems.append(f"{what}: accepted; it must be refused")
    if problems:
        return problems
    artifact = ArtifactRef(package.format, package.target, MemorySource(write_package(package)), _RESIDENT)
    program = session.load_program(context, artifact)
    rows = {row.slot: row for row in package.bindings}
    buffers: dict[int, Any] = {}
    bindings = []
    for slot, array in arrays.items():
        access = AccessMode(rows[slot].access)
        usage = BufferUsage.for_access(access) | BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
        data = array.tobytes()
        handle = session.allocate_buffer(context, BufferDesc(len(data), 16, domain, usage)).buffer
        session.write(handle, data)
        buffers[slot] = handle
        bindings.append(BindingRef(slot, handle, BufferRange(0, len(data)), access))
    event = session.submit(queue, program, bindings)
    state = session.wait_terminal(event, what="the layout kernel")
    if state != EventState.COMPLETE:
        problems.append(f"the layout kernel ended {state}")
    else:
        for slot, want in expected.items():
            got = np.frombuffer(session.read(buffers[slot], want.nbytes), want.dtype).reshape(want.shape)
            wrong = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
            if wrong.size:
                first = int(wrong[0])
                problems.append(
                    f"slot {slot}: {wrong.size} of {want.size} values differ from numpy "
                    f"(first at {first}: {got.reshape(-1)[first]!r}, numpy {want.reshape(-1)[first]!r}) - "
                    "the device lays a struct out otherwise than the module declares"
                )
    session.destroy_event(event)
    for handle in buffers.values():
        session.free_buffer(handle)
    session.unload_program(program)
    return problems
