"""The numerical promises of the two APIs, as data: what a result must be, per function and value.

OpenCL: the OpenCL C specification (3.0, same table since 1.2), section 7.4 "Relative Error as
ULPs", table "ULP values for single precision built-in math functions" (full profile, default
build options: no -cl-fast-relaxed-math, no -cl-unsafe-math-optimizations, no -cl-denorms-are-zero,
no -cl-fp32-correctly-rounded-divide-sqrt), with the flush-to-zero rules of the same section when
the device does not report CL_FP_DENORM in CL_DEVICE_SINGLE_FP_CONFIG, and the special values of
section 7.5 ("Edge Case Behavior", C99 Annex F: NaN in gives NaN out unless Annex F says otherwise,
signed zeros) on every input.

Vulkan: the Vulkan specification, appendix "Precision and Operation of SPIR-V Instructions" (SPIR-V
environment chapter), for a module without SignedZeroInfNanPreserve or DenormPreserve (what glslang
emits here): only finite inputs with finite results are promised, the sign of zero is not, any
subnormal input or result may be flushed to zero, and a limit "inherited from" an expression is the
bound of that expression's parts composed (see :func:`vk_inherited`; docs/numerics.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .ulp import F32_MAX, FMT_F16, Format, ulp

_F16 = FMT_F16

__all__ = ["OPENCL_SECTION", "VULKAN_SECTION", "Limit"]

F64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]
Inputs = Sequence[F64]

OPENCL_SECTION = "OpenCL C 3.0 §7.4 Relative Error as ULPs (single precision table, full profile)"
VULKAN_SECTION = "Vulkan 1.3 §Precision and Operation of SPIR-V Instructions (GLSL.std.450 table)"

EPS = 2.0**-23
"""The largest ulp of a normal float32 relative to its value: ulp(r) <= 2^-23 |r|."""


@dataclass(frozen=True)
class Limit:
    """One function's promise on one API.

    ``text``: the limit as the matrix shows it (``4``, ``cr``, ``3+2|x|``, ``2^-11 abs``).
    ``cr``: correctly rounded - the result must be the float32 nearest the exact value (bit-equal).
    ``ulps``: a fixed bound in ulps of the result; ``per_value(inputs, exact)``: a bound per value in
    ulps (used instead when set). ``domain(inputs, exact)``: the values the promise covers (None: all).
    ``alternatives(inputs)``: further exact values that are also acceptable (an unfused fma, the other
    direction of a half in GLSL round).
    """

    text: str
    section: str
    cr: bool = False
    ulps: float = 0.0
    per_value: Callable[[Inputs, F64], F64] | None = None
    domain: Callable[[Inputs, F64], Bool] | None = None
    alternatives: Callable[[Inputs], list[F64]] | None = None
    measure: str = "ulp"
    """What the cell shows: ``ulp``, or ``abs`` for an absolute-error promise (sin/cos on Vulkan)."""

    def bound(self, inputs: Inputs, exact: F64) -> F64:
        if self.cr:
            return np.full(exact.shape, 0.5)
        if self.per_value is not None:
            with np.errstate(all="ignore"):
                bound = np.asarray(self.per_value(inputs, exact), dtype=np.float64)
            return np.where(np.isnan(bound), np.inf, bound)  # no finite bound composes (inf * 0): none
        return np.full(exact.shape, float(self.ulps))


def cl(text: str, ulps: float = 0.0, *, cr: bool = False) -> Limit:
    return Limit(text, OPENCL_SECTION, cr=cr, ulps=ulps)


def cl_cr() -> Limit:
    return Limit("cr", OPENCL_SECTION, cr=True)


# --------------------------------------------------------------------------- Vulkan helpers


def _finite(*arrays: F64) -> Bool:
    ok = np.ones(arrays[0].shape, dtype=bool)
    for a in arrays:
        ok &= np.isfinite(a)
    return ok


def vk_domain(extra: Callable[[Inputs, F64], Bool] | None = None) -> Callable[[Inputs, F64], Bool]:
    """Finite inputs, a finite result inside the float32 range, and ``extra``."""

    def domain(inputs: Inputs, exact: F64) -> Bool:
        with np.errstate(invalid="ignore"):
            ok = _finite(*inputs, exact) & (np.abs(exact) <= F32_MAX)
            return ok if extra is None else ok & extra(inputs, exact)

    return domain


def abs_to_ulps(bound: F64, exact: F64) -> F64:
    return np.asarray(np.asarray(bound, dtype=np.float64) / ulp(exact), dtype=np.float64)


def rel_to_ulps(rel: F64, exact: F64) -> F64:
    return np.asarray(np.asarray(rel, dtype=np.float64) * np.abs(exact) / ulp(exact), dtype=np.float64)


def vk(text: str, ulps: float = 0.0, *, extra: Callable[[Inputs, F64], Bool] | None = None) -> Limit:
    return Limit(text, VULKAN_SECTION, ulps=ulps, domain=vk_domain(extra))


def vk_cr(
    extra: Callable[[Inputs, F64], Bool] | None = None, alternatives: Callable[[Inputs], list[F64]] | None = None
) -> Limit:
    return Limit("cr", VULKAN_SECTION, cr=True, domain=vk_domain(extra), alternatives=alternatives)


def vk_per_value(
    text: str,
    per_value: Callable[[Inputs, F64], F64],
    extra: Callable[[Inputs, F64], Bool] | None = None,
    measure: str = "ulp",
) -> Limit:
    return Limit(text, VULKAN_SECTION, per_value=per_value, domain=vk_domain(extra), measure=measure)


def vk_exp_ulps(inputs: Inputs, exact: F64) -> F64:
    """exp(x), exp2(x): 3 + 2|x| ULP."""
    return 3.0 + 2.0 * np.abs(inputs[0])


def vk_log_ulps(inputs: Inputs, exact: F64) -> F64:
    """log, log2: 3 ULP outside [0.5, 2.0]; absolute error < 2^-21 inside."""
    x = inputs[0]
    inside = (x >= 0.5) & (x <= 2.0)
    return np.where(inside, abs_to_ulps(np.full(x.shape, 2.0**-21), exact), 3.0)


def vk_pow_ulps(inputs: Inputs, exact: F64) -> F64:
    """pow: inherited from exp2(y * log2(x)): log2's error times |y|, the multiply's rounding, then exp2's
    3 + 2|t| ULP on a perturbed t (relative error ln2 * dt)."""
    x, y = inputs
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log2x = np.log2(x)
        inside = (x >= 0.5) & (x <= 2.0)
        d_log = np.where(inside, 2.0**-21, 3.0 * ulp(log2x))
        t = y * log2x
        dt = np.abs(y) * d_log + 0.5 * ulp(t)
        bound: F64 = 3.0 + 2.0 * (np.abs(t) + dt) + rel_to_ulps(np.expm1(math.log(2.0) * dt) * 1.01, exact)
        return bound


_TRIG_ABS = 2.0**-11


def vk_trig_domain(inputs: Inputs, exact: F64) -> Bool:
    return np.abs(inputs[0]) <= math.pi


def vk_trig_ulps(inputs: Inputs, exact: F64) -> F64:
    """sin, cos: absolute error <= 2^-11 inside [-pi, pi]."""
    return abs_to_ulps(np.full(exact.shape, _TRIG_ABS), exact)


def vk_tan_domain(inputs: Inputs, exact: F64) -> Bool:
    return (np.abs(inputs[0]) <= math.pi) & (np.abs(np.cos(inputs[0])) > 2 * _TRIG_ABS)


def vk_tan_ulps(inputs: Inputs, exact: F64) -> F64:
    """tan: inherited from sin(x) / cos(x): |d tan| <= d (1 + |tan|) / (|cos| - d) + the division's 2.5 ULP."""
    c = np.abs(np.cos(inputs[0]))
    bound = _TRIG_ABS * (1.0 + np.abs(exact)) / (c - _TRIG_ABS)
    return abs_to_ulps(bound, exact) + 2.5


