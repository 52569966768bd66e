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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import limits as lim
from .limits import Limit
from .sweep import Domain, positive_binades, random_bits, uniform

__all__ = ["F32_FUNCTIONS", "F32Function", "fma_exact", "function"]

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
