"""The interface every measured side (ours, raw OpenCL, raw Vulkan) offers the harness.

A side hands out zero-argument closures that do exactly one operation, so the
harness times the same thing for every side and nothing else (ports, arrays
and bindings are prepared outside the timed region, as a user would hold them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import numpy as np

__all__ = ["DispatchSide", "NotMeasured", "RoundTripSide", "TransferSide"]

BufferT = TypeVar("BufferT")
"""The side's own buffer object (a cl.Buffer, a mapped VkBuffer, an engine ID or native handle)."""


class NotMeasured(Exception):
    """This side cannot measure this item; ``reason`` goes into the results instead of a number."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TransferSide(Protocol[BufferT]):
    name: str

    def open_buffer(self, nbytes: int, domain: str) -> BufferT:
        """A buffer of ``nbytes`` in ``domain``; NotMeasured when the side cannot make one."""
        ...

    def writer(self, buffer: BufferT, host: np.ndarray) -> Callable[[], None]:
        """One host→buffer transfer of all of ``host`` to offset 0."""
        ...

    def reader(self, buffer: BufferT, host: np.ndarray) -> Callable[[], None]:
        """One buffer→host transfer filling all of ``host`` from offset 0."""
        ...

    def close_buffer(self, buffer: BufferT) -> None: ...


class RoundTripSide(Protocol):
    """What the round-trip item needs (the wgpu peer offers only this)."""

    def round_trip(self) -> None:
        """Submit the tiny kernel and return once it is terminal."""
        ...


class DispatchSide(RoundTripSide, Protocol):
    name: str

    def sustained(self, submits: int, window: int) -> int:
        """``submits`` tiny dispatches with at most ``window`` in flight; returns the count."""
        ...

    def close(self) -> None: ...
