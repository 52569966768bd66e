"""What the engine keeps per object: the entries behind the IDs, the engine's state, the quarantine.

One record per live object kind (context, buffer, program, queue, event), each holding its provider
handle, its context and the events that pin it; :class:`EngineState` and :class:`QuarantinedObject`
are public. The hot paths read these records directly, so the facts they need are precomputed here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from ..contract.buffers import BufferInfo, BufferRange
from ..contract.flags import AccessMode, BufferUsage
from ..contract.submission import BindingRef, EventState
from .coverage import CoverageRule
from .ids import ObjectKind


class EngineState(enum.Enum):
    READY = "ready"
    ADMISSION_STOPPED = "admission-stopped"
    """A release the engine needed was not proven: no new objects until reset(); existing ones work."""
    NEEDS_DISCARD = "needs-discard"
    """DEVICE_LOST or an indeterminate release: every call fails DEVICE_LOST until reset()."""


@dataclass(slots=True)
class QuarantinedObject:
    """An object the engine could not prove released. ``handle`` is None when it is gone (indeterminate).

    ``waits_for``: the IDs of quarantined events that reference it (a queue, program, buffer or
    context a still-running kernel pins); its release is retried only once none of them is still
    quarantined with a live handle.
    """

    kind: ObjectKind
    object_id: int
    handle: Any
    reason: str
    allocation_bytes: int = 0
    resident_bytes: int = 0
    waits_for: tuple[int, ...] = ()


@dataclass(slots=True)
class _Context:
    handle: Any
    buffers: set[int] = field(default_factory=set)
    programs: set[int] = field(default_factory=set)
    queues: set[int] = field(default_factory=set)
    events: set[int] = field(default_factory=set)

    def describe_children(self) -> str:
        parts = [
            f"{len(ids)} {name}"
            for name, ids in (
                ("buffers", self.buffers),
                ("programs", self.programs),
                ("queues", self.queues),
                ("events", self.events),
            )
            if ids
        ]
        return ", ".join(parts)


_MEMOS_KEPT = 4
"""Binding lists remembered per program by :meth:`CommandEngine.submit` (see ``_Program.memos``)."""
_NATIVE_CACHE_SIZE = 16
"""Most native ``BindingRef``s one buffer keeps for reuse (cleared when full)."""


@dataclass(slots=True)
class _Buffer:
    """A live buffer. ``owner`` is its context's entry (a context outlives its buffers).

    The facts the hot paths need are computed once from the (immutable) ``info.desc``:
    ``size``, ``access_mask`` (bit ``1 << access`` set when the usage allows a binding
    with that access), ``readable`` / ``writable`` (TRANSFER_SOURCE / TRANSFER_DESTINATION)
    and ``whole`` (the range of the whole buffer). ``native`` caches the immutable
    provider-facing ``BindingRef``s built for this buffer, keyed by (slot, access, offset,
    bytes); an entry is only reused while its ``buffer`` is still ``handle``.
    """

    handle: Any
    context: int
    info: BufferInfo
    owner: _Context
    events: set[int] = field(default_factory=set)
    size: int = field(init=False)
    access_mask: int = field(init=False)
    readable: bool = field(init=False)
    writable: bool = field(init=False)
    whole: BufferRange = field(init=False)
    native: dict[tuple[int, ...], BindingRef[Any]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        desc = self.info.desc
        usage = int(desc.usage)
        self.size = desc.bytes
        self.access_mask = sum(1 << int(mode) for mode in AccessMode if desc.allows_access(mode))
        self.readable = bool(usage & BufferUsage.TRANSFER_SOURCE)
        self.writable = bool(usage & BufferUsage.TRANSFER_DESTINATION)
        self.whole = BufferRange(0, desc.bytes)


@dataclass(slots=True)
class _Program:
    handle: Any
    context: int
    resident_bytes: int
    owner: _Context
    events: set[int] = field(default_factory=set)
    coverage: CoverageRule | None = None
    """Known per-binding coverage of a kernel package (None: nothing to check; see .coverage)."""
    memos: list[tuple[tuple[Any, ...], tuple[BindingRef[Any], ...], tuple[int, ...], tuple[_Buffer, ...]]] = field(
        default_factory=list
    )
    """The last few (``_MEMOS_KEPT``, newest first) binding lists that passed :meth:`CommandEngine.submit`'s
    one pass for this program: (the very spec objects, the native refs, buffer IDs, buffer entries).
    Reused only when the same (immutable) spec objects come again and every buffer ID still resolves
    to the same entry with the same handle; the checks that depend on anything else (queue, context,
    events limit) run on every call. More than one, so calls that alternate between binding lists
    (host arrays, then device arrays) all hit; it may keep a freed buffer's entry object until replaced."""


@dataclass(slots=True)
class _Queue:
    handle: Any
    context: int
    owner: _Context
    events: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Event:
    """A live event. It keeps the entries it references (queue, program, buffers, context):
    none of them can be released while the event lives, so unlinking needs no lookups."""

    handle: Any
    context: int
    queue: int
    program: int
    buffers: tuple[int, ...]
    queue_entry: _Queue
    program_entry: _Program
    buffer_entries: tuple[_Buffer, ...]
    state: EventState = EventState.PENDING
    indeterminate: bool = False
    deadline_ns: int | None = None
    """``time.monotonic_ns()`` past which the engine stops trusting a Pending answer (None: no deadline)."""
    timeout_ns: int = 0
    overran: bool = False
    """The deadline passed and the device could not stop the kernel: Failed for the engine, still live natively."""


# Hot-path aliases (one global lookup each), imported by the call modules.
_READY = EngineState.READY
_NEEDS_DISCARD = EngineState.NEEDS_DISCARD
_PENDING = EventState.PENDING
_PENDING_STATUS = _PENDING.status


def _charges(entry: Any) -> tuple[int, int]:
    """(allocation_bytes, resident_bytes) an entry holds against the policy."""
    if isinstance(entry, _Buffer):
        return entry.info.allocation_bytes, 0
    if isinstance(entry, _Program):
        return 0, entry.resident_bytes
    return 0, 0
