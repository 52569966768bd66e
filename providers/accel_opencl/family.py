"""The ``opencl`` provider family: discovery, fresh instances, conformance inputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accelcore.registry import ConformanceSetup, DeviceEntry

from .accelerator import OpenCLAccelerator
from .discovery import PROVIDER, find_device, list_devices, to_entry

__all__ = ["OpenCLFamily", "OpenCLHooks", "provider_family"]


class OpenCLHooks:
    """The conformance hooks (``accelcore.conformance.target.ConformanceHooks``).

    Holding closes the gates of every later submission on the instance;
    completing opens one gate (the kernel then runs; the suite polls).
    """

    def hold_submissions(self, provider: Any) -> None:
        provider.hold_submissions()

    def complete_held(self, provider: Any, event: Any) -> None:
        provider.release_held(event)

    def live_resources(self, provider: Any) -> Mapping[str, int] | None:
        counts: Mapping[str, int] = provider.live_resources()
        return counts

    def copy_paths(self, provider: Any) -> list[dict[str, int]]:
        """How each accepted submission's buffers reached ``clSetKernelArg`` (recording starts at the first call)."""
        records: list[dict[str, int]] = provider.copy_paths()
        return records


class OpenCLFamily:
    """Every OpenCL device of every non-empty platform."""

    name = PROVIDER

    def discover(self) -> Sequence[DeviceEntry]:
        return [to_entry(native) for native in list_devices()]

    def open(self, entry: DeviceEntry) -> OpenCLAccelerator:
        return OpenCLAccelerator(find_device(entry))

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        from accelcore.conformance.numerics import numerics_cases
        from accelcore.corpus import standard_target
        from accelcore.package import ModuleKind

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


provider_family = OpenCLFamily()
