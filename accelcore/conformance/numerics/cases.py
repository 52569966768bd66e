"""The numerics suite as conformance cases: ``numerics.<function>.<type>`` for one API.

``numerics_cases(api, claims)`` gives the cases a provider family adds to its extra cases; ``api`` is
``opencl`` or ``vulkan`` (which kernels run and which spec's limits judge them), ``claims`` what the
device says about itself (``f32_denormals``: CL_FP_DENORM in CL_DEVICE_SINGLE_FP_CONFIG; ``fp16`` /
``fp64``: the type is advertised; ``f16_denormals`` / ``f64_denormals``: CL_FP_DENORM in the half / double
FP config). The f16/f64 cases are :mod:`.wide`'s. Each float case runs one launch over its whole sweep
(:mod:`.sweep`), measures every value in ulps against float64 references (:mod:`.functions`) and
judges it against the API's limit (:mod:`.limits`, :mod:`.judge`); the result carries the numbers
(``CaseResult.metrics``) and the cell text the matrix shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..case import CaseContext, ConformanceCase
from .features import feature_cases
from .functions import F32_FUNCTIONS, F32Function
from .integer import integer_cases
from .judge import measure
from .kernels import OPENCL, VULKAN, conclude, launch, package_for
from .sweep import sweep
from .wide import wide_cases

__all__ = ["NUMERICS_PREFIX", "QUICK_FUNCTIONS", "QUICK_WIDE_FUNCTIONS", "is_quick", "numerics_cases"]

NUMERICS_PREFIX = "numerics."
QUICK_FUNCTIONS = ("add", "div", "sqrt", "fma", "exp", "log", "sin", "pow", "floor", "fmin")
"""The f32 functions of ``--quick``: one of each kind of promise."""
QUICK_WIDE_FUNCTIONS = ("div", "fma", "exp", "sin")
"""The f64 and f16 functions of ``--quick`` (with ``numerics.support.f64`` / ``.f16``)."""


_F32_NAMES = frozenset(fn.name for fn in F32_FUNCTIONS)


def is_quick(case_id: str) -> bool:
    """Whether ``case_id`` is in the quick subset (``accel conformance --quick``): every non-numerics case,
    the f32 function cases of :data:`QUICK_FUNCTIONS`, the support cases and the f64/f16 cases of
    :data:`QUICK_WIDE_FUNCTIONS`, and every other numerics case (integer ops, conversions, atomics,
    barriers, denormals, subgroups: single small launches)."""
    parts = case_id.split(".")
    if parts[0] != "numerics" or len(parts) < 3:
        return True
    if parts[1] == "support":
        return True
    if parts[-1] in ("f64", "f16"):
        return parts[1] in QUICK_WIDE_FUNCTIONS
    if parts[-1] == "f32" and parts[1] in _F32_NAMES:
        return parts[1] in QUICK_FUNCTIONS
    return True


def _f32_case(fn: F32Function, api: str, claims: Mapping[str, Any]) -> ConformanceCase:
    limit = fn.opencl if api == OPENCL else fn.vulkan

    def body(ctx: CaseContext) -> None:
        if limit is None or (api == VULKAN and fn.glsl_fn is None):
            ctx.record({"kind": "numerics", "function": fn.name, "api": api, "cell": "not in GLSL"})
            ctx.skip(fn.glsl_missing or f"{fn.name} has no GLSL form")
        inputs = sweep(fn.name, fn.arity, fn.domain)
        count = len(inputs[0])
        operands = list(inputs) + [np.zeros(count, np.float32)] * (3 - fn.arity)
        pkg = package_for(api, "f32", entry=fn.kernel, selector=fn.glsl_fn, global_size=count)
        session = ctx.open()
        context = session.create_context()
        queue = session.create_queue(context)
        out = launch(
            ctx, session, context, queue, pkg, [*operands, np.zeros(count, np.float32)], f"{fn.kernel} x {count}"
        )
        session.destroy_queue(queue)
        session.destroy_context(context)
        got = np.frombuffer(out[3], dtype=np.float32)
        denormals = claims.get("f32_denormals")
        flush_allowed = api == VULKAN or not bool(denormals)
        result = measure(fn, api, limit, inputs, got, flush_allowed=flush_allowed)
        if api == OPENCL:
            result.notes.append(
                "device reports CL_FP_DENORM: subnormals must be kept"
                if denormals
                else "device does not report CL_FP_DENORM: flushing allowed"
            )
        conclude(ctx, result)

    return ConformanceCase(
        f"numerics.{fn.name}.f32",
        body,
        mandatory=False,
        description=f"{fn.name} on float32: measured ulp error vs the {api} limit {limit.text if limit else '-'}",
    )


def numerics_cases(api: str, claims: Mapping[str, Any] | None = None) -> tuple[ConformanceCase, ...]:
    """Every numerics case for ``api`` (``opencl`` or ``vulkan``), in a stable order."""
    if api not in (OPENCL, VULKAN):
        raise ValueError(f"api must be {OPENCL!r} or {VULKAN!r}, not {api!r}")
    facts = dict(claims or {})
    cases: list[ConformanceCase] = [_f32_case(fn, api, facts) for fn in F32_FUNCTIONS]
    cases.extend(wide_cases(api, facts))
    cases.extend(integer_cases(api, facts))
    cases.extend(feature_cases(api, facts))
    return tuple(cases)
