"""What a device's own driver says about it, as data: the facts a person choosing a device compares.

A provider family reads these once, at discovery, and hands them out on
:attr:`accelcore.devices.registry.DeviceEntry.facts`; nothing here imports a driver.
A fact the driver does not report (or the API has no word for: compute units
in Vulkan, push constants in OpenCL) is ``None``, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NativeFacts"]


@dataclass(frozen=True, slots=True)
class NativeFacts:
    """One device's native type, API and driver versions, limits, number formats and extensions.

    ``device_type``: the driver's word for it (``CPU``, ``GPU``, ``integrated GPU``, ``accelerator``, ...).
    ``api``: the API and the version the device supports (``OpenCL 3.0``, ``Vulkan 1.3.230``).
    ``uuid_derived``: the driver reports no UUID, so the provider derived one (``uuid_source`` says how).
    ``versions``: languages and intermediate languages by name (``OpenCL C``, ``IL``, ``SPIR-V``, ``Vulkan``).
    """

    device_type: str
    api: str
    driver_version: str
    uuid_derived: bool = False
    uuid_source: str = ""
    compute_units: int | None = None
    global_memory_bytes: int | None = None
    local_memory_bytes: int | None = None
    max_work_group_size: int | None = None
    max_push_constant_bytes: int | None = None
    fp16: bool | None = None
    fp64: bool | None = None
    int64: bool | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    extensions: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (the ``native_facts`` object of ``accel devices/info --json``)."""
        return {
            "device_type": self.device_type,
            "api": self.api,
            "driver_version": self.driver_version,
            "uuid_derived": self.uuid_derived,
            "uuid_source": self.uuid_source,
            "compute_units": self.compute_units,
            "global_memory_bytes": self.global_memory_bytes,
            "local_memory_bytes": self.local_memory_bytes,
            "max_work_group_size": self.max_work_group_size,
            "max_push_constant_bytes": self.max_push_constant_bytes,
            "fp16": self.fp16,
            "fp64": self.fp64,
            "int64": self.int64,
            "versions": dict(self.versions),
            "extensions": list(self.extensions),
        }
