"""1 GiB transfers through segmented and length-only ports allocate no transfer-sized temporary.

Each 1 GiB port is real: a length-only PatternSource, or 1024 segments that all view
the same 1 MiB buffer (so the test needs 1 MiB of memory, not 1 GiB). tracemalloc
sees every Python and numpy allocation; a coalescing copy would show as a ~1 GiB peak.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from accelcore import (
    MemorySink,
    MemorySource,
    PatternSource,
    TransportByteSink,
    TransportByteSource,
    copy_port,
)

MIB = 1 << 20
GIB = 1 << 30
SEGMENTS = GIB // MIB
PEAK_LIMIT = 4 * MIB


def peak_bytes(work: Callable[[], object]) -> int:
    """Peak traced allocation while ``work`` runs (allocations made before are not counted)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


class CountingSink:
    """A length-only ByteSink: checks the bytes it is given against the expected pattern, keeps none."""

    def __init__(self, length: int, expected_byte: int) -> None:
        self.length = length
        self.expected_byte = expected_byte
        self.received = 0
        self.largest_write = 0

    def len(self) -> int:
        return self.length

    def write_at(self, offset: int, src: memoryview) -> None:
        assert offset == self.received, "writes arrive in order"
        assert src.nbytes == 0 or (src[0] == self.expected_byte and src[-1] == self.expected_byte)
        self.received += src.nbytes
        self.largest_write = max(self.largest_write, src.nbytes)

    def contiguous(self) -> memoryview | None:
        return None

    def segments(self) -> None:
        return None


@pytest.fixture
def shared_mib() -> Iterator[bytearray]:
    yield bytearray(b"\x5a") * MIB


def test_pattern_source_into_a_segmented_1gib_sink(shared_mib: bytearray) -> None:
    shared_mib[:] = bytes(MIB)
    sink = MemorySink(*([shared_mib] * SEGMENTS))
    assert sink.len() == GIB
    result: list[int] = []
    peak = peak_bytes(lambda: result.append(copy_port(PatternSource(GIB, b"\xa5"), sink)))
    assert result == [GIB]
    assert shared_mib.count(0xA5) == MIB  # the last segment written holds the pattern
    assert peak < PEAK_LIMIT, f"peak {peak} bytes for a 1 GiB transfer"


def test_segmented_1gib_source_into_a_length_only_sink(shared_mib: bytearray) -> None:
    source = MemorySource(*([shared_mib] * SEGMENTS))
    sink = CountingSink(GIB, 0x5A)
    peak = peak_bytes(lambda: copy_port(source, sink))
    assert sink.received == GIB
    assert sink.largest_write == MIB  # segment by segment, never coalesced
    assert peak < PEAK_LIMIT, f"peak {peak} bytes for a 1 GiB transfer"


def test_length_only_1gib_copy_uses_bounded_staging() -> None:
    sink = CountingSink(GIB, 0xA5)
    peak = peak_bytes(lambda: copy_port(PatternSource(GIB, b"\xa5"), sink))
    assert sink.received == GIB
    assert sink.largest_write <= MIB
    assert peak < PEAK_LIMIT, f"peak {peak} bytes for a 1 GiB transfer"


def test_transport_ports_over_1gib_of_segments(shared_mib: bytearray) -> None:
    source = TransportByteSource([shared_mib] * SEGMENTS)
    target = bytearray(MIB)
    sink = TransportByteSink([target] * SEGMENTS)
    peak = peak_bytes(lambda: copy_port(source, sink))
    assert target == shared_mib
    assert peak < PEAK_LIMIT, f"peak {peak} bytes for a 1 GiB transfer"


def test_read_and_write_at_across_segment_boundaries_of_a_1gib_port(shared_mib: bytearray) -> None:
    source = MemorySource(*([shared_mib] * SEGMENTS))
    sink = MemorySink(*([bytearray(MIB)] * SEGMENTS))
    window = bytearray(3 * MIB)  # spans four segments when placed off a boundary
    view = memoryview(window)

    def work() -> None:
        source.read_at(GIB - 3 * MIB - 5, view)
        sink.write_at(GIB - 3 * MIB - 5, view)

    peak = peak_bytes(work)
    assert window == shared_mib * 3
    assert peak < MIB, f"peak {peak} bytes for a 3 MiB window"
