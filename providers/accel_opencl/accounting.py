"""Live native OpenCL objects per kind, for the conformance accounting case.

A count goes up when the provider creates a native object and down when it
drops its last reference (pyopencl then calls ``clRelease*`` at once;
buffers are released explicitly). ``indeterminate`` counts objects whose
release failed: they are gone from the provider's view but not proven freed.
"""

from __future__ import annotations

import threading

__all__ = ["KINDS", "LiveObjects"]

KINDS = (
    "contexts",
    "command_queues",
    "buffers",
    "sub_buffers",
    "programs",
    "kernels",
    "user_events",
    "kernel_events",
    "marker_events",
    "indeterminate",
)


class LiveObjects:
    """Thread-safe counters (gate callbacks may run on a driver thread)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._lock = threading.Lock()
        self.lock = self._lock
        self.counts = self._counts
        """The lock and the counts themselves, for hot paths that change one count inline (under ``lock``)."""

    def add(self, kind: str, count: int = 1) -> None:
        with self._lock:
            self._counts[kind] = self._counts.get(kind, 0) + count

    def remove(self, kind: str, count: int = 1) -> None:
        with self._lock:
            self._counts[kind] = self._counts.get(kind, 0) - count

    def add_gated(self) -> None:
        """One gated kernel: a user event and a kernel event (one lock round instead of two)."""
        with self._lock:
            counts = self._counts
            counts["user_events"] += 1
            counts["kernel_events"] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {kind: self._counts.get(kind, 0) for kind in KINDS}

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())
