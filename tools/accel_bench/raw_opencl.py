"""Raw pyopencl, written by hand the way a user would without our layer.

Transfers are blocking ``enqueue_copy`` calls; a dispatch is
``enqueue_nd_range_kernel`` + ``wait`` (``raw``), or the same enqueue, a flush
and a busy poll of the event's status (``raw-poll``: the wait our layer does);
the gated variant (``raw-gated``) makes every enqueue wait on a user event
completed right after it (the native price of a cancellable submission) and
polls like ``raw-poll``. Programs are built from source (cold: a unique
source defeats pyopencl's and the driver's caches) or from a device binary.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyopencl as cl

from . import kernels

__all__ = ["RawOpenCL", "RawOpenCLDispatch", "find_device", "list_devices"]


def list_devices() -> list[tuple[str, str, cl.Device]]:
    """(platform name, device name, cl.Device) for every device of every non-empty platform."""
    found: list[tuple[str, str, cl.Device]] = []
    for platform in cl.get_platforms():
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for device in devices:
            found.append((platform.name.strip(), device.name.strip(), device))
    return found


def find_device(platform_name: str | None, device_name: str) -> cl.Device:
    """The cl.Device named ``device_name`` (on ``platform_name`` when given)."""
    for plat, name, device in list_devices():
        if name == device_name.strip() and (platform_name is None or plat == platform_name.strip()):
            return device
    raise LookupError(f"no OpenCL device {device_name!r} on platform {platform_name!r}")


_DOMAIN_FLAGS = {
    "host": cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
    "device": cl.mem_flags.READ_WRITE,
    "shared": cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
}


@dataclass
class _Program:
    program: cl.Program
    kernel: cl.Kernel


class RawOpenCL:
    """One context and in-order queue on one device."""

    def __init__(self, device: cl.Device) -> None:
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context, device)

    name = "raw"

    # ------------------------------------------------------------------ transfers (TransferSide)
    def open_buffer(self, nbytes: int, domain: str) -> cl.Buffer:
        return cl.Buffer(self.context, _DOMAIN_FLAGS[domain], size=nbytes)

    def writer(self, buffer: cl.Buffer, host: np.ndarray) -> Callable[[], None]:
        queue = self.queue

        def write() -> None:
            cl.enqueue_copy(queue, buffer, host, is_blocking=True)

        return write

    def reader(self, buffer: cl.Buffer, host: np.ndarray) -> Callable[[], None]:
        queue = self.queue

        def read() -> None:
            cl.enqueue_copy(queue, host, buffer, is_blocking=True)

        return read

    def close_buffer(self, buffer: cl.Buffer) -> None:
        buffer.release()

    # ------------------------------------------------------------------ programs
    def build_source(self, source: str) -> _Program:
        program = cl.Program(self.context, source).build()
        return _Program(program, getattr(program, kernels.CL_ENTRY))

    def binary_of(self, built: _Program) -> bytes:
        # pyopencl types get_info as ``object``; for BINARIES it is one bytes object per device.
        binaries = cast("list[bytes]", built.program.get_info(cl.program_info.BINARIES))
        return bytes(binaries[0])

    def build_binary(self, binary: bytes) -> _Program:
        program = cl.Program(self.context, [self.device], [binary]).build()
        return _Program(program, getattr(program, kernels.CL_ENTRY))

    # ------------------------------------------------------------------ dispatch
    def tiny(self) -> tuple[_Program, cl.Buffer]:
        """The tiny kernel with its bound buffer."""
        built = self.build_source(kernels.CL_SOURCE)
        zeros = np.zeros(kernels.ELEMENTS, dtype=np.uint32)
        data = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=zeros)
        built.kernel.set_arg(0, data)
        return built, data

    def round_trip(self, built: _Program) -> None:
        """Enqueue and block in ``clWaitForEvents``."""
        event = cl.enqueue_nd_range_kernel(self.queue, built.kernel, (kernels.ELEMENTS,), (kernels.LOCAL_SIZE,))
        event.wait()

    def round_trip_polled(self, built: _Program, *, gated: bool) -> None:
        """Enqueue (behind a user event completed at once when ``gated``), flush, busy-poll the status."""
        if gated:
            gate = cl.UserEvent(self.context)
            event = cl.enqueue_nd_range_kernel(
                self.queue, built.kernel, (kernels.ELEMENTS,), (kernels.LOCAL_SIZE,), wait_for=[gate]
            )
            gate.set_status(cl.command_execution_status.COMPLETE)
        else:
            event = cl.enqueue_nd_range_kernel(self.queue, built.kernel, (kernels.ELEMENTS,), (kernels.LOCAL_SIZE,))
        self.queue.flush()
        status = cl.event_info.COMMAND_EXECUTION_STATUS
        get_info = cast("Callable[[int], int]", event.get_info)  # typed ``object`` by pyopencl
        while get_info(status) > 0:  # COMPLETE is 0, errors are negative
            pass

    def sustained(self, built: _Program, submits: int, *, gated: bool, window: int) -> int:
        """``submits`` dispatches with at most ``window`` in flight; returns ``submits``."""
        in_flight: collections.deque[cl.Event] = collections.deque()
        kernel = built.kernel
        queue = self.queue
        complete = cl.command_execution_status.COMPLETE
        for _ in range(submits):
            if len(in_flight) >= window:
                in_flight.popleft().wait()
            if gated:
                gate = cl.UserEvent(self.context)
                event = cl.enqueue_nd_range_kernel(
                    queue, kernel, (kernels.ELEMENTS,), (kernels.LOCAL_SIZE,), wait_for=[gate]
                )
                gate.set_status(complete)
            else:
                event = cl.enqueue_nd_range_kernel(queue, kernel, (kernels.ELEMENTS,), (kernels.LOCAL_SIZE,))
            in_flight.append(event)
        queue.finish()
        return submits

    def dispatch_side(self, *, gated: bool, polled: bool = False) -> RawOpenCLDispatch:
        return RawOpenCLDispatch(self, gated=gated, polled=polled or gated)

    def check_tiny(self, data: cl.Buffer, expected_increments: int) -> bool:
        """Whether every element was incremented ``expected_increments`` times (the kernel really ran)."""
        host = np.zeros(kernels.ELEMENTS, dtype=np.uint32)
        cl.enqueue_copy(self.queue, host, data, is_blocking=True)
        return bool(np.all(host == expected_increments))


class RawOpenCLDispatch:
    """DispatchSide over the tiny kernel; ``gated`` makes every enqueue wait on a user event.

    Round trips block in ``wait`` unless ``polled`` (then flush + busy poll, as our layer waits);
    sustained runs drain the oldest submission with ``wait`` either way.
    """

    def __init__(self, raw: RawOpenCL, *, gated: bool, polled: bool = False) -> None:
        self.name = "raw-gated" if gated else "raw-poll" if polled else "raw"
        self.raw = raw
        self.gated = gated
        self.polled = polled
        self.built, self.data = raw.tiny()
        self.count = 0

    def round_trip(self) -> None:
        if self.polled:
            self.raw.round_trip_polled(self.built, gated=self.gated)
        else:
            self.raw.round_trip(self.built)
        self.count += 1

    def sustained(self, submits: int, window: int) -> int:
        self.count += submits
        return self.raw.sustained(self.built, submits, gated=self.gated, window=window)

    def verify(self) -> bool:
        """The kernel really ran once per counted dispatch."""
        return self.raw.check_tiny(self.data, self.count)

    def close(self) -> None:
        self.data.release()
