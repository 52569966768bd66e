"""``python -m accel_cli`` is ``accel``."""

from __future__ import annotations

from .main import main

main()
