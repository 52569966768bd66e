"""Exact allocation per domain and segment-by-segment transfers."""

from __future__ import annotations

from typing import Any

import pytest
from accel_opencl import memory
from accel_opencl.discovery import find_device

from accelcore import (
    BufferDesc,
    BufferProperties,
    BufferUsage,
    ContextDesc,
    ErrorKind,
    MemoryDomain,
    MemorySink,
    MemorySource,
    PatternSource,
)

USAGE = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION | BufferUsage.MUTABLE_STATE


@pytest.fixture
def context(accel: Any) -> Any:
    ctx = accel.create_context(ContextDesc())
    yield ctx
    accel.destroy_context(ctx)


@pytest.mark.parametrize("domain", list(MemoryDomain), ids=lambda d: d.name.lower())
def test_allocation_reports_what_the_driver_allocated(accel: Any, context: Any, entry: Any, domain: Any) -> None:
    import pyopencl as cl

    device = find_device(entry).device
    desc = BufferDesc(1000, 16, domain, USAGE)
    allocated = accel.allocate_buffer(context, desc)
    try:
        info = allocated.info
        assert info.desc == desc
        assert info.allocation_bytes == int(allocated.buffer.native.get_info(cl.mem_info.SIZE)) == 1000
        assert info.alignment == int(device.mem_base_addr_align) // 8
        flags = int(allocated.buffer.native.get_info(cl.mem_info.FLAGS))
        host_mapped = bool(flags & int(cl.mem_flags.ALLOC_HOST_PTR))
        assert host_mapped == (domain is not MemoryDomain.DEVICE)
        assert bool(info.properties & BufferProperties.HOST_VISIBLE) == host_mapped
        assert info.properties & BufferProperties.DIRECT_BINDING
        accel.device_info().validate_buffer_info(desc, info)
    finally:
        accel.free_buffer(allocated.buffer)


def test_cpu_device_memory_is_device_local_in_every_domain(accel: Any, entry: Any) -> None:
    import pyopencl as cl

    device = find_device(entry).device
    if not int(device.type) & int(cl.device_type.CPU):
        pytest.skip("a claim about CPU devices; this device is not one")
    for domain in MemoryDomain:
        assert accel.memory.properties[domain] & BufferProperties.DEVICE_LOCAL


def test_alignment_beyond_the_device_guarantee_is_unsupported(accel: Any, context: Any, raises_kind: Any) -> None:
    too_strict = accel.memory.base_alignment * 2
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        accel.allocate_buffer(context, BufferDesc(64, too_strict, MemoryDomain.HOST, USAGE))
    assert str(accel.memory.base_alignment) in info.value.message


def test_oversized_buffer_is_resource_limit(accel: Any, context: Any, raises_kind: Any) -> None:
    limit = accel.device_info().limits.max_buffer_bytes
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        accel.allocate_buffer(context, BufferDesc(limit + 1, 16, MemoryDomain.DEVICE, USAGE))
    assert accel.live_resources()["buffers"] == 0


class _CountingCL:
    """The real pyopencl module, with its host <-> buffer copies recorded (sizes and offsets).

    The provider calls pyopencl's own ``_cl._enqueue_write_buffer`` / ``_enqueue_read_buffer``
    (what ``enqueue_copy`` dispatches to); with ``lowlevel=False`` the wrapper hides them, as an
    older pyopencl would, and the provider must fall back to ``enqueue_copy``.
    """

    def __init__(self, *, lowlevel: bool = True) -> None:
        import pyopencl

        self._real = pyopencl
        self.calls: list[tuple[int, int]] = []
        if lowlevel:
            self._cl = _CountingLowLevel(pyopencl._cl, self.calls)

    def enqueue_copy(self, queue: Any, dest: Any, src: Any, **kwargs: Any) -> Any:
        host = src if isinstance(src, memoryview) else dest
        offset = kwargs.get("dst_offset", kwargs.get("src_offset", 0))
        self.calls.append((memoryview(host).nbytes, offset))
        return self._real.enqueue_copy(queue, dest, src, **kwargs)


class _CountingLowLevel:
    def __init__(self, lowlevel: Any, calls: list[tuple[int, int]]) -> None:
        self._lowlevel = lowlevel
        self.calls = calls

    def _enqueue_write_buffer(self, queue: Any, mem: Any, host: Any, *args: Any) -> Any:
        self.calls.append((memoryview(host).nbytes, args[0]))
        return self._lowlevel._enqueue_write_buffer(queue, mem, host, *args)

    def _enqueue_read_buffer(self, queue: Any, mem: Any, host: Any, *args: Any) -> Any:
        self.calls.append((memoryview(host).nbytes, args[0]))
        return self._lowlevel._enqueue_read_buffer(queue, mem, host, *args)


