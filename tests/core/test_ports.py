"""Byte ports: memory, pattern and transport ports, segment arithmetic, fault mapping, copy_port."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from accelcore import (
    ByteSink,
    ByteSource,
    ErrorKind,
    MemorySink,
    MemorySource,
    PatternSource,
    TransportByteSink,
    TransportByteSource,
    TransportFault,
    TransportFaultKind,
    copy_port,
    sink_of,
    source_of,
)

if TYPE_CHECKING:
    from accelcore.testing.pytest_support import RaisesKind

DTYPES = ["u1", "i1", "u2", "i4", "f2", "f4", "f8", "c8", "c16", "?", ">i4", "M8[s]", [("a", "i4"), ("b", "f8")]]
SHAPES = [(0,), (7,), (3, 5), (2, 3, 4), (), (0, 3)]


def read_all(source: ByteSource) -> bytes:
    out = bytearray(source.len())
    source.read_at(0, memoryview(out))
    return bytes(out)


def sample_array(dtype: Any, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    raw = np.arange(int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8) * 7 + 3
    return raw.view(dtype).reshape(shape)


# --------------------------------------------------------------------------- MemorySource / MemorySink over one object


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview"])
def test_memory_source_over_builtin_buffers(kind: str) -> None:
    data = bytes(range(200))
    obj: Any = {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data)}[kind]
    source = MemorySource(obj)
    assert isinstance(source, ByteSource)
    assert source.len() == len(source) == 200
    assert read_all(source) == data


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_memory_ports_over_numpy_arrays_of_any_dtype_and_c_contiguous_shape(dtype: Any, shape: tuple[int, ...]) -> None:
    array = sample_array(dtype, shape)
    source = MemorySource(array)
    assert source.len() == array.nbytes
    assert read_all(source) == array.tobytes()

    target = np.zeros_like(array)
    sink = MemorySink(target)
    assert sink.len() == array.nbytes
    sink.write_at(0, memoryview(array.tobytes()))
    assert target.tobytes() == array.tobytes()  # written straight into the caller's array


def test_memory_source_is_zero_copy() -> None:
    backing = bytearray(b"before")
    source = MemorySource(backing)
    backing[:] = b"after!"
    assert read_all(source) == b"after!"
    segment = source.segments()[0]
    backing[0] = ord("A")
    assert segment[0] == ord("A")


def test_memory_sink_writes_into_the_callers_memory() -> None:
    a, b = bytearray(3), np.zeros(2, dtype=np.uint16)
    sink = MemorySink(a, b)
    sink.write_at(0, memoryview(b"\x01\x02\x03\x04\x00\x05\x00"))
    assert bytes(a) == b"\x01\x02\x03"
    assert b.tobytes() == b"\x04\x00\x05\x00"


def test_memory_sink_needs_writable_segments(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        MemorySink(b"read-only")
    assert "read-only" in info.value.message
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        MemorySink(frozen)


@pytest.mark.parametrize(
    "obj",
    [np.zeros((4, 4))[:, :2], np.zeros((3, 4)).T, memoryview(bytes(10))[::2]],
    ids=["column-slice", "transpose", "strided-view"],
)
def test_non_c_contiguous_segments_are_invalid_argument(obj: Any, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        MemorySource(obj)
    assert "C-contiguous" in info.value.message


@pytest.mark.parametrize("obj", ["text", 5, None, [1, 2]], ids=repr)
def test_non_buffer_segments_are_invalid_argument(obj: Any, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        MemorySource(obj)
    assert type(obj).__name__ in info.value.message


# --------------------------------------------------------------------------- segments


SEGMENTS: list[Any] = [b"abc", b"", bytearray(b"defg"), np.frombuffer(b"hi", dtype=np.uint8), b"", memoryview(b"jklmn")]
JOINED = b"abcdefghijklmn"


def test_segmented_source_keeps_segments_in_order_and_length() -> None:
    source = MemorySource(*SEGMENTS)
    assert source.len() == len(JOINED)
    assert [bytes(s) for s in source.segments()] == [bytes(s) for s in SEGMENTS]
    assert source.contiguous() is None  # several segments: no contiguous fast path


def test_segmented_source_reads_every_range_across_boundaries() -> None:
    source = MemorySource(*SEGMENTS)
    for offset, length in itertools.product(range(len(JOINED) + 1), repeat=2):
        if offset + length > len(JOINED):
            continue
        dst = bytearray(length)
        source.read_at(offset, memoryview(dst))
        assert bytes(dst) == JOINED[offset : offset + length], (offset, length)


def test_segmented_sink_writes_every_range_across_boundaries() -> None:
    sizes = [3, 0, 4, 2, 0, 5]
    for offset, length in itertools.product(range(sum(sizes) + 1), repeat=2):
        if offset + length > sum(sizes):
            continue
        parts = [bytearray(b"." * n) for n in sizes]
        sink = MemorySink(*parts)
        sink.write_at(offset, memoryview(JOINED[:length]))
        expected = b"." * offset + JOINED[:length] + b"." * (sum(sizes) - offset - length)
        assert b"".join(parts) == expected, (offset, length)


def test_empty_ports() -> None:
    for source in (MemorySource(), MemorySource(b""), MemorySource(b"", bytearray(0))):
        assert source.len() == 0
        source.read_at(0, memoryview(bytearray(0)))
        contiguous = source.contiguous()
        assert contiguous is None or contiguous.nbytes == 0
    sink = MemorySink(bytearray(0), bytearray(0))
    sink.write_at(0, memoryview(b""))
    assert sink.len() == 0


def test_single_segment_has_a_contiguous_view() -> None:
    data = bytearray(b"xyz")
    view = MemorySource(data).contiguous()
    assert view is not None and bytes(view) == b"xyz"
    sink_view = MemorySink(data).contiguous()
    assert sink_view is not None and not sink_view.readonly
    sink_view[0] = ord("X")
    assert data == b"Xyz"


def test_read_at_accepts_any_writable_buffer_destination() -> None:
    source = MemorySource(np.arange(4, dtype=np.float32))
    out = np.zeros(4, dtype=np.float32)
    source.read_at(0, out)  # type: ignore[arg-type]
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_read_at_into_read_only_memory_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        MemorySource(b"abc").read_at(0, memoryview(b"xyz"))


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize(("offset", "length"), [(0, 15), (14, 1), (15, 0), (13, 2), (-1, 1), (2**64, 0)])
def test_reads_past_the_end_are_out_of_bounds(offset: int, length: int, raises_kind: RaisesKind) -> None:
    source = MemorySource(*SEGMENTS)
    with raises_kind(ErrorKind.OUT_OF_BOUNDS) as info:
        source.read_at(offset, memoryview(bytearray(length)))
    assert str(offset) in info.value.message and "14" in info.value.message


@pytest.mark.parametrize(("offset", "length"), [(0, 15), (14, 1), (12, 3), (-2, 1)])
def test_writes_past_the_end_are_out_of_bounds_and_change_nothing(
    offset: int, length: int, raises_kind: RaisesKind
) -> None:
    parts = [bytearray(7), bytearray(7)]
    with raises_kind(ErrorKind.OUT_OF_BOUNDS):
        MemorySink(*parts).write_at(offset, memoryview(b"\xff" * length))
    assert parts == [bytearray(7), bytearray(7)]


def test_reading_zero_bytes_at_the_end_is_fine() -> None:
    MemorySource(b"abc", b"de").read_at(5, memoryview(bytearray(0)))


def test_non_integer_offset_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        MemorySource(b"abc").read_at(1.0, memoryview(bytearray(1)))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- PatternSource


def test_pattern_source_synthesises_its_pattern_at_any_offset() -> None:
    pattern = b"0123456"
    source = PatternSource(100, pattern)
    assert source.len() == 100 and source.segments() is None and source.contiguous() is None
    expected = (pattern * 15)[:100]
    assert read_all(source) == expected
    for offset in range(0, 100, 9):
        for length in (0, 1, 6, 7, 8, 30):
            if offset + length <= 100:
                dst = bytearray(length)
                source.read_at(offset, memoryview(dst))
                assert bytes(dst) == expected[offset : offset + length]
    assert [source.byte_at(i) for i in (0, 6, 7, 99)] == [expected[i] for i in (0, 6, 7, 99)]


def test_pattern_source_bounds_and_arguments(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.OUT_OF_BOUNDS):
        PatternSource(10).read_at(5, memoryview(bytearray(6)))
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        PatternSource(-1)
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        PatternSource(4, b"")


# --------------------------------------------------------------------------- source_of / sink_of


def test_source_of_and_sink_of_pass_ports_through_and_wrap_buffers() -> None:
    port = PatternSource(3)
    assert source_of(port) is port
    wrapped = source_of(b"abc")
    assert isinstance(wrapped, MemorySource) and read_all(wrapped) == b"abc"
    sink = MemorySink(bytearray(2))
    assert sink_of(sink) is sink
    backing = bytearray(2)
    sink_of(backing).write_at(0, memoryview(b"ok"))
    assert backing == b"ok"
    assert isinstance(sink_of(backing), ByteSink)


def test_source_of_and_sink_of_take_a_list_or_tuple_as_segments() -> None:
    assert read_all(source_of([b"ab", bytearray(b"c"), np.frombuffer(b"d", dtype=np.uint8)])) == b"abcd"
    assert read_all(source_of((b"x", b""))) == b"x"
    parts = [bytearray(1), bytearray(2)]
    sink_of(parts).write_at(0, memoryview(b"xyz"))
    assert parts == [bytearray(b"x"), bytearray(b"yz")]


# --------------------------------------------------------------------------- copy_port


class RecordingSink:
    """A length-only ByteSink (no segments) that records what it was given."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.data = bytearray(length)
        self.calls: list[tuple[int, int]] = []

    def len(self) -> int:
        return self.length

    def write_at(self, offset: int, src: memoryview) -> None:
        self.calls.append((offset, src.nbytes))
        self.data[offset : offset + src.nbytes] = src

    def contiguous(self) -> memoryview | None:
        return None

    def segments(self) -> None:
        return None


