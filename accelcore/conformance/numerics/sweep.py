"""Deterministic input sweeps for the numerics suite (float32).

Every sweep is a pure function of the function's name: the same inputs on every machine and run.
A unary sweep is the edge values (±0, ±inf, NaNs, the subnormal and normal extremes, overflow and
underflow thresholds, large trigonometric arguments, ...), :data:`BIT_SWEEP` values evenly spaced
over all 2^32 bit patterns (every binade of both signs, subnormals, infinities and NaNs) and
:data:`DOMAIN_SWEEP` values drawn in the function's interesting domain; a binary sweep is every
pair of edge values plus as many random bit-pattern pairs and domain pairs. At least 2^16 values.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .ulp import F32_MAX, FMT_F16, FMT_F64, Format, bits_f32, f32_from_bits

__all__ = ["BIT_SWEEP", "DOMAIN_SWEEP", "EDGE_VALUES", "Domain", "edge_values", "pad_to", "rng_for", "sweep",
           "wide_sweep"]  # fmt: skip

F32 = npt.NDArray[np.float32]
Domain = Callable[[np.random.Generator, int], Sequence[F32]]
"""(rng, count) -> one array of ``count`` values per operand."""

BIT_SWEEP = 1 << 15
DOMAIN_SWEEP = 1 << 15
LAUNCH_MULTIPLE = 256

_PI = math.pi
_EDGE_MAGNITUDES = (
    0.0, math.inf, 2.0**-149, 3 * 2.0**-149, 2.0**-127, 2.0**-126 - 2.0**-149, 2.0**-126, 2.0**-126 + 2.0**-149,
    2.0**-100, 1e-30, 1e-20, 2.0**-64, 1e-10, 2.0**-24, 2.0**-12, 1e-3, 0.1, 0.25, 0.49999997, 0.5, 0.75,
    1.0 - 2.0**-24, 1.0, 1.0 + 2.0**-23, 1.5, 2.0, 2.5, 3.0, _PI / 4, _PI / 2, _PI, 3 * _PI / 2, 2 * _PI, 10.0,
    16.0, 64.0, 87.33654, 88.0, 88.72283, 88.72284, 89.0, 100.0, 103.97208, 104.0, 126.0, 127.0, 127.99999,
    128.0, 149.0, 150.0, 1000.0, 1e4, 65504.0, 1e5, 1e6, 8388607.5, 8388608.0, 16777215.0, 16777216.0, 1e8,
    1e10, 1e15, 1e20, 2.0**64, 1e30, 1e38, 2.0**127, F32_MAX,
)  # fmt: skip


def _edge_values() -> F32:
    positive = np.array(_EDGE_MAGNITUDES, dtype=np.float64).astype(np.float32)
    values = np.concatenate([positive, -positive, f32_from_bits([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF])])
    _, first = np.unique(bits_f32(values), return_index=True)
    return values[np.sort(first)]


EDGE_VALUES: F32 = _edge_values()
"""The edge values every sweep starts with (both signs, quiet and signalling NaN patterns)."""


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded from ``name`` alone."""
    return np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))


def bit_patterns(rng: np.random.Generator, count: int) -> F32:
    """``count`` values evenly spaced over all 2^32 bit patterns, from a random offset."""
    step = (1 << 32) // count
    start = int(rng.integers(0, step))
    return f32_from_bits((np.arange(count, dtype=np.uint64) * step + start) % (1 << 32))


def random_bits(rng: np.random.Generator, count: int) -> F32:
    return f32_from_bits(rng.integers(0, 1 << 32, count, dtype=np.uint64))


def uniform(rng: np.random.Generator, low: float, high: float, count: int) -> F32:
    return rng.uniform(low, high, count).astype(np.float32)


def positive_binades(rng: np.random.Generator, count: int) -> F32:
    """Positive finite values, uniform over bit patterns (every binade equally often)."""
    return f32_from_bits(rng.integers(1, 0x7F800000, count, dtype=np.uint64))


def pad_to(arrays: Sequence[F32], multiple: int = LAUNCH_MULTIPLE) -> list[F32]:
    """Every operand repeated at its start up to a multiple of ``multiple`` values (one launch size)."""
    count = len(arrays[0])
    extra = -count % multiple
    return [np.concatenate([a, a[:extra]]).astype(np.float32) for a in arrays]


def sweep(name: str, arity: int, domain: Domain) -> list[F32]:
    """The inputs of ``name``: one float32 array per operand, all the same length (a multiple of 256)."""
    rng = rng_for(name)
    edges = EDGE_VALUES
    if arity == 1:
        parts = [[edges], [bit_patterns(rng, BIT_SWEEP)], list(domain(rng, DOMAIN_SWEEP))]
    else:
        grid = np.meshgrid(*([edges] * min(arity, 2)), indexing="ij")
        crossed = [g.reshape(-1) for g in grid]
        while len(crossed) < arity:  # fma: the edge pairs with a third operand from the domain
            crossed.append(list(domain(rng, len(crossed[0])))[len(crossed)])
        parts = [crossed, [random_bits(rng, BIT_SWEEP) for _ in range(arity)], list(domain(rng, DOMAIN_SWEEP))]
    operands = [np.concatenate([part[k] for part in parts]).astype(np.float32) for k in range(arity)]
    return pad_to(operands)


# --------------------------------------------------------------------------- float64 and float16

