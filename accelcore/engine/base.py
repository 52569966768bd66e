"""The part of :class:`~.core.CommandEngine` every call shares: its state, ID resolution and releases.

:class:`EngineBase` builds the engine's tables and state (``__init__``), and holds what the calls
of every object kind use: the state checks (``_usable``, ``_admitting``, ``_watch``), resolving an
ID to its entry (``_resolve`` and one accessor per kind), and releasing an object (``_release``,
``_release_failed``, ``_forget``). The calls themselves are mixins over it (:mod:`.buffers`,
:mod:`.programs`, :mod:`.submission`, :mod:`.events`, :mod:`.recovery`); not public.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, NoReturn, TypeVar

from ..contract.accelerator import Accelerator
from ..contract.device import DeviceInfo
from ..contract.errors import BackendError, ErrorKind, ReleaseFailure, ReleaseIndeterminate, ReleaseRejected
from ..contract.flags import Capabilities
from .entries import EngineState, QuarantinedObject, _Buffer, _charges, _Context, _Event, _Program, _Queue
from .ids import IdTable, ObjectKind, format_id
from .policy import ResourcePolicy, ResourceUsage

C = TypeVar("C")
B = TypeVar("B")
P = TypeVar("P")
Q = TypeVar("Q")
E = TypeVar("E")


def _stale(message: str) -> BackendError:
    return BackendError(ErrorKind.STALE_OBJECT, message)


class EngineBase(Generic[C, B, P, Q, E]):
    """The engine's state and the helpers every call uses (see the module docstring)."""

    def __init__(self, provider: Accelerator[C, B, P, Q, E], policy: ResourcePolicy | None = None) -> None:
        self._provider = provider
        self.policy = policy if policy is not None else ResourcePolicy()
        self.usage = ResourceUsage()
        self._info = self._fetch_info(provider)
        self._waiter = _waiter_of(provider)
        self._waiter_interruptible = bool(getattr(provider, "interruptible_wait", False))
        self._contexts: IdTable[_Context] = IdTable(ObjectKind.CONTEXT)
        self._buffers: IdTable[_Buffer] = IdTable(ObjectKind.BUFFER)
        self._programs: IdTable[_Program] = IdTable(ObjectKind.PROGRAM)
        self._queues: IdTable[_Queue] = IdTable(ObjectKind.QUEUE)
        self._events: IdTable[_Event] = IdTable(ObjectKind.EVENT)
        # Hot-path resolution: exact-int IDs are one dict lookup (tables are cleared, never replaced).
        self._buffer_lookup = self._buffers.lookup
        self._program_lookup = self._programs.lookup
        self._queue_lookup = self._queues.lookup
        self._event_lookup = self._events.lookup
        self.state = EngineState.READY
        self.state_reason = ""
        self._teardown_loss: str | None = None
        """Set while reset() tears down, when the instance reported DEVICE_LOST or an indeterminate release."""
        self.quarantine: list[QuarantinedObject] = []
        self.discarded: list[QuarantinedObject] = []
        """Quarantine of provider instances replaced by ``reset(provider)``."""

    @staticmethod
    def _fetch_info(provider: Accelerator[C, B, P, Q, E]) -> DeviceInfo:
        info = provider.device_info()
        if not isinstance(info, DeviceInfo):
            raise BackendError(ErrorKind.INCOMPATIBLE, f"device_info() returned {type(info).__name__}, not DeviceInfo")
        info.validate()
        return info

    # -- state ---------------------------------------------------------------------------------

    def _usable(self) -> None:
        if self.state is EngineState.NEEDS_DISCARD:
            raise BackendError(
                ErrorKind.DEVICE_LOST,
                f"the provider instance needs to be discarded ({self.state_reason}); call reset()",
            )

    def _admitting(self) -> None:
        self._usable()
        if self.state is EngineState.ADMISSION_STOPPED:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"admission is stopped ({self.state_reason}); release objects and call reset()",
            )

    def _needs_discard(self, reason: str) -> None:
        self.state = EngineState.NEEDS_DISCARD
        self.state_reason = reason

    def _stop_admission(self, reason: str) -> None:
        if self.state is EngineState.READY:
            self.state = EngineState.ADMISSION_STOPPED
            self.state_reason = reason

    def _watch(self, error: BackendError, call: str) -> None:
        if error.kind is ErrorKind.DEVICE_LOST:
            self._needs_discard(f"{call} reported DEVICE_LOST: {error.message}")
            if self._teardown_loss is None:
                self._teardown_loss = f"{call} reported DEVICE_LOST: {error.message}"

    # -- resolution ----------------------------------------------------------------------------

    def _resolve(self, table: IdTable[Any], object_id: object) -> Any:
        if type(object_id) is int:
            found = table.lookup(object_id)
            if found is not None:
                return found
        if isinstance(object_id, bool) or not isinstance(object_id, int):
            raise _stale(f"{table.kind.label} id must be an integer, got {type(object_id).__name__} {object_id!r}")
        if object_id == 0:
            raise _stale(f"{table.kind.label} id 0 is never valid")
        entry = table.get(object_id)
        if entry is None:
            kind = object_id >> 60
            if kind != table.kind and kind in ObjectKind._value2member_map_:
                raise _stale(f"{format_id(object_id)} names a {ObjectKind(kind).label}, expected a {table.kind.label}")
            raise _stale(f"{table.kind.label} id {object_id:#x} is unknown, released or from before a reset")
        return entry

    def _context(self, context_id: int) -> _Context:
        entry: _Context = self._resolve(self._contexts, context_id)
        return entry

    def _buffer(self, buffer_id: int) -> _Buffer:
        entry: _Buffer = self._resolve(self._buffers, buffer_id)
        return entry

    def _program(self, program_id: int) -> _Program:
        entry: _Program = self._resolve(self._programs, program_id)
        return entry

    def _queue(self, queue_id: int) -> _Queue:
        entry: _Queue = self._resolve(self._queues, queue_id)
        return entry

    def _event(self, event_id: int) -> _Event:
        entry: _Event = self._resolve(self._events, event_id)
        return entry

    @staticmethod
    def _same_context(expected: int, actual: int, what: str, object_id: int) -> None:
        if expected != actual:
            raise _stale(f"{what} {format_id(object_id)} belongs to context {actual:#x}, not to context {expected:#x}")

    # -- release -------------------------------------------------------------------------------

    @staticmethod
    def _not_referenced(object_id: int, events: set[int]) -> None:
        if events:
            listed = ", ".join(format_id(e) for e in sorted(events))
            raise BackendError(ErrorKind.BUSY, f"{format_id(object_id)} is referenced by live event(s) {listed}")

    @staticmethod
    def _unlink_event(event_id: int, entry: _Event) -> None:
        entry.queue_entry.events.discard(event_id)
        entry.program_entry.events.discard(event_id)
        for buffer in entry.buffer_entries:
            buffer.events.discard(event_id)
        entry.queue_entry.owner.events.discard(event_id)

    def _release(self, table: IdTable[Any], object_id: int, entry: Any, release: Callable[[Any], None]) -> None:
        try:
            release(entry.handle)
        except (ReleaseFailure, BackendError) as exc:
            self._release_failed(table, object_id, entry, exc)
        self._forget(table, object_id, entry)
        entry_kind = type(entry)
        if entry_kind is _Buffer:
            self.usage.allocation_bytes -= entry.info.allocation_bytes
        elif entry_kind is _Program:
            self.usage.resident_bytes -= entry.resident_bytes

    def _release_failed(
        self, table: IdTable[Any], object_id: int, entry: Any, error: ReleaseFailure[Any] | BackendError
    ) -> NoReturn:
        """A release did not succeed: restore (rejected) or quarantine (indeterminate), and raise."""
        kind = table.kind
        try:
            raise error
        except ReleaseRejected as exc:
            entry.handle = exc.resource
            self._watch(exc.error, f"release of {format_id(object_id)}")
            raise ReleaseRejected(exc.error, object_id) from None
        except ReleaseFailure as exc:
            self._forget(table, object_id, entry)
            self.quarantine.append(
                QuarantinedObject(kind, object_id, None, f"release indeterminate: {exc.error}", *_charges(entry))
            )
            self._needs_discard(f"release of {format_id(object_id)} was indeterminate ({exc.error.kind.name})")
            raise ReleaseIndeterminate(exc.error) from None
        except BackendError as exc:
            # Contract violation: releases raise ReleaseFailure. Nothing may be assumed.
            self._forget(table, object_id, entry)
            self.quarantine.append(QuarantinedObject(kind, object_id, None, f"release raised {exc}", *_charges(entry)))
            self._needs_discard(f"release of {format_id(object_id)} raised a plain {exc.kind.name}")
            raise ReleaseIndeterminate(exc) from None

    @staticmethod
    def _forget(table: IdTable[Any], object_id: int, entry: Any) -> None:
        """Unpublish ``object_id`` and unlink it from its context (and an event from what it references)."""
        table.remove(object_id)
        kind = type(entry)
        if kind is _Event:
            EngineBase._unlink_event(object_id, entry)  # also leaves its context's event set
        elif kind is _Buffer:
            entry.owner.buffers.discard(object_id)
        elif kind is _Program:
            entry.owner.programs.discard(object_id)
        elif kind is _Queue:
            entry.owner.queues.discard(object_id)

    def _can_cancel(self) -> bool:
        return bool(self._info.capabilities & Capabilities.EVENT_CANCELLATION)


def _waiter_of(provider: Any) -> Callable[[Any, int | None], bool] | None:
    """The provider's optional blocking wait (:class:`~accelcore.contract.waiting.EventWaiter`), looked up once."""
    wait_event = getattr(provider, "wait_event", None)
    return wait_event if callable(wait_event) else None
