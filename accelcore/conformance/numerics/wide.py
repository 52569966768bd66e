"""The f16 and f64 cases of the numerics suite: ``numerics.support.<type>`` (does the device claim the
type, and does a kernel using it build and run with right results) and the float functions on the type
where the device claims it (``numerics.<function>.f64`` / ``.f16``).

One kernel per type and API (``numerics_<type>.cl``: kernel ``<type>_fn``, the function chosen by an
``fn`` buffer; ``numerics_<type>.comp``: FN specialization constant), so an OpenCL driver compiles one
program per device for every case of the type (the binary cache serves the others). float16 kernels take
and return float buffers (every input a half value, so both conversions are exact) and compute in half.

Claims (``claims``): ``fp64`` / ``fp16`` (OpenCL: cl_khr_fp64 / cl_khr_fp16, a double FP config, the
OpenCL 3.0 feature __opencl_c_fp64; Vulkan: shaderFloat64 / shaderFloat16), and on OpenCL
``f64_denormals`` / ``f16_denormals`` (CL_FP_DENORM in CL_DEVICE_DOUBLE_FP_CONFIG / HALF_FP_CONFIG).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...contract.errors import BackendError
from ..case import CaseContext, CaseFailed, ConformanceCase, describe_exception
from .exact import run_once
from .functions import WideFunction, wide_functions
from .judge import describe, measure
from .kernels import OPENCL, VULKAN, conclude
from .sweep import wide_sweep
from .ulp import FMT_F16, FMT_F64, Format

__all__ = ["SUPPORT_PROBES", "WIDE_TYPES", "run_wide", "wide_cases"]

WIDE_TYPES = ("f64", "f16")
LONGDOUBLE_EXTENDED = int(np.finfo(np.longdouble).nmant) >= 63
"""numpy's longdouble is x86 80-bit extended (64-bit significand): the f64 transcendental references need it."""
_F64_EXACT_IN_FLOAT64 = ("add", "sub", "mul", "div", "sqrt", "floor", "ceil", "trunc", "fmin", "fmax", "fmod")
"""f64 functions whose verdict needs only float64 arithmetic (the rest use longdouble: transcendentals,
rsqrt, fma's estimate, round's x + 0.5)."""
_CLAIM = {"f64": "fp64", "f16": "fp16"}
_WHAT = {
    "f64": {OPENCL: "cl_khr_fp64 / a double FP config / __opencl_c_fp64", VULKAN: "shaderFloat64"},
    "f16": {OPENCL: "cl_khr_fp16", VULKAN: "shaderFloat16"},
}

SUPPORT_PROBES: dict[str, tuple[tuple[str, Sequence[float], Sequence[float], Sequence[float]], ...]] = {
    # (function, a, b, expected): results the type gives and float32 (or a wider type) would not
    "f64": (
        ("add", (1.0, 2.0**52, 1e300), (2.0**-40, 0.5, 1e300), (1.0 + 2.0**-40, 2.0**52, 2e300)),
        ("div", (1.0, 2.0, 1.0), (3.0, 3.0, 10.0), (1.0 / 3.0, 2.0 / 3.0, 0.1)),
    ),
    "f16": (
        ("add", (2048.0, 1.0, 1.0), (1.0, 2.0**-11, 2.0**-10), (2048.0, 1.0, 1.0 + 2.0**-10)),
        ("div", (1.0, 2.0, 1.0), (3.0, 3.0, 10.0), (0.333251953125, 0.66650390625, 0.0999755859375)),
    ),
}
"""Per type, launches whose right results need the type itself: 1 + 2^-40 (float32 gives 1), 1/3 rounded to
float64; in half 2048 + 1 = 2048 and 1 + 2^-11 = 1 (ties to even; float32 keeps both), 1/3 = 0x3555. The f16
results arrive in float buffers: a value that is not a float16 value is a problem in itself (:func:`not_half`),
never rounded into half on the host."""


def _fmt(type_: str) -> Format:
    return FMT_F64 if type_ == "f64" else FMT_F16


