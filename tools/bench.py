#!/usr/bin/env python3
"""Benchmark accelcore against the raw APIs and wgpu-py: ``tools/bench.py --help``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accel_bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
