"""Naming the device an OpenCL device binary was built for.

Promise: an ``OPENCL_BINARY`` package records only hash words (docs/artifact-format.md
"TargetIdentity"), so :func:`foreign_binary_problem` matches them against the identity each OpenCL
device of the inventory publishes (``DeviceEntry.native["target_identity"]``, computed by the
provider from the same answers it checks a binary against) and names that device, or says
"another device (not on this machine)". It speaks only when the chosen device publishes an identity
and the recorded words (not all zero) differ from it; then the provider would refuse the load
with INCOMPATIBLE, and the message says which device the binary is for and which was asked (and, for
the same device name under another driver, which recorded answers differ), never the raw words.
"""

from __future__ import annotations

from collections.abc import Sequence

from accelcore.contract.errors import BackendError
from accelcore.contract.program import TargetIdentity
from accelcore.devices.registry import DeviceEntry
from accelcore.kernels.package import ModuleKind, target_differences, target_from_text

from .artifacts import Artifact

__all__ = ["describe_device", "foreign_binary_problem"]

TARGET_KEY = "target_identity"


def describe_device(entry: DeviceEntry) -> str:
    """``opencl:1 (llvmpipe (LLVM 15.0.6, 256 bits), rusticl, driver 22.3.6)``."""
    native = entry.native
    details = [entry.name]
    if native.get("platform"):
        details.append(native["platform"])
    if native.get("driver_version"):
        details.append(f"driver {native['driver_version']}")
    return f"{entry.device_id} ({', '.join(details)})"


def _identity(entry: DeviceEntry) -> TargetIdentity | None:
    text = entry.native.get(TARGET_KEY)
    if not text:
        return None
    try:
        return target_from_text(text)
    except BackendError:
        return None


def foreign_binary_problem(artifact: Artifact, entry: DeviceEntry, devices: Sequence[DeviceEntry]) -> str | None:
    """None, or why ``entry`` will refuse ``artifact``: an OPENCL_BINARY built for another device (named)."""
    package = artifact.package
    if package is None or package.module_kind is not ModuleKind.OPENCL_BINARY or not any(package.target.words):
        return None
    asked = _identity(entry)
    if asked is None or asked == package.target:
        return None
    match = next((other for other in devices if other is not entry and _identity(other) == package.target), None)
    rebuild = f"rebuild it for {entry.device_id} (accel compile {entry.device_id} SOURCE.cl -o OUT.kpkg)"
    if match is not None:
        built_for, advice = describe_device(match), f"run it on {match.device_id}, or {rebuild}"
    else:
        built_for, advice = "another device (not on this machine)", f"{rebuild}, or run the portable source package"
    fields = target_differences(package.target, asked)
    if not {"schema", "platform name", "device name"} & set(fields):  # the same device under another driver
        built_for += f" with the same device name but another {', '.join(fields)}"
    return (
        f"this OPENCL_BINARY package was built for {built_for}, not for {describe_device(entry)}, "
        f"the device asked; {advice}"
    )
