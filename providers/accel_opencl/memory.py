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

from .errors import cl_call

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


def write_segments(cl: Any, queue: Any, buffer: Any, offset: int, data: ByteSource) -> None:
    """Blocking writes of ``data`` into ``buffer`` at ``offset``, one per source segment."""
    total = data.len()
    segments = data.segments()
    if segments is not None:
        position = offset
        for segment in segments:
            if segment.nbytes:
                with cl_call("clEnqueueWriteBuffer", f"writing {segment.nbytes} bytes at offset {position}"):
                    cl.enqueue_copy(queue, buffer, segment, dst_offset=position, is_blocking=True)
            position += segment.nbytes
        return
    staging = memoryview(bytearray(min(STAGING_CHUNK_BYTES, total)))
    done = 0
    while done < total:
        take = min(staging.nbytes, total - done)
        chunk = staging[:take]
        data.read_at(done, chunk)
        with cl_call("clEnqueueWriteBuffer", f"writing {take} bytes at offset {offset + done}"):
            cl.enqueue_copy(queue, buffer, chunk, dst_offset=offset + done, is_blocking=True)
        done += take


def read_segments(cl: Any, queue: Any, buffer: Any, offset: int, data: ByteSink) -> None:
    """Blocking reads from ``buffer`` at ``offset`` into ``data``, one per sink segment."""
    total = data.len()
    segments = data.segments()
    if segments is not None:
        position = offset
        for segment in segments:
            if segment.nbytes:
                with cl_call("clEnqueueReadBuffer", f"reading {segment.nbytes} bytes at offset {position}"):
                    cl.enqueue_copy(queue, segment, buffer, src_offset=position, is_blocking=True)
            position += segment.nbytes
        return
    staging = memoryview(bytearray(min(STAGING_CHUNK_BYTES, total)))
    done = 0
    while done < total:
        take = min(staging.nbytes, total - done)
        chunk = staging[:take]
        with cl_call("clEnqueueReadBuffer", f"reading {take} bytes at offset {offset + done}"):
            cl.enqueue_copy(queue, chunk, buffer, src_offset=offset + done, is_blocking=True)
        data.write_at(done, chunk)
        done += take
