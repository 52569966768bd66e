"""Test infrastructure that third parties may import: the reference provider and fault injection.

- :class:`ReferenceAccelerator`: the whole contract in pure Python/numpy, with a
  test control that holds submissions pending (``provider.control``).
- :func:`reference_target` / :class:`ReferenceHooks`: its conformance inputs.
- :class:`FaultAccelerator`: scripted faults around any provider, with accounting.
- ``provider_family``: the ``reference`` entry point (device ``reference:0``).

Nothing here is a driver or pretends to be one. Modules: ``reference`` (the provider), ``programs`` (its
artifact format and built-in programs), ``hooks`` (its conformance inputs), ``family`` (its entry point),
``faults`` (fault injection), ``selection`` (which real devices a run covers, ``ACCEL_DEVICES``) and
``pytest_support`` (pytest helpers for the real-device suites).

Layer 8, the top. May import every other layer (docs/architecture.md).
"""

from __future__ import annotations

from .family import ReferenceFamily, provider_family
from .faults import BOUNDARIES, FAULT_DOMAIN, Fault, FaultAccelerator, FaultKind
from .hooks import ReferenceHooks, reference_target
from .programs import BUILTIN_PROGRAMS, REFERENCE_FORMAT, REFERENCE_TARGET, encode_program
from .reference import REFERENCE_CAPABILITIES, REFERENCE_LIMITS, HoldControl, ReferenceAccelerator

__all__ = [
    "BOUNDARIES",
    "BUILTIN_PROGRAMS",
    "FAULT_DOMAIN",
    "REFERENCE_CAPABILITIES",
    "REFERENCE_FORMAT",
    "REFERENCE_LIMITS",
    "REFERENCE_TARGET",
    "Fault",
    "FaultAccelerator",
    "FaultKind",
    "HoldControl",
    "ReferenceAccelerator",
    "ReferenceFamily",
    "ReferenceHooks",
    "encode_program",
    "provider_family",
    "reference_target",
]
