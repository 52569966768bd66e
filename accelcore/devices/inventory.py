"""Every device of every installed provider family, with a reason for each family that cannot offer any.

Families come from the entry-point group ``accelcore.providers`` (through
:func:`accelcore.devices.registry.load_families`), plus, for tests and third-party
development, the families named in ``ACCEL_EXTRA_PROVIDERS``
(``name=module:attribute`` entries separated by commas). ``ACCEL_PROVIDERS``
(comma-separated names) narrows which families are loaded at all.

Failure: a family that fails to import, or whose ``discover()`` raises
anything, becomes an unavailable :class:`ProviderStatus` with the reason;
building the inventory itself never raises for a provider's fault. A mistake
in the variables is the caller's, and :func:`discover` raises it
(:func:`check_environment`): ``ACCEL_PROVIDERS`` set to no name at all (``,``)
or to a name no family has (``vulkn``), or an ``ACCEL_EXTRA_PROVIDERS`` entry
without a ``name=`` (``garbage``) is ``BackendError(INVALID_ARGUMENT)`` naming
the variable and the valid names or form. (An entry ``name=target`` whose
target does not load is that family's unavailable row.)
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from ..contract.errors import BackendError, ErrorKind
from .environment import apply_defaults
from .registry import ENTRY_POINT_GROUP, DeviceEntry, ProviderFamily, ProviderUnavailable, load_families
from .selector import select_many, select_one

__all__ = [
    "EXTRA_PROVIDERS_ENV",
    "PROVIDERS_ENV",
    "Inventory",
    "ProviderStatus",
    "check_environment",
    "discover",
    "environment_problem",
    "family_names",
    "known_family_names",
    "unknown_wanted_names",
]

EXTRA_PROVIDERS_ENV = "ACCEL_EXTRA_PROVIDERS"
PROVIDERS_ENV = "ACCEL_PROVIDERS"


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    """One family's row in the listing: available with ``device_count`` devices, or unavailable with ``reason``."""

    name: str
    available: bool
    reason: str = ""
    device_count: int = 0


@dataclass(frozen=True)
class Inventory:
    """The devices found, in (provider, index) order, and the families they came from."""

    providers: tuple[ProviderStatus, ...]
    devices: tuple[DeviceEntry, ...]
    families: Mapping[str, Any] = field(default_factory=dict)

    @property
    def unavailable(self) -> dict[str, str]:
        return {p.name: p.reason for p in self.providers if not p.available}

    def family_of(self, entry: DeviceEntry) -> ProviderFamily:
        family: ProviderFamily = self.families[entry.provider]
        return family

    def select_one(self, text: str) -> DeviceEntry:
        """The one device ``text`` names (raises SelectorError listing candidates)."""
        return select_one(
            text, self.devices, unavailable=self.unavailable, known_providers=[p.name for p in self.providers]
        )

    def select_many(self, texts: Sequence[str]) -> list[DeviceEntry]:
        """Devices matched by any selector; each selector must match at least one."""
        return select_many(
            texts, self.devices, unavailable=self.unavailable, known_providers=[p.name for p in self.providers]
        )


_EXTRA_FORM = "name=module:attribute entries separated by commas"


def environment_problem() -> tuple[str, str] | None:
    """(variable, message) for the first mistake in ``ACCEL_EXTRA_PROVIDERS`` or ``ACCEL_PROVIDERS``, or None."""
    for item in os.environ.get(EXTRA_PROVIDERS_ENV, "").split(","):
        name, sep, _ = item.strip().partition("=")
        if item.strip() and (not sep or not name.strip()):
            return EXTRA_PROVIDERS_ENV, (
                f"{EXTRA_PROVIDERS_ENV} entry {item.strip()!r} names no provider; the variable holds {_EXTRA_FORM} "
                "(e.g. mine=my_package.provider:family)"
            )
    wanted = _wanted()
    if wanted is None:
        return None
    known = known_family_names()
    listing = f"known providers: {', '.join(known) or '(none)'}"
    if not wanted:
        raw = os.environ.get(PROVIDERS_ENV, "")
        return PROVIDERS_ENV, f"{PROVIDERS_ENV}={raw!r} names no provider; {listing} (unset it to load them all)"
    unknown = sorted(wanted - set(known))
    if unknown:
        return PROVIDERS_ENV, (
            f"{PROVIDERS_ENV} names {', '.join(map(repr, unknown))}, which no installed provider is; {listing}"
        )
    return None


