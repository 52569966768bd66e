"""The numerics judge without a device: wrong implementations and wrong references are flagged,
the flush-to-zero and alternative rules accept exactly what the specs allow, the sweeps are what
docs/numerics.md says."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from accelcore.conformance.numerics.functions import F32_FUNCTIONS, fma_exact, function
from accelcore.conformance.numerics.judge import measure
from accelcore.conformance.numerics.sweep import EDGE_VALUES, sweep
from accelcore.conformance.numerics.ulp import f32_from_bits, ulp, ulp_error


def _inputs(name: str) -> list[np.ndarray]:
    fn = function(name)
    return sweep(fn.name, fn.arity, fn.domain)


def _correct(name: str, inputs: list[np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return function(name).exact(inputs).astype(np.float32)


@pytest.mark.parametrize("api", ["opencl", "vulkan"])
def test_exp_from_a_two_term_polynomial_is_flagged(api: str) -> None:
    fn = function("exp")
    inputs = _inputs("exp")
    with np.errstate(all="ignore"):
        x = inputs[0].astype(np.float64)
        wrong = (1.0 + x + 0.5 * x * x).astype(np.float32)  # a 2-term Taylor polynomial of exp
    limit = fn.opencl if api == "opencl" else fn.vulkan
    assert limit is not None
    result = measure(fn, api, limit, inputs, wrong, flush_allowed=True)
    assert not result.passed
    assert result.failures > len(x) // 2
    assert ">" in result.cell and "OUTSIDE" in result.summary()
    assert result.worst_inputs and result.worst_expected != result.worst_got


def test_the_correct_results_pass_every_opencl_limit() -> None:
    for fn in F32_FUNCTIONS:
        inputs = sweep(fn.name, fn.arity, fn.domain)
        result = measure(fn, "opencl", fn.opencl, inputs, _correct(fn.name, inputs), flush_allowed=False)
        assert result.passed, result.summary()
        assert result.max_error <= 0.5 + 1e-9, result.summary()


@pytest.mark.parametrize("name", ["add", "sub", "mul", "fma", "floor", "round", "fmod"])
def test_one_ulp_off_fails_a_correctly_rounded_function(name: str) -> None:
    """A result (or, the same thing seen from the other side, a host reference) one ulp off on one
    value is a failure of a correctly rounded function, naming that value."""
    fn = function(name)
    inputs = _inputs(name)
    got = _correct(name, inputs)
    finite = np.flatnonzero(np.isfinite(got) & (np.abs(got) > 1))
    index = int(finite[len(finite) // 2])
    got[index] = np.nextafter(got[index], np.float32(np.inf))
    result = measure(fn, "opencl", fn.opencl, inputs, got, flush_allowed=False)
    assert not result.passed and result.failures == 1
    assert result.worst_index == index


def test_one_ulp_off_is_within_a_three_ulp_limit_and_four_ulps_is_not() -> None:
    fn = function("exp")
    inputs = _inputs("exp")
    got = _correct("exp", inputs)
    finite = np.isfinite(got) & (got > 1e-30) & (got < 1e30)
    one_off = np.where(finite, np.nextafter(got, np.float32(np.inf)), got).astype(np.float32)
    assert measure(fn, "opencl", fn.opencl, inputs, one_off, flush_allowed=False).passed
    four_off = one_off
    for _ in range(3):
        four_off = np.where(finite, np.nextafter(four_off, np.float32(np.inf)), four_off).astype(np.float32)
    result = measure(fn, "opencl", fn.opencl, inputs, four_off, flush_allowed=False)
    assert not result.passed and result.max_error > 3.5  # 4 steps: 4 ulp, more across a binade edge


def test_flushed_subnormal_results_pass_only_where_flushing_is_allowed() -> None:
    fn = function("mul")
    inputs = _inputs("mul")
    got = _correct("mul", inputs)
    subnormal = (got != 0) & (np.abs(got) < np.float32(2.0**-126))
    assert subnormal.any()
    flushed = np.where(subnormal, np.copysign(np.float32(0), got), got).astype(np.float32)
    assert not measure(fn, "opencl", fn.opencl, inputs, flushed, flush_allowed=False).passed
    result = measure(fn, "opencl", fn.opencl, inputs, flushed, flush_allowed=True)
    assert result.passed and result.flushed > 0 and "FTZ" in result.cell


def test_a_flushed_result_within_the_bound_is_not_the_worst_value() -> None:
    """exp(x) for x near -103.5 is a few 2^-149: a zero there is 1-3 ulp from the exact value, inside exp's
    3-ulp limit, yet it is a flush, not an approximation error. Where flushing is allowed it counts 0 ulp,
    so the reported worst value is the real worst error (here: none beyond the correctly rounded 0.5)."""
    fn = function("exp")
    inputs = _inputs("exp")
    got = _correct("exp", inputs)
    with np.errstate(all="ignore"):
        exact = fn.exact(inputs)
    tiny = (exact > 0) & (exact < 3.5 * 2.0**-149)
    assert tiny.any()
    flushed = np.where(tiny, np.float32(0), got).astype(np.float32)
    allowed = measure(fn, "opencl", fn.opencl, inputs, flushed, flush_allowed=True)
    assert allowed.passed and allowed.max_error <= 0.5 + 1e-9 and allowed.worst_error <= 0.5 + 1e-9
    kept = measure(fn, "opencl", fn.opencl, inputs, flushed, flush_allowed=False)  # CL_FP_DENORM: an error
    assert kept.max_error > 1.0


def test_vulkan_accepts_an_unfused_fma_and_opencl_does_not() -> None:
    fn = function("fma")
    inputs = _inputs("fma")
    with np.errstate(all="ignore"):
        a, b, c = (x.astype(np.float64) for x in inputs)
        unfused = ((a * b).astype(np.float32).astype(np.float64) + c).astype(np.float32)
    assert fn.vulkan is not None
    vk = measure(fn, "vulkan", fn.vulkan, inputs, unfused, flush_allowed=True)
    assert vk.passed and vk.alternative > 1000
    assert not measure(fn, "opencl", fn.opencl, inputs, unfused, flush_allowed=True).passed


def test_nan_must_give_nan_and_zero_signs_count_on_opencl() -> None:
    fn = function("sin")
    inputs = _inputs("sin")
    got = _correct("sin", inputs)
    nan_at = int(np.flatnonzero(np.isnan(got))[0])
    broken = got.copy()
    broken[nan_at] = 0.0
    assert not measure(fn, "opencl", fn.opencl, inputs, broken, flush_allowed=False).passed
    negative_zero = int(np.flatnonzero((inputs[0] == 0) & np.signbit(inputs[0]))[0])
    signless = got.copy()
    signless[negative_zero] = 0.0  # sin(-0) must be -0 (C99 Annex F)
    assert not measure(fn, "opencl", fn.opencl, inputs, signless, flush_allowed=False).passed
    assert fn.vulkan is not None
    assert measure(fn, "vulkan", fn.vulkan, inputs, signless, flush_allowed=True).passed


def test_vulkan_sin_is_judged_in_absolute_error_on_minus_pi_to_pi_only() -> None:
    fn = function("sin")
    assert fn.vulkan is not None
    inputs = _inputs("sin")
    with np.errstate(all="ignore"):
        x = inputs[0].astype(np.float64)
        close = (np.sin(x) + np.where(np.abs(x) <= np.pi, 2.0**-12, 1.0)).astype(np.float32)
    result = measure(fn, "vulkan", fn.vulkan, inputs, close, flush_allowed=True)
    assert result.passed and result.outside > 0 and "abs" in result.cell
    with np.errstate(all="ignore"):
        off = (np.sin(x) + 2.0**-10).astype(np.float32)
    assert not measure(fn, "vulkan", fn.vulkan, inputs, off, flush_allowed=True).passed


def test_a_sweep_that_judges_nothing_does_not_pass() -> None:
    """No value inside the promise's domain (Vulkan sin outside [-pi, pi]) or no value at all: nothing was
    measured, so the verdict is a failure that says so, never a pass."""
    fn = function("sin")
    assert fn.vulkan is not None
    outside = [np.linspace(4.0, 1e4, 4096).astype(np.float32)]
    with np.errstate(all="ignore"):
        right = np.sin(outside[0].astype(np.float64)).astype(np.float32)
    result = measure(fn, "vulkan", fn.vulkan, outside, right, flush_allowed=True)
    assert result.judged == 0 and result.outside == 4096 and result.failures == 0
    assert not result.passed
    assert result.cell == "nothing judged (4096 values, 4096 outside the domain)"
    assert "NOTHING JUDGED" in result.summary()
    empty = measure(function("add"), "opencl", function("add").opencl, [np.zeros(0, np.float32)] * 2,
                    np.zeros(0, np.float32), flush_allowed=False)  # fmt: skip
    assert empty.values == 0 and not empty.passed and "nothing judged" in empty.cell


def test_a_per_value_limit_reports_the_worst_value_against_its_own_limit() -> None:
    """Vulkan log on [0.5, 2] is absolute (2^-21): near log(1) = 0 that is millions of ulps, so the summary
    states the worst value's error against the limit there, not a misleading max in ulps."""
    fn = function("log")
    assert fn.vulkan is not None
    inputs = _inputs("log")
    with np.errstate(all="ignore"):
        x = inputs[0].astype(np.float64)
        off = (np.log(x) + np.where((x >= 0.5) & (x <= 2.0), 2.0**-22, 0.0)).astype(np.float32)  # half the bound
    result = measure(fn, "vulkan", fn.vulkan, inputs, off, flush_allowed=True)
    assert result.passed and result.max_error > 1000, result.summary()  # huge in ulps near log(1) = 0
    assert result.worst_error <= result.worst_limit
    assert f"worst error {result.worst_error:.4g} ulp against its limit there {result.worst_limit:.4g}" in (
        result.summary()
    )
    assert result.summary().startswith("log on vulkan: worst error ")


