"""Bounded, possibly segmented byte ports (``ByteSource`` / ``ByteSink``).

Providers move bytes with ``read_at`` / ``write_at`` or, when a port exposes
them, straight from its ``segments()`` (zero-copy memoryviews). Nothing here
coalesces segments into a transfer-sized temporary.
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from pickle import PickleBuffer
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast, runtime_checkable

from ._checks import check_u64
from .errors import BackendError, ErrorKind

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "ByteSink",
    "ByteSource",
    "MemorySink",
    "MemorySource",
    "PatternSource",
    "TransportByteSink",
    "TransportByteSource",
    "TransportFault",
    "TransportFaultKind",
    "copy_port",
    "sink_of",
    "source_of",
]


@runtime_checkable
class ByteSource(Protocol):
    """A bounded byte source that may be physically segmented.

    ``read_at(offset, dst)`` fills all of ``dst`` from ``offset`` or raises
    (OUT_OF_BOUNDS past the end). ``segments()`` returns zero-copy views of
    the whole source in order, or None when the bytes are not in memory.
    """

    def len(self) -> int: ...

    def read_at(self, offset: int, dst: memoryview) -> None: ...

    def contiguous(self) -> memoryview | None: ...

    def segments(self) -> Sequence[memoryview] | None: ...


@runtime_checkable
class ByteSink(Protocol):
    """A bounded byte destination that may be physically segmented.

    ``write_at(offset, src)`` stores all of ``src`` at ``offset`` or raises
    (OUT_OF_BOUNDS past the end). ``segments()`` returns writable zero-copy
    views in order, or None.
    """

    def len(self) -> int: ...

    def write_at(self, offset: int, src: memoryview) -> None: ...

    def contiguous(self) -> memoryview | None: ...

    def segments(self) -> Sequence[memoryview] | None: ...


def _bytes_view(obj: Buffer, *, writable: bool) -> memoryview:
    """A flat, unsigned-byte memoryview over ``obj``'s memory (never a copy).

    Any C-contiguous buffer-protocol object of any item format and shape
    (zero-size and 0-d included) is accepted; anything else → INVALID_ARGUMENT.
    """
    if type(obj) is memoryview and obj.format == "B" and obj.ndim == 1 and obj.c_contiguous:
        view = obj
    else:
        try:
            view = memoryview(obj)
        except (TypeError, ValueError, BufferError) as error:
            view = _numpy_bytes_view(obj, error)
    if not view.c_contiguous:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"{type(obj).__name__} segment of shape {view.shape} is not C-contiguous; pass a C-contiguous copy",
        )
    if writable and view.readonly:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT, f"{type(obj).__name__} segment is read-only; a sink needs writable memory"
        )
    if view.format != "B" or view.ndim != 1:
        # PickleBuffer.raw() reinterprets any contiguous buffer as flat bytes without a copy;
        # memoryview.cast refuses zero-size multi-dimensional shapes.
        view = PickleBuffer(view).raw()
    return view


def _numpy_bytes_view(obj: object, error: Exception) -> memoryview:
    """Byte view of a numpy array whose dtype cannot be exported (datetime64, ...)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, numpy.ndarray) and obj.flags.c_contiguous:
        return memoryview(obj.reshape(-1).view(numpy.uint8))
    raise BackendError(
        ErrorKind.INVALID_ARGUMENT,
        f"{type(obj).__name__} does not expose its memory through the buffer protocol ({error})",
    ) from None


def _check_range(what: str, offset: int, length: int, total: int) -> None:
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{what} offset must be an integer, got {offset!r}")
    if offset < 0 or length < 0 or offset + length > total:
        raise BackendError(
            ErrorKind.OUT_OF_BOUNDS,
            f"{what} of {length} bytes at offset {offset} is outside a port of {total} bytes",
        )


class _Segmented:
    """Shared segment bookkeeping for MemorySource / MemorySink."""

    __slots__ = ("_length", "_segments", "_starts")

    def __init__(self, segments: Sequence[memoryview]) -> None:
        self._segments = tuple(segments)
        starts = []
        position = 0
        for segment in self._segments:
            starts.append(position)
            position += segment.nbytes
        self._starts = tuple(starts)
        self._length = position

    def len(self) -> int:
        return self._length

    def __len__(self) -> int:
        return self._length

    def contiguous(self) -> memoryview | None:
        if len(self._segments) == 1:
            return self._segments[0]
        if not self._segments:
            return memoryview(b"")
        return None

    def segments(self) -> Sequence[memoryview]:
        return self._segments

    def _pieces(self, offset: int, length: int) -> Iterator[tuple[memoryview, int]]:
        """Yield (piece of a segment, position within the request) covering the range."""
        done = 0
        first = max(bisect_right(self._starts, offset) - 1, 0)
        for index in range(first, len(self._segments)):
            start, segment = self._starts[index], self._segments[index]
            end = start + segment.nbytes
            if end <= offset + done or segment.nbytes == 0:
                continue
            if start >= offset + length:
                break
            lo = offset + done - start
            take = min(segment.nbytes - lo, length - done)
            yield segment[lo : lo + take], done
            done += take
            if done == length:
                break


