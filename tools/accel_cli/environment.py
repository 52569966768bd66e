"""Moved to :mod:`accelcore.environment` (one implementation for Python and the CLI); re-exported here."""

from __future__ import annotations

from accelcore.environment import (
    DEFAULTS,
    DEVICE_ENV,
    apply_defaults,
)

__all__ = [
    "DEFAULTS",
    "DEVICE_ENV",
    "apply_defaults",
]
