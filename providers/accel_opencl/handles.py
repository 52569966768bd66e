"""Provider-owned handle classes of the resources: contexts, buffers and programs.

Each handle owns its native pyopencl objects and knows its instance and
context, so the provider can refuse a handle of another instance or context
before any native call. Handles are plain records: every rule lives in the
accelerator, the gating policy and the program loader. The queue and event
handles carry submission state, so they live with it in :mod:`.gating`
(which imports this module; this module imports nothing of the provider's
submission side).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from accelcore import AccessMode, BufferInfo
from accelcore.kernels.package import KernelPackage

from .kernel_arguments import Launch

__all__ = ["OpenCLBuffer", "OpenCLContext", "OpenCLProgram", "next_serial"]

next_serial = itertools.count(1).__next__
"""The next handle serial number: one sequence for every handle kind of the provider (queues and
events, in :mod:`.gating`, too)."""


@dataclass(eq=False)
class OpenCLContext:
    """A cl.Context plus the blocking transfer queue that write/read_buffer use."""

    owner: int
    native: Any
    transfer_queue: Any
    serial: int = field(default_factory=next_serial)
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
    serial: int = field(default_factory=next_serial)
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
    serial: int = field(default_factory=next_serial)
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
