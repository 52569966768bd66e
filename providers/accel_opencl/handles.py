"""Provider-owned handle classes.

Each handle owns its native pyopencl objects and knows its instance and
context, so the provider can refuse a handle of another instance or context
before any native call. Handles are plain records: every rule lives in the
accelerator, the gating policy and the program loader.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from accelcore import AccessMode, BufferInfo
from accelcore.kernels.package import KernelPackage

from .kernel_arguments import Launch

if TYPE_CHECKING:
    from .gating import QueueGates, Submission

__all__ = ["OpenCLBuffer", "OpenCLContext", "OpenCLEvent", "OpenCLProgram", "OpenCLQueue"]

_serial = itertools.count(1)


@dataclass(eq=False)
class OpenCLContext:
    """A cl.Context plus the blocking transfer queue that write/read_buffer use."""

    owner: int
    native: Any
    transfer_queue: Any
    serial: int = field(default_factory=lambda: next(_serial))
    buffers: int = 0
    programs: int = 0
    queues: int = 0
    events: int = 0
    live: bool = True

    def children(self) -> int:
        return self.buffers + self.programs + self.queues + self.events

    def __repr__(self) -> str:
        state = "live" if self.live else "destroyed"
        return f"<OpenCLContext #{self.serial} {state} buffers={self.buffers} programs={self.programs}>"


@dataclass(eq=False)
class OpenCLBuffer:
    """One exact cl.Buffer allocation and its verified BufferInfo."""

    owner: int
    context: OpenCLContext
    native: Any
    info: BufferInfo
    serial: int = field(default_factory=lambda: next(_serial))
    in_flight: int = 0
    live: bool = True
    views: dict[tuple[int, int], Any] = field(default_factory=dict)
    """Sub-buffers (``clCreateSubBuffer`` views, no memory of their own) of the first few ranges
    bound, by (offset, bytes): made once, reused by every submission binding that range, released
    before the buffer itself in ``free_buffer`` (see ``OpenCLAccelerator._VIEWS_KEPT``)."""

    def __repr__(self) -> str:
        d = self.info.desc
        return f"<OpenCLBuffer #{self.serial} {d.bytes}B {d.domain.name} live={self.live} in_flight={self.in_flight}>"


@dataclass(eq=False)
class OpenCLProgram:
    """A built program with its one kernel and the package that says how to call it.

    The package's by-value and ``__local`` arguments are set on ``kernel`` once, at load; the
    submit path sets only buffer arguments and the count (see ``bound``).
    """

    owner: int
    context: OpenCLContext
    native: Any
    kernel: Any
    package: KernelPackage
    resident_bytes: int
    binary: bytes
    from_cache: bool
    launch: Launch
    """The local size passed to clEnqueueNDRangeKernel (None: the driver chooses) and whether this
    program may run non-uniform work-groups (see :mod:`.kernel_arguments`; set by the loader)."""
    serial: int = field(default_factory=lambda: next(_serial))
    in_flight: int = 0
    live: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while kernel arguments are set and the kernel is enqueued."""
    access: dict[int, AccessMode] = field(init=False)
    """slot → declared access (the package's binding table), built once at load."""
    checked: list[Any] = field(default_factory=list)
    """The last few binding lists that passed the submission checks, newest first, as their launch
    plans (see ``OpenCLAccelerator._check_submission``): reused only for the very same BindingRef objects."""
    bound: dict[int, Any] = field(default_factory=dict)
    """native argument index → the value last set on ``kernel`` (set_arg is skipped for the same
    object; guarded by ``lock``)."""

    def __post_init__(self) -> None:
        self.access = {row.slot: row.access for row in self.package.bindings}

    def __repr__(self) -> str:
        return f"<OpenCLProgram #{self.serial} {self.package.entry_point!r} live={self.live}>"


@dataclass(eq=False)
class OpenCLQueue:
    """An in-order cl.CommandQueue and its submission gates."""

    owner: int
    context: OpenCLContext
    native: Any
    gates: QueueGates
    serial: int = field(default_factory=lambda: next(_serial))
    in_flight: int = 0
    live: bool = True

    def __repr__(self) -> str:
        return f"<OpenCLQueue #{self.serial} live={self.live} events={self.in_flight}>"


class OpenCLEvent:
    """A submission's token; the state machine lives in :class:`~accel_opencl.gating.Submission`.

    A plain slotted class (one is made per submission; a dataclass with a serial factory costs more).
    """

    __slots__ = ("live", "owner", "serial", "submission")

    def __init__(self, owner: int, submission: Submission) -> None:
        self.owner = owner
        self.submission = submission
        self.serial = next(_serial)
        self.live = True

    def __repr__(self) -> str:
        return f"<OpenCLEvent #{self.serial} {self.submission.phase.name}>"
