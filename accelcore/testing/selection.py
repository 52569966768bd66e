"""Which real devices a test run covers: one id scheme and one ``ACCEL_DEVICES`` filter for every suite.

A device's test id is ``PROVIDER:INDEX-TAG`` (``opencl:0-pocl``, ``vulkan:0-llvmpipe``): the
provider's own ``tag`` fact when it has one, else the first word of the device name.
``ACCEL_DEVICES`` is a comma list of globs; a device is kept when any glob matches its test id
or its plain id (``opencl:0``), so ``opencl:0``, ``'*rusticl'`` and ``'vulkan:*'`` work in every
suite alike.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence

from accelcore.devices.registry import DeviceEntry

__all__ = ["DEVICES_ENV", "device_test_id", "is_wanted", "wanted_globs"]

DEVICES_ENV = "ACCEL_DEVICES"


def device_test_id(entry: DeviceEntry) -> str:
    """``PROVIDER:INDEX-TAG`` for test ids and ``ACCEL_DEVICES`` globs."""
    tag = entry.native.get("tag")
    if not tag:
        words = re.findall(r"[a-z0-9]+", entry.name.lower())
        tag = words[0] if words else "device"
    return f"{entry.device_id}-{tag}"


def wanted_globs(environ: dict[str, str] | None = None) -> list[str]:
    """The globs of ``ACCEL_DEVICES`` (empty: every device)."""
    text = (os.environ if environ is None else environ).get(DEVICES_ENV, "")
    return [part.strip() for part in text.split(",") if part.strip()]


def is_wanted(entry: DeviceEntry, globs: Sequence[str]) -> bool:
    """Whether ``entry`` is in the run: no globs, or one matches its test id or plain id."""
    if not globs:
        return True
    names = (device_test_id(entry), entry.device_id)
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs for name in names)
