"""Measuring a device's results (float32, float16 or float64: the format is the result array's) against a
function's exact values and one API's limit.

Acceptable results, per value (the OpenCL C spec's section 7.4 rules; the Vulkan spec's the same way):

1. within the limit of the exact value (correctly rounded: bit-equal to its float32 rounding);
2. where flushing is allowed (Vulkan always; OpenCL when the device does not report CL_FP_DENORM):
   zero when the exact value is subnormal before rounding; a result within the limit of the exact
   value computed with every subnormal operand flushed to zero; zero when that one is subnormal;
3. an alternative the limit allows (Vulkan: an unfused fma, either direction of a half in round).

A NaN exact value needs a NaN (any payload). On OpenCL a zero must have the exact value's sign
(C99 Annex F, section 7.5); Vulkan ignores the sign of zero. Values outside the limit's domain are
measured but not judged (reported as ``outside``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .limits import Limit
from .ulp import FMT_F32, Format, bits_of, flush_subnormals, is_subnormal, same_value, ulp_error

__all__ = ["Measurement", "describe", "describe_f32", "measure"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


def describe(value: Any, fmt: Format = FMT_F32) -> str:
    """``repr`` of a value of ``fmt`` with its bit pattern: ``-3.0 (-0x1.8p+1, 0xc0400000)``."""
    v = fmt.dtype(value)
    bits = int(bits_of(np.array([v], dtype=fmt.dtype), fmt)[0])
    if math.isnan(float(v)):
        return f"nan (0x{bits:0{fmt.width}x})"
    return f"{float(v)!r} ({float(v).hex()}, 0x{bits:0{fmt.width}x})"


def describe_f32(value: Any) -> str:
    """``repr`` of a float32 with its bit pattern: ``-3.0 (-0x1.8p+1, 0xc0400000)``."""
    return describe(value, FMT_F32)


def _ulps(value: float) -> str:
    return "inf ulp" if math.isinf(value) else f"{value:.3g} ulp"


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


@dataclass
class Measurement:
    """What one launch measured: the worst value, the counts, the verdict."""

    function: str
    api: str
    limit: Limit
    values: int
    judged: int
    failures: int
    max_error: float
    worst_index: int
    worst_inputs: tuple[str, ...]
    worst_expected: str
    worst_got: str
    worst_error: float
    worst_limit: float
    outside: int
    outside_max_error: float
    flushed: int = 0
    """Judged values accepted only through a flush-to-zero reading."""
    alternative: int = 0
    """Judged values accepted only through an alternative (unfused fma, the other half of round)."""
    max_abs_error: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No judged value outside the limit, and at least one value judged (an empty sweep, or one whose
        every value lies outside the promise's domain, measured nothing: it does not pass)."""
        return self.failures == 0 and self.judged > 0

    @property
    def cell(self) -> str:
        """The matrix cell text: ``2.1 ulp ≤ 4``, ``0.5 ulp ≤ cr``, ``9.1e-05 abs ≤ 2^-11``..."""
        if self.judged == 0:
            return f"nothing judged ({self.values} values, {self.outside} outside the domain)"
        relation = "≤" if self.passed else ">"
        if self.limit.measure == "abs":
            text = f"{self.max_abs_error:.2g} abs {relation} {self.limit.text}"
        elif self.limit.per_value is not None:
            # a limit that varies per value: the worst value's error against its own limit
            text = f"{_ulps(self.worst_error)} {relation} {self.worst_limit:.3g} ({self.limit.text})"
        else:
            text = f"{_ulps(self.max_error)} {relation} {self.limit.text}"
        if self.flushed:
            text += ", FTZ"
        if not self.passed:
            text += f" ({self.failures} values)"
        return text

    def summary(self) -> str:
        if self.judged == 0:
            return (
                f"{self.function} on {self.api}: NOTHING JUDGED: none of the {self.values} values is inside the "
                f"domain of the limit {self.limit.text} ({self.limit.section}); a case that measured nothing fails"
            )
        verdict = "within" if self.passed else "OUTSIDE"
        if self.limit.measure == "abs":
            # an absolute-error promise: ulps near a zero result are huge and say nothing about the verdict
            error = f"max absolute error {self.max_abs_error:.3g}"
        elif self.limit.per_value is not None:
            # a per-value limit: the largest error in ulps may sit where the limit is larger still
            error = f"worst error {self.worst_error:.4g} ulp against its limit there {self.worst_limit:.4g}"
        else:
            error = f"max error {self.max_error:.4g} ulp"
        line = (
            f"{self.function} on {self.api}: {error} over {self.judged} judged values "
            f"of {self.values}, {verdict} the limit {self.limit.text} ({self.limit.section})"
        )
        if self.worst_index >= 0:
            line += (
                f"; worst input {', '.join(self.worst_inputs)}: expected {self.worst_expected}, got {self.worst_got} "
                f"({self.worst_error:.4g} ulp, limit there {self.worst_limit:.4g})"
            )
        if not self.passed:
            line += f"; {self.failures} values outside the limit"
        if self.flushed:
            line += f"; {self.flushed} values accepted as flushed to zero"
        if self.alternative:
            line += f"; {self.alternative} values accepted through an allowed alternative"
        if self.outside:
            line += (
                f"; {self.outside} values outside the promise's domain "
                f"(max error there {self.outside_max_error:.4g} ulp)"
            )
        for note in self.notes:
            line += f"; {note}"
        return line

    def metrics(self) -> dict[str, Any]:
        return {
            "kind": "numerics",
            "function": self.function,
            "api": self.api,
            "cell": self.cell,
            "limit": self.limit.text,
            "section": self.limit.section,
            "correctly_rounded": self.limit.cr,
            "max_ulp": _json_number(self.max_error),
            "max_abs": _json_number(self.max_abs_error),
            "values": self.values,
            "judged": self.judged,
            "failures": self.failures,
            "flushed": self.flushed,
            "alternative": self.alternative,
            "outside_domain": self.outside,
            "outside_domain_max_ulp": _json_number(self.outside_max_error),
            "worst": {
                "index": self.worst_index,
                "inputs": list(self.worst_inputs),
                "expected": self.worst_expected,
                "got": self.worst_got,
                "ulp": _json_number(self.worst_error),
                "limit_ulp": _json_number(self.worst_limit),
            },
        }


