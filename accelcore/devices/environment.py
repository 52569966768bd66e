"""Environment defaults set before any driver enumerates, for Python and the CLI alike (docs/cli.md, "Environment")."""

from __future__ import annotations

import os

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
    """Set every default not already present (idempotent)."""
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
