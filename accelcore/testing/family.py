"""The ``reference`` provider family (entry point ``accelcore.testing:provider_family``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..devices.native_facts import NativeFacts
from ..devices.registry import ConformanceSetup, DeviceEntry
from .hooks import ReferenceHooks, reference_target
from .reference import REFERENCE_UUID, ReferenceAccelerator

__all__ = ["ReferenceFamily", "provider_family"]


class ReferenceFamily:
    """One device, ``reference:0``: the pure-Python reference provider (no driver)."""

    name = "reference"

    def discover(self) -> Sequence[DeviceEntry]:
        return [
            DeviceEntry(
                provider=self.name,
                index=0,
                name="accelcore reference provider (pure Python, no driver)",
                uuid=REFERENCE_UUID,
                native={"implementation": "numpy"},
                facts=NativeFacts(
                    device_type="host",
                    api="accelcore reference",
                    driver_version="numpy",
                    uuid_source="fixed (REFERENCE_UUID)",
                    fp16=True,
                    fp64=True,
                    int64=True,
                ),
            )
        ]

    def _check(self, entry: DeviceEntry) -> None:
        if entry.provider != self.name or entry.index != 0:
            raise LookupError(f"{entry.device_id} is not a reference device (only reference:0 exists)")

    def open(self, entry: DeviceEntry) -> Any:
        self._check(entry)
        return ReferenceAccelerator()

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        self._check(entry)
        return ConformanceSetup(factory=ReferenceAccelerator, target=reference_target(), hooks=ReferenceHooks())


provider_family = ReferenceFamily()