class MemorySource(_Segmented):
    """Zero-copy source over one or more buffer-protocol objects (bytes, numpy arrays, ...)."""

    __slots__ = ()

    def __init__(self, *segments: Buffer) -> None:
        super().__init__([_bytes_view(s, writable=False) for s in segments])

    def read_at(self, offset: int, dst: memoryview) -> None:
        dst = _bytes_view(dst, writable=True)
        length = dst.nbytes
        _check_range("read", offset, length, self._length)
        for piece, position in self._pieces(offset, length):
            dst[position : position + piece.nbytes] = piece


class MemorySink(_Segmented):
    """Zero-copy sink over one or more writable buffer-protocol objects."""

    __slots__ = ()

    def __init__(self, *segments: Buffer) -> None:
        super().__init__([_bytes_view(s, writable=True) for s in segments])

    def write_at(self, offset: int, src: memoryview) -> None:
        src = _bytes_view(src, writable=False)
        length = src.nbytes
        _check_range("write", offset, length, self._length)
        for piece, position in self._pieces(offset, length):
            piece[:] = src[position : position + piece.nbytes]


class PatternSource:
    """A length-only source that synthesises a repeating byte pattern (no backing memory).

    Used to prove that transfers allocate nothing transfer-sized, and by benchmarks.
    """

    __slots__ = ("_length", "_pattern")

    def __init__(self, length: int, pattern: bytes = b"\xa5") -> None:
        check_u64("PatternSource length", length)
        if not pattern:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, "pattern must be non-empty")
        self._length = length
        self._pattern = bytes(pattern)

    def len(self) -> int:
        return self._length

    def __len__(self) -> int:
        return self._length

    def byte_at(self, position: int) -> int:
        return self._pattern[position % len(self._pattern)]

    def read_at(self, offset: int, dst: memoryview) -> None:
        dst = _bytes_view(dst, writable=True)
        length = dst.nbytes
        _check_range("read", offset, length, self._length)
        if length == 0:
            return
        period = len(self._pattern)
        phase = offset % period
        unit = self._pattern[phase:] + self._pattern[:phase]
        # Fill by doubling inside dst itself: no temporary larger than the pattern.
        filled = min(period, length)
        dst[:filled] = unit[:filled]
        while filled < length:
            take = min(filled, length - filled)
            dst[filled : filled + take] = dst[:take]
            filled += take

    def contiguous(self) -> memoryview | None:
        return None

    def segments(self) -> Sequence[memoryview] | None:
        return None


def source_of(data: ByteSource | Buffer | Sequence[Buffer]) -> ByteSource:
    """``data`` itself if it is a ByteSource, else a zero-copy MemorySource over it
    (a list or tuple is taken as the segments, in order).

    Cheap checks come first: ``isinstance`` against a runtime-checkable
    Protocol costs microseconds per call on CPython 3.11 (measured by the
    transfer benchmark), so it runs only for unknown objects with ``read_at``.
    """
    if type(data) in _SOURCE_TYPES:
        return cast("ByteSource", data)
    if isinstance(data, list | tuple):
        return MemorySource(*data)
    if hasattr(data, "read_at") and isinstance(data, ByteSource):
        return data
    return MemorySource(cast("Buffer", data))


def sink_of(data: ByteSink | Buffer | Sequence[Buffer]) -> ByteSink:
    """``data`` itself if it is a ByteSink, else a zero-copy MemorySink over it
    (a list or tuple is taken as the segments, in order). Cheap checks first, as in :func:`source_of`."""
    if type(data) in _SINK_TYPES:
        return cast("ByteSink", data)
    if isinstance(data, list | tuple):
        return MemorySink(*data)
    if hasattr(data, "write_at") and isinstance(data, ByteSink):
        return data
    return MemorySink(cast("Buffer", data))


def copy_port(source: ByteSource, sink: ByteSink, *, chunk_bytes: int = 1 << 20) -> int:
    """Copy all of ``source`` into ``sink``; returns the byte count.

    Uses the sink's segments as destinations when it has them (zero temporaries);
    otherwise stages through one buffer of at most ``chunk_bytes``.
    """
    total = source.len()
    if sink.len() != total:
        raise BackendError(
            ErrorKind.OUT_OF_BOUNDS,
            f"source of {total} bytes does not fit a sink of {sink.len()} bytes exactly",
        )
    dst_segments = sink.segments()
    if dst_segments is not None:
        position = 0
        for segment in dst_segments:
            source.read_at(position, segment)
            position += segment.nbytes
        return total
    src_segments = source.segments()
    if src_segments is not None:
        position = 0
        for segment in src_segments:
            sink.write_at(position, segment)
            position += segment.nbytes
        return total
    staging = memoryview(bytearray(min(chunk_bytes, total)))
    position = 0
    while position < total:
        take = min(staging.nbytes, total - position)
        source.read_at(position, staging[:take])
        sink.write_at(position, staging[:take])
        position += take
    return total


