"""OpenCL-specific conformance cases (placeholder, filled in below)."""

from __future__ import annotations

from accelcore.conformance.case import ConformanceCase


def opencl_cases() -> tuple[ConformanceCase, ...]:
    return ()
