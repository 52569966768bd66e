"""Moved to :mod:`accelcore.inventory` (one implementation for Python and the CLI); re-exported here."""

from __future__ import annotations

from collections.abc import Sequence

from accelcore.inventory import (
    EXTRA_PROVIDERS_ENV,
    PROVIDERS_ENV,
    Inventory,
    ProviderStatus,
    family_names,
    known_family_names,
    unknown_wanted_names,
)
from accelcore.inventory import discover as _discover

from .failures import UsageProblem

__all__ = [
    "EXTRA_PROVIDERS_ENV",
    "PROVIDERS_ENV",
    "Inventory",
    "ProviderStatus",
    "discover",
    "family_names",
    "known_family_names",
]


def discover(names: Sequence[str] | None = None) -> Inventory:
    """:func:`accelcore.inventory.discover`, after refusing (exit 2) an ``ACCEL_PROVIDERS`` name no family has."""
    unknown = unknown_wanted_names()
    if unknown:
        raise UsageProblem(
            f"{PROVIDERS_ENV} names {', '.join(map(repr, unknown))}, which no installed provider is; "
            f"known providers: {', '.join(known_family_names()) or '(none)'}",
            argument=PROVIDERS_ENV,
        )
    return _discover(names)
