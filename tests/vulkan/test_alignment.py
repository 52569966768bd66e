"""Buffer alignment: what is reported is what the buffer really has, and no more is promised.

A buffer is bound at offset 0 of its own ``VkDeviceMemory``, so its alignment is
the allocation's base alignment. NVIDIA's 580 driver answers 16 for a storage
buffer's ``VkMemoryRequirements.alignment`` while every allocation meets its 64-byte
``minUniformBufferOffsetAlignment`` (the H200 run of 2026-11-30 refused 64-byte
requests before this); the provider reports the larger bound.
"""

from __future__ import annotations

from typing import Any

import pytest

from accelcore import BufferDesc, BufferUsage, ContextDesc, ErrorKind, MemoryDomain

TRANSFER = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION


def _description(accel: Any) -> Any:
    return accel.description


def test_allocation_alignment_is_the_largest_buffer_offset_alignment(accel: Any) -> None:
    description = _description(accel)
    assert description.allocation_alignment >= description.min_storage_buffer_offset_alignment
    assert description.allocation_alignment & (description.allocation_alignment - 1) == 0


@pytest.mark.parametrize("domain", list(MemoryDomain), ids=lambda d: d.name.lower())
def test_the_guaranteed_alignment_is_honoured_and_one_step_more_is_refused(
    accel: Any, raises_kind: Any, domain: MemoryDomain
) -> None:
    if not accel.device_info().capabilities.supports_memory_domain(domain):
        pytest.skip(f"device does not offer the {domain.name} domain (no memory type honours it)")
    ctx = accel.create_context(ContextDesc())
    probe = accel.allocate_buffer(ctx, BufferDesc(256, 1, domain, TRANSFER))
    guaranteed = probe.info.alignment
    accel.free_buffer(probe.buffer)
    assert guaranteed >= _description(accel).allocation_alignment
    for alignment in (1, 16, 64, guaranteed):
        if alignment > guaranteed:
            continue
        got = accel.allocate_buffer(ctx, BufferDesc(256, alignment, domain, TRANSFER))
        assert got.info.alignment >= alignment
        assert got.info.alignment == guaranteed
        accel.free_buffer(got.buffer)
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        accel.allocate_buffer(ctx, BufferDesc(256, guaranteed * 2, domain, TRANSFER))
    assert f"request {guaranteed} or less" in info.value.message
    assert str(guaranteed * 2) in info.value.message
    accel.destroy_context(ctx)
