"""The reference provider's conformance inputs: its standard target and its hooks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..conformance.target import BindingFixture, ConformanceTarget
from ..contract.flags import AccessMode, MemoryDomain
from .faults import FaultAccelerator
from .programs import REFERENCE_FORMAT, REFERENCE_TARGET, encode_program
from .reference import ReferenceAccelerator

__all__ = ["ReferenceHooks", "reference_target"]

_ELEMENTS = 32


def _u32(values: Any) -> bytes:
    return np.asarray(values, dtype=np.uint32).tobytes()


def reference_target() -> ConformanceTarget:
    """``add_and_count_u32``: slot 2 = slot 0 + slot 1 (u32), slot 3 += 1; inputs must stay unchanged."""
    index = np.arange(_ELEMENTS, dtype=np.uint64)
    a = (index * 3 + 1) & 0xFFFFFFFF
    b = (index * 0x01000193 + 0xFFFFFF00) & 0xFFFFFFFF  # wraps around in the sum
    total = (a + b) & 0xFFFFFFFF
    state = np.full(_ELEMENTS, 41, dtype=np.uint32)
    return ConformanceTarget(
        name="reference/add_and_count_u32",
        format=REFERENCE_FORMAT,
        target=REFERENCE_TARGET,
        artifact=encode_program("add_and_count_u32", padding=64),
        resident_bytes=4096,
        fixtures=(
            BindingFixture(0, AccessMode.READ, MemoryDomain.HOST, 64, _u32(a), _u32(a)),
            BindingFixture(1, AccessMode.READ, MemoryDomain.DEVICE, 64, _u32(b), _u32(b)),
            BindingFixture(2, AccessMode.WRITE, MemoryDomain.DEVICE, 256, bytes([0xEE]) * 4 * _ELEMENTS, _u32(total)),
            BindingFixture(3, AccessMode.READ_WRITE, MemoryDomain.HOST, 16, _u32(state), _u32(state + 1)),
        ),
    )


def _reference_of(provider: Any) -> ReferenceAccelerator:
    inner = provider
    while isinstance(inner, FaultAccelerator):
        inner = inner.inner
    if not isinstance(inner, ReferenceAccelerator):
        raise TypeError(f"ReferenceHooks drive ReferenceAccelerator instances, not {type(inner).__name__}")
    return inner


class ReferenceHooks:
    """Conformance hooks for :class:`ReferenceAccelerator` (also through a :class:`FaultAccelerator`).

    ``live_resources`` of a fault wrapper are the wrapper's own counts
    (including handles whose release was indeterminate).
    """

    def hold_submissions(self, provider: Any) -> None:
        _reference_of(provider).control.hold()

    def complete_held(self, provider: Any, event: Any) -> None:
        _reference_of(provider).control.release(event)

    def copy_paths(self, provider: Any) -> list[dict[str, int]]:
        """Per accepted submission: direct / shared / staged bindings and transfer bytes."""
        return list(_reference_of(provider).copy_paths)

    def live_resources(self, provider: Any) -> Mapping[str, int] | None:
        if isinstance(provider, FaultAccelerator):
            return provider.live_resources()
        return _reference_of(provider).live_resources()
