"""The float32 functions of the numerics suite: kernel names, exact references, sweeps, limits.

References are computed in float64 from the float32 inputs:

* ``+ - * / sqrt``: the float64 result rounded to float32 is the correctly rounded float32 result
  (a binary64 operation on binary32 operands rounds innocuously twice: 53 >= 2*24 + 2, Figueroa
  1995), so these are exact for the correctly-rounded verdict; ``fma``: the product is exact in
  float64, the sum is taken with TwoSum and its float32 rounding repaired in the one case double
  rounding can go wrong (a float64 sum exactly halfway between two float32 values): exact.
* ``floor ceil trunc round fmod fmin fmax``: exact in float64.
* the transcendental functions: numpy's float64 (libm) within a few float64 ulps of the exact value,
  i.e. within 2^-27 float32 ulp; every limit judged here is >= 0.5 ulp, so the verdict can differ
  from an exact reference only for an error within 2^-27 ulp of its limit, and the reported error
  is off by at most that. tests/numerics/test_references.py checks the claim against mpmath at
  100 bits on a sample of every sweep.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import limits as lim
from .limits import Limit
from .sweep import Domain, positive_binades, random_bits, uniform
from .ulp import FMT_F16, FMT_F64, Format

__all__ = [
    "F16_FUNCTIONS",
    "F32_FUNCTIONS",
    "F64_FUNCTIONS",
    "F32Function",
    "WideFunction",
    "fma_exact",
    "fma_f64",
    "function",
    "wide_functions",
]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class F32Function:
    """One float32 function: ``name`` (case id ``numerics.<name>.f32``), operand count, the OpenCL C
    kernel (``f32_<name>`` in numerics_f32.cl), the GLSL selector (FN in numerics_f32.comp, None when
    GLSL cannot express it), the float64 reference, the sweep's domain and each API's limit."""

    name: str
    arity: int
    reference: Callable[..., F64]
    domain: Domain
    opencl: Limit
    vulkan: Limit | None
    glsl_fn: int | None
    glsl_missing: str = ""
    description: str = ""
    zero_sign: bool = True
    """False: +0 and -0 are both right where the exact value is a zero (fmin/fmax: C99 F.9.9.2 leaves it open)."""

    @property
    def kernel(self) -> str:
        return f"f32_{self.name}"

    def exact(self, inputs: Sequence[F32]) -> F64:
        with np.errstate(all="ignore"):
            wide = [np.asarray(x, dtype=np.float32).astype(np.float64) for x in inputs]
            return np.asarray(self.reference(*wide), dtype=np.float64)


def fma_exact(a: F64, b: F64, c: F64) -> F64:
    """a*b + c for float32 operands, as a float64 whose float32 rounding is the correctly rounded fma."""
    with np.errstate(all="ignore"):
        p = a * b  # exact: 24 + 24 bits
        s = p + c
        bp = s - c
        err = (p - bp) + (c - (s - bp))  # TwoSum: s + err == p + c exactly (finite cases)
        r = s.astype(np.float32)
        up = np.nextafter(r, np.float32(np.inf)).astype(np.float64)
        down = np.nextafter(r, np.float32(-np.inf)).astype(np.float64)
        rw = r.astype(np.float64)
        halfway = (s == (rw + up) / 2) | (s == (rw + down) / 2)
        fix = halfway & np.isfinite(err) & (err != 0)
        nudged = np.where(err > 0, np.nextafter(s, np.inf), np.nextafter(s, -np.inf))
        return np.where(fix, nudged, s)


def _round_half_away(x: F64) -> F64:
    return np.trunc(x + np.copysign(0.5, x))


def _log_uniform(rng: np.random.Generator, count: int, low: float, high: float) -> F32:
    magnitude = np.exp2(rng.uniform(math.log2(low), math.log2(high), count))
    signed: F32 = (magnitude * rng.choice([-1.0, 1.0], count)).astype(np.float32)
    return signed


def _mixed(arity: int, low: float = 2.0**-30, high: float = 2.0**30) -> Domain:
    def domain(rng: np.random.Generator, count: int) -> list[F32]:
        return [_log_uniform(rng, count, low, high) for _ in range(arity)]

    return domain


def _close_pairs(rng: np.random.Generator, count: int) -> list[F32]:
    """Half mixed magnitudes, half near-equal magnitudes (cancellation in x - y, x + -y)."""
    x = _log_uniform(rng, count, 2.0**-40, 2.0**40)
    near = (x.astype(np.float64) * (1 + rng.uniform(-1e-3, 1e-3, count)) * rng.choice([-1.0, 1.0], count)).astype(
        np.float32
    )
    y = np.where(np.arange(count) % 2 == 0, _log_uniform(rng, count, 2.0**-40, 2.0**40), near).astype(np.float32)
    return [x, y]


def _fma_domain(rng: np.random.Generator, count: int) -> list[F32]:
    a = _log_uniform(rng, count, 2.0**-20, 2.0**20)
    b = _log_uniform(rng, count, 2.0**-20, 2.0**20)
    c_far = _log_uniform(rng, count, 2.0**-40, 2.0**40)
    c_cancel = (-(a.astype(np.float64) * b.astype(np.float64))).astype(np.float32)  # a*b - round(a*b): fused shows
    c = np.where(np.arange(count) % 2 == 0, c_far, c_cancel).astype(np.float32)
    return [a, b, c]


def _one(low: float, high: float) -> Domain:
    return lambda rng, count: [uniform(rng, low, high, count)]


def _positive(rng: np.random.Generator, count: int) -> list[F32]:
    return [positive_binades(rng, count)]


def _log_domain(rng: np.random.Generator, count: int) -> list[F32]:
    half = count // 2
    return [np.concatenate([positive_binades(rng, half), uniform(rng, 0.5, 2.0, count - half)])]


def _trig(rng: np.random.Generator, count: int) -> list[F32]:
    half = count // 2
    return [np.concatenate([uniform(rng, -math.pi, math.pi, half), _log_uniform(rng, count - half, 1.0, 1e6)])]


def _pow_domain(rng: np.random.Generator, count: int) -> list[F32]:
    quarter = count // 4
    x_pos = np.abs(_log_uniform(rng, count - quarter, 2.0**-12, 2.0**12))
    y_any = uniform(rng, -30.0, 30.0, count - quarter)
    x_neg = -np.abs(_log_uniform(rng, quarter, 2.0**-4, 2.0**4))
    y_int = rng.integers(-20, 21, quarter).astype(np.float32)
    return [np.concatenate([x_pos, x_neg]).astype(np.float32), np.concatenate([y_any, y_int])]


def _rounding(rng: np.random.Generator, count: int) -> list[F32]:
    half = count // 2
    halves = (rng.integers(-4000, 4000, half) + 0.5).astype(np.float32)
    return [np.concatenate([uniform(rng, -1000.0, 1000.0, count - half), halves])]


def _fmod_domain(rng: np.random.Generator, count: int) -> list[F32]:
    return [_log_uniform(rng, count, 2.0**-20, 2.0**60), _log_uniform(rng, count, 2.0**-20, 2.0**20)]


def _minmax_domain(rng: np.random.Generator, count: int) -> list[F32]:
    x, y = random_bits(rng, count), random_bits(rng, count)  # ~0.4% NaN patterns each: NaN with numbers
    quiet = np.float32(np.nan)
    y = np.where(np.arange(count) % 8 == 0, quiet, y).astype(np.float32)
    return [x, y]


def _f(name: str, arity: int, ref: Callable[..., F64], domain: Domain, ocl: Limit, vk: Limit | None, fn: int | None,
       missing: str = "", description: str = "", zero_sign: bool = True) -> F32Function:  # fmt: skip
    return F32Function(name, arity, ref, domain, ocl, vk, fn, missing, description, zero_sign)


_FMOD_MISSING = "GLSL has no C fmod (mod() floors; SPIR-V OpFRem is not reachable from GLSL)"

F32_FUNCTIONS: tuple[F32Function, ...] = (
    _f("add", 2, np.add, _close_pairs, lim.cl_cr(), lim.vk_cr(), 0),
    _f("sub", 2, np.subtract, _close_pairs, lim.cl_cr(), lim.vk_cr(), 1),
    _f("mul", 2, np.multiply, _mixed(2), lim.cl_cr(), lim.vk_cr(), 2),
    _f("div", 2, np.divide, _mixed(2), lim.cl("2.5", 2.5), lim.vk("2.5", 2.5, extra=lim.vk_div_domain), 3),
    _f(
        "sqrt",
        1,
        np.sqrt,
        _positive,
        lim.cl("3", 3.0),
        lim.vk_per_value("4.5ε (1/inversesqrt)", lim.vk_sqrt_ulps, lim.non_negative),
        4,
    ),
    _f("rsqrt", 1, lambda x: 1.0 / np.sqrt(x), _positive, lim.cl("2", 2.0), lim.vk("2", 2.0, extra=lim.positive), 5),
    _f("fma", 3, fma_exact, _fma_domain, lim.cl_cr(), lim.vk_cr(alternatives=lim.vk_fma_unfused), 6),
    _f("exp", 1, np.exp, _one(-104.0, 89.0), lim.cl("3", 3.0), lim.vk_per_value("3+2|x|", lim.vk_exp_ulps), 7),
    _f("exp2", 1, np.exp2, _one(-150.0, 128.0), lim.cl("3", 3.0), lim.vk_per_value("3+2|x|", lim.vk_exp_ulps), 8),
    _f(
        "log",
        1,
        np.log,
        _log_domain,
        lim.cl("3", 3.0),
        lim.vk_per_value("3; 2^-21 abs on [0.5,2]", lim.vk_log_ulps, lim.vk_log_domain),
        9,
    ),
    _f(
        "log2",
        1,
        np.log2,
        _log_domain,
        lim.cl("3", 3.0),
        lim.vk_per_value("3; 2^-21 abs on [0.5,2]", lim.vk_log_ulps, lim.vk_log_domain),
        10,
    ),
    _f(
        "pow",
        2,
        np.power,
        _pow_domain,
        lim.cl("16", 16.0),
        lim.vk_per_value("exp2(y·log2 x)", lim.vk_pow_ulps, lim.vk_pow_domain),
        11,
    ),
    _f(
        "sin",
        1,
        np.sin,
        _trig,
        lim.cl("4", 4.0),
        lim.vk_per_value("2^-11 abs on [-π,π]", lim.vk_trig_ulps, lim.vk_trig_domain, "abs"),
        12,
    ),
    _f(
        "cos",
        1,
        np.cos,
        _trig,
        lim.cl("4", 4.0),
        lim.vk_per_value("2^-11 abs on [-π,π]", lim.vk_trig_ulps, lim.vk_trig_domain, "abs"),
        13,
    ),
    _f("tan", 1, np.tan, _trig, lim.cl("5", 5.0), lim.vk_per_value("sin/cos", lim.vk_tan_ulps, lim.vk_tan_domain), 14),
    _f(
        "asin",
        1,
        np.arcsin,
        _one(-1.0, 1.0),
        lim.cl("4", 4.0),
        lim.vk_per_value("atan2(x,√(1-x²))", lim.vk_asin_ulps, lim.vk_unit_domain),
        15,
    ),
    _f(
        "acos",
        1,
        np.arccos,
        _one(-1.0, 1.0),
        lim.cl("4", 4.0),
        lim.vk_per_value("atan2(√(1-x²),x)", lim.vk_asin_ulps, lim.vk_unit_domain),
        16,
    ),
    _f("atan", 1, np.arctan, _mixed(1, 2.0**-20, 2.0**20), lim.cl("5", 5.0), lim.vk("4096", 4096.0), 17),
    _f(
        "atan2",
        2,
        np.arctan2,
        _mixed(2, 2.0**-20, 2.0**20),
        lim.cl("6", 6.0),
        lim.vk("4096", 4096.0, extra=lim.vk_atan2_domain),
        18,
    ),
    _f(
        "sinh",
        1,
        np.sinh,
        _one(-90.0, 90.0),
        lim.cl("4", 4.0),
        lim.vk_per_value("(eˣ-e⁻ˣ)/2", lim.vk_hyperbolic_ulps, lim.vk_hyperbolic_domain),
        19,
    ),
    _f(
        "cosh",
        1,
        np.cosh,
        _one(-90.0, 90.0),
        lim.cl("4", 4.0),
        lim.vk_per_value("(eˣ+e⁻ˣ)/2", lim.vk_hyperbolic_ulps, lim.vk_hyperbolic_domain),
        20,
    ),
    _f(
        "tanh",
        1,
        np.tanh,
        _one(-10.0, 10.0),
        lim.cl("5", 5.0),
        lim.vk_per_value("sinh/cosh", lim.vk_tanh_ulps, lim.vk_hyperbolic_domain),
        21,
    ),
    _f("floor", 1, np.floor, _rounding, lim.cl_cr(), lim.vk_cr(), 22),
    _f("ceil", 1, np.ceil, _rounding, lim.cl_cr(), lim.vk_cr(), 23),
    _f("trunc", 1, np.trunc, _rounding, lim.cl_cr(), lim.vk_cr(), 24),
    _f("round", 1, _round_half_away, _rounding, lim.cl_cr(), lim.vk_cr(alternatives=lim.vk_round_halves), 25),
    _f("fmod", 2, np.fmod, _fmod_domain, lim.cl("0 (exact)", 0.0, cr=True), None, None, _FMOD_MISSING),
    _f("fmin", 2, np.fmin, _minmax_domain, lim.cl("0 (NaN → other)", 0.0, cr=True), lim.vk_cr(), 26, zero_sign=False),
    _f("fmax", 2, np.fmax, _minmax_domain, lim.cl("0 (NaN → other)", 0.0, cr=True), lim.vk_cr(), 27, zero_sign=False),
)

_BY_NAME = {f.name: f for f in F32_FUNCTIONS}


def function(name: str) -> F32Function:
    return _BY_NAME[name]


# --------------------------------------------------------------------------- float64 and float16
#
# float64 references (exact values in numpy longdouble, x86 80-bit extended, 64-bit significand):
# * + - * / sqrt: the correctly rounded float64 result is numpy's float64 operation (IEEE 754 hardware,
#   round to nearest even, subnormals kept): exact for the cr verdict; the longdouble value (one rounding
#   to 64 bits, relative error <= 2^-64) is only used for the reported error.
# * fma: Dekker's TwoProduct (Veltkamp split) gives a*b = p + e exactly; a longdouble sum gives the
#   estimate; every value whose estimate lies within 2^-9 float64 ulp of a rounding boundary, or whose
#   operands leave the range where TwoProduct is exact, is computed exactly with fractions.Fraction.
# * floor ceil trunc fmod fmin fmax: exact in float64; round (half away from zero): in longdouble, exact.
# * the transcendental functions: numpy's longdouble (glibc's expl, logl, sinl, powl, ... on x86-64):
#   within a few longdouble ulps (glibc's documented maxima for x86-64 long double: <= 4 ulp for these
#   functions), i.e. within 4·2^-11 float64 ulp (doubled across a binade boundary: 2^-8). Every limit
#   judged is >= 0.5 ulp, so a verdict could differ from an exact reference only for an error within
#   2^-8 ulp of its limit; tests/numerics/test_wide.py checks it against mpmath at 120 bits.
# float16 references: float64 from the float16 inputs, exactly as for float32 with more margin: an
# operation rounded twice (to 53 then 11 bits) rounds innocuously (53 >= 2·11 + 2), fma is TwoSum-repaired
# like float32's, and libm's float64 functions are within 2^-50 relative, i.e. within 2^-39 float16 ulp.

LD = npt.NDArray[np.longdouble]


def _veltkamp(x: F64) -> tuple[F64, F64]:
    c = x * 134217729.0  # 2^27 + 1
    hi = c - (c - x)
    return hi, x - hi


def _two_product(a: F64, b: F64) -> tuple[F64, F64]:
    """a*b = p + e exactly (when |a|, |b| < 2^995 and |a*b| >= 2^-969 or a*b == 0)."""
    p = a * b
    ah, al = _veltkamp(a)
    bh, bl = _veltkamp(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _fma_fraction(a: float, b: float, c: float) -> float:
    from fractions import Fraction

    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return float(np.float64(a) * np.float64(b) + np.float64(c)) if a == 0 or b == 0 else 0.0
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def fma_f64(a: F64, b: F64, c: F64) -> tuple[LD, F64]:
    """fma on float64 operands: (a longdouble estimate of the exact value, the correctly rounded float64)."""
    a, b, c = (np.asarray(x, dtype=np.float64) for x in (a, b, c))
    with np.errstate(all="ignore"):
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        p, e = _two_product(np.where(finite, a, 0.0), np.where(finite, b, 0.0))
        estimate = (p.astype(np.longdouble) + c.astype(np.longdouble)) + e.astype(np.longdouble)
        rounded = estimate.astype(np.float64)
        # distance of the estimate from the rounding boundaries around it, in float64 ulps
        spacing = np.abs(np.spacing(rounded)).astype(np.longdouble)
        offset = np.abs(estimate - rounded.astype(np.longdouble)) / np.where(spacing > 0, spacing, 1)
        near = np.abs(offset - 0.5) < 2.0**-9
        unsafe = (np.maximum(np.abs(a), np.abs(b)) >= 2.0**995) | ((np.abs(p) < 2.0**-969) & (p != 0))
        unsafe |= np.abs(rounded) < 2.0**-1000  # results near the subnormal range: exact path
        slow = finite & (near | unsafe | ~np.isfinite(rounded))
        for i in np.flatnonzero(slow):
            rounded[i] = _fma_fraction(float(a[i]), float(b[i]), float(c[i]))
            estimate[i] = np.longdouble(rounded[i]) if not np.isfinite(estimate[i]) else estimate[i]
        nonfinite = ~finite
        special = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, a * b + c)
        rounded = np.where(nonfinite, special, rounded)
        estimate = np.where(nonfinite, special.astype(np.longdouble), estimate)
        return estimate, rounded


def fma_exact_of(dtype: type) -> Callable[[F64, F64, F64], F64]:
    """a*b + c for float32 or float16 operands (as float64): TwoSum-repaired like :func:`fma_exact`."""

    def fma(a: F64, b: F64, c: F64) -> F64:
        with np.errstate(all="ignore"):
            p = a * b
            s = p + c
            bp = s - c
            err = (p - bp) + (c - (s - bp))
            r: Any = s.astype(dtype)
            up = np.nextafter(r, dtype(np.inf)).astype(np.float64)
            down = np.nextafter(r, dtype(-np.inf)).astype(np.float64)
            rw = r.astype(np.float64)
            halfway = (s == (rw + up) / 2) | (s == (rw + down) / 2)
            fix = halfway & np.isfinite(err) & (err != 0)
            nudged = np.where(err > 0, np.nextafter(s, np.inf), np.nextafter(s, -np.inf))
            return np.asarray(np.where(fix, nudged, s), dtype=np.float64)

    return fma


@dataclass(frozen=True)
class WideFunction:
    """One function on float64 or float16: case id ``numerics.<name>.<type>``; the one kernel of the type
    (``<type>_fn`` in numerics_<type>.cl, selected by ``selector`` in its ``fn`` buffer; FN = ``selector`` in
    numerics_<type>.comp); the exact values in the format's wide type; the correctly rounded results where
    they need more than one rounding of the exact value; the sweep's domain; each API's limit (Vulkan None:
    GLSL has no such function for the type, ``glsl_missing`` says why)."""

    name: str
    type: str
    arity: int
    selector: int
    reference: Callable[..., Any]
    domain: Domain
    opencl: Limit
    vulkan: Limit | None
    glsl_missing: str = ""
    correctly_rounded: Callable[..., Any] | None = None
    zero_sign: bool = True

    @property
    def fmt(self) -> Format:
        return FMT_F64 if self.type == "f64" else FMT_F16

    @property
    def kernel(self) -> str:
        return f"{self.type}_fn"

    def exact(self, inputs: Sequence[Any]) -> Any:
        with np.errstate(all="ignore"):
            wide = [np.asarray(x, dtype=self.fmt.dtype).astype(self.fmt.wide) for x in inputs]
            return np.asarray(self.reference(*wide), dtype=self.fmt.wide)

    def rounded(self, inputs: Sequence[Any]) -> Any:
        with np.errstate(all="ignore"):
            if self.correctly_rounded is not None:
                narrow = [np.asarray(x, dtype=self.fmt.dtype) for x in inputs]
                return np.asarray(self.correctly_rounded(*narrow), dtype=self.fmt.dtype)
            return self.exact(inputs).astype(self.fmt.dtype)


def _in_f64(op: Callable[..., Any]) -> Callable[..., F64]:
    """The float64 operation itself (IEEE correctly rounded) as the cr reference."""
    return lambda *xs: op(*[np.asarray(x, dtype=np.float64) for x in xs])


def _round_half_away_wide(x: Any) -> Any:
    return np.trunc(x + np.copysign(np.asarray(0.5, dtype=x.dtype), x))


# name, arity, GLSL/OpenCL selector (numerics_f32.comp's FN numbers; 28 = fmod), reference
_WIDE_SPECS: tuple[tuple[str, int, int, Callable[..., Any] | None], ...] = (
    ("add", 2, 0, np.add), ("sub", 2, 1, np.subtract), ("mul", 2, 2, np.multiply), ("div", 2, 3, np.divide),
    ("sqrt", 1, 4, np.sqrt), ("rsqrt", 1, 5, lambda x: 1 / np.sqrt(x)), ("fma", 3, 6, None),
    ("exp", 1, 7, np.exp), ("exp2", 1, 8, np.exp2), ("log", 1, 9, np.log), ("log2", 1, 10, np.log2),
    ("pow", 2, 11, np.power), ("sin", 1, 12, np.sin), ("cos", 1, 13, np.cos), ("tan", 1, 14, np.tan),
    ("asin", 1, 15, np.arcsin), ("acos", 1, 16, np.arccos), ("atan", 1, 17, np.arctan),
    ("atan2", 2, 18, np.arctan2), ("sinh", 1, 19, np.sinh), ("cosh", 1, 20, np.cosh), ("tanh", 1, 21, np.tanh),
    ("floor", 1, 22, np.floor), ("ceil", 1, 23, np.ceil), ("trunc", 1, 24, np.trunc),
    ("round", 1, 25, _round_half_away_wide), ("fmin", 2, 26, np.fmin), ("fmax", 2, 27, np.fmax),
    ("fmod", 2, 28, np.fmod),
)  # fmt: skip

_CR = ("add", "sub", "mul", "div", "sqrt", "fma", "floor", "ceil", "trunc", "round")
_EXACT0 = ("fmin", "fmax", "fmod")
_CL_F64_ULPS = {"rsqrt": 2, "exp": 3, "exp2": 3, "log": 3, "log2": 3, "pow": 16, "sin": 4, "cos": 4, "tan": 5,
                "asin": 4, "acos": 4, "atan": 5, "atan2": 6, "sinh": 4, "cosh": 4, "tanh": 5}  # fmt: skip
_CL_F16_ULPS = {"rsqrt": 1, "exp": 2, "exp2": 2, "log": 2, "log2": 2, "pow": 4, "sin": 2, "cos": 2, "tan": 2,
                "asin": 2, "acos": 2, "atan": 2, "atan2": 2, "sinh": 2, "cosh": 2, "tanh": 2}  # fmt: skip
_GLSL_CORE = ("add", "sub", "mul", "div", "sqrt", "rsqrt", "fma", "floor", "ceil", "trunc", "round", "fmin", "fmax")
_NOT_IN_GLSL_F64 = "not in GLSL for f64 (GLSL.std.450's {name} exists for 16- and 32-bit floats only)"


def _cl_limit(name: str, section: str, ulps: Mapping[str, float]) -> Limit:
    if name in _CR:
        return lim.cl_wide(section, "cr", cr=True)
    if name in _EXACT0:
        return lim.cl_wide(section, "0 (NaN → other)" if name != "fmod" else "0 (exact)", 0.0, cr=True)
    return lim.cl_wide(section, f"{ulps[name]:g}", float(ulps[name]))


def _vk_limit(name: str, fmt: Format) -> Limit | None:
    """The Vulkan limit on the type, None where GLSL has no such function for it (f64 transcendentals, fmod)."""
    section = lim.VULKAN_SECTION_F64 if fmt is FMT_F64 else lim.VULKAN_SECTION_F16
    if (fmt is FMT_F64 and name not in _GLSL_CORE) or name == "fmod":
        return None
    if name in ("add", "sub", "mul", "floor", "ceil", "trunc", "fmin", "fmax"):
        return lim.vk_wide(fmt, section, "cr", cr=True)
    if name == "round":
        return lim.vk_wide(fmt, section, "cr", cr=True, alternatives=lim.vk_round_halves)
    if name == "fma":
        return lim.vk_wide(fmt, section, "cr", cr=True, alternatives=lim.vk_fma_unfused_of(fmt))
    if name == "div":
        return lim.vk_wide(fmt, section, "2.5", 2.5, extra=lim.vk_div_domain_of(fmt))
    if name == "sqrt":
        return lim.vk_wide(fmt, section, "4.5ε (1/inversesqrt)", per_value=lim.vk_sqrt_ulps_of(fmt),
                           extra=lim.non_negative)  # fmt: skip
    if name == "rsqrt":
        return lim.vk_wide(fmt, section, "2", 2.0, extra=lim.positive)
    # float16 only from here
    if name in ("exp", "exp2"):
        return lim.vk_wide(fmt, section, "1+2|x|", per_value=lim.vk_exp_ulps_f16)
    if name in ("log", "log2"):
        return lim.vk_wide(fmt, section, "3; 2^-7 abs on [0.5,2]", per_value=lim.vk_log_ulps_f16,
                           extra=lim.vk_log_domain)  # fmt: skip
    if name in ("sin", "cos"):
        return lim.vk_wide(fmt, section, "2^-7 abs on [-π,π]", per_value=lim.vk_trig_ulps_f16,
                           extra=lim.vk_trig_domain, measure="abs")  # fmt: skip
    if name == "atan":
        return lim.vk_wide(fmt, section, "5", 5.0)
    if name == "atan2":
        return lim.vk_wide(fmt, section, "5", 5.0, extra=lim.vk_atan2_domain)
    if name == "pow":
        return lim.vk_wide(fmt, section, "exp2(y·log2 x)", per_value=lim.vk_pow_ulps_f16, extra=lim.vk_pow_domain)
    if name == "tan":
        return lim.vk_wide(fmt, section, "sin/cos", per_value=lim.vk_tan_ulps_f16, extra=lim.vk_tan_domain_f16)
    if name in ("asin", "acos"):
        text = "atan2(x,√(1-x²))" if name == "asin" else "atan2(√(1-x²),x)"
        return lim.vk_wide(fmt, section, text, per_value=lim.vk_asin_ulps_f16, extra=lim.vk_unit_domain)
    if name in ("sinh", "cosh"):
        text = "(eˣ-e⁻ˣ)/2" if name == "sinh" else "(eˣ+e⁻ˣ)/2"
        return lim.vk_wide(fmt, section, text, per_value=lim.vk_hyperbolic_ulps_f16,
                           extra=lim.vk_hyperbolic_domain_f16)  # fmt: skip
    if name == "tanh":
        return lim.vk_wide(fmt, section, "sinh/cosh", per_value=lim.vk_tanh_ulps_f16,
                           extra=lim.vk_hyperbolic_domain_f16)  # fmt: skip
    raise AssertionError(name)


def _glsl_missing(name: str, fmt: Format) -> str:
    if name == "fmod":
        return _FMOD_MISSING
    return _NOT_IN_GLSL_F64.format(name=name)


def wide_domain(name: str, fmt: Format) -> Domain:
    """The float32 function's domain draws carried to float64 or float16. float64: the low 29 significand
    bits of every odd-indexed value filled at random (even ones keep the float32 structure: halves for the
    rounding functions, integer exponents for pow); fma operands all filled, with c = -(a*b) rounded on even
    indices so fusing shows. float16: the draws rounded to float16 (fma: c = -(a*b) rounded to float16)."""
    base = _BY_NAME[name].domain if name in _BY_NAME else _fmod_domain

    def domain(rng: np.random.Generator, count: int) -> list[Any]:
        with np.errstate(all="ignore"):
            return _carried(rng, count)

    def _carried(rng: np.random.Generator, count: int) -> list[Any]:
        arrays = [np.asarray(x, dtype=np.float32) for x in base(rng, count)]
        even = np.arange(count) % 2 == 0
        if fmt is FMT_F16:
            out = [x.astype(np.float16) for x in arrays]
            if name == "fma":
                cancel = (-(out[0].astype(np.float64) * out[1].astype(np.float64))).astype(np.float16)
                out[2] = np.where(even, cancel, out[2]).astype(np.float16)
            return out
        out = []
        for k, x in enumerate(arrays):
            w = x.astype(np.float64)
            noise = rng.integers(0, 1 << 29, count, dtype=np.uint64)
            filled = (w.view(np.uint64) | noise).view(np.float64)
            fill = np.isfinite(w) & (w != 0) & (~even | (name == "fma" and k < 2))
            out.append(np.where(fill, filled, w))
        if name == "fma":
            with np.errstate(all="ignore"):
                out[2] = np.where(even, -(out[0] * out[1]), out[2])
        return out

    return domain


def _wide_functions(type_: str) -> tuple[WideFunction, ...]:
    fmt = FMT_F64 if type_ == "f64" else FMT_F16
    section = lim.OPENCL_SECTION_F64 if fmt is FMT_F64 else lim.OPENCL_SECTION_F16
    ulps = _CL_F64_ULPS if fmt is FMT_F64 else _CL_F16_ULPS
    out = []
    for name, arity, selector, spec_ref in _WIDE_SPECS:
        ref: Callable[..., Any] = spec_ref if spec_ref is not None else np.add
        rounded: Callable[..., Any] | None = None
        if name == "fma":
            if fmt is FMT_F64:
                ref, rounded = (lambda a, b, c: fma_f64(a, b, c)[0]), (lambda a, b, c: fma_f64(a, b, c)[1])
            else:
                ref = fma_exact_of(np.float16)
        elif fmt is FMT_F64 and name in ("add", "sub", "mul", "div", "sqrt"):
            rounded = _in_f64(ref)
        elif fmt is FMT_F64 and name in ("floor", "ceil", "trunc", "fmin", "fmax", "fmod"):
            rounded = _in_f64(ref)
        vk = _vk_limit(name, fmt)
        cl = _cl_limit(name, section, ulps)
        missing = "" if vk is not None else _glsl_missing(name, fmt)
        out.append(WideFunction(name, type_, arity, selector, ref, wide_domain(name, fmt), cl, vk, missing, rounded,
                                zero_sign=name not in ("fmin", "fmax")))  # fmt: skip
    return tuple(out)


_WIDE: dict[str, tuple[WideFunction, ...]] = {}


def wide_functions(type_: str) -> tuple[WideFunction, ...]:
    """The float64 (``f64``) or float16 (``f16``) functions, in a stable order."""
    if type_ not in _WIDE:
        _WIDE[type_] = _wide_functions(type_)
    return _WIDE[type_]


F64_FUNCTIONS: tuple[WideFunction, ...] = wide_functions("f64")
F16_FUNCTIONS: tuple[WideFunction, ...] = wide_functions("f16")
