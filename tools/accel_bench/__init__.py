"""accel_bench: overhead of the accelcore layer against the raw APIs and a peer.

``run(devices, json_path, plot_dir, quick=False)`` measures every selected
device (transfers, dispatch round trip, sustained submissions, engine
overhead, program load, copy-freedom), writes the JSON with machine and
driver facts, and renders ``results.md`` and PNG plots from it.
``regenerate(json_path, out_dir)`` re-renders table and plots from the JSON alone.

The package imports those on first use (``__getattr__``), so ``accel`` reads the item table
(:mod:`accel_bench.items`) at startup without loading the bench.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .report import regenerate
    from .runner import SCHEMA, run

__all__ = ["SCHEMA", "regenerate", "run"]


def __getattr__(name: str) -> Any:
    """``run`` and ``SCHEMA`` (:mod:`.runner`), ``regenerate`` (:mod:`.report`), imported on first use."""
    if name in ("SCHEMA", "run"):
        from . import runner

        return getattr(runner, name)
    if name == "regenerate":
        from .report import regenerate

        return regenerate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
