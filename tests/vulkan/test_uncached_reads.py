"""Reads of mapped memory that is not host-cached go through the staging buffer.

A discrete GPU's device-local, host-visible memory (its BAR) is write-combined: writing through
the mapping is fast, reading crosses the bus uncached (0.02 GB/s on the H200, 2026-11-30). lavapipe
has only cached memory, so the staged read of a mapped buffer is exercised here by clearing the
HOST_CACHED bit the provider recorded for a real buffer: the bytes must still come back exactly,
through the context's staging buffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from accel_vulkan.transfer import STAGING_BYTES, reads_mapped

from accelcore import BufferDesc, BufferUsage, ContextDesc, MemoryDomain, MemorySink, MemorySource

TRANSFER = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
HOST_VISIBLE, HOST_COHERENT, HOST_CACHED, DEVICE_LOCAL = 0x2, 0x4, 0x8, 0x1


@pytest.mark.parametrize(
    ("flags", "mapped_reads"),
    [
        (HOST_VISIBLE | HOST_COHERENT | HOST_CACHED, True),
        (DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT | HOST_CACHED, True),
        (DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT, False),
        (HOST_VISIBLE | HOST_COHERENT, False),
    ],
)
def test_only_host_cached_memory_is_read_through_the_mapping(flags: int, mapped_reads: bool) -> None:
    assert reads_mapped(flags) is mapped_reads


def test_cached_mapped_buffers_never_touch_staging(accel: Any) -> None:
    ctx = accel.create_context(ContextDesc())
    buf = accel.allocate_buffer(ctx, BufferDesc(4096, 16, MemoryDomain.HOST, TRANSFER)).buffer
    if not reads_mapped(buf.memory_flags):
        pytest.skip("this device's HOST domain memory is not host-cached")
    accel.write_buffer(buf, 0, MemorySource(bytes(range(256)) * 16))
    out = bytearray(4096)
    accel.read_buffer(buf, 0, MemorySink(out))
    assert bytes(out) == bytes(range(256)) * 16
    assert ctx.staging is None
    accel.free_buffer(buf)
    accel.destroy_context(ctx)


@pytest.mark.parametrize("domain", [MemoryDomain.HOST, MemoryDomain.SHARED], ids=["host", "shared"])
def test_uncached_mapped_reads_are_staged_and_exact(accel: Any, domain: MemoryDomain) -> None:
    if not accel.device_info().capabilities.supports_memory_domain(domain):
        pytest.skip(f"device does not offer the {domain.name} domain")
    ctx = accel.create_context(ContextDesc())
    size = 2 * STAGING_BYTES + 4099  # several staged chunks and a partial one
    buf = accel.allocate_buffer(ctx, BufferDesc(size, 16, domain, TRANSFER)).buffer
    assert buf.mapped is not None
    buf.memory_flags &= ~HOST_CACHED  # as on a GPU's BAR memory
    data = np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8).tobytes()
    accel.write_buffer(buf, 0, MemorySource(data))  # writes still go through the mapping
    assert ctx.staging is None
    whole = bytearray(size)
    accel.read_buffer(buf, 0, MemorySink(whole))
    assert bytes(whole) == data
    assert ctx.staging is not None, "the read did not use the staging buffer"
    head, tail = bytearray(1000), bytearray(STAGING_BYTES + 3)
    accel.read_buffer(buf, 12345, MemorySink(head, tail))
    assert bytes(head + tail) == data[12345 : 12345 + len(head) + len(tail)]
    accel.free_buffer(buf)
    accel.destroy_context(ctx)