def test_copy_port_into_sink_segments() -> None:
    parts = [bytearray(4), bytearray(0), bytearray(6)]
    assert copy_port(MemorySource(b"abcdefghij"), MemorySink(*parts)) == 10
    assert b"".join(parts) == b"abcdefghij"


def test_copy_port_from_source_segments_writes_segment_by_segment() -> None:
    sink = RecordingSink(10)
    assert copy_port(MemorySource(b"abc", b"", b"defghij"), sink) == 10
    assert bytes(sink.data) == b"abcdefghij"
    assert [n for _, n in sink.calls if n] == [3, 7]  # never coalesced


def test_copy_port_between_length_only_ports_stages_in_bounded_chunks() -> None:
    sink = RecordingSink(1000)
    assert copy_port(PatternSource(1000, b"xyz"), sink, chunk_bytes=64) == 1000
    assert bytes(sink.data) == (b"xyz" * 334)[:1000]
    assert max(n for _, n in sink.calls) == 64


def test_copy_port_length_mismatch_is_out_of_bounds(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.OUT_OF_BOUNDS) as info:
        copy_port(MemorySource(b"abc"), MemorySink(bytearray(4)))
    assert "3" in info.value.message and "4" in info.value.message


# --------------------------------------------------------------------------- transport ports


def test_transport_source_over_one_region_and_over_segments() -> None:
    single = TransportByteSource(b"hello")
    assert single.len() == 5 and read_all(single) == b"hello"  # type: ignore[arg-type]
    assert single.contiguous() is not None
    listed = TransportByteSource([b"he", bytearray(b"ll"), np.frombuffer(b"o", dtype=np.uint8)])
    assert listed.len() == 5 and read_all(listed) == b"hello"  # type: ignore[arg-type]
    segments = listed.segments()
    assert segments is not None and len(segments) == 3
    assert read_all(TransportByteSource((b"a", b"b"))) == b"ab"  # type: ignore[arg-type]