_SQRT_REL = (2.0 + 2.5) * EPS
"""sqrt: inherited from 1.0 / inversesqrt(x): inversesqrt's 2 ULP and the division's 2.5 ULP, relative."""


def vk_sqrt_ulps(inputs: Inputs, exact: F64) -> F64:
    return rel_to_ulps(np.full(exact.shape, _SQRT_REL), exact)


def _vk_inner_sqrt_error(x: F64) -> F64:
    """The absolute error of sqrt(1.0 - x * x) as GLSL computes it for |x| <= 1: x*x and 1 - x*x each
    round (<= 2^-25 each), then sqrt's inherited relative bound."""
    u = np.maximum(1.0 - x * x, 0.0)
    du = 2.0**-24
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.minimum(np.sqrt(du), np.where(u > 0, du / (2 * np.sqrt(u)), np.inf))
    return shift + _SQRT_REL * np.sqrt(u + du)


def vk_asin_ulps(inputs: Inputs, exact: F64) -> F64:
    """asin: inherited from atan2(x, sqrt(1 - x*x)); acos: atan2(sqrt(1 - x*x), x): atan2's 4096 ULP plus
    the inner sqrt's error through the partial derivative (|x| / (x^2 + s^2) = |x|)."""
    x = inputs[0]
    return 4096.0 + abs_to_ulps(np.abs(x) * _vk_inner_sqrt_error(x) * 1.01, exact)


