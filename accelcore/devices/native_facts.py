"""What a device's own driver says about it, as data: the facts a person choosing a device compares.

A provider family reads these once, at discovery, and hands them out on
:attr:`accelcore.devices.registry.DeviceEntry.facts`; nothing here imports a driver.
A fact the driver does not report (or the API has no word for: compute units
in Vulkan, push constants in OpenCL) is ``None``, never a guess.
:class:`DeviceDetails` is the deeper read (``accel info``): every limit a tuning
user looks up, in sections, each fact with its native query, read only when asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DeviceDetails", "Fact", "FactSection", "NativeFacts"]


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


@dataclass(frozen=True, slots=True)
class Fact:
    """One answer of the driver to one query, or why there is none.

    ``key``: the stable JSON key within its section, with its unit in the name (``_bytes``, ``_mhz``,
    ``_ns``, ``_bits``, ``_pixels``). ``value``: JSON-ready (bool, int, float, str, or a list or
    str-keyed dict of those); ``None`` means not reported, and ``reason`` then says why (the native
    error, or the extension the device lacks); a fact is never left out because its query failed.
    ``query``: the native name the value comes from (``CL_DEVICE_MAX_CLOCK_FREQUENCY``,
    ``VkPhysicalDeviceLimits.maxComputeSharedMemorySize``). ``unit`` and ``layout`` are for people:
    ``layout`` ``"axes"`` shows a list as ``x x y x z``, ``"lines"`` one item a line, ``""`` inline.
    """

    key: str
    label: str
    value: Any
    query: str = ""
    unit: str = ""
    reason: str = ""
    layout: str = ""

    def __post_init__(self) -> None:
        if self.value is None and not self.reason:
            raise ValueError(f"fact {self.key!r} is not reported but says no reason")


@dataclass(frozen=True, slots=True)
class FactSection:
    """A group of facts, as clinfo groups them (``key`` ``compute``, ``title`` ``Compute``)."""

    key: str
    title: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True, slots=True)
class DeviceDetails:
    """Everything a tuning user reads about one device, at clinfo / vulkaninfo depth, in sections.

    A provider family reads these only when asked (``device_details(entry)``, used by ``accel info``),
    never at discovery. ``source`` names the API calls the facts come from.
    """

    source: str
    sections: tuple[FactSection, ...]

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready ``details`` object of ``accel info --json``: values by section and key; by
        ``section.key``, the reason of each fact not reported, the unit of each fact that has one and the
        native query of each fact."""
        facts = [(f"{s.key}.{f.key}", f) for s in self.sections for f in s.facts]
        return {
            "source": self.source,
            "sections": {s.key: {f.key: f.value for f in s.facts} for s in self.sections},
            "not_reported": {name: f.reason for name, f in facts if f.value is None},
            "units": {name: f.unit for name, f in facts if f.unit},
            "queries": {name: f.query for name, f in facts if f.query},
        }
