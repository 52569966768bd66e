"""Moved to :mod:`accelcore.devices.selector` (one implementation for Python and the CLI); re-exported here."""

from __future__ import annotations

from accelcore.devices.selector import (
    DeviceLike,
    Selector,
    SelectorError,
    describe,
    parse_selector,
    select_many,
    select_one,
)

__all__ = [
    "DeviceLike",
    "Selector",
    "SelectorError",
    "describe",
    "parse_selector",
    "select_many",
    "select_one",
]
