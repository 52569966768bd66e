"""Recovery: ``reset`` (teardown child before parent, a fresh ID namespace, a fresh provider) and the quarantine.

What the engine cannot prove released is quarantined (:class:`~.entries.QuarantinedObject`) with
what pins it; ``poll_quarantine`` and every ``reset`` retry it, events first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..contract.accelerator import Accelerator
from ..contract.errors import BackendError, ReleaseFailure, ReleaseRejected
from ..contract.submission import EventState
from .base import B, C, E, EngineBase, P, Q, _waiter_of
from .entries import EngineState, QuarantinedObject, _charges
from .ids import IdTable, ObjectKind
from .policy import ResourceUsage


class RecoveryCalls(EngineBase[C, B, P, Q, E]):
    """Reset the engine and retry the quarantine (mixed into :class:`~.core.CommandEngine`)."""

    def reset(self, provider: Accelerator[C, B, P, Q, E] | None = None) -> list[QuarantinedObject]:
        """Retry the quarantine (as :meth:`poll_quarantine`), tear everything down child before parent
        (events, queues, programs, buffers, contexts), quarantine what cannot be released, and open a
        fresh ID namespace.

        With ``provider`` (a fresh instance — required after an indeterminate outcome
        if the old one is to be dropped), the old instance's quarantine moves to
        ``discarded`` and the policy charges start from zero. Returns the quarantine.
        """
        info = self._fetch_info(provider) if provider is not None else None  # an invalid one changes nothing
        self._teardown_loss = None
        self._teardown()
        loss, self._teardown_loss = self._teardown_loss, None
        for table in (self._events, self._queues, self._programs, self._buffers, self._contexts):
            table.clear()
        if provider is not None and info is not None:
            self._provider = provider
            self._info = info
            self._waiter = _waiter_of(provider)
            self._waiter_interruptible = bool(getattr(provider, "interruptible_wait", False))
            self.discarded.extend(self.quarantine)
            self.quarantine = []
            self.usage = ResourceUsage()
        else:
            self.usage = ResourceUsage(
                sum(q.allocation_bytes for q in self.quarantine), sum(q.resident_bytes for q in self.quarantine)
            )
        if loss is not None and (provider is None or info is None):
            # The instance itself failed during teardown: it stays discarded until a fresh one comes.
            self.state = EngineState.NEEDS_DISCARD
            self.state_reason = f"reset: {loss}; reset(provider=<fresh instance>) to go on"
        else:
            self.state = EngineState.READY
            self.state_reason = ""
        return list(self.quarantine)

    def poll_quarantine(self) -> list[QuarantinedObject]:
        """Retry the quarantine now, as ``reset()`` does first, and return what is left.

        Each quarantined event with a live handle is polled once (cancelled first when the device
        can); one now terminal is destroyed, then every quarantined queue, program, buffer and
        context whose events are gone is released, child before parent. What the provider
        releases leaves the quarantine and its charge leaves ``usage``; a rejected retry keeps
        the (returned) handle, an indeterminate one drops it. Never blocks. NEEDS_DISCARD →
        DEVICE_LOST (a fresh provider via ``reset(provider)`` is the way out).
        """
        self._usable()
        for item in self._retry_quarantine():
            self.usage.allocation_bytes -= item.allocation_bytes
            self.usage.resident_bytes -= item.resident_bytes
        return list(self.quarantine)

    def _retry_quarantine(self) -> list[QuarantinedObject]:
        """One retry of every quarantined live handle (events first); returns the items released."""
        cancel = self._can_cancel()
        released: list[QuarantinedObject] = []
        for item in [q for q in self.quarantine if q.kind is ObjectKind.EVENT and q.handle is not None]:
            if self._settle(item.handle, cancel) is not None and self._retry_quarantined(
                item, self._provider.destroy_event
            ):
                released.append(item)
        stuck = {q.object_id for q in self.quarantine if q.kind is ObjectKind.EVENT and q.handle is not None}
        stages: tuple[tuple[ObjectKind, Callable[[Any], None]], ...] = (
            (ObjectKind.QUEUE, self._provider.destroy_queue),
            (ObjectKind.PROGRAM, self._provider.unload_program),
            (ObjectKind.BUFFER, self._provider.free_buffer),
            (ObjectKind.CONTEXT, self._provider.destroy_context),
        )
        for kind, release in stages:
            for item in [q for q in self.quarantine if q.kind is kind and q.handle is not None]:
                if stuck.isdisjoint(item.waits_for) and self._retry_quarantined(item, release):
                    released.append(item)
        return released

    def _teardown(self) -> None:
        self._retry_quarantine()  # what earlier resets left: a kernel that pinned it may have ended
        # IDs that must stay alive -> the quarantined events that reference them (empty: a child failed).
        blocked: dict[int, set[int]] = {}
        cancel = self._can_cancel()
        for event_id, event in list(self._events.items()):
            if event.overran or not event.state.is_terminal:
                state = self._settle(event.handle, cancel)
                if state is not None and not event.state.is_terminal:
                    event.state = state
            if not self._teardown_release(ObjectKind.EVENT, event_id, event, self._provider.destroy_event):
                if event.overran:
                    self.quarantine[-1].reason = "overran its deadline (the device could not stop it); " + (
                        self.quarantine[-1].reason
                    )
                for pinned in (event.queue, event.program, event.context, *event.buffers):
                    blocked.setdefault(pinned, set()).add(event_id)
        stages: tuple[tuple[ObjectKind, IdTable[Any], Callable[[Any], None]], ...] = (
            (ObjectKind.QUEUE, self._queues, self._provider.destroy_queue),
            (ObjectKind.PROGRAM, self._programs, self._provider.unload_program),
            (ObjectKind.BUFFER, self._buffers, self._provider.free_buffer),
        )
        for kind, table, release in stages:
            for object_id, entry in list(table.items()):
                if object_id in blocked:
                    waits = blocked[object_id]
                    self._quarantine_live(kind, object_id, entry, "referenced by a quarantined event", waits=waits)
                    blocked.setdefault(entry.context, set()).update(waits)
                elif not self._teardown_release(kind, object_id, entry, release):
                    blocked.setdefault(entry.context, set())
        for object_id, ctx_entry in list(self._contexts.items()):
            if object_id in blocked:
                self._quarantine_live(
                    ObjectKind.CONTEXT, object_id, ctx_entry, "a child could not be released", waits=blocked[object_id]
                )
            else:
                self._teardown_release(ObjectKind.CONTEXT, object_id, ctx_entry, self._provider.destroy_context)

    def _settle(self, handle: Any, cancel: bool) -> EventState | None:
        """Cancel (when the device can) and poll once: the terminal state, or None (pending or unknown)."""
        try:
            if cancel:
                try:
                    self._provider.cancel_event(handle)
                except BackendError as exc:
                    self._watch(exc, "cancel_event")
            state = self._provider.poll_event(handle)
        except BackendError as exc:
            self._watch(exc, "poll_event")
            return None
        return state if state.is_terminal else None

    def _teardown_release(self, kind: ObjectKind, object_id: int, entry: Any, release: Callable[[Any], None]) -> bool:
        """One release during reset; False (and quarantined) when it was not proven."""
        try:
            release(entry.handle)
            return True
        except ReleaseRejected as exc:
            self._quarantine_live(kind, object_id, entry, f"release rejected during reset: {exc.error}", exc.resource)
        except ReleaseFailure as exc:
            self.quarantine.append(
                QuarantinedObject(
                    kind, object_id, None, f"release indeterminate during reset: {exc.error}", *_charges(entry)
                )
            )
            if self._teardown_loss is None:
                self._teardown_loss = f"a {kind.label} release was indeterminate during reset ({exc.error})"
        except BackendError as exc:
            self._quarantine_live(kind, object_id, entry, f"release raised during reset: {exc}")
        return False

    def _quarantine_live(
        self,
        kind: ObjectKind,
        object_id: int,
        entry: Any,
        reason: str,
        handle: Any = None,
        waits: set[int] | None = None,
    ) -> None:
        self.quarantine.append(
            QuarantinedObject(
                kind,
                object_id,
                entry.handle if handle is None else handle,
                reason,
                *_charges(entry),
                waits_for=tuple(sorted(waits)) if waits else (),
            )
        )

    def _retry_quarantined(self, item: QuarantinedObject, release: Callable[[Any], None]) -> bool:
        """One release of a quarantined handle; True (and out of the quarantine) when the provider did it."""
        try:
            release(item.handle)
        except ReleaseRejected as exc:
            item.handle = exc.resource
            self._watch(exc.error, f"retried release of a quarantined {item.kind.label}")
            return False
        except (ReleaseFailure, BackendError):
            item.handle = None
            item.reason += "; a retried release was indeterminate"
            return False
        self.quarantine.remove(item)
        return True
