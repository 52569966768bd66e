"""Every test process starts with the environment ``accel`` and ``accelcore.devices()`` set up
(:func:`accelcore.devices.environment.apply_defaults`: RUSTICL_ENABLE, XDG_RUNTIME_DIR, and OCL_ICD_VENDORS
naming this checkout's vendors folder, which holds Intel's CPU runtime), before any test module is collected:
the OpenCL ICD loader reads its folder once per process, at the first enumeration, and some modules enumerate
at import (tests/artifacts)."""

from __future__ import annotations

from accelcore.devices.environment import apply_defaults

apply_defaults()