def vk_unit_domain(inputs: Inputs, exact: F64) -> Bool:
    return np.abs(inputs[0]) <= 1.0


def _vk_exp_pair_error(x: F64) -> F64:
    """Absolute error of exp(x) +- exp(-x), times 0.5: each exp within (3 + 2|x|) ULP, the sum rounding."""
    e = np.exp(x) + np.exp(-x)
    return 0.5 * e * EPS * (3.0 + 2.0 * np.abs(x) + 0.5)


def vk_hyperbolic_ulps(inputs: Inputs, exact: F64) -> F64:
    """sinh, cosh: inherited from (exp(x) -+ exp(-x)) * 0.5."""
    return abs_to_ulps(_vk_exp_pair_error(inputs[0]), exact)


def vk_hyperbolic_domain(inputs: Inputs, exact: F64) -> Bool:
    return np.abs(inputs[0]) < 88.0


def vk_tanh_ulps(inputs: Inputs, exact: F64) -> F64:
    """tanh: inherited from sinh(x) / cosh(x): (ds + |tanh| dc) / (cosh - dc) plus the division's 2.5 ULP."""
    x = inputs[0]
    d = _vk_exp_pair_error(x)
    bound = (d + np.abs(exact) * d) / (np.cosh(x) - d)
    return abs_to_ulps(bound, exact) + 2.5


def vk_div_domain(inputs: Inputs, exact: F64) -> Bool:
    y = np.abs(inputs[1])
    return (y >= 2.0**-126) & (y <= 2.0**126)


def vk_fma_unfused(inputs: Inputs) -> list[F64]:
    """fma: inherited from OpFMul followed by OpFAdd (each correctly rounded)."""
    a, b, c = inputs
    with np.errstate(invalid="ignore", over="ignore"):
        product = (a * b).astype(np.float32).astype(np.float64)
        return [product + c]


def vk_round_halves(inputs: Inputs) -> list[F64]:
    """GLSL round: a fraction of 0.5 rounds in a direction the implementation chooses."""
    x = inputs[0]
    return [np.floor(x), np.ceil(x)]


def positive(inputs: Inputs, exact: F64) -> Bool:
    return inputs[0] > 0


def non_negative(inputs: Inputs, exact: F64) -> Bool:
    return inputs[0] >= 0


def vk_pow_domain(inputs: Inputs, exact: F64) -> Bool:
    return inputs[0] > 0


def vk_atan2_domain(inputs: Inputs, exact: F64) -> Bool:
    result: Bool = (inputs[0] != 0) | (inputs[1] != 0)
    return result


def vk_log_domain(inputs: Inputs, exact: F64) -> Bool:
    return inputs[0] > 0


# --------------------------------------------------------------------------- float64 and float16

OPENCL_SECTION_F64 = "OpenCL C 3.0 §7.4 Relative Error as ULPs (double precision table, full profile)"
OPENCL_SECTION_F16 = "OpenCL C 3.0 §7.4 Relative Error as ULPs (half precision table, full profile)"
VULKAN_SECTION_F64 = (
    "Vulkan 1.3 §Precision and Operation of SPIR-V Instructions: 'the precision of double-precision instructions "
    "is at least that of single precision' (single-precision table, in double ulps)"
)
VULKAN_SECTION_F16 = "Vulkan 1.3 §Precision and Operation of SPIR-V Instructions (half-precision column)"


