"""Exact allocation per domain, honest BufferInfo, and transfers (mapped and through bounded staging)."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
import vulkan as vk
from accel_vulkan.transfer import STAGING_BYTES

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

from .conftest import TRANSFER

DOMAINS = [MemoryDomain.HOST, MemoryDomain.DEVICE, MemoryDomain.SHARED]


def _skip_unless(accel: Any, domain: MemoryDomain) -> None:
    if not accel.device_info().capabilities.supports_memory_domain(domain):
        pytest.skip(f"device does not offer the {domain.name} domain (no memory type honours it)")


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.name.lower())
def test_buffer_info_reports_the_real_allocation(accel: Any, domain: MemoryDomain) -> None:
    _skip_unless(accel, domain)
    ctx = accel.create_context(ContextDesc())
    desc = BufferDesc(1000, 16, domain, TRANSFER | BufferUsage.PROGRAM_INPUT)
    allocated = accel.allocate_buffer(ctx, desc)
    buf = allocated.buffer
    requirements = vk.vkGetBufferMemoryRequirements(ctx.device, buf.buffer)
    memory = vk.vkGetPhysicalDeviceMemoryProperties(accel._physical)
    flags = memory.memoryTypes[buf.memory_type].propertyFlags
    info = allocated.info
    assert info.desc == desc
    assert info.allocation_bytes == requirements.size
    # The buffer sits at offset 0 of its own allocation: it has both alignments (NVIDIA: requirement 16, base 64).
    assert info.alignment == max(requirements.alignment, accel.description.allocation_alignment)
    assert info.alignment % requirements.alignment == 0
    assert requirements.memoryTypeBits & (1 << buf.memory_type)
    assert bool(info.properties & BufferProperties.HOST_VISIBLE) == bool(flags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
    assert bool(info.properties & BufferProperties.DEVICE_LOCAL) == bool(flags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
    assert info.properties & BufferProperties.DIRECT_BINDING
    assert accel.live_resources()["VkDeviceMemory"] == 1 and accel.live_resources()["VkBuffer"] == 1
    accel.free_buffer(buf)
    accel.destroy_context(ctx)


def test_refusals_before_allocation(accel: Any, raises_kind: Any) -> None:
    ctx = accel.create_context(ContextDesc())
    limits = accel.device_info().limits
    usage = TRANSFER | BufferUsage.PROGRAM_INPUT
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        accel.allocate_buffer(ctx, BufferDesc(limits.max_buffer_bytes + 1, 16, MemoryDomain.HOST, usage))
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        accel.allocate_buffer(ctx, BufferDesc(64, 1 << 20, MemoryDomain.HOST, usage))
    assert "alignment" in info.value.message
    assert not any(accel.live_resources().get(k, 0) for k in ("VkBuffer", "VkDeviceMemory"))
    accel.destroy_context(ctx)


@pytest.mark.parametrize("staged", [False, True], ids=["mapped", "staged"])
@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.name.lower())
def test_segmented_round_trip_with_offsets(make_accel: Any, domain: MemoryDomain, staged: bool) -> None:
    accel = make_accel(map_device_domain=not staged)
    _skip_unless(accel, domain)
    size = 2 * STAGING_BYTES + 12345  # several staging chunks plus a partial one
    ctx = accel.create_context(ContextDesc())
    allocated = accel.allocate_buffer(ctx, BufferDesc(size, 16, domain, TRANSFER))
    buf = allocated.buffer
    visible = bool(allocated.info.properties & BufferProperties.HOST_VISIBLE)
    # Staged: Device-domain memory when asked to stage, or when it is not host-visible (NVIDIA's VRAM).
    expect_staged = not visible or (staged and domain is MemoryDomain.DEVICE)
    assert (buf.mapped is None) == expect_staged
    data = np.random.default_rng(3).integers(0, 256, size, dtype=np.uint8)
    accel.write_buffer(buf, 0, MemorySource(data[:1001], data[1001 : STAGING_BYTES + 7], data[STAGING_BYTES + 7 :]))
    head, tail = bytearray(STAGING_BYTES - 3), bytearray(size - STAGING_BYTES + 3)
    accel.read_buffer(buf, 0, MemorySink(head, tail))
    assert bytes(head + tail) == data.tobytes()
    accel.write_buffer(buf, 4097, MemorySource(b"\x11" * 5000))
    window = bytearray(5002)
    accel.read_buffer(buf, 4096, MemorySink(window))
    assert window[0] == data[4096] and window[1:5001] == b"\x11" * 5000 and window[5001] == data[9097]
    accel.free_buffer(buf)
    accel.destroy_context(ctx)


def test_staging_is_one_fixed_buffer_per_context(make_accel: Any) -> None:
    accel = make_accel(map_device_domain=False)
    _skip_unless(accel, MemoryDomain.DEVICE)
    ctx = accel.create_context(ContextDesc())
    buf = accel.allocate_buffer(ctx, BufferDesc(5 * STAGING_BYTES, 16, MemoryDomain.DEVICE, TRANSFER)).buffer
    accel.write_buffer(buf, 0, PatternSource(5 * STAGING_BYTES, b"abc"))
    # The buffer's own memory plus exactly one staging allocation of STAGING_BYTES, whatever the transfer size.
    assert accel.live_resources()["VkDeviceMemory"] == 2
    assert ctx.staging is not None and ctx.staging.view.nbytes == STAGING_BYTES
    out = bytearray(5 * STAGING_BYTES)
    accel.read_buffer(buf, 0, MemorySink(out))
    assert out[:6] == b"abcabc" and out[-1:] == b"abc"[(5 * STAGING_BYTES - 1) % 3 : (5 * STAGING_BYTES - 1) % 3 + 1]
    accel.free_buffer(buf)
    accel.destroy_context(ctx)


@pytest.mark.parametrize("staged", [False, True], ids=["mapped", "staged"])
def test_transfers_allocate_nothing_transfer_sized(make_accel: Any, staged: bool) -> None:
    accel = make_accel(map_device_domain=not staged)
    domain = MemoryDomain.DEVICE if staged else MemoryDomain.HOST
    _skip_unless(accel, domain)
    size = 16 << 20
    ctx = accel.create_context(ContextDesc())
    buf = accel.allocate_buffer(ctx, BufferDesc(size, 16, domain, TRANSFER)).buffer
    accel.write_buffer(buf, 0, PatternSource(64))  # creates the staging objects outside the measurement
    tracemalloc.start()
    try:
        accel.write_buffer(buf, 0, PatternSource(size, b"\x5a\xa5"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 << 10, f"writing {size} bytes allocated a {peak}-byte peak on the Python heap"
    probe = bytearray(8)
    accel.read_buffer(buf, size - 8, MemorySink(probe))
    assert probe == b"\x5a\xa5" * 4
    accel.free_buffer(buf)
    accel.destroy_context(ctx)


def test_transfer_permissions_and_bounds(accel: Any, check_transfer_rules: Any) -> None:
    ctx = accel.create_context(ContextDesc())
    src_only = accel.allocate_buffer(ctx, BufferDesc(64, 16, MemoryDomain.HOST, BufferUsage.TRANSFER_SOURCE)).buffer
    dst_only = accel.allocate_buffer(
        ctx, BufferDesc(64, 16, MemoryDomain.HOST, BufferUsage.TRANSFER_DESTINATION)
    ).buffer
    check_transfer_rules(accel, src_only, dst_only)
    for handle in (src_only, dst_only):
        accel.free_buffer(handle)
    accel.destroy_context(ctx)


def test_released_and_foreign_handles_are_refused(make_accel: Any, raises_kind: Any) -> None:
    from accelcore import ReleaseRejected

    first, second = make_accel(), make_accel()
    ctx = first.create_context(ContextDesc())
    buf = first.allocate_buffer(ctx, BufferDesc(64, 16, MemoryDomain.HOST, TRANSFER)).buffer
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        second.write_buffer(buf, 0, MemorySource(b"x"))
    with pytest.raises(ReleaseRejected) as rejected:
        first.destroy_context(ctx)
    assert rejected.value.kind is ErrorKind.BUSY and rejected.value.resource is ctx
    first.free_buffer(buf)
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        first.write_buffer(buf, 0, MemorySource(b"x"))
    with pytest.raises(ReleaseRejected):
        first.free_buffer(buf)
    first.destroy_context(ctx)


@pytest.mark.parametrize(
    ("offset", "length", "start", "size"),
    [(100, 10, 64, 64), (0, 64, 0, 64), (950, 50, 896, 104), (900, 20, 896, 64), (10, 990, 0, 1000)],
)
def test_non_coherent_flush_ranges_follow_the_atom_size(offset: int, length: int, start: int, size: int) -> None:
    """Flush/invalidate ranges: aligned down/up to nonCoherentAtomSize, or running to the allocation's end."""
    from types import SimpleNamespace

    from accel_vulkan.transfer import _atom_range

    buffer = SimpleNamespace(memory=None, allocation_bytes=1000)
    mapped = _atom_range(buffer, offset, length, 64)  # type: ignore[arg-type]
    assert (mapped.offset, mapped.size) == (start, size)
    assert mapped.offset % 64 == 0 and (mapped.size % 64 == 0 or mapped.offset + mapped.size == 1000)
    assert mapped.offset <= offset and mapped.offset + mapped.size >= offset + length


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.name.lower())
def test_single_segment_ports_copy_exactly_at_any_offset(accel: Any, domain: MemoryDomain, raises_kind: Any) -> None:
    """The one-memmove path for MemorySource/MemorySink: odd offsets, read-only sources, typed arrays, edges."""
    _skip_unless(accel, domain)
    size = 4099
    ctx = accel.create_context(ContextDesc())
    allocated = accel.allocate_buffer(ctx, BufferDesc(size, 16, domain, TRANSFER))
    buf = allocated.buffer
    # Mapped exactly when the memory is host-visible; otherwise every transfer below goes through staging.
    assert (buf.address is not None) == bool(allocated.info.properties & BufferProperties.HOST_VISIBLE)
    model = np.zeros(size, dtype=np.uint8)
    rng = np.random.default_rng(11)

    class Offset(int):
        """An int subclass: accepted like an int."""

    for offset, length in [(0, size), (1, 7), (7, 4000), (size - 5, 5), (Offset(3), 9)]:
        data = rng.integers(0, 256, length, dtype=np.uint8)
        source = MemorySource(data.tobytes()) if length % 2 else MemorySource(data)
        accel.write_buffer(buf, offset, source)
        model[offset : offset + length] = data
        out = np.full(length, 0xEE, dtype=np.uint8)
        accel.read_buffer(buf, offset, MemorySink(out))
        assert np.array_equal(out, model[offset : offset + length]), f"{length} bytes at {offset}"
    words = np.arange(1024, dtype=np.uint32)
    accel.write_buffer(buf, 2, MemorySource(words))
    back = np.zeros(1024, dtype=np.uint32)
    accel.read_buffer(buf, 2, MemorySink(back))
    assert np.array_equal(back, words)
    accel.write_buffer(buf, 0, MemorySource(b""))  # zero bytes inside the buffer: a no-op
    for bad in (True, -1, 1.0):
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            accel.write_buffer(buf, bad, MemorySource(b"x"))
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            accel.read_buffer(buf, bad, MemorySink(bytearray(1)))
    with raises_kind(ErrorKind.OUT_OF_BOUNDS):
        accel.write_buffer(buf, size, MemorySource(b""))
    with raises_kind(ErrorKind.OUT_OF_BOUNDS):
        accel.read_buffer(buf, size - 1, MemorySink(bytearray(2)))
    full = bytearray(size)
    accel.read_buffer(buf, 0, MemorySink(full))
    model[2 : 2 + words.nbytes] = words.view(np.uint8)
    assert bytes(full) == model.tobytes(), "a refused transfer changed the buffer"
    accel.free_buffer(buf)
    assert buf.address is None and buf.mapped is None
    accel.destroy_context(ctx)
