"""The float64 references of the transcendental functions against mpmath at 100 bits, on a sample of
every sweep: the argument in accelcore/conformance/numerics/functions.py (within a few float64 ulps,
so within 2^-27 float32 ulp) is checked, not assumed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accelcore.conformance.numerics.functions import function
from accelcore.conformance.numerics.sweep import sweep
from accelcore.conformance.numerics.ulp import ulp

mpmath = pytest.importorskip("mpmath", reason="mpmath (extra [dev]) checks the float64 references")

_MP = {
    "exp": lambda x: mpmath.exp(x),
    "exp2": lambda x: mpmath.power(2, x),
    "log": lambda x: mpmath.log(x),
    "log2": lambda x: mpmath.log(x, 2),
    "sin": lambda x: mpmath.sin(x),
    "cos": lambda x: mpmath.cos(x),
    "tan": lambda x: mpmath.tan(x),
    "asin": lambda x: mpmath.asin(x),
    "acos": lambda x: mpmath.acos(x),
    "atan": lambda x: mpmath.atan(x),
    "sinh": lambda x: mpmath.sinh(x),
    "cosh": lambda x: mpmath.cosh(x),
    "tanh": lambda x: mpmath.tanh(x),
    "pow": lambda x, y: mpmath.power(x, y),
    "atan2": lambda x, y: mpmath.atan2(x, y),
}
SAMPLE = 1500
WORST_F32_ULP = 2.0**-26


@pytest.mark.parametrize("name", sorted(_MP))
def test_float64_reference_is_within_a_tiny_fraction_of_a_float32_ulp(name: str) -> None:
    fn = function(name)
    inputs = sweep(fn.name, fn.arity, fn.domain)
    exact = fn.exact(inputs)
    picks = np.random.default_rng(1).choice(len(exact), SAMPLE, replace=False)
    worst = 0.0
    with mpmath.workprec(100):
        for i in picks.tolist():
            args = [float(x[i]) for x in inputs]
            value = float(exact[i])
            if not math.isfinite(value) or not all(math.isfinite(a) for a in args) or abs(value) > 3e38:
                continue
            if value == 0.0 or abs(value) < 2.0**-126:
                continue
            if name == "pow" and args[0] < 0:
                continue  # integer y only: real results, numpy and mpmath agree on the sign
            truth = _MP[name](*(mpmath.mpf(a) for a in args))
            if isinstance(truth, mpmath.mpc):
                continue
            error = abs(float((mpmath.mpf(value) - truth) / mpmath.mpf(float(ulp(np.array([value]))[0]))))
            worst = max(worst, error)
    assert worst <= WORST_F32_ULP, f"{name}: the float64 reference is {worst:.3g} float32 ulp off somewhere"