def cl_wide(section: str, text: str, ulps: float = 0.0, *, cr: bool = False) -> Limit:
    """A fixed OpenCL limit from the double or half table (``cr``: correctly rounded)."""
    return Limit(text, section, cr=cr, ulps=ulps)


def vk_domain_of(fmt: Format, extra: Callable[[Inputs, F64], Bool] | None = None) -> Callable[[Inputs, F64], Bool]:
    """Finite inputs, a finite result inside ``fmt``'s range, and ``extra``."""

    def domain(inputs: Inputs, exact: F64) -> Bool:
        with np.errstate(invalid="ignore"):
            ok = _finite(*inputs, exact) & (np.abs(exact) <= fmt.max)
            return ok if extra is None else ok & extra(inputs, exact)

    return domain


def vk_wide(
    fmt: Format,
    section: str,
    text: str,
    ulps: float = 0.0,
    *,
    cr: bool = False,
    per_value: Callable[[Inputs, F64], F64] | None = None,
    extra: Callable[[Inputs, F64], Bool] | None = None,
    alternatives: Callable[[Inputs], list[F64]] | None = None,
    measure: str = "ulp",
) -> Limit:
    """A Vulkan limit for float16 or float64 (finite inputs and results only, like every Vulkan limit here)."""
    return Limit(text, section, cr=cr, ulps=ulps, per_value=per_value, domain=vk_domain_of(fmt, extra),
                 alternatives=alternatives, measure=measure)  # fmt: skip


def vk_div_domain_of(fmt: Format) -> Callable[[Inputs, F64], Bool]:
    """OpFDiv: 2.5 ULP for |y| in [2^emin, 2^(emax-1)] of the format (f32: [2^-126, 2^126]; f16: [2^-14, 2^14])."""
    low, high = 2.0**fmt.emin, 2.0 ** (fmt.emax - 1)

    def domain(inputs: Inputs, exact: F64) -> Bool:
        y = np.abs(inputs[1])
        result: Bool = (y >= low) & (y <= high)
        return result

    return domain


def vk_sqrt_ulps_of(fmt: Format) -> Callable[[Inputs, F64], F64]:
    """sqrt inherited from 1.0 / inversesqrt(x): inversesqrt's 2 ULP and the division's 2.5 ULP, as a relative
    bound (2 + 2.5)·2^(1-p), per value in ulps of the format."""
    rel = 4.5 * 2.0 ** (1 - fmt.p)

    def bound(inputs: Inputs, exact: F64) -> F64:
        return np.asarray(rel * np.abs(exact) / ulp(exact, fmt), dtype=np.float64)

    return bound


def vk_exp_ulps_f16(inputs: Inputs, exact: F64) -> F64:
    """exp, exp2 on 16-bit floats: 1 + 2|x| ULP."""
    return 1.0 + 2.0 * np.abs(np.asarray(inputs[0], dtype=np.float64))


def vk_log_ulps_f16(inputs: Inputs, exact: F64) -> F64:
    """log, log2 on 16-bit floats: 3 ULP outside [0.5, 2.0]; absolute error < 2^-7 inside."""
    x = inputs[0]
    inside = (x >= 0.5) & (x <= 2.0)
    return np.where(inside, np.full(x.shape, 2.0**-7) / ulp(exact, _F16), 3.0)


def vk_trig_ulps_f16(inputs: Inputs, exact: F64) -> F64:
    """sin, cos on 16-bit floats: absolute error <= 2^-7 inside [-pi, pi]."""
    return np.asarray(np.full(exact.shape, 2.0**-7) / ulp(exact, _F16), dtype=np.float64)


def vk_fma_unfused_of(fmt: Format) -> Callable[[Inputs], list[F64]]:
    """fma inherited from OpFMul followed by OpFAdd: the product rounded to the format, then the sum (whose
    rounding is the judged one; exact in the wide type: two values of the format)."""

    def alternatives(inputs: Inputs) -> list[F64]:
        a, b, c = inputs
        with np.errstate(invalid="ignore", over="ignore"):
            product = (np.asarray(a, dtype=fmt.dtype) * np.asarray(b, dtype=fmt.dtype)).astype(fmt.wide)
            if fmt.dtype is np.float64:
                return [(product.astype(np.float64) + np.asarray(c, dtype=np.float64)).astype(fmt.wide)]
            return [product + c]

    return alternatives


