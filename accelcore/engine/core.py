"""``CommandEngine``: the host side of the contract, generic over any ``Accelerator``.

Ownership: the engine owns every provider handle it creates and hands out
nonzero, generation-checked 64-bit IDs instead (see :mod:`.ids`). Host checks
come first: every call validates IDs, flags, limits, ranges, usage vs access
and the resource policy before the provider is called.

Failure: host-side rejections are :class:`BackendError` (STALE_OBJECT for a
zero, unknown, stale, wrong-kind or other-context ID). Provider outcomes keep
their contract shape: ``submit`` raises ``SubmitRejected`` or
``SubmitIndeterminate(error, event_id)``; releases raise ``ReleaseRejected(error,
id)`` (the object is restored, retry allowed) or ``ReleaseIndeterminate`` (the
object is quarantined and the engine needs a discard). DEVICE_LOST or an
indeterminate release puts the engine in ``NEEDS_DISCARD``: every call then
fails fast with DEVICE_LOST until :meth:`CommandEngine.reset`.

Progress: nothing here busy-waits; ``poll`` never blocks; ``wait`` sleeps with
a back-off between polls. One engine is used from one thread at a time (no
locks), like the handles it owns. Copies: only ``write_buffer`` / ``read_buffer`` move
bytes, straight between the caller's objects and the provider.

The engine is one class over mixins, one module per responsibility: :mod:`.entries` (what the
engine keeps per object), :mod:`.base` (``__init__``, state, ID resolution, releases),
:mod:`.buffers` (allocation and transfers), :mod:`.programs` (programs and queues),
:mod:`.submission` (``submit``), :mod:`.events` (``poll``, ``wait``, ``cancel``,
``destroy_event``) and :mod:`.recovery` (``reset`` and the quarantine). Each mixin imports only
:mod:`.entries`, :mod:`.base` and the engine's leaf modules (:mod:`.ids`, :mod:`.policy`,
:mod:`.coverage`); this module puts them together and holds what concerns the engine as a whole
(contexts, the listing of live objects).
"""

from __future__ import annotations

from typing import Any

from ..contract.accelerator import Accelerator
from ..contract.buffers import BufferInfo
from ..contract.device import ContextDesc, DeviceInfo
from ..contract.errors import BackendError, ErrorKind
from .base import B, C, E, P, Q
from .buffers import BufferCalls
from .entries import _Context
from .events import EventCalls
from .ids import IdTable, ObjectKind, format_id
from .programs import ProgramCalls
from .recovery import RecoveryCalls
from .submission import SubmitCalls

__all__ = ["CommandEngine"]


class CommandEngine(
    BufferCalls[C, B, P, Q, E],
    ProgramCalls[C, B, P, Q, E],
    SubmitCalls[C, B, P, Q, E],
    EventCalls[C, B, P, Q, E],
    RecoveryCalls[C, B, P, Q, E],
):
    """See the module docstring. ``CommandEngine(provider, policy=None)``: ``device_info`` is fetched
    and validated once, by :class:`~.base.EngineBase`'s ``__init__`` (``DeviceInfoError`` propagates
    and no engine is made)."""

    def __repr__(self) -> str:
        return (
            f"<CommandEngine {self.state.value} contexts={len(self._contexts)} buffers={len(self._buffers)} "
            f"programs={len(self._programs)} queues={len(self._queues)} events={len(self._events)} "
            f"quarantine={len(self.quarantine)}>"
        )

    @property
    def info(self) -> DeviceInfo:
        """The validated, cached device metadata."""
        return self._info

    @property
    def provider(self) -> Accelerator[C, B, P, Q, E]:
        return self._provider

    def live_objects(self) -> dict[str, int]:
        return {
            "context": len(self._contexts),
            "buffer": len(self._buffers),
            "program": len(self._programs),
            "queue": len(self._queues),
            "event": len(self._events),
        }

    def objects(self) -> list[tuple[int, ObjectKind, int | None]]:
        """Every live ID with its kind and owning context ID (None for contexts)."""
        found: list[tuple[int, ObjectKind, int | None]] = [
            (i, ObjectKind.CONTEXT, None) for i, _ in self._contexts.items()
        ]
        found += [(i, ObjectKind.BUFFER, e.context) for i, e in self._buffers.items()]
        found += [(i, ObjectKind.PROGRAM, e.context) for i, e in self._programs.items()]
        found += [(i, ObjectKind.QUEUE, e.context) for i, e in self._queues.items()]
        found += [(i, ObjectKind.EVENT, e.context) for i, e in self._events.items()]
        return found

    def exists(self, object_id: int) -> bool:
        """Whether ``object_id`` resolves now (to a live object of the kind it encodes)."""
        tables: tuple[IdTable[Any], ...] = (self._contexts, self._buffers, self._programs, self._queues, self._events)
        return any(table.get(object_id) is not None for table in tables)

    def buffer_info(self, buffer_id: int) -> BufferInfo:
        return self._buffer(buffer_id).info

    # -- contexts ------------------------------------------------------------------------------

    def create_context(self, desc: ContextDesc | None = None) -> int:
        """A new context ID. Reserved flags → UNSUPPORTED; max_contexts → RESOURCE_LIMIT."""
        self._admitting()
        desc = desc if desc is not None else ContextDesc()
        self._info.validate_context_desc(desc)
        if len(self._contexts) >= self._info.limits.max_contexts:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_contexts {self._info.limits.max_contexts} reached")
        try:
            handle = self._provider.create_context(desc)
        except BackendError as exc:
            self._watch(exc, "create_context")
            raise
        return self._contexts.insert(_Context(handle))

    def destroy_context(self, context_id: int) -> None:
        """Release an empty context. Live children → BUSY (no provider call)."""
        self._usable()
        entry = self._context(context_id)
        children = entry.describe_children()
        if children:
            raise BackendError(ErrorKind.BUSY, f"{format_id(context_id)} still has {children}")
        self._release(self._contexts, context_id, entry, self._provider.destroy_context)