@pytest.mark.parametrize("lowlevel", [True, False], ids=["lowlevel", "enqueue_copy"])
@pytest.mark.parametrize("domain", list(MemoryDomain), ids=lambda d: d.name.lower())
def test_transfers_go_segment_by_segment(accel: Any, context: Any, domain: Any, lowlevel: bool) -> None:
    data = bytes((i * 7 + 3) % 256 for i in range(300))
    buf = accel.allocate_buffer(context, BufferDesc(512, 16, domain, USAGE)).buffer
    try:
        counting = _CountingCL(lowlevel=lowlevel)
        queue = context.transfer_queue
        memory.write_segments(counting, queue, buf.native, 100, MemorySource(data[:1], data[1:120], data[120:]))
        assert counting.calls == [(1, 100), (119, 101), (180, 220)]
        counting.calls.clear()
        out = bytearray(300)
        view = memoryview(out)
        memory.read_segments(counting, queue, buf.native, 100, MemorySink(view[:50], view[50:]))
        assert counting.calls == [(50, 100), (250, 150)]
        assert bytes(out) == data
        # and through the contract calls
        again = bytearray(300)
        accel.read_buffer(buf, 100, MemorySink(memoryview(again)[:7], memoryview(again)[7:]))
        assert bytes(again) == data
    finally:
        accel.free_buffer(buf)


def test_a_source_without_segments_goes_through_bounded_staging(accel: Any, context: Any) -> None:
    size = memory.STAGING_CHUNK_BYTES * 2 + 4096
    buf = accel.allocate_buffer(context, BufferDesc(size, 16, MemoryDomain.DEVICE, USAGE)).buffer
    try:
        counting = _CountingCL()
        source = PatternSource(size, b"\x01\x02\x03\x05\x08")
        memory.write_segments(counting, context.transfer_queue, buf.native, 0, source)
        assert [n for n, _ in counting.calls] == [memory.STAGING_CHUNK_BYTES] * 2 + [4096]
        out = bytearray(size)
        accel.read_buffer(buf, 0, MemorySink(out))
        assert all(out[i] == source.byte_at(i) for i in (0, 1, 4, 5, size // 2, size - 1))
        assert out[memory.STAGING_CHUNK_BYTES : memory.STAGING_CHUNK_BYTES + 10] == bytes(
            source.byte_at(memory.STAGING_CHUNK_BYTES + i) for i in range(10)
        )
    finally:
        accel.free_buffer(buf)


def test_transfer_bounds_and_permissions(accel: Any, context: Any, check_transfer_rules: Any) -> None:
    read_only = accel.allocate_buffer(
        context, BufferDesc(64, 16, MemoryDomain.HOST, BufferUsage.TRANSFER_SOURCE | BufferUsage.PROGRAM_INPUT)
    ).buffer
    write_only = accel.allocate_buffer(
        context, BufferDesc(64, 16, MemoryDomain.HOST, BufferUsage.TRANSFER_DESTINATION | BufferUsage.PROGRAM_OUTPUT)
    ).buffer
    try:
        check_transfer_rules(accel, read_only, write_only)
    finally:
        accel.free_buffer(read_only)
        accel.free_buffer(write_only)


def test_context_with_children_cannot_be_destroyed(accel: Any) -> None:
    from accelcore import ReleaseRejected

    ctx = accel.create_context(ContextDesc())
    buf = accel.allocate_buffer(ctx, BufferDesc(16, 16, MemoryDomain.HOST, USAGE)).buffer
    with pytest.raises(ReleaseRejected) as info:
        accel.destroy_context(ctx)
    assert info.value.resource is ctx and info.value.kind is ErrorKind.BUSY
    accel.free_buffer(buf)
    accel.destroy_context(ctx)
    assert accel.live_resources()["contexts"] == 0


def test_a_failed_native_buffer_release_is_indeterminate(entry: Any) -> None:
    """A native release that fails leaves the object's fate unknown: ReleaseIndeterminate, never a retry."""
    from accel_opencl import provider_family

    from accelcore import ReleaseIndeterminate

    accel = provider_family.open(entry)
    ctx = accel.create_context(ContextDesc())
    buf = accel.allocate_buffer(ctx, BufferDesc(16, 16, MemoryDomain.HOST, USAGE)).buffer
    buf.native.release()  # the object is already gone: clReleaseMemObject now fails in the binding
    with pytest.raises(ReleaseIndeterminate) as info:
        accel.free_buffer(buf)
    assert "clReleaseMemObject" in str(info.value)
    live = accel.live_resources()
    assert live["buffers"] == 0 and live["indeterminate"] == 1
    accel.destroy_context(ctx)
