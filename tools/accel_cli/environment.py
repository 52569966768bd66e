"""Moved to :mod:`accelcore.devices.environment` (one implementation for Python and the CLI); re-exported here."""

from __future__ import annotations

from accelcore.devices.environment import (
    DEFAULTS,
    DEVICE_ENV,
    apply_defaults,
)

__all__ = [
    "DEFAULTS",
    "DEVICE_ENV",
    "apply_defaults",
]
