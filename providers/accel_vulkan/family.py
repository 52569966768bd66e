"""The ``vulkan`` provider family: discovery, fresh provider instances and conformance inputs.

Promise: :meth:`VulkanFamily.discover` lists every physical device at or
above the baseline (Vulkan 1.2 with timeline semaphores and a compute
queue), indexed by enumeration order; a device below it is not offered and
the reason is kept in :attr:`VulkanFamily.not_offered` (and logged). No
usable device, a missing binding or loader → ProviderUnavailable with the
reason. Discovery uses the process's shared instance (without validation),
so discovering any number of times creates at most that one instance.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from accelcore import BackendError
from accelcore.conformance.target import SelfCountingHooks
from accelcore.devices.native_facts import DeviceDetails
from accelcore.devices.registry import ConformanceSetup, DeviceEntry, ProviderUnavailable

from ._binding import PROVIDER, version_text

log = logging.getLogger("accel_vulkan")

_DEVICE_TYPES = {0: "other", 1: "integrated-gpu", 2: "discrete-gpu", 3: "virtual-gpu", 4: "cpu"}

DRIVER_ALIASES: Mapping[str, str] = {
    "MESA_LLVMPIPE": "lavapipe",
    "MESA_RADV": "radv",
    "INTEL_OPEN_SOURCE_MESA": "anv",
    "MESA_TURNIP": "turnip",
    "MESA_VENUS": "venus",
    "MESA_DOZEN": "dozen",
    "MESA_NVK": "nvk",
    "MESA_V3DV": "v3dv",
    "MESA_PANVK": "panvk",
    "NVIDIA_PROPRIETARY": "nvidia",
    "AMD_OPEN_SOURCE": "amdvlk",
    "AMD_PROPRIETARY": "amdvlk",
    "GOOGLE_SWIFTSHADER": "swiftshader",
    "MOLTENVK": "moltenvk",
}
"""The name users know a driver by, per ``VK_DRIVER_ID_<KEY>`` (``driverID``): the device's ``aliases``, which
the selector matches like its name (``'vulkan:*lavapipe*'`` is Mesa's lavapipe, whose device is named
``llvmpipe (...)``; docs/cli.md "Devices and the selector grammar")."""


def driver_aliases(driver_id: int) -> str:
    """The comma-separated aliases of a ``driverID`` (empty when it has none)."""
    from ._binding import vk

    binding = vk()
    return ",".join(
        alias for key, alias in DRIVER_ALIASES.items() if getattr(binding, f"VK_DRIVER_ID_{key}", None) == driver_id
    )


class VulkanHooks(SelfCountingHooks):
    """Conformance hooks: hold = close every gate; complete_held = hand one held batch to the device. The copy
    paths say what each accepted submission's descriptor writes name."""

    def hold_submissions(self, provider: Any) -> None:
        provider.hold()

    def complete_held(self, provider: Any, event: Any) -> None:
        provider.release(event)


class InstanceFactory:
    """Builds a fresh :class:`VulkanAccelerator` per call and remembers each one's validation messages."""

    def __init__(self, entry: DeviceEntry, *, validation: bool | None = None, **options: Any) -> None:
        self.entry = entry
        self.validation = validation
        self.options = options
        self.instances = 0
        self._logs: list[Any] = []

    def __call__(self) -> Any:
        from .accelerator import VulkanAccelerator

        made = VulkanAccelerator(self.entry.uuid, validation=self.validation, **self.options)
        self.instances += 1
        self._logs.append(made)
        return made

    @property
    def validation_enabled(self) -> bool:
        return any(a.validation_enabled for a in self._logs)

    @property
    def messages(self) -> list[Any]:
        """Every validation message of every instance built so far (each once, even where windows overlap)."""
        seen: dict[int, Any] = {}
        for made in self._logs:
            for message in made.validation_messages:
                seen.setdefault(id(message), message)
        return list(seen.values())


