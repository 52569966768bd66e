"""Device memory as the Python layer sees it: the memory domain a buffer gets, temporary buffers kept for
reuse (:class:`TemporaryPool`), their guard tails and guard pattern, and arrays that stay on the device
(:class:`DeviceArray`).
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..contract.errors import BackendError, ErrorKind
from ..contract.flags import MemoryDomain
from ..contract.ports import MemorySource
from .keywords import _invalid
from .serial import serialized

if TYPE_CHECKING:
    from .device import Device

__all__ = ["DeviceArray", "PoolKey", "TemporaryPool", "choose_domain", "guard_bytes", "guard_pattern"]

_DOMAINS = (MemoryDomain.DEVICE, MemoryDomain.SHARED, MemoryDomain.HOST)
_ALIGNMENT = 64
_RESIDENT_BYTES = 64 << 20
_GUARD_MIN = 4096
"""The smallest guard tail (redzone) of a temporary buffer; larger arrays get an eighth of their bytes."""
PoolKey = tuple[int, int, int, int]
"""A temporary buffer's kind in :class:`TemporaryPool`: (array bytes, access, memory domain, extension: the
guard-pattern bytes between the array's end and the dispatch's extent, 0 for most)."""


def guard_bytes(nbytes: int, max_buffer_bytes: int) -> int:
    """The guard tail of a temporary buffer of ``nbytes``: max(4 KiB, nbytes / 8), rounded up to the
    alignment, less where the whole allocation would pass ``max_buffer_bytes`` (0 when nothing fits)."""
    guard = -(-max(_GUARD_MIN, nbytes // 8) // _ALIGNMENT) * _ALIGNMENT
    room = (max_buffer_bytes - nbytes) // _ALIGNMENT * _ALIGNMENT
    return max(0, min(guard, room))


_PATTERN_PERIOD = 1 << 16
"""The guard pattern repeats every this many bytes (so a guard sized to a large dispatch costs no more to make)."""
_PATTERN_CACHED = 1 << 20
"""Guard patterns (and their bytes) up to this size are remembered; larger ones are made when needed."""


@functools.lru_cache(maxsize=64)
def _pattern_bytes(nbytes: int) -> bytes:
    return guard_pattern(nbytes).tobytes()


@functools.lru_cache(maxsize=1)
def _pattern_period() -> npt.NDArray[np.uint8]:
    return np.random.default_rng(0x5EED_C0DE).integers(0, 256, _PATTERN_PERIOD, dtype=np.uint8)


def _made_pattern(nbytes: int) -> npt.NDArray[np.uint8]:
    pattern = np.resize(_pattern_period(), nbytes)
    pattern.flags.writeable = False
    return pattern


_cached_pattern = functools.lru_cache(maxsize=64)(_made_pattern)


def guard_pattern(nbytes: int) -> npt.NDArray[np.uint8]:
    """The known bytes a guard tail of ``nbytes`` holds (fixed pseudo-random, so neither zeros, small
    integers nor common floats repeat it; it repeats every 64 KiB, and a shorter pattern is the start of a
    longer one); read-only."""
    return _cached_pattern(nbytes) if nbytes <= _PATTERN_CACHED else _made_pattern(nbytes)


def _holds_pattern(seen: npt.NDArray[np.uint8]) -> bool:
    """Whether ``seen`` is exactly :func:`guard_pattern` of its length."""
    if seen.nbytes <= _PATTERN_CACHED:
        return seen.tobytes() == _pattern_bytes(seen.nbytes)
    return bool(np.array_equal(seen, guard_pattern(seen.nbytes)))


def _bytes_view(array: npt.NDArray[Any]) -> memoryview:
    """A writable byte view of a C-contiguous array (the engine reads straight into it)."""
    return memoryview(array).cast("B")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- devices


def choose_domain(info: Any, requested: MemoryDomain | None = None) -> MemoryDomain:
    """``requested`` if the device offers it (else UNSUPPORTED naming what it offers); otherwise the first
    of Device, Shared, Host it offers."""
    offered = [d for d in MemoryDomain if info.capabilities & d.capability]
    if requested is not None:
        if requested not in offered:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"the device does not offer the {requested.name} memory domain "
                f"(offers: {', '.join(d.name for d in offered)})",
            )
        return requested
    for domain in _DOMAINS:
        if domain in offered:
            return domain
    raise BackendError(ErrorKind.UNSUPPORTED, "the device advertises no memory domain")


class TemporaryPool:
    """Idle temporary buffers of one :class:`Device`, by :data:`PoolKey` (bytes, access, memory domain,
    extension), for reuse.

    A call on host arrays takes its buffers here and gives them back once its event has been
    destroyed after ending Complete, so no event the engine knows references them (the engine would
    refuse a write to a buffer bound to a pending event anyway). A run that ends otherwise —
    Cancelled, Failed, a wait that timed out, a submission whose acceptance is unknown, a discarded
    engine — gives nothing back: its buffers are freed, or left to the device's reset. Every call
    uploads every host array it binds before its submission, so a reused buffer never shows an
    earlier call's bytes. Each buffer holds a guard tail after its array's bytes (see
    :meth:`Device.guard_bytes`), intact in every idle buffer (one a kernel overwrote is freed, never
    given back). At most ``limit`` bytes (the arrays' bytes and extensions — a buffer sized to a dispatch
    longer than its array counts the dispatch's extent — guard tails not counted) stay idle (the oldest
    are freed first);
    :meth:`Device.close` empties it. ``taken`` / ``given`` count reuses and returns.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(0, int(limit))
        self.idle_bytes = 0
        self.taken = 0
        self.given = 0
        self._idle: OrderedDict[PoolKey, list[int]] = OrderedDict()

    def __len__(self) -> int:
        return sum(len(buffers) for buffers in self._idle.values())

    def take(self, key: PoolKey) -> int | None:
        buffers = self._idle.get(key)
        if not buffers:
            return None
        buffer = buffers.pop()
        if not buffers:
            del self._idle[key]
        self.idle_bytes -= key[0] + key[3]
        self.taken += 1
        return buffer

    def give(self, key: PoolKey, buffer: int) -> list[int]:
        """Keep ``buffer``; returns what no longer fits (``buffer`` itself when it alone is over the limit)."""
        counted = key[0] + key[3]
        if counted > self.limit:
            return [buffer]
        self._idle.setdefault(key, []).append(buffer)
        self._idle.move_to_end(key)
        self.idle_bytes += counted
        self.given += 1
        evicted = []
        while self.idle_bytes > self.limit:
            old_key, buffers = next(iter(self._idle.items()))
            evicted.append(buffers.pop(0))
            self.idle_bytes -= old_key[0] + old_key[3]
            if not buffers:
                del self._idle[old_key]
        return evicted

    def clear(self) -> list[int]:
        """Forget every idle buffer; returns them (the caller frees them, or a reset does)."""
        out = [buffer for buffers in self._idle.values() for buffer in buffers]
        self._idle.clear()
        self.idle_bytes = 0
        return out


@dataclass(frozen=True)
class DeviceArray:
    """An array that lives in a device buffer; bound to kernels without a transfer."""

    device: Device
    buffer: int
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @serialized
    def numpy(self) -> npt.NDArray[Any]:
        """A host copy of the array."""
        out = np.empty(self.shape, self.dtype)
        self.device.engine.read_buffer_into(self.buffer, 0, _bytes_view(out))
        return out

    @serialized
    def write(self, data: npt.ArrayLike) -> None:
        """Overwrite the whole array from ``data`` (same dtype and size)."""
        host = np.ascontiguousarray(data)
        if host.dtype != self.dtype or host.nbytes != self.nbytes:
            raise _invalid(f"write: expected {self.size} {self.dtype} elements, got {host.size} {host.dtype}")
        self.device.engine.write_buffer(self.buffer, 0, MemorySource(host.reshape(-1).view(np.uint8).data))

    @serialized
    def free(self) -> None:
        self.device.engine.free_buffer(self.buffer)