def _accept(
    got: Any, exact: Any, bound: F64, limit: Limit, zero_sign: bool, fmt: Format = FMT_F32, rounded: Any = None
) -> tuple[npt.NDArray[np.bool_], Any]:
    err = ulp_error(got, exact, fmt)
    if rounded is None:
        with np.errstate(invalid="ignore", over="ignore"):
            rounded = exact.astype(fmt.dtype)
    if limit.cr:
        ok = same_value(got, rounded, zero_sign=zero_sign)
    else:
        ok = err <= bound
        ok &= ~(np.isnan(exact) & ~np.isnan(got))
        if zero_sign:
            ok &= ~((exact == 0) & (got == 0) & (np.signbit(exact) != np.signbit(got)))
    return ok, err


def _rounded(fn: Any, inputs: Sequence[Any], exact: Any, fmt: Format) -> Any:
    """The correctly rounded result: the function's own exact rounding when it has one (float64: the
    longdouble value may round twice), else ``exact`` rounded once."""
    rounded = getattr(fn, "rounded", None)
    if rounded is not None:
        return rounded(inputs)
    with np.errstate(invalid="ignore", over="ignore"):
        return exact.astype(fmt.dtype)


def measure(fn: Any, api: str, limit: Limit, inputs: Sequence[Any], got: Any, *, flush_allowed: bool) -> Measurement:
    """Judge ``got`` (one result per input, float32/float16/float64) for ``fn`` on ``api`` (``opencl`` or
    ``vulkan``). ``fn`` has ``name``, ``zero_sign``, ``fmt`` (default float32), ``exact(inputs)`` (in the
    format's wide type) and optionally ``rounded(inputs)`` (the correctly rounded results)."""
    zero_sign = api == "opencl" and fn.zero_sign
    fmt: Format = getattr(fn, "fmt", FMT_F32)
    got = np.asarray(got, dtype=fmt.dtype)
    inputs = [np.asarray(x, dtype=fmt.dtype) for x in inputs]
    exact = np.asarray(fn.exact(inputs), dtype=fmt.wide)
    with np.errstate(all="ignore"):
        wide = [x.astype(fmt.wide) for x in inputs]
        domain = np.ones(exact.shape, dtype=bool) if limit.domain is None else limit.domain(wide, exact)
        rounded = _rounded(fn, inputs, exact, fmt)
        ok, err = _accept(got, exact, limit.bound(wide, exact), limit, zero_sign, fmt, rounded)
        base_ok = ok.copy()
        flushed_ok = np.zeros(exact.shape, dtype=bool)
        if flush_allowed:
            # a zero for a subnormal exact value is the allowed flush: no error, whatever its ulp count (else
            # a flushed exp(-98) shows as '197 ulp ≤ 199' while the real worst error is elsewhere)
            zero_for_subnormal = is_subnormal(exact, fmt) & (got == 0)
            result_flushed = zero_for_subnormal & ~ok
            err = np.where(zero_for_subnormal, 0.0, err)
            flushed_ok |= result_flushed
            ok = ok | result_flushed
            has_subnormal = np.zeros(exact.shape, dtype=bool)
            for x in inputs:
                has_subnormal |= is_subnormal(x, fmt)
            if has_subnormal.any():
                flushed_inputs = [flush_subnormals(x, fmt) for x in inputs]
                flushed_exact = np.asarray(fn.exact(flushed_inputs), dtype=fmt.wide)
                wide_flushed = [x.astype(fmt.wide) for x in flushed_inputs]
                flushed_rounded = _rounded(fn, flushed_inputs, flushed_exact, fmt)
                ok_f, err_f = _accept(got, flushed_exact, limit.bound(wide_flushed, flushed_exact), limit, zero_sign,
                                      fmt, flushed_rounded)  # fmt: skip
                accepted = ok_f | (is_subnormal(flushed_exact, fmt) & (got == 0))
                if limit.domain is not None:  # flushed operands the promise does not cover: anything goes
                    accepted |= ~limit.domain(wide_flushed, flushed_exact)
                newly = has_subnormal & accepted & ~ok
                err = np.where(newly, np.where(ok_f & np.isfinite(err_f), err_f, 0.0), err)
                flushed_ok |= newly
                ok = ok | newly
        alternative_ok = np.zeros(exact.shape, dtype=bool)
        for other in limit.alternatives(wide) if limit.alternatives is not None else []:
            other = np.asarray(other, dtype=fmt.wide)
            ok_a, err_a = _accept(got, other, limit.bound(wide, other), limit, zero_sign, fmt)
            newly = ok_a & ~ok
            err = np.where(newly, err_a, err)
            alternative_ok |= newly
            ok = ok | newly
        bound = limit.bound(wide, exact)
        abs_err = np.abs(got.astype(fmt.wide) - exact).astype(np.float64)
    err = np.asarray(err, dtype=np.float64)
    judged = domain
    failing = judged & ~ok
    # The worst value: the largest error relative to its limit (for a fixed limit, the largest error).
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, err / bound, np.where(err > 0, np.inf, 0.0))
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    ratio = np.where(np.isinf(bound), 0.0, ratio)  # no finite bound there: never the worst value
    ratio = np.where((flushed_ok | alternative_ok) & ~base_ok, 0.0, ratio)  # accepted by another reading
    if failing.any():
        worst = int(np.flatnonzero(failing)[np.argmax(ratio[failing])])
    elif judged.any():
        worst = int(np.flatnonzero(judged)[np.argmax(ratio[judged])])
    else:
        worst = -1
    outside = ~domain
    with np.errstate(all="ignore"):
        return _measurement(fn, api, limit, inputs, got, rounded, err, bound, judged, failing, worst, outside,
                            abs_err, flushed_ok & ~base_ok, alternative_ok, fmt)  # fmt: skip


