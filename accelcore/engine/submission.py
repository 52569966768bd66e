"""Submission: the engine's host checks of a dispatch (one fast pass, one full path) and the event it publishes.

:meth:`SubmitCalls.submit` is a hot path: the common shape is checked in one pass over plain ints,
with the binding lists that passed remembered per program (``_Program.memos``); every other input
takes :meth:`SubmitCalls._submit_checked`, which raises the documented error.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from operator import is_
from typing import Any

from ..contract._checks import U32_MAX
from ..contract.buffers import BufferRange
from ..contract.errors import BackendError, ErrorKind, SubmitFailure, SubmitIndeterminate, SubmitRejected
from ..contract.flags import AccessMode
from ..contract.submission import BindingRef, Timeout, timeout_seconds, validate_binding_ranges
from .base import B, C, E, EngineBase, P, Q
from .entries import _MEMOS_KEPT, _NATIVE_CACHE_SIZE, _PENDING, _READY, _Buffer, _Event, _Program, _Queue

BindingSpec = tuple[int, int, BufferRange | None, AccessMode | int] | BindingRef[int]
"""``(slot, buffer_id, range or None for the whole buffer, access)`` or a ``BindingRef`` over a buffer ID."""

_MODES: dict[int, AccessMode] = {int(mode): mode for mode in AccessMode}


class SubmitCalls(EngineBase[C, B, P, Q, E]):
    """Submit a program with its bindings (mixed into :class:`~.core.CommandEngine`)."""

    def submit(
        self,
        queue_id: int,
        program_id: int,
        bindings: Sequence[BindingSpec],
        timeout: Timeout | float | None = None,
    ) -> int:
        """Check everything host-side, then admit; returns the event ID.

        ``timeout``: a Timeout, seconds (float) or None (infinite). Host-side
        failures raise BackendError; the provider's refusal SubmitRejected; an
        unknown acceptance SubmitIndeterminate whose ``event`` is the new event ID.

        The common shape (exact-int IDs, ``BindingRef`` or ``(slot, id, range | None,
        access)`` tuples of plain values, nothing wrong) is checked in one pass over plain
        ints; anything else, including every input that fails a check, takes the full
        path (:meth:`_submit_checked`), which raises the documented error.
        """
        if self.state is not _READY:
            return self._submit_checked(queue_id, program_id, bindings, timeout)
        queue = self._queue_lookup(queue_id) if type(queue_id) is int else None
        program = self._program_lookup(program_id) if type(program_id) is int else None
        if queue is None or program is None or program.context != queue.context:
            return self._submit_checked(queue_id, program_id, bindings, timeout)
        kind = type(bindings)
        count = len(bindings) if kind is list or kind is tuple else 0
        if not 0 < count <= self._info.limits.max_bindings_per_submission:
            return self._submit_checked(queue_id, program_id, bindings, timeout)
        buffer_lookup = self._buffer_lookup
        for memo in program.memos:
            if len(memo[0]) != count or not all(map(is_, memo[0], bindings)):
                continue
            # The same spec objects as a recent call that passed: only liveness can have changed.
            for buffer_id, held, given in zip(memo[2], memo[3], memo[1], strict=True):
                if buffer_lookup(buffer_id) is not held or given.buffer is not held.handle:
                    break
            else:
                if len(queue.owner.events) >= self._info.limits.max_events_per_context:
                    return self._submit_checked(queue_id, program_id, bindings, timeout)
                return self._admit(queue_id, queue, program_id, program, memo[1], memo[2], memo[3], timeout)
            program.memos = [m for m in program.memos if m is not memo]  # a buffer went: checked afresh below
            break
        context_id = queue.context
        native: list[BindingRef[Any]] = []
        buffer_ids: list[int] = []
        entries: list[_Buffer] = []
        slots: set[int] | None = set() if count > 1 else None
        for spec in bindings:
            spec_kind = type(spec)
            if spec_kind is BindingRef:
                # The public constructor has checked slot and access already.
                slot, buffer_id, rng, access = spec.slot, spec.buffer, spec.range, spec.access  # type: ignore[union-attr]
            elif spec_kind is tuple and len(spec) == 4:  # type: ignore[arg-type]
                slot, buffer_id, rng, access = spec  # type: ignore[misc]
                if type(slot) is not int or not 0 <= slot <= U32_MAX:
                    return self._submit_checked(queue_id, program_id, bindings, timeout)
                if type(access) is not AccessMode:
                    mode = _MODES.get(access) if type(access) is int else None
                    if mode is None:
                        return self._submit_checked(queue_id, program_id, bindings, timeout)
                    access = mode
            else:
                return self._submit_checked(queue_id, program_id, bindings, timeout)
            entry = buffer_lookup(buffer_id) if type(buffer_id) is int else None
            if entry is None or entry.context != context_id or not entry.access_mask >> access & 1:
                return self._submit_checked(queue_id, program_id, bindings, timeout)
            if rng is None:
                key: tuple[int, ...] = (slot, access)
                rng = entry.whole
            elif type(rng) is BufferRange and rng.offset + rng.bytes <= entry.size:
                key = (slot, access, rng.offset, rng.bytes)
            else:
                return self._submit_checked(queue_id, program_id, bindings, timeout)
            if slots is not None:
                if slot in slots:
                    return self._submit_checked(queue_id, program_id, bindings, timeout)
                slots.add(slot)
            cache = entry.native
            ref = cache.get(key)
            if ref is None or ref.buffer is not entry.handle:
                if len(cache) >= _NATIVE_CACHE_SIZE:
                    cache.clear()
                ref = cache[key] = BindingRef._trusted(slot, entry.handle, rng, access)
            native.append(ref)
            buffer_ids.append(buffer_id)
            entries.append(entry)
        if len(queue.owner.events) >= self._info.limits.max_events_per_context:
            return self._submit_checked(queue_id, program_id, bindings, timeout)
        refs, ids, kept = tuple(native), tuple(buffer_ids), tuple(entries)
        memos = program.memos
        memos.insert(0, (tuple(bindings), refs, ids, kept))
        del memos[_MEMOS_KEPT:]
        return self._admit(queue_id, queue, program_id, program, refs, ids, kept, timeout)

    def _submit_checked(
        self,
        queue_id: int,
        program_id: int,
        bindings: Sequence[BindingSpec],
        timeout: Timeout | float | None,
    ) -> int:
        """The full, ordered host checks of :meth:`submit` (every error is raised here)."""
        self._admitting()
        queue = self._queue(queue_id)
        program = self._program(program_id)
        self._same_context(queue.context, program.context, "program", program_id)
        ctx = self._context(queue.context)
        refs: list[BindingRef[int]] = []
        entries: list[_Buffer] = []
        for spec in bindings:
            ref = self._binding(spec)
            entry = self._buffer(ref.buffer)
            self._same_context(queue.context, entry.context, "buffer", ref.buffer)
            refs.append(ref)
            entries.append(entry)
        descs = [entry.info.desc for entry in entries]
        BindingRef.validate_for_submit(refs, descs, self._info.limits.max_bindings_per_submission)
        validate_binding_ranges(refs, descs)
        limit = self._info.limits.max_events_per_context
        if len(ctx.events) >= limit:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_events_per_context {limit} reached")
        native = [BindingRef(r.slot, e.handle, r.range, r.access) for r, e in zip(refs, entries, strict=True)]
        buffer_ids = tuple(r.buffer for r in refs)
        return self._admit(queue_id, queue, program_id, program, native, buffer_ids, tuple(entries), timeout)

    def _admit(
        self,
        queue_id: int,
        queue: _Queue,
        program_id: int,
        program: _Program,
        native: Sequence[BindingRef[Any]],
        buffer_ids: tuple[int, ...],
        entries: tuple[_Buffer, ...],
        timeout: Timeout | float | None,
    ) -> int:
        """The coverage check, then the provider call and the event's publication."""
        if program.coverage is not None:
            program.coverage.check(native)
        limit = Timeout.INFINITE
        try:
            limit = timeout if type(timeout) is Timeout else _timeout(timeout)
            handle = self._provider.submit(queue.handle, program.handle, native, limit)
        except SubmitIndeterminate as exc:
            event_id = self._publish_event(
                exc.event, queue_id, queue, program_id, program, buffer_ids, entries, True, limit.ns
            )
            self._watch(exc.error, "submit")
            raise SubmitIndeterminate(exc.error, event_id) from None
        except SubmitFailure as exc:
            self._watch(exc.error, "submit")
            raise SubmitRejected(exc.error) from None
        except BackendError as exc:
            # Contract violation (submit must raise SubmitFailure); the provider meant a refusal.
            # (A bad ``timeout`` also lands here, as before: SubmitRejected(INVALID_ARGUMENT).)
            self._watch(exc, "submit")
            raise SubmitRejected(exc) from None
        return self._publish_event(handle, queue_id, queue, program_id, program, buffer_ids, entries, False, limit.ns)

    def _binding(self, spec: BindingSpec) -> BindingRef[int]:
        rng: BufferRange | None
        access: AccessMode | int
        if isinstance(spec, BindingRef):
            slot, buffer_id, rng, access = spec.slot, spec.buffer, spec.range, spec.access
        else:
            try:
                length = len(spec)
            except TypeError:
                length = -1
            if length != 4:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT, f"a binding is (slot, buffer_id, range or None, access), got {spec!r}"
                )
            slot, buffer_id, rng, access = spec
        entry = self._buffer(buffer_id)
        if rng is not None and not isinstance(rng, BufferRange):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"slot {slot!r}: binding range {rng!r} is not a BufferRange (or None for the whole buffer)",
            )
        whole = rng if rng is not None else BufferRange(0, entry.info.desc.bytes)
        number: object
        try:
            number = int(access)
        except (TypeError, ValueError):
            number = access  # from_number names it as not a mode
        return BindingRef(slot, buffer_id, whole, AccessMode.from_number(number))

    def _publish_event(
        self,
        handle: Any,
        queue_id: int,
        queue: _Queue,
        program_id: int,
        program: _Program,
        buffer_ids: tuple[int, ...],
        entries: tuple[_Buffer, ...],
        indeterminate: bool,
        timeout_ns: int | None = None,
    ) -> int:
        # The engine's deadline is taken after the provider's submit returned, so it is never
        # earlier than the provider's own (a provider that enforces deadlines always answers first).
        event_id = self._events.insert(
            _Event(
                handle,
                queue.context,
                queue_id,
                program_id,
                buffer_ids,
                queue,
                program,
                entries,
                _PENDING,
                indeterminate,
                None if timeout_ns is None else time.monotonic_ns() + timeout_ns,
                timeout_ns or 0,
            )
        )
        queue.events.add(event_id)
        program.events.add(event_id)
        for entry in entries:
            entry.events.add(event_id)
        queue.owner.events.add(event_id)
        return event_id


def _timeout(timeout: Timeout | float | None) -> Timeout:
    if timeout is None:
        return Timeout.INFINITE
    if isinstance(timeout, Timeout):
        return timeout
    seconds = timeout_seconds(timeout)  # a number, finite, in range: else INVALID_ARGUMENT naming timeout=
    if seconds <= 0:
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"timeout {timeout!r} must be a positive number of seconds")
    return Timeout.after_ns(max(1, int(seconds * 1e9)))
