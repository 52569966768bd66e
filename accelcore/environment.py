"""Environment defaults set before any driver enumerates, for Python and the CLI alike (docs/cli.md, "Environment"),
and the one reader of a numeric limit from the environment (:func:`env_number`)."""

from __future__ import annotations

import os

from .errors import BackendError, ErrorKind

__all__ = ["DEFAULTS", "DEVICE_ENV", "apply_defaults", "env_number"]

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


def env_number(name: str, default: float, low: float, high: float) -> float:
    """The number in environment variable ``name`` (``default`` when unset or blank); INVALID_ARGUMENT naming the
    variable, its text and the valid range when it is not a number from ``low`` to ``high``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT, f"{name}={text!r} is not a number from {low:g} to {high:g} (unset: {default:g})"
        )
    return value
