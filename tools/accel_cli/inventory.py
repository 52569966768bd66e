"""Moved to :mod:`accelcore.inventory` (one implementation for Python and the CLI); re-exported here."""

from __future__ import annotations

from accelcore.inventory import (
    EXTRA_PROVIDERS_ENV,
    PROVIDERS_ENV,
    Inventory,
    ProviderStatus,
    discover,
    family_names,
    known_family_names,
)

__all__ = [
    "EXTRA_PROVIDERS_ENV",
    "PROVIDERS_ENV",
    "Inventory",
    "ProviderStatus",
    "discover",
    "family_names",
    "known_family_names",
]
