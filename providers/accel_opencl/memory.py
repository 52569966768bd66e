"""Memory domains, exact allocation and segment-by-segment transfers.

Domains (decided once per device from its answers, see docs/opencl.md):

* Host and Shared: ``CL_MEM_ALLOC_HOST_PTR`` - one allocation the host maps
  without a copy and kernels bind directly (HOST_VISIBLE | DIRECT_BINDING).
* Device: a plain ``CL_MEM_READ_WRITE`` allocation (DEVICE_LOCAL |
  DIRECT_BINDING).
* On a device whose memory *is* host memory (a CPU device, or
  ``CL_DEVICE_HOST_UNIFIED_MEMORY``), every allocation is also DEVICE_LOCAL:
  the device executes from that very memory, as lavapipe's single
  device-local + host-visible memory type says for Vulkan.

Alignment is ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (converted from bits); a request
for more is UNSUPPORTED. ``allocation_bytes`` is ``CL_MEM_SIZE``.

Transfers are blocking ``clEnqueue{Write,Read}Buffer`` calls, one per segment
of the caller's port, straight from/to the caller's memory; a port without
segments goes through one reused staging chunk of at most
:data:`STAGING_CHUNK_BYTES`. Nothing is coalesced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelcore import (
    BackendError,
    BufferDesc,
    BufferProperties,
    ByteSink,
    ByteSource,
    Capabilities,
    ErrorKind,
    MemoryDomain,
)

from .errors import cl_error, native_errors

__all__ = ["STAGING_CHUNK_BYTES", "MemoryPlan", "plan_memory", "read_segments", "write_segments"]

STAGING_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """How each domain is allocated on one device and what its backing is."""

    capabilities: Capabilities
    flags: dict[MemoryDomain, int]
    properties: dict[MemoryDomain, BufferProperties]
    base_alignment: int
    unified: bool


def plan_memory(cl: Any, device: Any) -> MemoryPlan:
    """The memory plan for ``device`` from its type and unified-memory answer."""
    is_cpu = bool(int(device.type) & int(cl.device_type.CPU))
    try:
        unified = bool(device.host_unified_memory)
    except cl.Error:  # deprecated query; absent on some OpenCL 3.0 drivers
        unified = False
    unified = unified or is_cpu
    local = BufferProperties.DEVICE_LOCAL if unified else BufferProperties(0)
    mapped = BufferProperties.HOST_VISIBLE | BufferProperties.DIRECT_BINDING | local
    rw = int(cl.mem_flags.READ_WRITE)
    host_ptr = rw | int(cl.mem_flags.ALLOC_HOST_PTR)
    flags = {MemoryDomain.HOST: host_ptr, MemoryDomain.SHARED: host_ptr, MemoryDomain.DEVICE: rw}
    properties = {
        MemoryDomain.HOST: mapped,
        MemoryDomain.SHARED: mapped,
        MemoryDomain.DEVICE: BufferProperties.DEVICE_LOCAL | BufferProperties.DIRECT_BINDING,
    }
    capabilities = Capabilities.HOST_VISIBLE_MEMORY | Capabilities.SHARED_MEMORY | Capabilities.DEVICE_LOCAL_MEMORY
    base_alignment = max(1, int(device.mem_base_addr_align) // 8)
    return MemoryPlan(capabilities, flags, properties, base_alignment, unified)


def check_alignment(plan: MemoryPlan, desc: BufferDesc) -> None:
    if desc.alignment > plan.base_alignment:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"alignment {desc.alignment} exceeds what this device guarantees for a buffer base "
            f"(CL_DEVICE_MEM_BASE_ADDR_ALIGN = {plan.base_alignment} bytes); request at most that",
        )


def _copiers(cl: Any) -> tuple[Any, Any]:
    """pyopencl's own write/read entry points (what ``enqueue_copy`` dispatches to for host <-> buffer).

    Calling them directly skips ``enqueue_copy``'s per-call type dispatch; an older pyopencl
    without them falls back to ``enqueue_copy``.
    """
    lowlevel = getattr(cl, "_cl", None)
    write = getattr(lowlevel, "_enqueue_write_buffer", None)
    read = getattr(lowlevel, "_enqueue_read_buffer", None)
    if write is None or read is None:

        def write(queue: Any, mem: Any, host: Any, offset: int, wait_for: Any, blocking: bool) -> Any:
            return cl.enqueue_copy(queue, mem, host, dst_offset=offset, is_blocking=blocking)

        def read(queue: Any, mem: Any, host: Any, offset: int, wait_for: Any, blocking: bool) -> Any:
            return cl.enqueue_copy(queue, host, mem, src_offset=offset, is_blocking=blocking)

    return write, read


_module_copiers: tuple[Any, Any, Any] | None = None
"""(the pyopencl module, its write, its read), looked up once."""


def _copy_functions(cl: Any) -> tuple[Any, Any]:
    global _module_copiers
    known = _module_copiers
    if known is not None and cl is known[0]:
        return known[1], known[2]
    write, read = _copiers(cl)
    if getattr(cl, "__name__", None) == "pyopencl":
        _module_copiers = (cl, write, read)
    return write, read


def write_segments(cl: Any, queue: Any, buffer: Any, offset: int, data: ByteSource) -> None:
    """Blocking writes of ``data`` into ``buffer`` at ``offset``, one per source segment.

    Failure messages (with the segment's size and offset) are built only when a call fails.
    """
    _copy_segments(_copy_functions(cl)[0], _write_failed, queue, buffer, offset, data, data.read_at, None)


def read_segments(cl: Any, queue: Any, buffer: Any, offset: int, data: ByteSink) -> None:
    """Blocking reads from ``buffer`` at ``offset`` into ``data``, one per sink segment.

    Failure messages (with the segment's size and offset) are built only when a call fails.
    """
    _copy_segments(_copy_functions(cl)[1], _read_failed, queue, buffer, offset, data, None, data.write_at)


def _copy_segments(
    copy: Any,
    failed: Callable[[BaseException, int, int], BackendError],
    queue: Any,
    buffer: Any,
    offset: int,
    data: ByteSource | ByteSink,
    fill: Callable[[int, memoryview], None] | None,
    drain: Callable[[int, memoryview], None] | None,
) -> None:
    """One blocking ``copy`` per segment of ``data``; without segments, through a staging chunk of at most
    STAGING_CHUNK_BYTES that ``fill`` loads before each copy (writes) or ``drain`` empties after it (reads)."""
    segments = data.segments()
    if segments is not None:
        position = offset
        for segment in segments:
            size = segment.nbytes
            if size:
                try:
                    copy(queue, buffer, segment, position, None, True)
                except native_errors() as exc:
                    raise failed(exc, size, position) from exc
            position += size
        return
    total = data.len()
    staging = memoryview(bytearray(min(STAGING_CHUNK_BYTES, total)))
    done = 0
    while done < total:
        size = min(staging.nbytes, total - done)
        chunk = staging[:size]
        if fill is not None:
            fill(done, chunk)
        try:
            copy(queue, buffer, chunk, offset + done, None, True)
        except native_errors() as exc:
            raise failed(exc, size, offset + done) from exc
        if drain is not None:
            drain(done, chunk)
        done += size


def _write_failed(exc: BaseException, size: int, position: int) -> BackendError:
    return cl_error(exc, "clEnqueueWriteBuffer", f"writing {size} bytes at offset {position}")


def _read_failed(exc: BaseException, size: int, position: int) -> BackendError:
    return cl_error(exc, "clEnqueueReadBuffer", f"reading {size} bytes at offset {position}")
