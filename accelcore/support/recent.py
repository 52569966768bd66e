"""Bounded memos: the newest entries kept, the oldest dropped past a count."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

__all__ = ["keep_recent"]

K = TypeVar("K")
V = TypeVar("V")


def keep_recent(entries: OrderedDict[K, V], key: K, value: V, most: int) -> None:
    """``entries[key] = value`` as the newest entry; past ``most`` entries the oldest go. The caller holds the
    lock that guards ``entries``, if any."""
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > most:
        entries.popitem(last=False)