def _measurement(
    fn: Any,
    api: str,
    limit: Limit,
    inputs: Sequence[Any],
    got: Any,
    rounded: Any,
    err: F64,
    bound: F64,
    judged: npt.NDArray[np.bool_],
    failing: npt.NDArray[np.bool_],
    worst: int,
    outside: npt.NDArray[np.bool_],
    abs_err: F64,
    flushed: npt.NDArray[np.bool_],
    alternative_ok: npt.NDArray[np.bool_],
    fmt: Format = FMT_F32,
) -> Measurement:
    finite_abs = np.where(judged & np.isfinite(abs_err), abs_err, 0.0)
    measurement = Measurement(
        function=fn.name,
        api=api,
        limit=limit,
        values=int(got.size),
        judged=int(judged.sum()),
        failures=int(failing.sum()),
        max_error=float(err[judged].max()) if judged.any() else 0.0,
        worst_index=worst,
        worst_inputs=tuple(describe(x[worst], fmt) for x in inputs) if worst >= 0 else (),
        worst_expected=describe(rounded[worst], fmt) if worst >= 0 else "",
        worst_got=describe(got[worst], fmt) if worst >= 0 else "",
        worst_error=float(err[worst]) if worst >= 0 else 0.0,
        worst_limit=float(bound[worst]) if worst >= 0 else 0.0,
        outside=int(outside.sum()),
        outside_max_error=float(np.nan_to_num(err[outside], posinf=np.inf).max()) if outside.any() else 0.0,
        flushed=int((judged & flushed).sum()),
        alternative=int((judged & alternative_ok).sum()),
        max_abs_error=float(finite_abs.max()) if judged.any() else 0.0,
    )
    return measurement