# --------------------------------------------------------------------------- transport


class TransportFaultKind:
    """Fault kinds a transport-owned region may report."""

    OUT_OF_BOUNDS = "out_of_bounds"
    BUSY = "busy"
    RESET = "reset"
    ACCESS = "access"


_TRANSPORT_FAULT_MAP = {
    TransportFaultKind.OUT_OF_BOUNDS: ErrorKind.OUT_OF_BOUNDS,
    TransportFaultKind.BUSY: ErrorKind.BUSY,
    TransportFaultKind.RESET: ErrorKind.BUSY,
    TransportFaultKind.ACCESS: ErrorKind.DEVICE_LOST,
}


class TransportFault(Exception):
    """Raised by a transport port; mapped OutOfBounds→OUT_OF_BOUNDS, Busy/Reset→BUSY, Access→DEVICE_LOST."""

    def __init__(self, kind: str, message: str = "") -> None:
        if kind not in _TRANSPORT_FAULT_MAP:
            raise ValueError(f"unknown transport fault kind {kind!r}; use TransportFaultKind")
        super().__init__(kind, message)
        self.kind = kind
        self.message = message


def _map_fault(fault: TransportFault) -> BackendError:
    return BackendError(_TRANSPORT_FAULT_MAP[fault.kind], f"transport fault {fault.kind}: {fault.message}")


_Region = TypeVar("_Region", MemorySource, MemorySink)


class _TransportRegion(Generic[_Region]):
    """What a transport source and sink share: ``region`` is a buffer-protocol object, a list of them, or a
    callable ``(offset, view)`` with an explicit ``length``. ``_call`` serves every range: the callable, or
    the in-memory port's own method (``_inner``: buffers)."""

    __slots__ = ("_call", "_inner", "_length")

    def __init__(
        self,
        region: Buffer | Sequence[Buffer] | Callable[[int, memoryview], None],
        *,
        length: int | None = None,
    ) -> None:
        self._inner: _Region | None = None
        if callable(region):
            if length is None:
                raise BackendError(ErrorKind.INVALID_ARGUMENT, "a callable transport region needs length=")
            self._call = region
            self._length = check_u64(f"{type(self).__name__} length", length)
        else:
            parts = cast("list[Buffer]", list(region) if isinstance(region, list | tuple) else [region])
            self._inner, self._call = self._over(parts)
            self._length = self._inner.len()

    def _over(self, parts: list[Buffer]) -> tuple[_Region, Callable[[int, memoryview], None]]:
        """The in-memory port over ``parts`` and its ``read_at`` or ``write_at``."""
        raise NotImplementedError

    def _serve(self, direction: str, offset: int, view: memoryview) -> None:
        _check_range(direction, offset, view.nbytes, self._length)
        try:
            self._call(offset, view)
        except TransportFault as fault:
            raise _map_fault(fault) from fault

    def len(self) -> int:
        return self._length

    def __len__(self) -> int:
        return self._length

    def contiguous(self) -> memoryview | None:
        return self._inner.contiguous() if self._inner is not None else None

    def segments(self) -> Sequence[memoryview] | None:
        return self._inner.segments() if self._inner is not None else None


class TransportByteSource(_TransportRegion[MemorySource]):
    """Zero-copy source adapter over a transport-owned readable region.

    ``region`` is a buffer-protocol object, a list of them, or a callable
    ``read(offset, dst)`` with an explicit ``length``; ``TransportFault``\\ s
    it raises are mapped to :class:`BackendError` kinds.
    """

    __slots__ = ()

    def _over(self, parts: list[Buffer]) -> tuple[MemorySource, Callable[[int, memoryview], None]]:
        inner = MemorySource(*parts)
        return inner, inner.read_at

    def read_at(self, offset: int, dst: memoryview) -> None:
        self._serve("read", offset, _bytes_view(dst, writable=True))


class TransportByteSink(_TransportRegion[MemorySink]):
    """Zero-copy sink adapter over a transport-owned writable region (see TransportByteSource)."""

    __slots__ = ()

    def _over(self, parts: list[Buffer]) -> tuple[MemorySink, Callable[[int, memoryview], None]]:
        inner = MemorySink(*parts)
        return inner, inner.write_at

    def write_at(self, offset: int, src: memoryview) -> None:
        self._serve("write", offset, _bytes_view(src, writable=False))


_SOURCE_TYPES: frozenset[type] = frozenset({MemorySource, PatternSource, TransportByteSource})
_SINK_TYPES: frozenset[type] = frozenset({MemorySink, TransportByteSink})