def check_environment() -> None:
    """``BackendError(INVALID_ARGUMENT)`` with :func:`environment_problem`'s message, if there is one."""
    problem = environment_problem()
    if problem is not None:
        raise BackendError(ErrorKind.INVALID_ARGUMENT, problem[1])


def _wanted() -> set[str] | None:
    raw = os.environ.get(PROVIDERS_ENV, "").strip()
    if not raw:
        return None
    return {name.strip().lower() for name in raw.split(",") if name.strip()}


def _extra_specs() -> dict[str, str]:
    specs: dict[str, str] = {}
    for item in os.environ.get(EXTRA_PROVIDERS_ENV, "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, target = item.partition("=")
        specs[name.strip().lower() if sep else item] = target.strip() if sep else ""
    return specs


def known_family_names() -> list[str]:
    """Every registered and extra family name, sorted, whatever ``ACCEL_PROVIDERS`` says."""
    return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)} | set(_extra_specs()))


def unknown_wanted_names() -> list[str]:
    """The names in ``ACCEL_PROVIDERS`` that no registered or extra family has (a typo: ``vulkn``), sorted."""
    wanted = _wanted() or set()
    return sorted(wanted - set(known_family_names()))


def family_names() -> list[str]:
    """Names of the registered and extra families (after ``ACCEL_PROVIDERS`` narrowing), sorted."""
    names = {ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)} | set(_extra_specs())
    wanted = _wanted()
    return sorted(n for n in names if wanted is None or n in wanted)


def _load_extra(name: str, target: str) -> Any:
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        return ProviderUnavailable(
            name, f"{EXTRA_PROVIDERS_ENV} entry {name}={target!r} is not of the form name=module:attribute"
        )
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except Exception as exc:
        return ProviderUnavailable(name, f"cannot load {target} ({type(exc).__name__}: {exc})")


def _load(name: str, extras: Mapping[str, str]) -> Any:
    if name in extras:
        return _load_extra(name, extras[name])
    try:
        return load_families([name]).get(name, ProviderUnavailable(name, "entry point vanished while loading"))
    except Exception as exc:  # a family whose import raises something other than ImportError
        return ProviderUnavailable(name, f"loading the family raised {type(exc).__name__}: {exc}")


def discover(names: Sequence[str] | None = None) -> Inventory:
    """Load the families (all, or ``names``) and ask each for its devices.

    Never raises for a provider's fault: it becomes an unavailable row. A mistake in ``ACCEL_PROVIDERS``
    or ``ACCEL_EXTRA_PROVIDERS`` raises (:func:`check_environment`).
    """
    check_environment()
    apply_defaults()  # before any family enumerates (RUSTICL_ENABLE)
    extras = _extra_specs()
    chosen = family_names() if names is None else sorted({n.lower() for n in names})
    statuses: list[ProviderStatus] = []
    devices: list[DeviceEntry] = []
    families: dict[str, Any] = {}
    for name in chosen:
        family = _load(name, extras)
        if isinstance(family, ProviderUnavailable):
            statuses.append(ProviderStatus(name, False, family.reason))
            continue
        try:
            found = list(family.discover())
        except ProviderUnavailable as exc:
            statuses.append(ProviderStatus(name, False, exc.reason))
            continue
        except Exception as exc:
            statuses.append(ProviderStatus(name, False, f"discover() raised {type(exc).__name__}: {exc}"))
            continue
        bad = [e for e in found if not isinstance(e, DeviceEntry)]
        if bad:
            statuses.append(
                ProviderStatus(name, False, f"discover() returned {type(bad[0]).__name__}, not DeviceEntry")
            )
            continue
        families[name] = family
        for entry in found:
            families.setdefault(entry.provider, family)
        statuses.append(ProviderStatus(name, True, "", len(found)))
        devices.extend(sorted(found, key=lambda e: e.index))
    return Inventory(tuple(statuses), tuple(devices), families)