_F64_EDGE_MAGNITUDES = (
    0.0, math.inf, 2.0**-1074, 3 * 2.0**-1074, 2.0**-1023, 2.0**-1022 - 2.0**-1074, 2.0**-1022,
    2.0**-1022 + 2.0**-1074, 1e-300, 1e-100, 2.0**-53, 1e-10, 0.1, 0.25, 0.5 - 2.0**-54, 0.5, 0.75, 1.0 - 2.0**-53,
    1.0, 1.0 + 2.0**-52, 1.5, 2.0, 2.5, 3.0, _PI / 4, _PI / 2, _PI, 2 * _PI, 10.0, 64.0, 100.0, 709.782712893384,
    709.79, 710.0, 744.44, 745.1332191019411, 746.0, 1000.0, 1022.0, 1023.0, 1024.0, 1074.0, 1075.0, 1e4, 1e6,
    2.0**52 - 0.5, 2.0**52, 2.0**53 - 1, 2.0**53, 1e22, 1e100, 1e300, float(np.finfo(np.float64).max),
)  # fmt: skip
_F16_EDGE_MAGNITUDES = (
    0.0, math.inf, 2.0**-24, 3 * 2.0**-24, 2.0**-15, 2.0**-14 - 2.0**-24, 2.0**-14, 2.0**-14 + 2.0**-24, 1e-3, 0.1,
    0.25, 0.5 - 2.0**-12, 0.5, 0.75, 1.0 - 2.0**-11, 1.0, 1.0 + 2.0**-10, 1.5, 2.0, 2.5, 3.0, _PI / 4, _PI / 2, _PI,
    2 * _PI, 10.0, 11.08, 11.09, 15.99, 16.0, 17.0, 24.0, 25.0, 100.0, 1000.0, 2047.0, 2048.0, 4096.0, 32768.0,
    65504.0,
)  # fmt: skip


def _wide_edges(fmt: Format) -> Any:
    magnitudes = _F64_EDGE_MAGNITUDES if fmt is FMT_F64 else _F16_EDGE_MAGNITUDES
    nans = (0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FFFFFFFFFFFFFFF)
    if fmt is FMT_F16:
        nans = (0x7E00, 0xFE00, 0x7C01, 0x7FFF)
    positive = np.array(magnitudes, dtype=np.float64).astype(fmt.dtype)
    values = np.concatenate([positive, -positive, np.array(nans, dtype=np.uint64).astype(fmt.bits).view(fmt.dtype)])
    _, first = np.unique(values.view(fmt.bits), return_index=True)
    return values[np.sort(first)]


def edge_values(fmt: Format) -> Any:
    """The edge values of a float64 or float16 sweep (both signs, quiet and signalling NaN patterns)."""
    return _wide_edges(fmt)


def _random_wide_bits(rng: np.random.Generator, count: int, fmt: Format) -> Any:
    top = 1 << (8 * np.dtype(fmt.dtype).itemsize)
    if top > 1 << 63:
        raw = rng.integers(0, 1 << 63, count, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, count, np.uint64)
        return raw.view(np.float64)
    return rng.integers(0, top, count, dtype=np.uint64).astype(fmt.bits).view(fmt.dtype)


def _even_wide_bits(rng: np.random.Generator, count: int, fmt: Format) -> Any:
    """``count`` values evenly spaced over all bit patterns of the format, from a random offset."""
    if fmt is FMT_F64:
        step = (1 << 64) // count
        start = int(rng.integers(0, 1 << 62)) % step
        raw = np.array([(k * step + start) % (1 << 64) for k in range(count)], dtype=np.uint64)
        return raw.view(np.float64)
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16)[:: max(1, (1 << 16) // count)]


def wide_sweep(name: str, arity: int, domain: Domain, fmt: Format) -> list[Any]:
    """The inputs of ``name`` on float64 or float16 (one array per operand, a multiple of 256 values).

    float16, one operand: every one of the 65,536 bit patterns (exhaustive). Otherwise: every pair of edge
    values (a third operand from the domain), 2^15 random bit-pattern tuples and 2^15 domain draws;
    float64 unary: the edges, 2^15 values evenly spaced over all 2^64 bit patterns and 2^15 domain draws."""
    rng = rng_for(f"{name}.{fmt.name}")
    if fmt is FMT_F16 and arity == 1:
        return [np.arange(1 << 16, dtype=np.uint16).view(np.float16).copy()]
    edges = _wide_edges(fmt)
    if arity == 1:
        parts = [[edges], [_even_wide_bits(rng, BIT_SWEEP, fmt)], list(domain(rng, DOMAIN_SWEEP))]
    else:
        grid = np.meshgrid(edges, edges, indexing="ij")
        crossed = [g.reshape(-1) for g in grid]
        while len(crossed) < arity:
            crossed.append(np.asarray(list(domain(rng, len(crossed[0])))[len(crossed)], dtype=fmt.dtype))
        randoms = [_random_wide_bits(rng, BIT_SWEEP, fmt) for _ in range(arity)]
        parts = [crossed, randoms, list(domain(rng, DOMAIN_SWEEP))]
    operands = [np.concatenate([np.asarray(part[k], dtype=fmt.dtype) for part in parts]) for k in range(arity)]
    count = len(operands[0])
    extra = -count % LAUNCH_MULTIPLE
    return [np.concatenate([a, a[:extra]]).astype(fmt.dtype) for a in operands]
