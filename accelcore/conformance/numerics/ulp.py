"""Ulp arithmetic on numpy arrays: "exact" values in a wider type against results of one float format.

Formats (:class:`Format`): float32 (:data:`FMT_F32`) and float16 (:data:`FMT_F16`) with float64 exact
values, float64 (:data:`FMT_F64`) with numpy ``longdouble`` exact values (x86 80-bit extended: a
64-bit significand, 11 bits more than float64). Every function takes ``fmt`` (default float32, so the
float32 names work as before); the definitions below are for float32 and hold for each format with its
own precision ``p`` and exponent range (float16: p = 11, subnormals below 2^-14, spacing 2^-24, top
binade 2^15 (max 65504); float64: p = 53, subnormals below 2^-1022, spacing 2^-1074).

``ulp(x)`` follows the convention of the OpenCL C spec (section 7.4, "Relative Error as ULPs") as the
Khronos conformance tests apply it: for a real ``x`` with ``2^e <= |x| < 2^(e+1)`` and ``e >= -126``,
``ulp(x) = 2^(e-23)``; below ``2^-126`` (the subnormal range) ``2^-149``; at and above ``2^128``
``2^104`` (the spacing of the top binade). The error of a float32 result ``got`` against an exact
value is ``|got - exact| / ulp(exact)``; an infinite ``got`` counts as ``±2^128`` (so returning
infinity for an exact value just under the overflow threshold is 1 ulp, not infinitely wrong) and an
exact value past the float32 range is matched only by the infinity of its sign.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "F32_MAX",
    "F32_MIN_NORMAL",
    "F32_MIN_SUBNORMAL",
    "FMT_F16",
    "FMT_F32",
    "FMT_F64",
    "Format",
    "bits_f32",
    "bits_of",
    "f32_from_bits",
    "flush_subnormals",
    "format_of",
    "is_subnormal",
    "same_value",
    "ulp",
    "ulp_error",
]

F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]
Bool = npt.NDArray[np.bool_]

F32_MAX = float(np.finfo(np.float32).max)
F32_MIN_NORMAL = 2.0**-126
F32_MIN_SUBNORMAL = 2.0**-149
_TOP = 2.0**128


@dataclass(frozen=True)
class Format:
    """One IEEE binary format: ``name`` (``f32``), numpy ``dtype``, the ``wide`` dtype its exact values are
    held in, precision ``p`` (significand bits with the hidden one), ``emin``/``emax`` (normal exponents)."""

    name: str
    dtype: Any
    wide: Any
    bits: Any
    p: int
    emin: int
    emax: int

    @property
    def max(self) -> float:
        return float(np.finfo(self.dtype).max)

    @property
    def min_normal(self) -> Any:
        return self.wide(2.0) ** self.emin

    @property
    def min_subnormal(self) -> Any:
        return self.wide(2.0) ** (self.emin - self.p + 1)

    @property
    def top(self) -> Any:
        """2^(emax+1): where an infinity counts (the first value past the format's range)."""
        return self.wide(2.0) ** (self.emax + 1)

    @property
    def top_ulp(self) -> Any:
        return self.wide(2.0) ** (self.emax + 1 - self.p)

    @property
    def width(self) -> int:
        return int(np.dtype(self.dtype).itemsize * 2)


FMT_F32 = Format("f32", np.float32, np.float64, np.uint32, 24, -126, 127)
FMT_F16 = Format("f16", np.float16, np.float64, np.uint16, 11, -14, 15)
FMT_F64 = Format("f64", np.float64, np.longdouble, np.uint64, 53, -1022, 1023)
_FORMATS = {np.dtype(f.dtype): f for f in (FMT_F32, FMT_F16, FMT_F64)}


def format_of(values: Any) -> Format:
    """The format of a float16/32/64 array."""
    return _FORMATS[np.asarray(values).dtype]


def bits_of(values: Any, fmt: Format) -> Any:
    return np.ascontiguousarray(np.asarray(values, dtype=fmt.dtype)).view(fmt.bits)


def f32_from_bits(bits: Any) -> F32:
    return np.asarray(bits, dtype=np.uint64).astype(np.uint32).view(np.float32)


def bits_f32(values: Any) -> npt.NDArray[np.uint32]:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float32)).view(np.uint32)


def ulp(exact: Any, fmt: Format = FMT_F32) -> Any:
    """The ``fmt`` ulp of every exact value (float64; longdouble for float64); NaN stays NaN."""
    wide = fmt.wide
    magnitude = np.abs(np.asarray(exact, dtype=wide))
    finite = np.where(np.isfinite(magnitude), magnitude, wide(0.0))
    _, exponent = np.frexp(finite)  # finite = m * 2^exponent, 0.5 <= m < 1
    out = np.ldexp(wide(1.0), (exponent - fmt.p).astype(np.int32))
    out = np.where(finite < fmt.min_normal, fmt.min_subnormal, out)
    out = np.where(magnitude >= fmt.top, fmt.top_ulp, out)
    return np.where(np.isnan(magnitude), wide(np.nan), out)


def ulp_error(got: Any, exact: Any, fmt: Format = FMT_F32) -> Any:
    """``|got - exact| / ulp(exact)`` per element; 0 when both are NaN or the same infinity, inf when
    only one is NaN, or when an exact value past the format's range is not met by its infinity."""
    g = np.asarray(got, dtype=fmt.dtype).astype(fmt.wide)
    e = np.asarray(exact, dtype=fmt.wide)
    top = fmt.top
    with np.errstate(invalid="ignore", over="ignore"):
        g_fin = np.where(np.isinf(g), np.copysign(top, g), g)
        overflowed = np.abs(e) >= top
        err = np.abs(g_fin - e) / ulp(e, fmt)
        err = np.where(overflowed & np.isinf(g) & (np.sign(g) == np.sign(e)), 0.0, err)
        err = np.where(overflowed & ~(np.isinf(g) & (np.sign(g) == np.sign(e))), np.inf, err)
    nan_g, nan_e = np.isnan(g), np.isnan(e)
    err = np.where(nan_g & nan_e, 0.0, err)
    return np.where(nan_g ^ nan_e, np.inf, err)


def same_value(got: Any, rounded: Any, *, zero_sign: bool) -> Bool:
    """Bit-equal values (any NaN matches any NaN); ``zero_sign`` False lets +0 and -0 match. The format is
    ``got``'s (float32 unless it is a float16/float64 array)."""
    fmt = format_of(got) if np.asarray(got).dtype in _FORMATS else FMT_F32
    g = np.asarray(got, dtype=fmt.dtype)
    r = np.asarray(rounded, dtype=fmt.dtype)
    equal = bits_of(g, fmt) == bits_of(r, fmt)
    if not zero_sign:
        equal |= (g == 0) & (r == 0)
    result: Bool = equal | (np.isnan(g) & np.isnan(r))
    return result


def is_subnormal(values: Any, fmt: Format = FMT_F32) -> Bool:
    """Nonzero values below the smallest normal of ``fmt`` (on exact values: "subnormal before rounding")."""
    v = np.abs(np.asarray(values, dtype=fmt.wide))
    result: Bool = (v > 0) & (v < fmt.min_normal)
    return result


def flush_subnormals(values: Any, fmt: Format = FMT_F32) -> Any:
    """Subnormal inputs replaced by a zero of their sign (what a flushing device reads)."""
    v = np.asarray(values, dtype=fmt.dtype)
    return np.where(is_subnormal(v, fmt), np.copysign(fmt.dtype(0), v), v).astype(fmt.dtype)
