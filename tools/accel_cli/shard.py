"""``accel conformance --shard I/N``: which (device, case) cells one shard runs.

Promise: the choice is a pure function of the device key (its uuid, or its id when the uuid is all
zeros), the case id, N and (with ``--durations``) the durations report, so every machine and every
run agrees on it. Without durations a cell goes to shard ``sha256(key + "/" + case) mod N``. With
durations, the cells the report knows are dealt longest first (ties by key and case id) to the shard
with the least recorded time so far (the LPT rule); cells it does not know fall back to the hash.
The final accounting case (``accounting.resource-lifecycle``) runs in every shard: it judges the
cases before it in the same worker, and ``--merge`` folds the N copies into one cell.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ALWAYS", "Shard", "device_key", "parse_shard", "plan_durations"]

ALWAYS = "accounting.resource-lifecycle"
"""Run in every shard (it judges the resources the cases before it in its worker left behind)."""


@dataclass(frozen=True)
class Shard:
    index: int
    """0-based."""
    total: int
    assigned: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """device key -> case id -> shard index (from --durations); other cells use the hash."""

    @property
    def text(self) -> str:
        return f"{self.index + 1}/{self.total}"

    def shard_of(self, key: str, case_id: str) -> int:
        known = self.assigned.get(key, {})
        if case_id in known:
            return known[case_id]
        digest = hashlib.sha256(f"{key}/{case_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.total

    def keeps(self, key: str, case_id: str) -> bool:
        return case_id == ALWAYS or self.shard_of(key, case_id) == self.index

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "total": self.total, "assigned": {k: dict(v) for k, v in self.assigned.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Shard:
        assigned = {str(k): {str(c): int(i) for c, i in v.items()} for k, v in dict(data.get("assigned", {})).items()}
        return cls(int(data["index"]), int(data["total"]), assigned)


_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (1-based I) as (I-1, N); ValueError names the value."""
    match = _SHARD.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not I/N (e.g. 2/4: the second of four shards)")
    number, total = int(match.group(1)), int(match.group(2))
    if total < 1 or not 1 <= number <= total:
        raise ValueError(f"{text!r}: I must be between 1 and N, and N at least 1")
    return number - 1, total


def device_key(uuid_hex: str, device_id: str) -> str:
    """The device part of a shard hash: the uuid, or the id when the provider reports no uuid (all zeros)."""
    cleaned = uuid_hex.replace("-", "").lower()
    return cleaned if cleaned.strip("0") else device_id


def plan_durations(cells: Sequence[tuple[str, str, float]], total: int) -> dict[str, dict[str, int]]:
    """LPT assignment of (device key, case id, seconds) cells to ``total`` shards."""
    loads = [0.0] * total
    assigned: dict[str, dict[str, int]] = {}
    for key, case_id, seconds in sorted(cells, key=lambda c: (-c[2], c[0], c[1])):
        if case_id == ALWAYS:
            continue
        target = min(range(total), key=lambda i: (loads[i], i))
        loads[target] += max(seconds, 0.0)
        assigned.setdefault(key, {})[case_id] = target
    return assigned
