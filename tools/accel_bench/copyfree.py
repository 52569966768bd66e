"""Item 5: copy-freedom and memory, measured with tracemalloc (counts, not times).

``traced(fn)`` runs ``fn`` under tracemalloc and reports, above the baseline
taken just before: the peak of traced bytes, the bytes and blocks still live
after, and the growth of the process's peak resident set (VmHWM, reset through
``/proc/self/clear_refs`` where the kernel allows). tracemalloc sees the Python
heap and numpy; native driver allocations show only in the RSS figure.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

__all__ = ["rss_peak_bytes", "traced"]


def rss_peak_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_rss_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def traced(fn: Callable[[], object]) -> dict[str, Any]:
    """Run ``fn`` once under tracemalloc; memory figures relative to just before it."""
    gc.collect()
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        blocks_before = len(tracemalloc.take_snapshot().traces)
        gc.collect()
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        rss_reset = _reset_rss_peak()
        rss_before = _rss_bytes()
        fn()
        current, peak = tracemalloc.get_traced_memory()
        rss_peak = rss_peak_bytes() if rss_reset else None
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
        blocks_after = len(tracemalloc.take_snapshot().traces)
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return {
        "peak_bytes": peak - base,
        "live_bytes_after": current - base,
        "live_bytes_after_gc": after - base,
        "live_blocks_after_gc": blocks_after - blocks_before,
        "rss_peak_growth_bytes": (rss_peak - rss_before) if rss_peak is not None and rss_before is not None else None,
    }