def test_transport_sink_over_segments_writes_into_the_region() -> None:
    parts = [bytearray(2), bytearray(3)]
    sink = TransportByteSink(parts)
    sink.write_at(1, memoryview(b"abcd"))
    assert parts == [bytearray(b"\x00a"), bytearray(b"bcd")]


def test_transport_callable_regions_need_a_length(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        TransportByteSource(lambda offset, dst: None)
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        TransportByteSink(lambda offset, src: None)
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        TransportByteSource(lambda offset, dst: None, length=-1)


def test_transport_callable_source_is_bounds_checked_before_the_transport_is_touched(
    raises_kind: RaisesKind,
) -> None:
    calls: list[int] = []

    def read(offset: int, dst: memoryview) -> None:
        calls.append(offset)
        dst[:] = b"z" * dst.nbytes

    source = TransportByteSource(read, length=8)
    assert read_all(source) == b"z" * 8  # type: ignore[arg-type]
    with raises_kind(ErrorKind.OUT_OF_BOUNDS):
        source.read_at(4, memoryview(bytearray(5)))
    assert calls == [0]


FAULTS = [
    (TransportFaultKind.OUT_OF_BOUNDS, ErrorKind.OUT_OF_BOUNDS),
    (TransportFaultKind.BUSY, ErrorKind.BUSY),
    (TransportFaultKind.RESET, ErrorKind.BUSY),
    (TransportFaultKind.ACCESS, ErrorKind.DEVICE_LOST),
]


@pytest.mark.parametrize(("fault", "kind"), FAULTS)
def test_transport_source_fault_mapping(fault: str, kind: ErrorKind, raises_kind: RaisesKind) -> None:
    def read(offset: int, dst: memoryview) -> None:
        raise TransportFault(fault, "descriptor went away")

    with raises_kind(kind) as info:
        TransportByteSource(read, length=4).read_at(0, memoryview(bytearray(4)))
    assert fault in info.value.message and "descriptor went away" in info.value.message
    assert isinstance(info.value.__cause__, TransportFault)


@pytest.mark.parametrize(("fault", "kind"), FAULTS)
def test_transport_sink_fault_mapping(fault: str, kind: ErrorKind, raises_kind: RaisesKind) -> None:
    def write(offset: int, src: memoryview) -> None:
        raise TransportFault(fault)

    with raises_kind(kind):
        TransportByteSink(write, length=4).write_at(0, memoryview(b"abcd"))


def test_unknown_transport_fault_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        TransportFault("meltdown")
