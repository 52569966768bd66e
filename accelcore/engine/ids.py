"""Generation-checked 64-bit object IDs.

Layout (most significant first): kind (4 bits, nonzero) | namespace (12 bits)
| generation (16 bits) | slot (32 bits). The kind bits make every ID nonzero.
A slot's generation moves on whenever its object goes away (release or
reset), and a slot whose generation is exhausted is retired, so an ID never
resolves again after its object is gone; the namespace changes on every reset.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Generic, NamedTuple, TypeVar

__all__ = ["IdTable", "ObjectKind", "decode_id", "format_id"]

T = TypeVar("T")

_SLOT_BITS = 32
_GEN_BITS = 16
_NS_BITS = 12
_GEN_SHIFT = _SLOT_BITS
_NS_SHIFT = _SLOT_BITS + _GEN_BITS
_KIND_SHIFT = _NS_SHIFT + _NS_BITS
_SLOT_MASK = (1 << _SLOT_BITS) - 1
_GEN_MASK = (1 << _GEN_BITS) - 1
_NS_MASK = (1 << _NS_BITS) - 1
_MAX_GENERATION = _GEN_MASK


class ObjectKind(enum.IntEnum):
    CONTEXT = 1
    BUFFER = 2
    PROGRAM = 3
    QUEUE = 4
    EVENT = 5

    @property
    def label(self) -> str:
        return self.name.lower()


class DecodedId(NamedTuple):
    kind: int
    namespace: int
    generation: int
    slot: int


def decode_id(object_id: int) -> DecodedId:
    """Split an ID into its fields (no validity check)."""
    return DecodedId(
        (object_id >> _KIND_SHIFT) & 0xF,
        (object_id >> _NS_SHIFT) & _NS_MASK,
        (object_id >> _GEN_SHIFT) & _GEN_MASK,
        object_id & _SLOT_MASK,
    )


def format_id(object_id: int) -> str:
    """``buffer:0x2001000100000003`` style text for messages and the CLI."""
    kind = decode_id(object_id).kind
    try:
        label = ObjectKind(kind).label
    except ValueError:
        label = f"kind{kind}"
    return f"{label}:{object_id:#018x}"


class IdTable(Generic[T]):
    """Slots of one object kind. ``insert`` publishes an ID; ``get`` returns None for any stale ID.

    Besides the slot and generation lists (which decide the next ID), live entries are kept
    in a dict keyed by their full ID, so resolving a plain ``int`` is one dict lookup:
    a stale generation, another namespace or another kind simply is not a key.
    ``lookup`` is that dict's ``get`` (exact ``int`` IDs only; the engine's hot paths use it).
    """

    def __init__(self, kind: ObjectKind) -> None:
        self.kind = kind
        self._kind_bits = int(kind) << _KIND_SHIFT
        self.namespace = 1
        self._entries: list[T | None] = []
        self._generations: list[int] = []
        self._free: list[int] = []
        self._live = 0
        self._by_id: dict[int, T] = {}
        self.lookup = self._by_id.get

    def __len__(self) -> int:
        return self._live

    def _make(self, slot: int) -> int:
        return (
            (int(self.kind) << _KIND_SHIFT)
            | (self.namespace << _NS_SHIFT)
            | (self._generations[slot] << _GEN_SHIFT)
            | slot
        )

    def insert(self, entry: T) -> int:
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self._entries)
            if slot > _SLOT_MASK:
                raise OverflowError(f"{self.kind.label} ID slots exhausted")
            self._entries.append(None)
            self._generations.append(1)
        self._entries[slot] = entry
        self._live += 1
        object_id = (self._kind_bits | (self.namespace << _NS_SHIFT)) | (self._generations[slot] << _GEN_SHIFT) | slot
        self._by_id[object_id] = entry
        return object_id

    def get(self, object_id: int) -> T | None:
        if type(object_id) is int:
            return self._by_id.get(object_id)
        kind = object_id >> _KIND_SHIFT
        if kind != self.kind:
            return None
        slot = object_id & _SLOT_MASK
        if slot >= len(self._entries):
            return None
        entry = self._entries[slot]
        if entry is None or self._make(slot) != object_id:
            return None
        return entry

    def remove(self, object_id: int) -> T:
        entry = self._by_id.pop(object_id, None) if type(object_id) is int else None
        if entry is None:
            entry = self.get(object_id)
            if entry is None:
                raise KeyError(object_id)
            del self._by_id[self._make(object_id & _SLOT_MASK)]
        slot = object_id & _SLOT_MASK
        # _vacate, inlined (the hot path of every destroy).
        self._entries[slot] = None
        self._live -= 1
        generations = self._generations
        if generations[slot] < _MAX_GENERATION:
            generations[slot] += 1
            self._free.append(slot)
        return entry

    def _vacate(self, slot: int) -> None:
        self._entries[slot] = None
        self._live -= 1
        if self._generations[slot] >= _MAX_GENERATION:
            return  # retired: this slot's IDs could otherwise come back
        self._generations[slot] += 1
        self._free.append(slot)

    def items(self) -> Iterator[tuple[int, T]]:
        for slot, entry in enumerate(self._entries):
            if entry is not None:
                yield self._make(slot), entry

    def clear(self) -> None:
        """Forget every entry (bumping generations) and move to the next namespace."""
        for slot, entry in enumerate(self._entries):
            if entry is not None:
                self._vacate(slot)
        self._by_id.clear()
        self.namespace = self.namespace + 1 if self.namespace < _NS_MASK else 1
