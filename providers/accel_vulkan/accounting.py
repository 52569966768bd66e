"""Live native objects per kind, for the conformance accounting case.

Promise: every native object the provider creates is counted under its
Vulkan type name when created and uncounted when destroyed; objects whose
release outcome is unknown are counted under ``indeterminate``. The
instance itself (and its messenger) is the provider, not a resource, and is
not counted.
"""

from __future__ import annotations

from collections import Counter


class Ledger:
    """Counts of live native objects by kind (``VkBuffer``, ``VkDeviceMemory``, ...)."""

    def __init__(self) -> None:
        self._live: Counter[str] = Counter()

    def add(self, kind: str, count: int = 1) -> None:
        self._live[kind] += count

    def remove(self, kind: str, count: int = 1) -> None:
        if self._live[kind] < count:
            raise AssertionError(f"ledger: releasing {count} {kind} but only {self._live[kind]} are live")
        self._live[kind] -= count

    def snapshot(self) -> dict[str, int]:
        """Every kind ever counted with its live count (zeros included)."""
        return dict(self._live)

    def total(self) -> int:
        return sum(self._live.values())
