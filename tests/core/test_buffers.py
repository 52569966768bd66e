"""BufferDesc, BufferInfo, BufferRange, AllocatedBuffer: every rule of SPEC.md's type table."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pytest

from accelcore import (
    AccessMode,
    AllocatedBuffer,
    BufferDesc,
    BufferInfo,
    BufferProperties,
    BufferRange,
    BufferUsage,
    ErrorKind,
    MemoryDomain,
    validate_transfer,
)

if TYPE_CHECKING:
    from accelcore.testing.pytest_support import RaisesKind

U64_MAX = 2**64 - 1
HV = BufferProperties.HOST_VISIBLE
DL = BufferProperties.DEVICE_LOCAL
DB = BufferProperties.DIRECT_BINDING
SRC = BufferUsage.TRANSFER_SOURCE
DST = BufferUsage.TRANSFER_DESTINATION
IN = BufferUsage.PROGRAM_INPUT
OUT = BufferUsage.PROGRAM_OUTPUT
STATE = BufferUsage.MUTABLE_STATE


def desc(
    bytes: int = 64, alignment: int = 16, domain: MemoryDomain = MemoryDomain.HOST, usage: BufferUsage = SRC | DST
) -> BufferDesc:
    return BufferDesc(bytes, alignment, domain, usage)


# --------------------------------------------------------------------------- BufferDesc


def test_buffer_desc_keeps_its_fields_and_is_immutable() -> None:
    d = BufferDesc(4096, 64, MemoryDomain.DEVICE, IN | SRC)
    assert (d.bytes, d.alignment, d.domain, d.usage) == (4096, 64, MemoryDomain.DEVICE, IN | SRC)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.bytes = 1  # type: ignore[misc]


def test_buffer_desc_zero_bytes_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        desc(bytes=0)
    assert "bytes" in info.value.message
    assert desc(bytes=1).bytes == 1
    assert desc(bytes=U64_MAX).bytes == U64_MAX


@pytest.mark.parametrize("bytes_", [-1, 2**64])
def test_buffer_desc_bytes_outside_u64_is_invalid_argument(bytes_: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        desc(bytes=bytes_)
    assert str(bytes_) in info.value.message


@pytest.mark.parametrize("alignment", [0, 3, 6, 12, 24, 2**63 + 1, U64_MAX])
def test_buffer_desc_alignment_not_a_power_of_two_is_invalid_argument(alignment: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        desc(alignment=alignment)
    assert str(alignment) in info.value.message


@pytest.mark.parametrize("alignment", [1, 2, 4, 4096, 2**63])
def test_buffer_desc_power_of_two_alignments_are_accepted(alignment: int) -> None:
    assert desc(alignment=alignment).alignment == alignment


def test_buffer_desc_empty_usage_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        desc(usage=BufferUsage(0))
    assert "usage" in info.value.message


@pytest.mark.parametrize("bits", [1 << 5, 1 << 31, (1 << 5) | 1])
def test_buffer_desc_unknown_usage_bits_are_invalid_argument(bits: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        desc(usage=BufferUsage(bits))
    assert "0x20" in info.value.message or "0x80000000" in info.value.message


def test_buffer_desc_every_known_usage_bit_alone_is_accepted() -> None:
    for bit in (SRC, DST, IN, OUT, STATE):
        assert desc(usage=bit).usage == bit
    assert desc(usage=BufferUsage.known()).usage == BufferUsage.known()


@pytest.mark.parametrize("domain", [0, 4, -1])
def test_buffer_desc_unknown_domain_is_invalid_argument(domain: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        desc(domain=domain)  # type: ignore[arg-type]


def test_buffer_desc_normalises_plain_numbers() -> None:
    d = BufferDesc(8, 8, 3, 0b100)  # type: ignore[arg-type]
    assert d.domain is MemoryDomain.SHARED
    assert d.usage is BufferUsage.PROGRAM_INPUT or d.usage == BufferUsage.PROGRAM_INPUT
    assert isinstance(d.usage, BufferUsage)


# allows_access table (SPEC.md): Read needs INPUT or STATE; Write needs OUTPUT or STATE; ReadWrite needs STATE.
ALLOWS = [
    (IN, {AccessMode.READ}),
    (OUT, {AccessMode.WRITE}),
    (STATE, {AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE}),
    (IN | OUT, {AccessMode.READ, AccessMode.WRITE}),
    (IN | STATE, {AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE}),
    (SRC | DST, set()),
    (SRC, set()),
    (DST | IN, {AccessMode.READ}),
    (DST | OUT, {AccessMode.WRITE}),
]


@pytest.mark.parametrize(("usage", "allowed"), ALLOWS, ids=[repr(u) for u, _ in ALLOWS])
def test_allows_access_table(usage: BufferUsage, allowed: set[AccessMode]) -> None:
    d = desc(usage=usage)
    assert {mode for mode in AccessMode if d.allows_access(mode)} == allowed


def test_allows_access_with_an_unknown_mode_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        desc(usage=STATE).allows_access(4)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("usage", "visible"),
    [(SRC, False), (DST, False), (SRC | DST, False), (IN, True), (OUT, True), (STATE, True), (SRC | OUT, True)],
)
def test_is_program_visible(usage: BufferUsage, visible: bool) -> None:
    assert desc(usage=usage).is_program_visible() is visible


# --------------------------------------------------------------------------- BufferInfo


def info(
    d: BufferDesc | None = None, allocation_bytes: int = 64, alignment: int = 16, properties: BufferProperties = HV
) -> BufferInfo:
    return BufferInfo(desc() if d is None else d, allocation_bytes, alignment, properties)


def test_buffer_info_accepts_an_honest_allocation() -> None:
    i = info(allocation_bytes=128, alignment=64, properties=HV | DL)
    assert (i.allocation_bytes, i.alignment, i.properties) == (128, 64, HV | DL)
    assert i.desc == desc()


def test_buffer_info_zero_allocation_bytes_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info_:
        info(allocation_bytes=0)
    assert "allocation_bytes" in info_.value.message


def test_buffer_info_zero_alignment_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info_:
        info(alignment=0)
    assert "alignment" in info_.value.message


@pytest.mark.parametrize("bits", [1 << 3, 1 << 31, (1 << 3) | 1])
def test_buffer_info_unknown_property_bits_are_invalid_argument(bits: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info_:
        info(properties=BufferProperties(bits))
    assert "unknown" in info_.value.message


def test_buffer_info_zero_values_are_checked_before_compatibility(raises_kind: RaisesKind) -> None:
    # A zero value is a malformed report (INVALID_ARGUMENT) even when the rest is also incompatible.
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        info(allocation_bytes=0, alignment=3, properties=DL)


def test_buffer_info_unknown_bits_are_checked_before_compatibility(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        info(allocation_bytes=1, properties=BufferProperties(1 << 8))


def test_buffer_info_allocation_smaller_than_requested_is_incompatible(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INCOMPATIBLE) as info_:
        info(allocation_bytes=63)
    assert "63" in info_.value.message and "64" in info_.value.message
    assert info(allocation_bytes=64).allocation_bytes == 64


@pytest.mark.parametrize("alignment", [3, 24, 48])
def test_buffer_info_alignment_not_a_power_of_two_is_incompatible(alignment: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INCOMPATIBLE) as info_:
        info(alignment=alignment)
    assert str(alignment) in info_.value.message


def test_buffer_info_weaker_alignment_is_incompatible(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INCOMPATIBLE) as info_:
        info(alignment=8)
    assert "weaker" in info_.value.message
    assert info(alignment=16).alignment == 16
    assert info(alignment=4096).alignment == 4096


@pytest.mark.parametrize(
    ("domain", "properties", "ok"),
    [
        (MemoryDomain.HOST, HV, True),
        (MemoryDomain.HOST, DL, False),
        (MemoryDomain.HOST, DB, False),
        (MemoryDomain.HOST, DL | DB, False),
        (MemoryDomain.DEVICE, DL, True),
        (MemoryDomain.DEVICE, HV, False),
        (MemoryDomain.DEVICE, HV | DB, False),
        (MemoryDomain.SHARED, HV | DB, True),
        (MemoryDomain.SHARED, HV, False),
        (MemoryDomain.SHARED, DB, False),
        (MemoryDomain.SHARED, DL | DB, False),
        (MemoryDomain.SHARED, HV | DL | DB, True),
    ],
)
def test_buffer_info_domain_needs_its_properties(
    domain: MemoryDomain, properties: BufferProperties, ok: bool, raises_kind: RaisesKind
) -> None:
    d = desc(domain=domain, usage=SRC | DST)
    if ok:
        assert info(d, properties=properties).properties == properties
    else:
        with raises_kind(ErrorKind.INCOMPATIBLE) as info_:
            info(d, properties=properties)
        assert domain.name in info_.value.message


def test_buffer_info_empty_properties_are_incompatible_for_every_domain(raises_kind: RaisesKind) -> None:
    # As upstream: an empty set is a known (valid) bit set that misses the domain's needs.
    for domain in MemoryDomain:
        with raises_kind(ErrorKind.INCOMPATIBLE):
            info(desc(domain=domain), properties=BufferProperties(0))


@pytest.mark.parametrize("usage", [IN, OUT, STATE, SRC | IN])
@pytest.mark.parametrize(("domain", "base"), [(MemoryDomain.HOST, HV), (MemoryDomain.DEVICE, DL)])
def test_buffer_info_program_visible_needs_direct_binding(
    usage: BufferUsage, domain: MemoryDomain, base: BufferProperties, raises_kind: RaisesKind
) -> None:
    d = desc(domain=domain, usage=usage)
    with raises_kind(ErrorKind.INCOMPATIBLE) as info_:
        info(d, properties=base)
    assert "DIRECT_BINDING" in info_.value.message
    assert info(d, properties=base | DB).properties == base | DB


def test_buffer_info_transfer_only_buffer_needs_no_direct_binding() -> None:
    assert info(desc(usage=SRC | DST), properties=HV).properties == HV


def test_buffer_info_desc_must_be_a_buffer_desc(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        BufferInfo((64, 16, 1, 3), 64, 16, HV)  # type: ignore[arg-type]


def test_allocated_buffer_pairs_handle_and_info() -> None:
    handle = object()
    allocated = AllocatedBuffer(handle, info())
    assert allocated.buffer is handle
    assert allocated.info == info()
    with pytest.raises(dataclasses.FrozenInstanceError):
        allocated.buffer = None  # type: ignore[misc]


# --------------------------------------------------------------------------- BufferRange


def test_buffer_range_fields_and_end() -> None:
    r = BufferRange(16, 32)
    assert (r.offset, r.bytes, r.end()) == (16, 32, 48)


def test_buffer_range_zero_bytes_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        BufferRange(0, 0)
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        BufferRange(U64_MAX, 0)


def test_buffer_range_overflowing_u64_is_out_of_bounds(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.OUT_OF_BOUNDS) as info_:
        BufferRange(U64_MAX, 1)
    assert str(U64_MAX) in info_.value.message
    with raises_kind(ErrorKind.OUT_OF_BOUNDS):
        BufferRange(1, U64_MAX)
    with raises_kind(ErrorKind.OUT_OF_BOUNDS):
        BufferRange(2**63, 2**63)


def test_buffer_range_ending_exactly_at_u64_max_is_valid() -> None:
    assert BufferRange(U64_MAX - 1, 1).end() == U64_MAX
    assert BufferRange(0, U64_MAX).end() == U64_MAX


@pytest.mark.parametrize(("offset", "bytes_"), [(-1, 1), (0, -1), (2**64, 1), (0, 2**64)])
def test_buffer_range_fields_are_u64(offset: int, bytes_: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        BufferRange(offset, bytes_)


def test_buffer_range_whole() -> None:
    assert BufferRange.whole(desc(bytes=100)) == BufferRange(0, 100)
    assert BufferRange.whole(info(desc(bytes=64), allocation_bytes=4096)) == BufferRange(0, 64)


_BOTH = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION


@pytest.mark.parametrize(
    ("write", "usage"), [(True, BufferUsage.TRANSFER_SOURCE), (False, BufferUsage.TRANSFER_DESTINATION)]
)
def test_validate_transfer_needs_the_transfer_usage(write: bool, usage: BufferUsage, raises_kind: RaisesKind) -> None:
    desc = BufferDesc(64, 16, MemoryDomain.HOST, usage)
    with raises_kind(ErrorKind.PERMISSION_DENIED) as info:
        validate_transfer(desc, 0, 1, write=write)
    needed = "TRANSFER_DESTINATION" if write else "TRANSFER_SOURCE"
    assert needed in info.value.message and usage.name in info.value.message


@pytest.mark.parametrize(("offset", "length"), [(64, 1), (64, 0), (63, 2), (0, 65), (U64_MAX, 1)])
def test_validate_transfer_outside_the_buffer_is_out_of_bounds(
    offset: int, length: int, raises_kind: RaisesKind
) -> None:
    with raises_kind(ErrorKind.OUT_OF_BOUNDS) as info:
        validate_transfer(BufferDesc(64, 16, MemoryDomain.HOST, _BOTH), offset, length, write=True)
    assert f"offset {offset}" in info.value.message and "64 bytes" in info.value.message


@pytest.mark.parametrize("offset", [-1, 1.0, True, None, 2**64])
def test_validate_transfer_offset_must_be_u64(offset: object, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        validate_transfer(BufferDesc(64, 16, MemoryDomain.HOST, _BOTH), offset, 1, write=False)
    assert "read_buffer offset" in info.value.message


@pytest.mark.parametrize(("offset", "length"), [(0, 64), (63, 1), (10, 0), (0, 1)])
def test_validate_transfer_inside_the_buffer_returns_the_offset(offset: int, length: int) -> None:
    assert validate_transfer(BufferDesc(64, 16, MemoryDomain.HOST, _BOTH), offset, length, write=True) == offset


@pytest.mark.parametrize("access", list(AccessMode))
def test_buffer_usage_for_access_allows_exactly_that_access(access: AccessMode) -> None:
    usage = BufferUsage.for_access(access)
    assert bin(int(usage)).count("1") == 1 and usage & BufferUsage.program_visible()
    desc = BufferDesc(64, 16, MemoryDomain.HOST, usage)
    allowed = [mode for mode in AccessMode if desc.allows_access(mode)]
    assert allowed == ([access] if access is not AccessMode.READ_WRITE else list(AccessMode))


def test_buffer_usage_for_access_refuses_unknown_modes(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        BufferUsage.for_access(4)  # type: ignore[arg-type]
