"""The items of a benchmark run: the one table ``accel_bench.run(items=...)`` and ``accel bench --only`` share.

It imports nothing, so the CLI reads it at startup without the bench's own imports (the package's
``__init__`` loads :mod:`accel_bench.runner` only when ``run`` is first used).
"""

from __future__ import annotations

__all__ = ["ITEMS"]

ITEMS = (
    "transfers",
    "round_trip",
    "sustained",
    "overhead",
    "program_load",
    "reload_arguments",
    "copy_freedom",
    "highlevel",
)
"""The items of a run, by their key in a device's results (``overhead`` includes the in-call and pending-poll
parts); ``run(items=...)`` measures only some."""
