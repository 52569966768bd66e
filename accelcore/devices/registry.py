"""Provider families: how the CLI and the tests find devices.

Each installed provider registers a :class:`ProviderFamily` object under the
entry-point group ``accelcore.providers``. Looking families up imports a
provider's module only when asked for, so ``import accelcore`` stays
driver-free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, Protocol

from .native_facts import NativeFacts

if TYPE_CHECKING:  # the conformance layer sits above this one; ConformanceSetup only names its types
    from ..conformance.target import ConformanceHooks, ConformanceTarget

__all__ = [
    "ConformanceSetup",
    "DeviceEntry",
    "ProviderFamily",
    "ProviderUnavailable",
    "load_families",
]

ENTRY_POINT_GROUP = "accelcore.providers"
_EXTRAS = frozenset({"opencl", "vulkan"})


class ProviderUnavailable(Exception):
    """A provider's driver stack or binding is missing or broken; ``reason`` says which and how to fix it."""

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__(f"{provider}: {reason}")
        self.provider = provider
        self.reason = reason


@dataclass(frozen=True, slots=True)
class DeviceEntry:
    """One device a family offers. ``index`` is stable for a given machine and driver set.

    ``facts``: what the driver says about the device (type, versions, native limits, features),
    read once at discovery; None when the family reports none."""

    provider: str
    index: int
    name: str
    uuid: bytes
    native: Mapping[str, str] = field(default_factory=dict)
    facts: NativeFacts | None = None

    @property
    def device_id(self) -> str:
        return f"{self.provider}:{self.index}"


@dataclass(frozen=True, slots=True)
class ConformanceSetup:
    """What the conformance suite needs for one device: a factory for fresh
    instances, the standard target, the hooks and provider-specific cases."""

    factory: Callable[[], Any]
    target: ConformanceTarget
    hooks: ConformanceHooks
    extra_cases: Sequence[Any] = ()
    numerics_cases: Sequence[Any] = ()
    """The numerics suite's cases for this device (``accelcore.conformance.numerics``); ``accel conformance``
    runs them with the rest (``--suite``), provider test suites run them on their own."""


class ProviderFamily(Protocol):
    """A provider package's entry point."""

    name: str

    def discover(self) -> Sequence[DeviceEntry]:
        """Every usable device; raises ProviderUnavailable when the stack is missing or broken."""
        ...

    def open(self, entry: DeviceEntry) -> Any:
        """A fresh provider instance (an ``Accelerator``) for ``entry``."""
        ...

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        """The suite's inputs for ``entry``."""
        ...


def load_families(names: Sequence[str] | None = None) -> dict[str, ProviderFamily | ProviderUnavailable]:
    """Installed families by name; a family that fails to import maps to ProviderUnavailable."""
    found: dict[str, ProviderFamily | ProviderUnavailable] = {}
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if names is not None and ep.name not in names:
            continue
        try:
            family = ep.load()
        except ImportError as exc:
            hint = f"; install the extra: pip install 'accelcore[{ep.name}]'" if ep.name in _EXTRAS else ""
            found[ep.name] = ProviderUnavailable(ep.name, f"cannot import {ep.value} ({exc}){hint}")
            continue
        found[ep.name] = family
    return found
