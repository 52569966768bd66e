"""The f16/f64 numerics cases: the ulp definitions of both formats and the judge (no device), the float64
references against exact rationals and mpmath, numerics.support.f16/f64 on every real device, a few f64 and
f16 function cases on the first OpenCL and Vulkan device that claims the type, and a wrong f64 exp kernel
(exp computed in float32) that the suite must flag."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from accelcore.conformance.numerics import kernels
from accelcore.conformance.numerics.functions import F16_FUNCTIONS, F64_FUNCTIONS, fma_f64
from accelcore.conformance.numerics.judge import measure
from accelcore.conformance.numerics.sweep import wide_sweep
from accelcore.conformance.numerics.ulp import FMT_F16, FMT_F64, ulp, ulp_error
from accelcore.conformance.report import CaseStatus
from accelcore.conformance.suite import run
from accelcore.testing.pytest_support import real_device_params

F64 = {fn.name: fn for fn in F64_FUNCTIONS}
F16 = {fn.name: fn for fn in F16_FUNCTIONS}

# --------------------------------------------------------------------------- no device


def test_f64_ulp_at_the_subnormal_boundary_and_the_top() -> None:
    values = np.array([2.0**-1022, 2.0**-1022 - 2.0**-1074, 2.0**-1074, 1.0, 1.5, 2.0, float(np.finfo(np.float64).max)])
    got = ulp(values, FMT_F64)
    assert list(got) == [2.0**-1074, 2.0**-1074, 2.0**-1074, 2.0**-52, 2.0**-52, 2.0**-51, 2.0**971]
    beyond = np.array([np.longdouble(2.0) ** 1024 * 3], dtype=np.longdouble)  # past float64: the top binade's spacing
    assert ulp(beyond, FMT_F64)[0] == np.longdouble(2.0) ** 971
    # infinity for an exact value just past DBL_MAX is 1 ulp (infinity counts as 2^1024)
    just_past = np.array([np.longdouble(2.0) ** 1024 - np.longdouble(2.0) ** 971], dtype=np.longdouble)
    assert ulp_error(np.array([np.inf]), just_past, FMT_F64)[0] == 1.0


def test_f16_ulp_subnormals_and_max() -> None:
    values = np.array([2.0**-24, 2.0**-14 - 2.0**-24, 2.0**-14, 1.0, 2048.0, 65504.0, 65536.0])
    assert list(ulp(values, FMT_F16)) == [2.0**-24, 2.0**-24, 2.0**-24, 2.0**-10, 2.0, 32.0, 32.0]
    assert float(np.finfo(np.float16).max) == 65504.0 == FMT_F16.max


def test_f16_unary_sweep_is_every_bit_pattern() -> None:
    (values,) = wide_sweep("exp", 1, F16["exp"].domain, FMT_F16)
    assert len(values) == 1 << 16 and len(np.unique(values.view(np.uint16))) == 1 << 16


def test_f64_sweeps_are_deterministic_and_large() -> None:
    a = wide_sweep("atan2", 2, F64["atan2"].domain, FMT_F64)
    b = wide_sweep("atan2", 2, F64["atan2"].domain, FMT_F64)
    assert len(a[0]) >= 1 << 16 and len(a[0]) % 256 == 0
    assert all(np.array_equal(x.view(np.uint64), y.view(np.uint64)) for x, y in zip(a, b, strict=True))
    low_bits = a[0].view(np.uint64) & np.uint64((1 << 29) - 1)
    assert np.count_nonzero(low_bits) > len(a[0]) // 4  # full float64 significands, not float32 values


def test_fma_f64_against_fractions() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(size=3000) * 2.0 ** rng.integers(-60, 60, 3000)
    b = rng.normal(size=3000) * 2.0 ** rng.integers(-60, 60, 3000)
    c = np.where(np.arange(3000) % 2 == 0, -(a * b), rng.normal(size=3000))
    c[:40] = -(a[:40] * b[:40]) + np.spacing(a[:40] * b[:40]) / 2  # near halfway cases
    _, rounded = fma_f64(a, b, c)
    exact = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c, strict=True)]
    assert np.array_equal(rounded, np.array(exact))
    naive = a * b + c
    assert np.count_nonzero(naive != rounded) > 1000  # the sweep's cancellation values show fusing


def _f64_measure(name: str, got_of: Any, api: str = "opencl") -> Any:
    fn = F64[name]
    inputs = wide_sweep(name, fn.arity, fn.domain, FMT_F64)
    with np.errstate(all="ignore"):
        got = got_of(fn, inputs)
    limit = fn.opencl if api == "opencl" else fn.vulkan
    assert limit is not None
    return measure(fn, api, limit, inputs, got, flush_allowed=False)


def test_correct_f64_results_pass_and_one_ulp_off_fails_cr() -> None:
    assert _f64_measure("add", lambda fn, x: fn.rounded(x)).passed
    off = _f64_measure("add", lambda fn, x: np.nextafter(fn.rounded(x), np.inf))
    assert not off.passed and off.failures > 60_000 and "worst input" in off.summary()
    fma_unfused = _f64_measure("fma", lambda fn, x: x[0] * x[1] + x[2])
    assert not fma_unfused.passed  # OpenCL: fma must be fused
    assert _f64_measure("fma", lambda fn, x: x[0] * x[1] + x[2], "vulkan").passed  # Vulkan: inherited, unfused ok


def test_f64_exp_in_float32_precision_is_flagged() -> None:
    def float32_exp(fn: Any, inputs: Any) -> Any:
        with np.errstate(all="ignore"):
            return np.exp(inputs[0].astype(np.float32)).astype(np.float64)

    result = _f64_measure("exp", float32_exp)
    assert not result.passed and result.max_error > 1e6 and ">" in result.cell


def test_f16_one_ulp_off_passes_a_two_ulp_limit_and_fails_cr() -> None:
    for name, passes in (("exp", True), ("add", False)):
        fn = F16[name]
        inputs = wide_sweep(name, fn.arity, fn.domain, FMT_F16)
        right = fn.rounded(inputs)
        with np.errstate(all="ignore"):
            got = np.nextafter(right, np.float16(0)).astype(np.float16)  # 1 ulp toward zero: <= 1.5 ulp of exact
        got = np.where(np.isfinite(right) & np.isfinite(got), got, right).astype(np.float16)
        result = measure(fn, "opencl", fn.opencl, inputs, got, flush_allowed=True)
        assert result.passed is passes, result.summary()
    fn = F16["exp"]
    inputs = wide_sweep("exp", 1, fn.domain, FMT_F16)
    three_off = fn.rounded(inputs).view(np.uint16) + np.uint16(3)
    three = np.where(np.isfinite(fn.rounded(inputs)), three_off.view(np.float16), fn.rounded(inputs))
    assert not measure(fn, "opencl", fn.opencl, inputs, three.astype(np.float16), flush_allowed=True).passed


def test_f64_longdouble_references_against_mpmath() -> None:
    mpmath = pytest.importorskip("mpmath", reason="mpmath is in the [dev] extra")
    mpmath.mp.prec = 120
    functions = {"exp": mpmath.exp, "log": mpmath.log, "sin": mpmath.sin, "tan": mpmath.tan, "atan": mpmath.atan,
                 "cosh": mpmath.cosh, "pow": mpmath.power, "atan2": mpmath.atan2, "acos": mpmath.acos}  # fmt: skip
    worst = 0.0
    for name, mp_fn in functions.items():
        fn = F64[name]
        inputs = wide_sweep(name, fn.arity, fn.domain, FMT_F64)
        pick = np.linspace(0, len(inputs[0]) - 1, 400).astype(int)
        sample = [x[pick] for x in inputs]
        ref = fn.exact(sample)
        for i in range(len(pick)):
            args = [float(x[i]) for x in sample]
            if not all(math.isfinite(v) and v != 0 for v in args) or not np.isfinite(ref[i]) or ref[i] == 0:
                continue  # (mpmath has no signed zero: atan2(-0, y) would read as atan2(+0, y))
            try:
                exact = mp_fn(*[mpmath.mpf(v) for v in args])
            except (ValueError, ZeroDivisionError):
                continue
            if not isinstance(exact, mpmath.mpf) or not mpmath.isfinite(exact) or abs(exact) > 1e308:
                continue
            r = mpmath.mpf(np.format_float_scientific(ref[i], unique=True))  # the longdouble value exactly
            one = ulp(np.array([float(exact)]), FMT_F64)[0]
            worst = max(worst, float(abs(r - exact) / mpmath.mpf(float(one))))
    assert worst <= 2.0**-8, worst


# --------------------------------------------------------------------------- real devices


@pytest.mark.parametrize(("family", "entry"), real_device_params())
def test_support_cases_on_every_device(family: Any, entry: Any) -> None:
    setup = family.conformance(entry)
    ids = ["numerics.support.f64", "numerics.support.f16"]
    report = run(setup.factory, setup.target, setup.hooks, setup.numerics_cases, select=ids)
    for result in report.cases:
        assert result.status is CaseStatus.PASSED, f"{entry.id} {result.id}: {result.reason}"
        metrics = result.metrics
        assert metrics["claimed"] == metrics["usable"], metrics
        kind = result.id.rsplit(".", 1)[-1]
        assert metrics["cell"] == (f"{kind} ✓" if metrics["claimed"] else f"no {kind}")


def _first_with(provider: str, claim: str) -> tuple[Any, Any]:
    from accel_cli.inventory import discover  # type: ignore[import-not-found,unused-ignore]

    inventory = discover([provider])
    for entry in inventory.devices:
        setup = inventory.family_of(entry).conformance(entry)
        support = next(c for c in setup.numerics_cases if c.id == f"numerics.support.{claim}")
        report = run(setup.factory, setup.target, setup.hooks, [support], select=[support.id])
        if report.cases[0].metrics.get("claimed"):
            return entry, setup
    pytest.skip(f"no {provider} device here claims {claim}")


_FUNCTIONS = ["numerics.add.{t}", "numerics.fma.{t}", "numerics.sqrt.{t}", "numerics.floor.{t}", "numerics.div.{t}"]


@pytest.mark.parametrize("provider", ["opencl", "vulkan"])
@pytest.mark.parametrize("type_", ["f64", "f16"])
def test_function_cases_on_the_first_device_with_the_type(provider: str, type_: str) -> None:
    entry, setup = _first_with(provider, type_)
    ids = [f.format(t=type_) for f in _FUNCTIONS] + (
        [f"numerics.sin.{type_}", f"numerics.tan.{type_}"] if type_ == "f16" else []
    )
    report = run(setup.factory, setup.target, setup.hooks, setup.numerics_cases, select=ids)
    assert len(report.cases) == len(ids)
    for result in report.cases:
        assert result.status is CaseStatus.PASSED, f"{entry.id} {result.id}: {result.reason}"
        assert result.metrics["values"] >= 1 << 16 and result.metrics["judged"] > 0, result.id
        assert "≤" in result.metrics["cell"], result.metrics["cell"]


def test_glsl_f64_transcendentals_skip_with_the_reason() -> None:
    _entry, setup = _first_with("vulkan", "f64")
    report = run(setup.factory, setup.target, setup.hooks, setup.numerics_cases, select=["numerics.exp.f64"])
    (result,) = report.cases
    assert result.status is CaseStatus.SKIPPED and "not in GLSL for f64" in result.reason
    assert result.metrics["cell"] == "not in GLSL for f64"


def test_a_wrong_opencl_f64_exp_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    _entry, setup = _first_with("opencl", "f64")
    real = kernels.module_bytes

    def wrong(api: str, name: str) -> bytes:
        data = real(api, name)
        if api == "opencl" and name == "f64":
            return data.replace(b"v = exp(x);", b"v = (double)exp((float)x);")
        return data

    monkeypatch.setattr(kernels, "module_bytes", wrong)
    assert wrong("opencl", "f64") != real("opencl", "f64")
    report = run(setup.factory, setup.target, setup.hooks, setup.numerics_cases, select=["numerics.exp.f64"])
    (result,) = report.cases
    assert result.status is CaseStatus.FAILED and "OUTSIDE the limit 3" in result.reason
    assert result.metrics["failures"] > 30_000 and ">" in result.metrics["cell"]


@pytest.mark.parametrize(("provider", "type_"), [("opencl", "f64"), ("vulkan", "f16")])
def test_a_false_claim_either_way_fails_the_support_case(provider: str, type_: str) -> None:
    """The real device's kernels against a falsified claim: a usable type reported as absent fails, and
    (OpenCL) an absent type reported as present fails saying the kernel was refused or wrong."""
    from accelcore.conformance.numerics import numerics_cases

    _entry, setup = _first_with(provider, type_)
    claim = "fp64" if type_ == "f64" else "fp16"
    denied = {c.id: c for c in numerics_cases(provider, {claim: False})}[f"numerics.support.{type_}"]
    report = run(setup.factory, setup.target, setup.hooks, [denied], select=[denied.id])
    (result,) = report.cases
    assert result.status is CaseStatus.FAILED and "not claimed" in result.reason and "right results" in result.reason
    assert result.metrics["cell"] == f"{type_} unclaimed, works"
    if provider != "opencl":
        return
    from accel_cli.inventory import discover  # type: ignore[import-not-found,unused-ignore]

    inventory = discover(["opencl"])
    for other in inventory.devices:
        other_setup = inventory.family_of(other).conformance(other)
        support = next(c for c in other_setup.numerics_cases if c.id == "numerics.support.f16")
        probe = run(other_setup.factory, other_setup.target, other_setup.hooks, [support], select=[support.id])
        if probe.cases[0].metrics.get("claimed") is False:
            claimed = {c.id: c for c in numerics_cases("opencl", {"fp16": True})}["numerics.support.f16"]
            report = run(other_setup.factory, other_setup.target, other_setup.hooks, [claimed], select=[claimed.id])
            (result,) = report.cases
            assert result.status is CaseStatus.FAILED and "claimed, but" in result.reason, result.reason
            assert result.metrics["cell"] == "f16 claimed, broken"
            return
    pytest.skip("every OpenCL device here claims f16: no absent type to claim falsely")


_PRAGMA = b"#pragma OPENCL EXTENSION cl_khr_fp16 : enable"


def _half_as_float(real: Any) -> Any:
    """module_bytes with the OpenCL f16 kernel built without cl_khr_fp16, ``half`` defined as ``float``."""

    def patched(api: str, name: str) -> bytes:
        data: bytes = real(api, name)
        return data.replace(_PRAGMA, b"#define half float") if name == "f16" else data

    return patched


def test_an_unclaimed_type_accepted_and_computed_wrongly_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device that does not claim f16 but builds a kernel 'using' it and returns wrong results (here the
    half kernel with half defined as float, so 2048 + 1 = 2049): the claim is not false (the type is not
    usable), but the cell says the kernel was accepted with wrong results instead of a plain 'no f16'."""
    from accel_cli.inventory import discover  # type: ignore[import-not-found,unused-ignore]

    real = kernels.module_bytes
    assert _PRAGMA in real("opencl", "f16")
    inventory = discover(["opencl"])
    for entry in inventory.devices:
        setup = inventory.family_of(entry).conformance(entry)
        support = next(c for c in setup.numerics_cases if c.id == "numerics.support.f16")
        if run(setup.factory, setup.target, setup.hooks, [support], select=[support.id]).cases[0].metrics["claimed"]:
            continue
        monkeypatch.setattr(kernels, "module_bytes", _half_as_float(real))
        (result,) = run(setup.factory, setup.target, setup.hooks, [support], select=[support.id]).cases
        assert result.status is CaseStatus.PASSED, result.reason
        assert result.metrics["cell"] == "no f16 (accepted, wrong results)"
        assert "wrong results: add: " in result.reason and "are not float16 values" in result.reason
        return
    pytest.skip("every OpenCL device here claims f16: no unclaimed type to accept")


def test_a_claimed_f16_computed_in_float_fails_support_and_the_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The f16 kernels carry float buffers; a device that claims f16 but computes in float returns values
    that are not half values. The host must not round them into half (that would pass 2048 + 1 as 2048 and
    measure float arithmetic as 'correctly rounded half'): support fails 'claimed, broken' and a function
    case fails saying its results are not float16 values."""
    entry, setup = _first_with("opencl", "f16")
    real = kernels.module_bytes
    assert _PRAGMA in real("opencl", "f16")
    monkeypatch.setattr(kernels, "module_bytes", _half_as_float(real))
    ids = ["numerics.support.f16", "numerics.add.f16", "numerics.exp.f16"]
    report = run(setup.factory, setup.target, setup.hooks, setup.numerics_cases, select=ids)
    results = {c.id: c for c in report.cases}
    support = results["numerics.support.f16"]
    assert support.status is CaseStatus.FAILED and support.metrics["cell"] == "f16 claimed, broken", support.reason
    assert "are not float16 values" in support.reason
    for case_id in ids[1:]:
        result = results[case_id]
        assert result.status is CaseStatus.FAILED, f"{entry.id} {case_id}: {result.reason}"
        assert "results are not float16 values" in result.reason and result.metrics["cell"] == "not half"
