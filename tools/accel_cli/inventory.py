"""Moved to :mod:`accelcore.devices.inventory` (one implementation for Python and the CLI); re-exported here."""

from __future__ import annotations

from collections.abc import Sequence

from accelcore.devices.inventory import (
    EXTRA_PROVIDERS_ENV,
    PROVIDERS_ENV,
    Inventory,
    ProviderStatus,
    environment_problem,
    family_names,
    known_family_names,
)
from accelcore.devices.inventory import discover as _discover

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
    """:func:`accelcore.devices.inventory.discover`, after refusing (exit 2) a mistake in ``ACCEL_PROVIDERS`` (a name
    no family has, or none at all) or ``ACCEL_EXTRA_PROVIDERS`` (an entry without ``name=``)."""
    problem = environment_problem()
    if problem is not None:
        raise UsageProblem(problem[1], argument=problem[0])
    return _discover(names)