def test_every_sweep_is_large_deterministic_and_has_the_edges() -> None:
    for fn in F32_FUNCTIONS:
        first = sweep(fn.name, fn.arity, fn.domain)
        again = sweep(fn.name, fn.arity, fn.domain)
        assert len(first) == fn.arity and len(first[0]) >= 1 << 16 and len(first[0]) % 256 == 0
        assert all(np.array_equal(a.view(np.uint32), b.view(np.uint32)) for a, b in zip(first, again, strict=True))
        bits = set(first[0].view(np.uint32).tolist())
        assert set(EDGE_VALUES.view(np.uint32).tolist()) <= bits
    with np.errstate(invalid="ignore"):  # the signalling NaN pattern
        special = EDGE_VALUES.astype(np.float64)
    assert np.isnan(special).any() and np.isinf(special).any() and (special == 0).sum() == 2
    assert (np.abs(special[np.isfinite(special)]) >= 1e30).any()  # large trig arguments, near overflow
    assert ((special != 0) & (np.abs(special) < 2.0**-126)).any()  # subnormals


def test_fma_reference_is_exact() -> None:
    rng = np.random.default_rng(5)
    a = f32_from_bits(rng.integers(0x30000000, 0x50000000, 4000, dtype=np.uint64))
    b = f32_from_bits(rng.integers(0x30000000, 0x50000000, 4000, dtype=np.uint64))
    c = (-(a.astype(np.float64) * b.astype(np.float64))).astype(np.float32)  # heavy cancellation
    c[::2] = f32_from_bits(rng.integers(0x20000000, 0x60000000, 2000, dtype=np.uint64))
    got = fma_exact(a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)).astype(np.float32)
    for x, y, z, r in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist(), strict=True):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        below, above = np.float32(r), np.float32(r)
        # r is correctly rounded when no float32 is closer to the exact value
        for neighbour in (np.nextafter(below, np.float32(-np.inf)), np.nextafter(above, np.float32(np.inf))):
            assert abs(Fraction(float(neighbour)) - exact) >= abs(Fraction(r) - exact)


def test_ulp_follows_the_opencl_definition() -> None:
    values = np.array([1.0, 1.5, 2.0, 2.0**-126, 2.0**-130, 0.0, 3.0e38, 2.0**128, np.inf], dtype=np.float64)
    expected = [2.0**-23, 2.0**-23, 2.0**-22, 2.0**-149, 2.0**-149, 2.0**-149, 2.0**104, 2.0**104, 2.0**104]
    assert ulp(values).tolist() == expected
    fmax = np.float32(np.finfo(np.float32).max)
    assert ulp_error(np.array([np.inf], np.float32), np.array([float(fmax)]))[0] == 1.0
    assert ulp_error(np.array([fmax], np.float32), np.array([1e39]))[0] == np.inf
    assert ulp_error(np.array([np.nan], np.float32), np.array([np.nan]))[0] == 0.0
