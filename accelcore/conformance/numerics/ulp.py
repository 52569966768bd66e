"""Single-precision ulp arithmetic on numpy arrays (float64 "exact" values against float32 results).

``ulp(x)`` follows the convention of the OpenCL C spec (section 7.4, "Relative Error as ULPs") as the
Khronos conformance tests apply it: for a real ``x`` with ``2^e <= |x| < 2^(e+1)`` and ``e >= -126``,
``ulp(x) = 2^(e-23)``; below ``2^-126`` (the subnormal range) ``2^-149``; at and above ``2^128``
``2^104`` (the spacing of the top binade). The error of a float32 result ``got`` against an exact
value is ``|got - exact| / ulp(exact)``; an infinite ``got`` counts as ``±2^128`` (so returning
infinity for an exact value just under the overflow threshold is 1 ulp, not infinitely wrong) and an
exact value past the float32 range is matched only by the infinity of its sign.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "F32_MAX",
    "F32_MIN_NORMAL",
    "F32_MIN_SUBNORMAL",
    "bits_f32",
    "f32_from_bits",
    "flush_subnormals",
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


def f32_from_bits(bits: Any) -> F32:
    return np.asarray(bits, dtype=np.uint64).astype(np.uint32).view(np.float32)


def bits_f32(values: Any) -> npt.NDArray[np.uint32]:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float32)).view(np.uint32)


def ulp(exact: F64) -> F64:
    """The float32 ulp of every (float64) exact value; NaN stays NaN."""
    magnitude = np.abs(np.asarray(exact, dtype=np.float64))
    finite = np.where(np.isfinite(magnitude), magnitude, 0.0)
    _, exponent = np.frexp(finite)  # finite = m * 2^exponent, 0.5 <= m < 1
    out = np.ldexp(1.0, (exponent - 24).astype(np.int32))
    out = np.where(finite < F32_MIN_NORMAL, F32_MIN_SUBNORMAL, out)
    out = np.where(magnitude >= _TOP, 2.0**104, out)
    return np.where(np.isnan(magnitude), np.nan, out)


def ulp_error(got: F32, exact: F64) -> F64:
    """``|got - exact| / ulp(exact)`` per element; 0 when both are NaN or the same infinity, inf when
    only one is NaN, or when an exact value past the float32 range is not met by its infinity."""
    g = np.asarray(got, dtype=np.float32).astype(np.float64)
    e = np.asarray(exact, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        g_fin = np.where(np.isinf(g), np.copysign(_TOP, g), g)
        overflowed = np.abs(e) >= _TOP
        err = np.abs(g_fin - e) / ulp(e)
        err = np.where(overflowed & np.isinf(g) & (np.sign(g) == np.sign(e)), 0.0, err)
        err = np.where(overflowed & ~(np.isinf(g) & (np.sign(g) == np.sign(e))), np.inf, err)
    nan_g, nan_e = np.isnan(g), np.isnan(e)
    err = np.where(nan_g & nan_e, 0.0, err)
    return np.where(nan_g ^ nan_e, np.inf, err)


def same_value(got: F32, rounded: F32, *, zero_sign: bool) -> Bool:
    """Bit-equal values (any NaN matches any NaN); ``zero_sign`` False lets +0 and -0 match."""
    g = np.asarray(got, dtype=np.float32)
    r = np.asarray(rounded, dtype=np.float32)
    equal = bits_f32(g) == bits_f32(r)
    if not zero_sign:
        equal |= (g == 0) & (r == 0)
    result: Bool = equal | (np.isnan(g) & np.isnan(r))
    return result


def is_subnormal(values: Any) -> Bool:
    """Nonzero values below the smallest normal float32 (on float64 exact values: "subnormal before rounding")."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    return (v > 0) & (v < F32_MIN_NORMAL)


def flush_subnormals(values: F32) -> F32:
    """Subnormal float32 inputs replaced by a zero of their sign (what a flushing device reads)."""
    v = np.asarray(values, dtype=np.float32)
    return np.where(is_subnormal(v), np.copysign(np.float32(0), v), v).astype(np.float32)
