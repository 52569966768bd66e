"""Enumerate OpenCL platforms and devices, and describe each from its own answers.

Discovery imports pyopencl lazily and raises
:class:`~accelcore.devices.registry.ProviderUnavailable` (with the fix) when the
binding or the ICD loader is missing. Platforms without devices (Mesa's
Clover here) are skipped. Device indices count devices across platforms in
ICD order, so they are stable for one machine and driver set, and shift when an
ICD is added, removed or broken; a device's UUID does not (the driver's
``CL_DEVICE_UUID_KHR``, else :func:`derived_uuid` from its own answers), and a
provider instance finds its device by that UUID. Nothing here
changes the environment: rusticl shows its llvmpipe device only when
``RUSTICL_ENABLE=swrast`` was set before the first enumeration.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from accelcore import TargetIdentity
from accelcore.devices.native_facts import NativeFacts
from accelcore.devices.registry import DeviceEntry, ProviderUnavailable
from accelcore.kernels.package import opencl_target_identity, target_text

__all__ = ["DeviceFingerprint", "NativeDevice", "entry_tag", "find_device", "list_devices", "load_pyopencl"]

PROVIDER = "opencl"


def load_pyopencl() -> Any:
    """The pyopencl module, or ProviderUnavailable naming what to install."""
    try:
        import pyopencl
    except ImportError as exc:
        raise ProviderUnavailable(
            PROVIDER, f"pyopencl is not importable ({exc}); install the extra: pip install 'accelcore[opencl]'"
        ) from None
    except OSError as exc:  # the binding loads but libOpenCL.so (the ICD loader) does not
        raise ProviderUnavailable(
            PROVIDER, f"the OpenCL ICD loader cannot be loaded ({exc}); install ocl-icd-libopencl1 and a driver ICD"
        ) from None
    return pyopencl


@dataclass(frozen=True, slots=True)
class DeviceFingerprint:
    """The device answers that identify it and decide whether a binary is loadable."""

    platform_name: str
    platform_version: str
    device_name: str
    device_version: str
    driver_version: str
    vendor_id: int
    address_bits: int

    def target(self) -> TargetIdentity:
        """The TargetIdentity of binaries built for this device (accelcore's OpenCL schema)."""
        return opencl_target_identity(
            self.platform_name,
            self.device_name,
            self.driver_version,
            platform_version=self.platform_version,
            device_version=self.device_version,
            vendor_id=self.vendor_id,
            address_bits=self.address_bits,
        )


@dataclass(frozen=True, slots=True)
class NativeDevice:
    """One device with the answers the provider needs (all read once, at discovery)."""

    index: int
    platform: Any
    device: Any
    fingerprint: DeviceFingerprint
    uuid: bytes
    uuid_source: str

    @property
    def name(self) -> str:
        return self.fingerprint.device_name

    @property
    def key(self) -> tuple[str, ...]:
        """Identifies the device across instances of one process (for per-process caches)."""
        f = self.fingerprint
        return (str(self.index), f.platform_name, f.device_name, f.driver_version)


DERIVED_UUID_SOURCE = "sha256(platform name, vendor, version; device name, vendor id, driver version)"
"""How a UUID is derived for a device that reports no ``CL_DEVICE_UUID_KHR`` (``uuid_source``)."""


def _reported_uuid(cl: Any, device: Any) -> bytes | None:
    """CL_DEVICE_UUID_KHR when the device offers cl_khr_device_uuid (16 bytes), else None. Asked of the ICD
    loader directly (:mod:`.icd`): pyopencl has no name for the query and refuses it without asking the driver,
    which made a device that reports its UUID (Intel's CPU runtime) fall back to a derived one."""
    if "cl_khr_device_uuid" not in str(device.extensions).split():
        return None
    from .icd import device_bytes

    value = device_bytes(device, 0x106A, "CL_DEVICE_UUID_KHR").value  # CL_DEVICE_UUID_KHR
    return bytes(value) if value is not None and len(value) == 16 else None


def derived_uuid(
    platform_name: str, platform_vendor: str, platform_version: str, fingerprint: DeviceFingerprint, repeat: int = 0
) -> bytes:
    """The UUID of a device without ``CL_DEVICE_UUID_KHR``: the first 16 bytes of the SHA-256 of what the
    driver reports about it (:data:`DERIVED_UUID_SOURCE`), joined by NUL, never its enumeration index, so
    a device keeps its UUID when another ICD is added, removed or broken. ``repeat`` n > 0 (the n-th further
    device answering exactly the same, e.g. two identical GPUs without the extension) appends ``#n``."""
    parts = [
        platform_name,
        platform_vendor,
        platform_version,
        fingerprint.device_name,
        str(fingerprint.vendor_id),
        fingerprint.driver_version,
    ]
    if repeat:
        parts.append(f"#{repeat}")
    return hashlib.sha256("\0".join(parts).encode("utf-8")).digest()[:16]


def list_devices() -> list[NativeDevice]:
    """Every device of every non-empty platform, in ICD order; each device's UUID is the one it reports
    (``CL_DEVICE_UUID_KHR``) or :func:`derived_uuid` from its answers, whatever its index."""
    cl = load_pyopencl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        if getattr(exc, "code", None) == -1001:  # CL_PLATFORM_NOT_FOUND_KHR: loader present, no ICD
            return []
        raise ProviderUnavailable(PROVIDER, f"clGetPlatformIDs failed: {exc}") from None
    found: list[NativeDevice] = []
    seen: dict[bytes, int] = {}
    for platform in platforms:
        try:
            devices = platform.get_devices()
        except cl.Error:  # CL_DEVICE_NOT_FOUND on an empty platform (Clover)
            continue
        for device in devices:
            index = len(found)
            fingerprint = DeviceFingerprint(
                platform_name=str(platform.name),
                platform_version=str(platform.version),
                device_name=str(device.name),
                device_version=str(device.version),
                driver_version=str(device.driver_version),
                vendor_id=int(device.vendor_id),
                address_bits=int(device.address_bits),
            )
            reported = _reported_uuid(cl, device)
            if reported is not None:
                uuid, source = reported, "CL_DEVICE_UUID_KHR"
            else:
                vendor = str(platform.vendor)
                first = derived_uuid(fingerprint.platform_name, vendor, fingerprint.platform_version, fingerprint)
                repeat = seen.get(first, 0)
                seen[first] = repeat + 1
                uuid = derived_uuid(
                    fingerprint.platform_name, vendor, fingerprint.platform_version, fingerprint, repeat
                )
                source = DERIVED_UUID_SOURCE
            found.append(NativeDevice(index, platform, device, fingerprint, uuid, source))
    return found


def entry_tag(native: NativeDevice) -> str:
    """A short platform tag for test ids: ``pocl``, ``rusticl`` or a slug of the platform name."""
    name = native.fingerprint.platform_name.lower()
    if "portable computing language" in name or "pocl" in name:
        return "pocl"
    for known in ("rusticl", "nvidia", "amd", "intel", "clover"):
        if known in name:
            return known
    return "".join(ch for ch in name if ch.isalnum())[:16] or "cl"


_DEVICE_TYPES = ((1 << 1, "CPU"), (1 << 2, "GPU"), (1 << 3, "accelerator"), (1 << 4, "custom"))
"""CL_DEVICE_TYPE_* bits and their names."""


def _answer(device: Any, name: str) -> Any:
    """``device.<name>``, or None when the driver (or binding) does not answer it."""
    try:
        return getattr(device, name)
    except Exception:  # pyopencl raises cl.LogicError / cl.RuntimeError for an unsupported query
        return None


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def native_facts(native: NativeDevice) -> NativeFacts:
    """What the device's own answers say (clGetDeviceInfo, read once at discovery)."""
    device = native.device
    f = native.fingerprint
    extensions = tuple(sorted(str(_answer(device, "extensions") or "").split()))
    kind = _int(_answer(device, "type")) or 0
    device_type = " ".join(word for bit, word in _DEVICE_TYPES if kind & bit) or f"type {kind:#x}"
    versions: dict[str, str] = {}
    c_version = str(_answer(device, "opencl_c_version") or "").strip()
    if c_version:
        versions["OpenCL C"] = c_version.removeprefix("OpenCL C ").strip()
    il_version = str(_answer(device, "il_version") or "").strip()
    if il_version:
        versions["IL"] = il_version
    profile = str(_answer(device, "profile") or "")
    fp64 = bool(_int(_answer(device, "double_fp_config"))) or "cl_khr_fp64" in extensions
    return NativeFacts(
        device_type=device_type,
        api=" ".join(f.device_version.split()[:2]),  # "OpenCL <major.minor> <vendor-specific>"
        driver_version=f.driver_version,
        uuid_derived=native.uuid_source != "CL_DEVICE_UUID_KHR",
        uuid_source=native.uuid_source,
        compute_units=_int(_answer(device, "max_compute_units")),
        global_memory_bytes=_int(_answer(device, "global_mem_size")),
        local_memory_bytes=_int(_answer(device, "local_mem_size")),
        max_work_group_size=_int(_answer(device, "max_work_group_size")),
        max_push_constant_bytes=None,
        fp16="cl_khr_fp16" in extensions,
        fp64=fp64,
        int64=profile != "EMBEDDED_PROFILE" or "cles_khr_int64" in extensions,
        versions=versions,
        extensions=extensions,
    )


def to_entry(native: NativeDevice) -> DeviceEntry:
    f = native.fingerprint
    return DeviceEntry(
        provider=PROVIDER,
        index=native.index,
        name=f.device_name,
        uuid=native.uuid,
        native={
            "platform": f.platform_name,
            "platform_vendor": str(_answer(native.platform, "vendor") or ""),
            "platform_version": f.platform_version,
            "device_version": f.device_version,
            "driver_version": f.driver_version,
            "vendor_id": f"{f.vendor_id:#x}",
            "tag": entry_tag(native),
            "uuid_source": native.uuid_source,
            # The words an OPENCL_BINARY built here records (the same DeviceFingerprint.target() the
            # provider checks a binary against), so a tool can name the device a foreign binary is for.
            "target_identity": target_text(f.target()),
        },
        facts=native_facts(native),
    )


def find_device(entry: DeviceEntry) -> NativeDevice:
    """The device ``entry`` names, found by its UUID (so a device whose index shifted since discovery is
    still found; of several with that UUID, the one at its index, else the first); ProviderUnavailable if
    no device has it any more."""
    devices = list_devices()
    same = [native for native in devices if native.uuid == entry.uuid]
    for native in same:
        if native.index == entry.index:
            return native
    if same:
        return same[0]
    now = next((native.name for native in devices if native.index == entry.index), None)
    if now is not None:
        raise ProviderUnavailable(PROVIDER, f"device {entry.device_id} changed since discovery ({now!r} now)")
    raise ProviderUnavailable(PROVIDER, f"device {entry.device_id} ({entry.name!r}) is no longer present")