def not_half(raw: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """The float carrier values of an f16 kernel that are not float16 values (a half result converts to float
    exactly, so such a value was computed in a wider type; rounding it on the host would hide that)."""
    with np.errstate(all="ignore"):
        back = raw.astype(np.float16).astype(np.float32)
    same = (back.view(np.uint32) == raw.view(np.uint32)) | (np.isnan(raw) & np.isnan(back))
    return np.asarray(~same)


def run_wide(
    ctx: CaseContext, api: str, type_: str, selector: int, inputs: Sequence[npt.NDArray[Any]], what: str
) -> tuple[npt.NDArray[Any], str]:
    """One launch of the type's kernel with function ``selector`` over ``inputs`` (1-3 arrays of the type);
    the results as an array of the type, and for f16 a description of the carrier values that are not
    float16 values (empty when every one is: see :func:`not_half`)."""
    fmt = _fmt(type_)
    count = len(inputs[0])
    carrier = np.float64 if fmt is FMT_F64 else np.float32  # f16 kernels take and give float buffers
    operands = [np.asarray(x, dtype=fmt.dtype).astype(carrier) for x in inputs]
    operands += [np.zeros(count, carrier)] * (3 - len(operands))
    buffers: list[npt.NDArray[Any]] = [*operands, np.zeros(count, carrier)]
    if api == OPENCL:
        buffers.append(np.array([selector], dtype=np.int32))
    out = run_once(
        ctx, api, type_, entry=f"{type_}_fn", selector=selector, global_size=count, buffers=buffers, what=what
    )
    raw = np.frombuffer(out[3], dtype=carrier)
    wider = ""
    if fmt is FMT_F16:
        bad = np.flatnonzero(not_half(raw))
        if bad.size:
            j = int(bad[0])
            shown = ", ".join(describe(np.float16(x[j]), fmt) for x in operands[: len(inputs)])
            wider = (
                f"{bad.size} of {count} results are not float16 values (the kernel computed in a wider type), "
                f"e.g. ({shown}) gave {float(raw[j])!r} ({float(raw[j]).hex()})"
            )
    with np.errstate(over="ignore", invalid="ignore"):  # only values that are not of the type overflow
        result: npt.NDArray[Any] = raw.astype(fmt.dtype)
    return result, wider


def _pad(values: Sequence[float], fmt: Format) -> npt.NDArray[Any]:
    array = np.asarray(values, dtype=np.float64).astype(fmt.dtype)
    return np.resize(array, 64)  # one workgroup's worth (Vulkan local size 64)


def _support_case(type_: str, api: str, claims: Mapping[str, Any]) -> ConformanceCase:
    fmt = _fmt(type_)
    claimed = bool(claims.get(_CLAIM[type_]))
    selectors = {fn.name: fn.selector for fn in wide_functions(type_)}

    def body(ctx: CaseContext) -> None:
        problems: list[str] = []
        refusal = ""
        for name, a, b, expected in SUPPORT_PROBES[type_]:
            want = _pad(expected, fmt)
            try:
                got, wider = run_wide(ctx, api, type_, selectors[name], [_pad(a, fmt), _pad(b, fmt)], f"{type_} {name}")
            except (BackendError, CaseFailed) as exc:
                refusal = describe_exception(exc).splitlines()[0][:300]
                break
            if wider:
                problems.append(f"{name}: {wider}")
            for i in np.flatnonzero(got.view(fmt.bits) != want.view(fmt.bits))[:3]:
                problems.append(f"{name}({describe(_pad(a, fmt)[i], fmt)}, {describe(_pad(b, fmt)[i], fmt)}) = "
                                f"{describe(got[i], fmt)}, expected {describe(want[i], fmt)}")  # fmt: skip
        usable = not refusal and not problems
        claim_text = f"{_WHAT[type_][api]} {'claimed' if claimed else 'not claimed'}"
        how = (
            "a kernel using it builds and runs with right results"
            if usable
            else (f"a kernel using it is refused: {refusal}" if refusal else "wrong results: " + "; ".join(problems))
        )
        if claimed:
            cell = f"{type_} ✓" if usable else f"{type_} claimed, broken"
        elif usable:
            cell = f"{type_} unclaimed, works"
        else:  # refused, or accepted and computed wrongly (a silent wrong result: shown, not hidden)
            cell = f"no {type_}" if refusal else f"no {type_} (accepted, wrong results)"
        ctx.record({"kind": "numerics", "function": "support", "type": type_, "api": api, "cell": cell,
                    "claimed": claimed, "usable": usable, "refusal": refusal, "problems": problems})  # fmt: skip
        ctx.check(claimed == usable, f"{claim_text}, but {how}: the device's claim is false")
        ctx.note(f"{claim_text}; {how}")

    return ConformanceCase(
        f"numerics.support.{type_}",
        body,
        mandatory=False,
        description=f"{type_}: the device's claim ({_WHAT[type_][api]}) against a kernel using the type",
    )


def _function_case(fn: WideFunction, api: str, claims: Mapping[str, Any]) -> ConformanceCase:
    limit = fn.opencl if api == OPENCL else fn.vulkan
    claimed = bool(claims.get(_CLAIM[fn.type]))

    def body(ctx: CaseContext) -> None:
        base = {"kind": "numerics", "function": fn.name, "type": fn.type, "api": api}
        if not claimed:
            ctx.record({**base, "cell": f"no {fn.type}"})
            ctx.skip(f"device does not claim {fn.type}")
        if limit is None:
            cell = "not in GLSL" if fn.name == "fmod" else "not in GLSL for f64"
            ctx.record({**base, "cell": cell})
            ctx.skip(fn.glsl_missing)
        if fn.type == "f64" and fn.name not in _F64_EXACT_IN_FLOAT64 and not LONGDOUBLE_EXTENDED:
            ctx.record({**base, "cell": "no reference"})
            ctx.skip(
                f"numpy's longdouble has {np.finfo(np.longdouble).nmant + 1} significand bits here, not 64: "
                f"no better-than-float64 reference for {fn.name} (docs/numerics.md, References)"
            )
        inputs = wide_sweep(fn.name, fn.arity, fn.domain, fn.fmt)
        got, wider = run_wide(ctx, api, fn.type, fn.selector, inputs, f"{fn.kernel}[{fn.name}] x {len(inputs[0])}")
        if wider:
            ctx.record({**base, "cell": "not half", "not_half": wider})
            ctx.fail(f"{fn.name} on {api}: {wider}; not judged as float16 (the host would round them)")
        denormals = claims.get(f"{fn.type}_denormals")
        flush_allowed = api == VULKAN or not bool(denormals)
        result = measure(fn, api, limit, inputs, got, flush_allowed=flush_allowed)
        if api == OPENCL:
            config = "CL_DEVICE_DOUBLE_FP_CONFIG" if fn.type == "f64" else "CL_DEVICE_HALF_FP_CONFIG"
            result.notes.append(
                f"device reports CL_FP_DENORM in {config}: subnormals must be kept"
                if denormals
                else f"device does not report CL_FP_DENORM in {config}: flushing allowed"
            )
        conclude(ctx, result, type=fn.type)

    text = limit.text if limit is not None else "-"
    return ConformanceCase(
        f"numerics.{fn.name}.{fn.type}",
        body,
        mandatory=False,
        description=f"{fn.name} on {fn.type}: measured ulp error vs the {api} limit {text}",
    )


def wide_cases(api: str, claims: Mapping[str, Any]) -> tuple[ConformanceCase, ...]:
    """The f16 and f64 cases for ``api``: per type the support case, then every function."""
    cases: list[ConformanceCase] = []
    for type_ in WIDE_TYPES:
        cases.append(_support_case(type_, api, claims))
        cases.extend(_function_case(fn, api, claims) for fn in wide_functions(type_))
    return tuple(cases)
