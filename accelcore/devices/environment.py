"""Environment defaults set before any driver enumerates, for Python and the CLI alike (docs/cli.md, "Environment"):
fixed values (:data:`DEFAULTS`) and the OpenCL ICD loader's folder of this checkout (``OCL_ICD_VENDORS``,
:mod:`accelcore.devices.opencl_vendors`)."""

from __future__ import annotations

import os

from .opencl_vendors import opencl_vendors

__all__ = ["DEFAULTS", "DEVICE_ENV", "apply_defaults"]

DEVICE_ENV = "ACCEL_DEVICE"
"""The default device selector for commands that take one DEVICE."""

DEFAULTS = {
    "RUSTICL_ENABLE": "swrast",
    "XDG_RUNTIME_DIR": "/tmp",
}
"""Mesa rusticl hides its llvmpipe device unless RUSTICL_ENABLE names it; it is read when the
OpenCL ICD loader first enumerates platforms, so it must be set before pyopencl does. Mesa's
Vulkan drivers (and wgpu through them) print "XDG_RUNTIME_DIR is invalid or not set" on every
instance when it is unset (headless machines, CI). A value already in the environment wins."""


def apply_defaults() -> None:
    """Set every default not already present (idempotent), and ``OCL_ICD_VENDORS``, unless set (non-empty), to
    this checkout's vendors folder where it has one: the system's ICDs plus the Intel runtime registered in the
    venv (:func:`~accelcore.devices.opencl_vendors.opencl_vendors`, which also brings the folder's links up to
    date). Worker and child processes inherit the environment."""
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    if not os.environ.get("OCL_ICD_VENDORS"):
        folder = opencl_vendors()
        if folder is not None:
            os.environ["OCL_ICD_VENDORS"] = str(folder)
