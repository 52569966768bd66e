"""Recorded dispatches and the per-context cache that lets a repeated submission resubmit one.

A :class:`Recording` is the descriptor sets (one per set the program uses)
written for one binding set plus one command buffer recorded for one
(program, bindings, workgroup grid, pushed count) — everything a submission
hands to ``vkQueueSubmit``; the program's push-constant bytes are part of the
program, so of the key. Recording
one costs about 15 calls through the binding; resubmitting one costs one.

Ownership: a recording is used by at most one event at a time. While an
event holds it, it is in nobody's cache; when the event is destroyed the
recording goes back to its context's :class:`RecordingCache` as *idle*
(the event is terminal, so the command buffer is no longer pending: its
timeline value was reached, or it never reached the device). A later
submission with the same key takes it instead of recording a new one; one
whose recording is still held by a live event records another.

Invalidation: every idle recording that names a buffer is freed before that
buffer is destroyed, every one that names a program before the program is
unloaded, and all of them before the context is destroyed — a cached
command buffer or descriptor set never refers to a destroyed object. The
cache is bounded (:data:`IDLE_PER_CONTEXT`, least recently used evicted
first) and yields idle descriptor sets when the pool is full (the pool holds
``descriptor_sets_max`` recordings' worth of sets and descriptors; see
:mod:`.context`). The natives
are freed by :mod:`.submission`; this module only keeps the books.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .handles import VulkanBuffer, VulkanProgram

IDLE_PER_CONTEXT = 64
"""At most this many idle recordings are kept per context (each holds a command buffer and a descriptor set)."""


@dataclass(eq=False)
class Recording:
    """Descriptor sets + a recorded command buffer for one :func:`key_of` key."""

    key: Hashable
    program: VulkanProgram
    buffers: tuple[VulkanBuffer, ...]
    command_buffer: Any
    descriptor_sets: tuple[Any, ...]
    """One per set in ``program.sets`` (none for a program without bindings)."""
    from_cache: bool = False
    """True when the current user took it from the cache (a rejected submission gives it back, not frees it)."""
    reusable: bool = True
    """False once a submission of it failed in an unknown way: it is freed, never cached again."""
    descriptor_infos: Any = None
    """The ``VkDescriptorBufferInfo[]`` that ``vkUpdateDescriptorSets`` wrote into the sets, one per binding in
    ``buffers`` order (kept, not copied, for the copy-path diagnostics: which VkBuffer each descriptor names)."""

    def names(self, handle: object) -> bool:
        return handle is self.program or any(b is handle for b in self.buffers)


class RecordingCache:
    """Idle recordings of one context, least recently used first; not thread-safe (the provider lock guards it)."""

    def __init__(self, limit: int = IDLE_PER_CONTEXT) -> None:
        self.limit = limit
        self._idle: OrderedDict[Hashable, list[Recording]] = OrderedDict()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def take(self, key: Hashable) -> Recording | None:
        """An idle recording for ``key`` (now owned by the caller), or None."""
        shelf = self._idle.get(key)
        if not shelf:
            return None
        recording = shelf.pop()
        if not shelf:
            del self._idle[key]
        self._count -= 1
        recording.from_cache = True
        return recording

    def give(self, recording: Recording) -> list[Recording]:
        """Keep ``recording`` idle (most recently used); returns what fell out of the bound (caller frees it)."""
        shelf = self._idle.get(recording.key)
        if shelf is None:
            self._idle[recording.key] = [recording]
        else:
            shelf.append(recording)
            self._idle.move_to_end(recording.key)
        self._count += 1
        evicted: list[Recording] = []
        while self._count > self.limit:
            oldest = self.pop_oldest()
            assert oldest is not None
            evicted.append(oldest)
        return evicted

    def pop_oldest(self) -> Recording | None:
        """Remove and return the least recently used idle recording (caller frees it), or None."""
        for key, shelf in self._idle.items():
            recording = shelf.pop(0)
            if not shelf:
                del self._idle[key]
            self._count -= 1
            return recording
        return None

    def remove_if(self, doomed: Callable[[Recording], bool]) -> list[Recording]:
        """Remove and return every idle recording ``doomed`` selects (caller frees them)."""
        removed: list[Recording] = []
        for key in list(self._idle):
            shelf = self._idle[key]
            keep = [r for r in shelf if not doomed(r)]
            if len(keep) != len(shelf):
                removed.extend(r for r in shelf if doomed(r))
                if keep:
                    self._idle[key] = keep
                else:
                    del self._idle[key]
        self._count -= len(removed)
        return removed


def key_of(
    program: VulkanProgram,
    slot_bindings: tuple[tuple[int, VulkanBuffer, int, int], ...],
    groups: tuple[int, int, int],
    push: int | None,
) -> Hashable:
    """The cache key: the program, each (slot, buffer, offset, bytes), the grid and the pushed count.

    Slots, not native bindings: two slots may share a binding number in different sets.
    """
    return (program, slot_bindings, groups, push)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a validated binding set dispatches: element count, workgroup grid and the recording key."""

    elements: int
    groups: tuple[int, int, int]
    key: Hashable


PLANS_PER_CONTEXT = 128
"""At most this many validated binding sets are remembered per context."""


class PlanMemo:
    """(program, binding tuple) → :class:`Plan` for binding sets that passed every value check.

    Everything those checks read is immutable (the ``BindingRef`` values, the
    buffers' ``BufferDesc``, the program's package and access table, the
    device's limits), so a binding set equal to one that passed passes again
    and dispatches the same grid. Handle liveness, ownership and context are
    not part of it: the provider checks them on every submission before it
    looks here. Entries naming a buffer or program are dropped when it is
    released (:meth:`forget`), so the memo never keeps one alive; bounded,
    least recently added first out. Not thread-safe (the provider lock guards it).
    """

    def __init__(self, limit: int = PLANS_PER_CONTEXT) -> None:
        self.limit = limit
        self._plans: dict[tuple[Any, tuple[Any, ...]], Plan] = {}

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, program: VulkanProgram, bindings: tuple[Any, ...]) -> Plan | None:
        return self._plans.get((program, bindings))

    def put(self, program: VulkanProgram, bindings: tuple[Any, ...], plan: Plan) -> None:
        plans = self._plans
        if len(plans) >= self.limit:
            del plans[next(iter(plans))]
        plans[(program, bindings)] = plan

    def forget(self, handle: object) -> None:
        """Drop every entry whose program or any binding's buffer is ``handle``."""
        doomed = [key for key in self._plans if key[0] is handle or any(ref.buffer is handle for ref in key[1])]
        for key in doomed:
            del self._plans[key]

    def clear(self) -> None:
        self._plans.clear()
