"""The ``opencl`` provider family: discovery, fresh instances, conformance inputs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from accelcore.conformance.target import SelfCountingHooks
from accelcore.devices.native_facts import DeviceDetails
from accelcore.devices.opencl_vendors import system_vendors
from accelcore.devices.registry import ConformanceSetup, DeviceEntry, ProviderUnavailable

from .discovery import PROVIDER, find_device, list_devices, load_pyopencl, to_entry

if TYPE_CHECKING:
    from .accelerator import OpenCLAccelerator

__all__ = ["OpenCLFamily", "OpenCLHooks", "provider_family"]


class OpenCLHooks(SelfCountingHooks):
    """The conformance hooks (``accelcore.conformance.target.ConformanceHooks``).

    Holding closes the gates of every later submission on the instance;
    completing opens one gate (the kernel then runs; the suite polls). The copy paths say how each
    accepted submission's buffers reached ``clSetKernelArg``.
    """

    def hold_submissions(self, provider: Any) -> None:
        provider.hold_submissions()

    def complete_held(self, provider: Any, event: Any) -> None:
        provider.release_held(event)


class OpenCLFamily:
    """Every OpenCL device of every non-empty platform."""

    name = PROVIDER

    def discover(self) -> Sequence[DeviceEntry]:
        """Every device; ProviderUnavailable saying why when there is none (no ICD, or platforms without devices)."""
        found = [to_entry(native) for native in list_devices()]
        if not found:
            raise ProviderUnavailable(PROVIDER, no_device_reason())
        return found

    def open(self, entry: DeviceEntry) -> OpenCLAccelerator:
        from .accelerator import OpenCLAccelerator  # not at import: listing devices does not need it

        return OpenCLAccelerator(find_device(entry))

    def device_details(self, entry: DeviceEntry) -> DeviceDetails:
        """Every CL_DEVICE_* a tuning user reads, in clinfo's sections (``accel info``; read now, not at
        discovery, and without a context)."""
        from .details import device_details

        return device_details(find_device(entry))

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        from accelcore.conformance.corpus import standard_target
        from accelcore.conformance.numerics import numerics_cases
        from accelcore.kernels.package import ModuleKind

        from .accelerator import OpenCLAccelerator
        from .conformance_cases import numerics_claims, opencl_cases

        native = find_device(entry)
        target = standard_target(ModuleKind.OPENCL_SOURCE)
        return ConformanceSetup(
            factory=lambda: OpenCLAccelerator(native),
            target=target,
            hooks=OpenCLHooks(),
            extra_cases=opencl_cases(),
            numerics_cases=numerics_cases("opencl", numerics_claims(native)),
        )


def no_device_reason() -> str:
    """Why the ICD loader offers no device: no platform (no driver registered), or platforms without devices."""
    cl = load_pyopencl()
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # CL_PLATFORM_NOT_FOUND_KHR: the loader found no ICD
        platforms = []
    if not platforms:
        where = os.environ.get("OCL_ICD_VENDORS") or str(system_vendors())  # the one folder the loader read
        return (
            f"no OpenCL platform found: the ICD loader found no driver (.icd file) in {where}; install one "
            "(Debian: pocl-opencl-icd, mesa-opencl-icd; make setup does)"
        )
    names = ", ".join(str(p.name) for p in platforms)
    note = ""
    if "rusticl" in names.lower() and not os.environ.get("RUSTICL_ENABLE"):
        note = "; rusticl lists devices only for the drivers RUSTICL_ENABLE names (RUSTICL_ENABLE=swrast)"
    return f"{len(platforms)} OpenCL platform(s) ({names}) but no device on any{note}"


provider_family = OpenCLFamily()