class VulkanFamily:
    """Entry point object registered as ``vulkan``."""

    name = PROVIDER

    def __init__(self) -> None:
        self.not_offered: list[str] = []

    def discover(self) -> Sequence[DeviceEntry]:
        from .device_info import native_facts
        from .instance import describe, shared_instance

        try:
            instance = shared_instance(False)
        except BackendError as error:
            raise ProviderUnavailable(PROVIDER, f"cannot create a Vulkan instance: {error}") from error
        try:
            physicals = list(instance.physical_devices())
            descriptions = [describe(i, p) for i, p in enumerate(physicals)]
        except BackendError as error:
            raise ProviderUnavailable(PROVIDER, f"cannot enumerate Vulkan devices: {error}") from error
        entries = []
        self.not_offered = []
        for d in descriptions:
            if d.not_offered is not None:
                reason = f"vulkan:{d.index} {d.name}: not offered: {d.not_offered}"
                self.not_offered.append(reason)
                log.info(reason)
                continue
            native = {
                "api_version": version_text(d.api_version),
                "driver": d.driver,
                "device_type": _DEVICE_TYPES.get(d.device_type, str(d.device_type)),
                "vendor_id": f"{d.vendor_id:#x}",
                "device_id": f"{d.device_id:#x}",
                "compute_queues": str(d.compute_queue_count),
            }
            aliases = driver_aliases(d.driver_id)
            if aliases:
                native["aliases"] = aliases
            facts = native_facts(d, physicals[d.index])
            entries.append(DeviceEntry(PROVIDER, d.index, d.name, d.uuid, native, facts))
        if not entries:
            why = "; ".join(self.not_offered) or "the Vulkan loader reports no physical devices (no ICD installed?)"
            raise ProviderUnavailable(PROVIDER, f"no usable Vulkan device: {why}")
        return entries

    def open(self, entry: DeviceEntry, *, validation: bool | None = None, **options: Any) -> Any:
        """A fresh provider instance for ``entry`` (found again by its deviceUUID)."""
        from .accelerator import VulkanAccelerator

        return VulkanAccelerator(entry.uuid, validation=validation, **options)

    def device_details(self, entry: DeviceEntry) -> DeviceDetails:
        """The limits, features, subgroup properties, memory heaps and types and extensions of ``entry``'s
        physical device, at vulkaninfo depth (``accel info``; read now, not at discovery; no VkDevice)."""
        from .details import device_details

        return device_details(entry.uuid)

    def conformance(self, entry: DeviceEntry, *, validation: bool | None = None) -> ConformanceSetup:
        """Standard target (the corpus ``conformance`` kernel as Vulkan SPIR-V), hooks and Vulkan cases."""
        from accelcore.conformance.corpus import standard_target
        from accelcore.conformance.numerics import numerics_cases
        from accelcore.kernels.package import ModuleKind

        from .cases import extra_cases

        factory = InstanceFactory(entry, validation=validation)
        return ConformanceSetup(
            factory=factory,
            target=standard_target(ModuleKind.SPIRV_VULKAN),
            hooks=VulkanHooks(),
            extra_cases=extra_cases(factory),
            numerics_cases=numerics_cases("vulkan", _numerics_claims(entry)),
        )


def _numerics_claims(entry: DeviceEntry) -> dict[str, object]:
    """What the device advertises for the numerics suite (shaderFloat16 / shaderFloat64 via its native facts).
    Without DenormPreserve in the module, Vulkan lets every float32 subnormal flush whatever the device says."""
    facts = entry.facts
    return {"fp16": bool(facts and facts.fp16), "fp64": bool(facts and facts.fp64), **_feature_claims(entry)}


_FLOAT_CONTROLS_INDEPENDENCE = {0: "32_BIT_ONLY", 1: "ALL", 2: "NONE"}
_SUBGROUP_OPERATIONS = ("basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "clustered", "quad")


def _feature_claims(entry: DeviceEntry) -> dict[str, object]:
    """The device's VkPhysicalDeviceSubgroupProperties and VkPhysicalDeviceFloatControlsProperties (core in
    Vulkan 1.1 / 1.2, read with vkGetPhysicalDeviceProperties2 on the physical device of ``entry``'s
    deviceUUID), for numerics.subgroup-* and numerics.denormals.f32; {} when it cannot be read."""
    from ._binding import ffi, vk
    from .errors import native
    from .instance import shared_instance

    try:
        binding = vk()
        for physical in shared_instance(False).physical_devices():
            ids = binding.VkPhysicalDeviceIDProperties()
            subgroup = binding.VkPhysicalDeviceSubgroupProperties(pNext=ids)
            controls = binding.VkPhysicalDeviceFloatControlsProperties(pNext=subgroup)
            native("vkGetPhysicalDeviceProperties2", physical, binding.VkPhysicalDeviceProperties2(pNext=controls))
            if bytes(ffi().buffer(ids.deviceUUID, 16)) != entry.uuid:
                continue
            operations = int(subgroup.supportedOperations)
            return {
                "subgroup_size": int(subgroup.subgroupSize),
                "subgroup_compute": bool(subgroup.supportedStages & binding.VK_SHADER_STAGE_COMPUTE_BIT),
                "subgroup_operations": [n for bit, n in enumerate(_SUBGROUP_OPERATIONS) if operations >> bit & 1],
                "shader_denorm_preserve_f32": bool(controls.shaderDenormPreserveFloat32),
                "shader_denorm_flush_to_zero_f32": bool(controls.shaderDenormFlushToZeroFloat32),
                "denorm_behavior_independence": _FLOAT_CONTROLS_INDEPENDENCE.get(
                    int(controls.denormBehaviorIndependence), str(int(controls.denormBehaviorIndependence))
                ),
            }
    except (BackendError, AttributeError) as error:
        log.info("vulkan:%s: subgroup / float-controls properties not read: %s", entry.index, error)
    return {}


provider_family = VulkanFamily()
