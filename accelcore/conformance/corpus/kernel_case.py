"""What one run of a corpus kernel must produce, and how a device result is checked against it.

:class:`KernelCase` holds a run's inputs and numpy expectation; :func:`compare` checks one slot of a
device result against it with the case's ulp tolerance (float32 slots; everything else bit-exact).
Output words start as :data:`SENTINEL`, so untouched outputs are visible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...support.text import plain

SENTINEL = 0xA5A5A5A5
"""Initial content of every output word, so untouched outputs are visible."""

U32 = npt.NDArray[np.uint32]
F32 = npt.NDArray[np.float32]
Array = npt.NDArray[np.generic]


@dataclass(frozen=True, slots=True)
class KernelCase:
    """Inputs and expectations for one run of a corpus kernel.

    ``initial[slot]`` is the content of every bound buffer before the run
    (outputs hold :data:`SENTINEL`); ``expected[slot]`` what checked slots must
    hold after it; ``ulp_tolerance`` applies to float32 slots (0 = bit-exact).
    """

    kernel: str
    elements: int
    initial: Mapping[int, Array]
    expected: Mapping[int, Array]
    ulp_tolerance: int

    def initial_bytes(self, slot: int) -> bytes:
        return self.initial[slot].tobytes()

    def expected_bytes(self, slot: int) -> bytes:
        return self.expected[slot].tobytes()


def _u32(values: npt.ArrayLike) -> U32:
    return np.asarray(values, dtype=np.uint32)


def _sentinel(count: int) -> U32:
    return np.full(count, SENTINEL, dtype=np.uint32)


def _ordered(values: F32) -> npt.NDArray[np.int64]:
    """Map f32 bit patterns to integers whose difference counts ulps."""
    bits = values.view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def compare(case: KernelCase, slot: int, got: bytes) -> str | None:
    """None when ``got`` matches ``case.expected[slot]`` within tolerance, else a description."""
    expected = case.expected[slot]
    if len(got) != expected.nbytes:
        return f"slot {slot}: {len(got)} bytes, expected {expected.nbytes}"
    actual = np.frombuffer(got, dtype=expected.dtype)
    if expected.dtype == np.float32:  # ulp distance: +0.0 and -0.0 are 0 apart
        distance = np.abs(_ordered(actual.astype(np.float32)) - _ordered(expected.astype(np.float32)))
        bad = np.flatnonzero(distance > case.ulp_tolerance)
    else:
        bad = np.flatnonzero(actual.view(np.uint32) != expected.view(np.uint32))
    if bad.size == 0:
        return None
    first = int(bad[0])
    return (
        f"slot {slot}: {bad.size} of {actual.size} elements differ (tolerance {case.ulp_tolerance} ulp);"
        f" first at {first}: got {plain(actual[first])}, expected {plain(expected[first])}"
    )
