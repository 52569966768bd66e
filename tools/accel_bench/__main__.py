"""``python -m accel_bench`` (see :mod:`accel_bench.cli`)."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
