"""Property tests for the arithmetic edges of the contract (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from accelcore import (
    AccessMode,
    BackendError,
    BindingRef,
    BufferDesc,
    BufferInfo,
    BufferProperties,
    BufferRange,
    BufferUsage,
    ErrorKind,
    MemoryDomain,
    MemorySink,
    MemorySource,
    Timeout,
    validate_bindings,
)

U64_MAX = 2**64 - 1
u64 = st.integers(min_value=0, max_value=U64_MAX)
near_u64_max = st.integers(min_value=U64_MAX - 2**16, max_value=U64_MAX)
powers_of_two = st.integers(min_value=0, max_value=63).map(lambda e: 1 << e)

edge_settings = settings(max_examples=300, deadline=None)


def kind_of(make: Any) -> ErrorKind | None:
    try:
        make()
    except BackendError as error:
        return error.kind
    return None


# --------------------------------------------------------------------------- BufferRange


@edge_settings
@given(offset=st.one_of(u64, near_u64_max), size=st.one_of(u64, near_u64_max))
def test_buffer_range_matches_checked_u64_addition(offset: int, size: int) -> None:
    kind = kind_of(lambda: BufferRange(offset, size))
    if size == 0:
        assert kind is ErrorKind.INVALID_ARGUMENT
    elif offset + size > U64_MAX:
        assert kind is ErrorKind.OUT_OF_BOUNDS
    else:
        assert kind is None
        assert BufferRange(offset, size).end() == offset + size <= U64_MAX


@edge_settings
@given(end=near_u64_max, size=st.integers(min_value=1, max_value=2**16))
def test_buffer_range_ending_at_or_before_u64_max_is_valid_one_past_is_not(end: int, size: int) -> None:
    if size <= end:
        assert BufferRange(end - size, size).end() == end
    assert BufferRange(U64_MAX - size, size).end() == U64_MAX
    assert kind_of(lambda: BufferRange(U64_MAX - size + 1, size)) is ErrorKind.OUT_OF_BOUNDS


# --------------------------------------------------------------------------- alignments around powers of two


@edge_settings
@given(power=powers_of_two, delta=st.integers(min_value=-2, max_value=2))
def test_buffer_desc_alignment_is_valid_exactly_at_powers_of_two(power: int, delta: int) -> None:
    alignment = power + delta
    kind = kind_of(lambda: BufferDesc(64, alignment, MemoryDomain.HOST, BufferUsage.TRANSFER_SOURCE))
    is_pow2 = alignment > 0 and alignment & (alignment - 1) == 0
    assert kind is (None if is_pow2 else ErrorKind.INVALID_ARGUMENT)


@edge_settings
@given(requested=powers_of_two, actual=st.integers(min_value=0, max_value=2**64 + 2))
def test_buffer_info_alignment_rules(requested: int, actual: int) -> None:
    d = BufferDesc(64, requested, MemoryDomain.HOST, BufferUsage.TRANSFER_SOURCE)
    kind = kind_of(lambda: BufferInfo(d, 64, actual, BufferProperties.HOST_VISIBLE))
    if actual == 0 or actual > U64_MAX:
        assert kind is ErrorKind.INVALID_ARGUMENT
    elif actual & (actual - 1) or actual < requested:
        assert kind is ErrorKind.INCOMPATIBLE
    else:
        assert kind is None


# --------------------------------------------------------------------------- BufferInfo domain/property combinations


DOMAIN_NEEDS = {
    MemoryDomain.HOST: BufferProperties.HOST_VISIBLE,
    MemoryDomain.DEVICE: BufferProperties.DEVICE_LOCAL,
    MemoryDomain.SHARED: BufferProperties.HOST_VISIBLE | BufferProperties.DIRECT_BINDING,
}


@edge_settings
@given(
    domain=st.sampled_from(list(MemoryDomain)),
    usage=st.integers(min_value=1, max_value=0b11111),
    properties=st.integers(min_value=0, max_value=0b1111),
    size=st.integers(min_value=1, max_value=2**20),
    extra=st.integers(min_value=-2, max_value=2),
)
def test_buffer_info_domain_property_combinations(
    domain: MemoryDomain, usage: int, properties: int, size: int, extra: int
) -> None:
    d = BufferDesc(size, 8, domain, BufferUsage(usage))
    allocation = size + extra
    kind = kind_of(lambda: BufferInfo(d, allocation, 8, BufferProperties(properties)))
    props = BufferProperties(properties)
    if allocation <= 0 or properties & ~0b111:
        expected: ErrorKind | None = ErrorKind.INVALID_ARGUMENT
    elif allocation < size:
        expected = ErrorKind.INCOMPATIBLE
    elif props & DOMAIN_NEEDS[domain] != DOMAIN_NEEDS[domain]:
        expected = ErrorKind.INCOMPATIBLE
    elif usage & 0b11100 and not props & BufferProperties.DIRECT_BINDING:
        expected = ErrorKind.INCOMPATIBLE
    else:
        expected = None
    assert kind is expected


# --------------------------------------------------------------------------- validate_bindings order independence


@edge_settings
@given(
    slots=st.lists(st.integers(min_value=0, max_value=2**32 - 1), min_size=0, max_size=12),
    max_bindings=st.integers(min_value=0, max_value=16),
    data=st.data(),
)
def test_validate_bindings_outcome_does_not_depend_on_order(slots: list[int], max_bindings: int, data: Any) -> None:
    bindings = [BindingRef(slot, None, BufferRange(0, 4), AccessMode.READ) for slot in slots]
    shuffled = data.draw(st.permutations(bindings))
    outcome = kind_of(lambda: validate_bindings(bindings, max_bindings))
    assert kind_of(lambda: validate_bindings(shuffled, max_bindings)) is outcome
    if not slots or len(slots) > max_bindings:
        assert outcome is ErrorKind.RESOURCE_LIMIT
    elif len(set(slots)) != len(slots):
        assert outcome is ErrorKind.INVALID_ARGUMENT
    else:
        assert outcome is None


@edge_settings
@given(usages=st.lists(st.sampled_from([4, 8, 16, 12, 20, 1 | 4]), min_size=1, max_size=6), data=st.data())
def test_validate_for_submit_outcome_does_not_depend_on_order(usages: list[int], data: Any) -> None:
    pairs = []
    for slot, usage in enumerate(usages):
        access = data.draw(st.sampled_from(list(AccessMode)))
        desc = BufferDesc(64, 4, MemoryDomain.HOST, BufferUsage(usage))
        pairs.append((BindingRef(slot, None, BufferRange(0, 4), access), desc))
    shuffled = data.draw(st.permutations(pairs))

    def run(items: list[Any]) -> ErrorKind | None:
        return kind_of(lambda: BindingRef.validate_for_submit([b for b, _ in items], [d for _, d in items], 8))

    outcome = run(pairs)
    assert run(shuffled) is outcome
    denied = any(not d.allows_access(b.access) for b, d in pairs)
    assert outcome is (ErrorKind.PERMISSION_DENIED if denied else None)


# --------------------------------------------------------------------------- Timeout wire round trip


@edge_settings
@given(wire=u64)
def test_timeout_wire_round_trip(wire: int) -> None:
    timeout = Timeout.from_wire(wire)
    assert timeout.to_wire() == wire
    assert timeout.is_infinite is (wire == 0)
    assert Timeout.from_wire(timeout.to_wire()) == timeout


@edge_settings
@given(ns=st.integers(min_value=1, max_value=U64_MAX))
def test_finite_timeouts_are_never_zero_on_the_wire(ns: int) -> None:
    assert Timeout.after_ns(ns).to_wire() == ns != 0


# --------------------------------------------------------------------------- byte port arithmetic


@edge_settings
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=9), min_size=0, max_size=8),
    offset=st.integers(min_value=-2, max_value=80),
    length=st.integers(min_value=0, max_value=80),
)
def test_segmented_ports_read_and_write_like_one_bytes_object(sizes: list[int], offset: int, length: int) -> None:
    joined = bytes((i * 37 + 11) % 256 for i in range(sum(sizes)))
    parts, position = [], 0
    for size in sizes:
        parts.append(joined[position : position + size])
        position += size
    source = MemorySource(*parts)
    dst = bytearray(length)
    in_bounds = 0 <= offset and offset + length <= len(joined)
    kind = kind_of(lambda: source.read_at(offset, memoryview(dst)))
    assert kind is (None if in_bounds else ErrorKind.OUT_OF_BOUNDS)
    if in_bounds:
        assert bytes(dst) == joined[offset : offset + length]

    targets = [bytearray(size) for size in sizes]
    payload = bytes(range(length % 256)) * (length // 256 + 1)
    kind = kind_of(lambda: MemorySink(*targets).write_at(offset, memoryview(payload[:length])))
    assert kind is (None if in_bounds else ErrorKind.OUT_OF_BOUNDS)
    expected = bytearray(len(joined))
    if in_bounds:
        expected[offset : offset + length] = payload[:length]
    assert b"".join(targets) == expected