# float16 "inherited" bounds (the half-precision column's parts composed as for float32 above)

_F16_EPS = 2.0**-10
"""ulp(r) <= 2^-10 |r| for a normal float16."""
_F16_TRIG_ABS = 2.0**-7
_F16_ATAN_ULPS = 5.0


def _ulps16(bound: Any, exact: F64) -> F64:
    return np.asarray(np.asarray(bound, dtype=np.float64) / ulp(exact, _F16), dtype=np.float64)


def vk_tan_domain_f16(inputs: Inputs, exact: F64) -> Bool:
    return (np.abs(inputs[0]) <= math.pi) & (np.abs(np.cos(inputs[0])) > 2 * _F16_TRIG_ABS)


def vk_tan_ulps_f16(inputs: Inputs, exact: F64) -> F64:
    """tan on 16-bit floats: inherited from sin() / cos(), each within 2^-7 absolute, the division 2.5 ULP."""
    c = np.abs(np.cos(inputs[0]))
    bound = _F16_TRIG_ABS * (1.0 + np.abs(exact)) / (c - _F16_TRIG_ABS)
    return _ulps16(bound, exact) + 2.5


def vk_asin_ulps_f16(inputs: Inputs, exact: F64) -> F64:
    """asin / acos on 16-bit floats: atan2's 5 ULP plus |x| times the error of sqrt(1 - x*x) (x*x and 1 - x*x
    each rounded, <= 2^-12 each; sqrt inherited, relative 4.5·2^-10)."""
    x = inputs[0]
    u = np.maximum(1.0 - x * x, 0.0)
    du = 2.0**-11
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.minimum(np.sqrt(du), np.where(u > 0, du / (2 * np.sqrt(u)), np.inf))
    inner = shift + 4.5 * _F16_EPS * np.sqrt(u + du)
    return _F16_ATAN_ULPS + _ulps16(np.abs(x) * inner * 1.01, exact)


def _f16_exp_pair_error(x: F64) -> F64:
    """Absolute error of (exp(x) +- exp(-x)) * 0.5 on 16-bit floats: each exp within (1 + 2|x|) ULP, the sum
    rounding."""
    e = np.exp(x) + np.exp(-x)
    return np.asarray(0.5 * e * _F16_EPS * (1.0 + 2.0 * np.abs(x) + 0.5), dtype=np.float64)


def vk_hyperbolic_ulps_f16(inputs: Inputs, exact: F64) -> F64:
    """sinh, cosh on 16-bit floats: inherited from (exp(x) -+ exp(-x)) * 0.5."""
    return _ulps16(_f16_exp_pair_error(inputs[0]), exact)


def vk_hyperbolic_domain_f16(inputs: Inputs, exact: F64) -> Bool:
    return np.abs(inputs[0]) < 11.0  # exp(x) stays below 65504


def vk_tanh_ulps_f16(inputs: Inputs, exact: F64) -> F64:
    """tanh on 16-bit floats: inherited from sinh(x) / cosh(x)."""
    x = inputs[0]
    d = _f16_exp_pair_error(x)
    bound = (d + np.abs(exact) * d) / (np.cosh(x) - d)
    return _ulps16(bound, exact) + 2.5


def vk_pow_ulps_f16(inputs: Inputs, exact: F64) -> F64:
    """pow on 16-bit floats: inherited from exp2(y * log2(x)): log2's error (2^-7 absolute on [0.5, 2], else
    3 ULP) times |y|, the multiply's rounding, then exp2's 1 + 2|t| ULP on a perturbed t."""
    x, y = inputs
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log2x = np.log2(x)
        inside = (x >= 0.5) & (x <= 2.0)
        d_log = np.where(inside, 2.0**-7, 3.0 * ulp(log2x, _F16))
        t = y * log2x
        dt = np.abs(y) * d_log + 0.5 * ulp(t, _F16)
        rel = np.expm1(math.log(2.0) * dt) * 1.01
        bound: F64 = 1.0 + 2.0 * (np.abs(t) + dt) + _ulps16(rel * np.abs(exact), exact)
        return bound
