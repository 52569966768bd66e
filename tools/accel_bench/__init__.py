"""accel_bench: overhead of the accelcore layer against the raw APIs and a peer.

``run(devices, json_path, plot_dir, quick=False)`` measures every selected
device (transfers, dispatch round trip, sustained submissions, engine
overhead, program load, copy-freedom), writes the JSON with machine and
driver facts, and renders ``results.md`` and PNG plots from it.
``regenerate(json_path, out_dir)`` re-renders table and plots from the JSON alone.
"""

from __future__ import annotations

from .report import regenerate
from .runner import SCHEMA, run

__all__ = ["SCHEMA", "regenerate", "run"]
