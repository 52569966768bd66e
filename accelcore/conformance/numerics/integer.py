"""Bit-exact integer and conversion cases of the numerics suite (``numerics.<op>.<type>``).

Integer operations on 32-bit words: ``mul_hi`` (u32, i32), ``rotate`` (u32), ``clz`` (u32),
``popcount`` (u32), ``add_sat`` (u32, i32). OpenCL runs the built-ins of that name (OpenCL C 1.2
section 6.12.3); GLSL has none of them except bitCount, so the GLSL kernel writes each with the
operations that compute it (umulExtended / imulExtended, masked shifts, ``31 - findMSB``, explicit
overflow checks): on Vulkan a case measures the GLSL expression of the operation, i.e. the
compiler's integer semantics. Each sweep is the edge words (0, 1, 0x7fffffff, 0x80000000,
0xffffffff, powers of two and their neighbours of both signs) crossed with themselves plus random
words (uniform, and of random magnitude), at least 2^16 values, judged bit for bit.

Float->int conversions ``numerics.convert-f32-<i32|u32>[-sat][-rte].f32``: OpenCL ``convert_int``,
``convert_int_rte``, ``convert_int_sat``, ``convert_int_sat_rte`` and the ``uint`` ones (section
6.2.3: round toward zero by default; an out-of-range non-saturating conversion is implementation
defined, so only in-range values are judged and the out-of-range behaviour is recorded; ``_sat``
clamps and maps NaN to 0 and is judged on every value). Vulkan: ``int(x)`` / ``uint(x)``
(OpConvertFToS / OpConvertFToU, round toward zero; a result that does not fit is undefined, and
GLSL leaves a negative value converted to uint undefined): in-range values judged, the rest
recorded. SPIR-V's saturating and rounding-mode conversions need the Kernel capability, so the
``-sat`` / ``-rte`` cases skip on Vulkan saying so.

The atomics-under-contention and work-group barrier cases are in :mod:`.atomics`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..case import CaseContext, ConformanceCase
from .atomics import atomic_cases, barrier_cases
from .exact import MASK, U32, compare_exact, describe_word, hex32, rng_for, run_once, words
from .kernels import OPENCL, VULKAN, conclude
from .sweep import EDGE_VALUES, bit_patterns

__all__ = [
    "CONVERSIONS",
    "INT_OPS",
    "Conversion",
    "IntOp",
    "conversion_reference",
    "conversion_sweep",
    "int_sweep",
    "integer_cases",
    "out_of_range_behaviour",
]

I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
LAUNCH_MULTIPLE = 256
RANDOM_PART = 1 << 15
OPENCL_INT_SECTION = "OpenCL C 1.2 §6.12.3 Integer Functions (OpenCL C 3.0 §6.15.4)"
VULKAN_INT_SECTION = "SPIR-V integer instructions via GLSL 4.50 §8.8 (integer functions) / §5.9 (operators)"
OPENCL_CVT_SECTION = "OpenCL C 1.2 §6.2.3.2-6.2.3.3 (OpenCL C 3.0 §6.4.3.2-6.4.3.3) Explicit Conversions"
VULKAN_CVT_SECTION = (
    "SPIR-V OpConvertFToS/OpConvertFToU (round toward 0; undefined if the result does not fit); GLSL 4.50 §5.4.1"
)


def _signed(values: npt.ArrayLike) -> I64:
    return np.asarray(values, dtype=np.uint32).view(np.int32).astype(np.int64)


def _words(values: npt.ArrayLike) -> U32:
    """Integers (any sign, int64) as their low 32 bits."""
    return (np.asarray(values, dtype=np.int64) & MASK).astype(np.uint32)


# --------------------------------------------------------------------------- references


def ref_mul_hi_u32(a: U32, b: U32) -> U32:
    return ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32)


def ref_mul_hi_i32(a: U32, b: U32) -> U32:
    return _words((_signed(a) * _signed(b)) >> 32)


def ref_rotate_u32(a: U32, b: U32) -> U32:
    wide = a.astype(np.uint64)
    shift = (b & np.uint32(31)).astype(np.uint64)
    return (((wide << shift) | (wide >> ((np.uint64(32) - shift) & np.uint64(31)))) & np.uint64(MASK)).astype(np.uint32)


def ref_clz_u32(a: U32, b: U32) -> U32:
    length = np.zeros(a.shape, dtype=np.uint32)
    for bit in range(32):
        length += ((a >> np.uint32(bit)) != 0).astype(np.uint32)
    return (np.uint32(32) - length).astype(np.uint32)


def ref_popcount_u32(a: U32, b: U32) -> U32:
    bits = np.unpackbits(a.astype("<u4").view(np.uint8).reshape(-1, 4), axis=1)
    return np.asarray(bits.sum(axis=1), dtype=np.uint32)


def ref_add_sat_u32(a: U32, b: U32) -> U32:
    return np.minimum(a.astype(np.int64) + b.astype(np.int64), MASK).astype(np.uint32)


def ref_add_sat_i32(a: U32, b: U32) -> U32:
    return _words(np.clip(_signed(a) + _signed(b), -(1 << 31), (1 << 31) - 1))


@dataclass(frozen=True)
class IntOp:
    """One integer operation on both APIs."""

    name: str
    type: str
    arity: int
    kernel: str
    """OpenCL kernel in numerics_int.cl."""
    selector: int
    """GLSL FN in numerics_int.comp."""
    reference: Callable[[U32, U32], U32]
    opencl_form: str
    glsl_form: str

    @property
    def case_id(self) -> str:
        return f"numerics.{self.name}.{self.type}"

    @property
    def signed(self) -> bool:
        return self.type == "i32"


INT_OPS: tuple[IntOp, ...] = (
    IntOp("mul_hi", "u32", 2, "int_mul_hi_u32", 0, ref_mul_hi_u32, "mul_hi(x, y)", "umulExtended msb"),
    IntOp("mul_hi", "i32", 2, "int_mul_hi_i32", 1, ref_mul_hi_i32, "mul_hi(x, y)", "imulExtended msb"),
    IntOp("rotate", "u32", 2, "int_rotate_u32", 2, ref_rotate_u32, "rotate(x, y)", "masked shifts, s = y & 31"),
    IntOp("clz", "u32", 1, "int_clz_u32", 3, ref_clz_u32, "clz(x)", "31 - findMSB(x)"),
    IntOp("popcount", "u32", 1, "int_popcount_u32", 4, ref_popcount_u32, "popcount(x)", "bitCount(x)"),
    IntOp("add_sat", "u32", 2, "int_add_sat_u32", 5, ref_add_sat_u32, "add_sat(x, y)", "x + y, 0xffffffff on wrap"),
    IntOp("add_sat", "i32", 2, "int_add_sat_i32", 6, ref_add_sat_i32, "add_sat(x, y)", "explicit overflow checks"),
)  # fmt: skip


# --------------------------------------------------------------------------- integer sweeps


def _edge_words() -> U32:
    values = {0, 1, 2, 3, 5, 7, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF, 0x55555555,
              0xAAAAAAAA, 0x0000FFFF, 0xFFFF0000, 0x12345678, 0xDEADBEEF}  # fmt: skip
    for k in range(1, 32):
        p = 1 << k
        values |= {p - 1, p, p + 1, -p & MASK, (-p - 1) & MASK, (-p + 1) & MASK}
    return np.array(sorted(values), dtype=np.uint32)


EDGE_WORDS: U32 = _edge_words()
"""0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 2^k and 2^k ± 1, -2^k and -2^k ± 1, a few patterns."""


def _magnitudes(rng: np.random.Generator, count: int) -> U32:
    """Random words of random bit length (every clz value), half of them negated."""
    raw = rng.integers(0, 1 << 32, count, dtype=np.uint64) >> rng.integers(0, 32, count, dtype=np.uint64)
    negate = rng.integers(0, 2, count).astype(bool)
    return _words(np.where(negate, -raw.astype(np.int64), raw.astype(np.int64)))


def _pad(arrays: list[npt.NDArray[Any]]) -> list[npt.NDArray[Any]]:
    extra = -len(arrays[0]) % LAUNCH_MULTIPLE
    return [np.concatenate([a, a[:extra]]) for a in arrays]


def int_sweep(name: str, arity: int) -> tuple[U32, U32]:
    """(a, b) for ``name``: unary — the edge words, 2^15 words evenly spaced over all 2^32 and 2^15 of
    random magnitude (b zero); binary — every pair of edge words, 2^15 uniform random pairs and 2^15
    pairs of random magnitude. At least 2^16 values, a multiple of 256, a pure function of ``name``."""
    rng = rng_for(name)
    if arity == 1:
        step = (1 << 32) // RANDOM_PART
        spaced = (np.arange(RANDOM_PART, dtype=np.uint64) * step + int(rng.integers(0, step))).astype(np.uint32)
        a = np.concatenate([EDGE_WORDS, spaced, _magnitudes(rng, RANDOM_PART)]).astype(np.uint32)
        b = np.zeros_like(a)
    else:
        ea, eb = np.meshgrid(EDGE_WORDS, EDGE_WORDS, indexing="ij")
        uniform = rng.integers(0, 1 << 32, (2, RANDOM_PART), dtype=np.uint64).astype(np.uint32)
        a = np.concatenate([ea.reshape(-1), uniform[0], _magnitudes(rng, RANDOM_PART)]).astype(np.uint32)
        b = np.concatenate([eb.reshape(-1), uniform[1], _magnitudes(rng, RANDOM_PART)]).astype(np.uint32)
    a, b = _pad([a, b])
    return a, b


# --------------------------------------------------------------------------- conversions


@dataclass(frozen=True)
class Conversion:
    """One float32 -> 32-bit integer conversion."""

    target: str
    """``i32`` or ``u32``."""
    rounding: str
    """``rtz`` (the default) or ``rte``."""
    saturate: bool
    kernel: str
    selector: int | None
    """GLSL FN in numerics_int.comp; None: not expressible in GLSL."""

    @property
    def case_id(self) -> str:
        sat = "-sat" if self.saturate else ""
        rte = "-rte" if self.rounding == "rte" else ""
        return f"numerics.convert-f32-{self.target}{sat}{rte}.f32"

    @property
    def opencl_form(self) -> str:
        name = "int" if self.target == "i32" else "uint"
        return f"convert_{name}{'_sat' if self.saturate else ''}{'_rte' if self.rounding == 'rte' else ''}(x)"

    @property
    def glsl_form(self) -> str:
        return "int(x)" if self.target == "i32" else "uint(x)"

    @property
    def bounds(self) -> tuple[int, int]:
        return (-(1 << 31), (1 << 31) - 1) if self.target == "i32" else (0, MASK)


CONVERSIONS: tuple[Conversion, ...] = (
    Conversion("i32", "rtz", False, "cvt_f32_i32", 7),
    Conversion("i32", "rte", False, "cvt_f32_i32_rte", None),
    Conversion("i32", "rtz", True, "cvt_f32_i32_sat", None),
    Conversion("i32", "rte", True, "cvt_f32_i32_sat_rte", None),
    Conversion("u32", "rtz", False, "cvt_f32_u32", 8),
    Conversion("u32", "rte", False, "cvt_f32_u32_rte", None),
    Conversion("u32", "rtz", True, "cvt_f32_u32_sat", None),
    Conversion("u32", "rte", True, "cvt_f32_u32_sat_rte", None),
)

_CONVERSION_EDGES = (
    0.0, 0.49999997, 0.5, 0.50000006, 0.99999994, 1.0, 1.5, 2.5, 3.5, 1e-45, 1.17549435e-38, 8388607.5,
    8388608.0, 16777215.0, 16777216.0, 2147483520.0, 2147483648.0, 2147483904.0, 4294967040.0, 4294967296.0,
    4294967808.0, 1e10, 1e20, 3.4028235e38, np.inf,
)  # fmt: skip


def conversion_sweep(name: str) -> F32:
    """float32 inputs of a conversion: the float edge values of :mod:`.sweep` and the conversion edges (halves,
    2^31 and 2^32 and their float neighbours, both signs, NaNs, infinities), 2^15 bit patterns evenly spaced
    over all 2^32, 2^14 values of random magnitude up to 2^34 and 2^14 halves k + 0.5 (|k| < 2^22). A multiple
    of 256, at least 2^16."""
    rng = rng_for(name)
    edges = np.array(_CONVERSION_EDGES, dtype=np.float64)
    edges = np.concatenate([edges, -edges]).astype(np.float32)
    with np.errstate(over="ignore"):
        edges = np.concatenate(
            [edges, np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(-np.inf))]
        )
    magnitude = (2.0 ** rng.uniform(-2.0, 34.0, RANDOM_PART // 2)) * rng.choice([-1.0, 1.0], RANDOM_PART // 2)
    halves = rng.integers(-(1 << 22), 1 << 22, RANDOM_PART // 2).astype(np.float64) + 0.5
    parts = [
        EDGE_VALUES,
        edges,
        bit_patterns(rng, RANDOM_PART),
        magnitude.astype(np.float32),
        halves.astype(np.float32),
    ]
    values = np.concatenate([np.asarray(p, dtype=np.float32) for p in parts])
    (values,) = _pad([values])
    return values.astype(np.float32)


def conversion_reference(x: F32, conversion: Conversion) -> tuple[U32, npt.NDArray[np.bool_]]:
    """(expected words, in-range mask): the exactly rounded integer of each float32 (trunc or ties-to-even
    rint, exact in float64), clamped with NaN -> 0 for a saturating conversion. In range: finite with the
    rounded value representable; a saturating conversion's expected value is defined everywhere."""
    lo, hi = conversion.bounds
    rounded = _rounded(x, conversion)
    with np.errstate(invalid="ignore"):
        in_range = np.isfinite(rounded) & (rounded >= lo) & (rounded <= hi)
        clamped = np.where(np.isnan(rounded), 0.0, np.clip(rounded, lo, hi))
    expected = _words(
        clamped.astype(np.int64) if conversion.saturate else np.where(in_range, clamped, 0).astype(np.int64)
    )
    return expected, in_range


def _rounded(x: F32, conversion: Conversion) -> npt.NDArray[np.float64]:
    with np.errstate(invalid="ignore"):
        wide = np.asarray(x, dtype=np.float32).astype(np.float64)
        return np.trunc(wide) if conversion.rounding == "rtz" else np.rint(wide)


def input_classes(x: F32, conversion: Conversion) -> dict[str, npt.NDArray[np.bool_]]:
    """Masks of the inputs by class: NaN, +inf, -inf, finite above the range, finite below it, in range."""
    lo, hi = conversion.bounds
    with np.errstate(invalid="ignore"):
        wide = np.asarray(x, dtype=np.float32).astype(np.float64)
        rounded = _rounded(x, conversion)
        classes = {
            "NaN": np.isnan(wide),
            "+inf": wide == np.inf,
            "-inf": wide == -np.inf,
            "above": np.isfinite(wide) & (rounded > hi),
            "below": np.isfinite(wide) & (rounded < lo),
        }
    classes["in range"] = ~np.logical_or.reduce(list(classes.values()))
    return classes


def out_of_range_behaviour(x: F32, got: U32, conversion: Conversion, judged: npt.NDArray[np.bool_]) -> dict[str, Any]:
    """What the device returned for the values not judged, by class (NaN, +inf, -inf, finite above the
    range, finite below it, negative in range for GLSL uint): count, behaviour (``always 0x80000000``
    as ``0x80000000``, ``saturates``, ``wraps``, ``N different values``) and up to three examples."""
    lo, hi = conversion.bounds
    rounded = _rounded(x, conversion)
    with np.errstate(invalid="ignore"):
        saturated = _words(np.where(np.isnan(rounded), 0.0, np.clip(rounded, lo, hi)).astype(np.int64))
    classes = input_classes(x, conversion)
    classes["(-1, 0)"] = classes.pop("in range")  # only GLSL uint leaves these undefined
    report: dict[str, Any] = {}
    for label, mask in classes.items():
        mask = mask & ~judged
        if not mask.any():
            continue
        values = got[mask]
        distinct = np.unique(values)
        if distinct.size == 1:
            behaviour = hex32(distinct[0])
        elif np.array_equal(values, saturated[mask]):
            behaviour = "saturates"
        else:
            small = bool(np.all(np.abs(rounded[mask]) < 2.0**63))  # False for NaN and infinities
            wraps = small and np.array_equal(values, _words(rounded[mask].astype(np.int64)))
            behaviour = "wraps" if wraps else f"{distinct.size} different values"
        first = np.flatnonzero(mask)[:3]
        report[label] = {
            "count": int(mask.sum()),
            "behaviour": behaviour,
            "examples": [f"{float(x[i])!r} -> {hex32(got[i])}" for i in first],
        }
    return report


def _short_behaviour(report: Mapping[str, Any]) -> str:
    """``out of range → 0x80000000``, or per behaviour: ``NaN, -inf → 0x0; +inf, above saturates``."""
    groups: dict[str, list[str]] = {}
    for label, entry in report.items():
        groups.setdefault(str(entry["behaviour"]), []).append(label)
    if not groups:
        return ""

    def text(behaviour: str) -> str:
        return behaviour if behaviour in ("saturates", "wraps") or " " in behaviour else f"→ {behaviour}"

    if len(groups) == 1:
        return f"out of range {text(next(iter(groups)))}"
    return "out of range: " + "; ".join(f"{', '.join(labels)} {text(b)}" for b, labels in groups.items())


# --------------------------------------------------------------------------- cases


def _int_case(op: IntOp, api: str) -> ConformanceCase:
    section = OPENCL_INT_SECTION if api == OPENCL else VULKAN_INT_SECTION
    form = op.opencl_form if api == OPENCL else op.glsl_form

    def body(ctx: CaseContext) -> None:
        a, b = int_sweep(op.case_id, op.arity)
        count = a.size
        out = run_once(
            ctx,
            api,
            "int",
            entry=op.kernel,
            selector=op.selector,
            global_size=count,
            buffers=[a, b, np.zeros(count, np.uint32)],
            what=f"{op.kernel} x {count}",
        )
        got = words(out[2])

        def inputs(i: int) -> tuple[str, ...]:
            shown = (a[i],) if op.arity == 1 else (a[i], b[i])
            return tuple(describe_word(v, op.signed) for v in shown)

        result = compare_exact(
            op.case_id,
            api,
            promise=f"{form}: exact",
            section=section,
            expected=op.reference(a, b),
            got=got,
            describe_inputs=inputs,
            signed=op.signed,
        )
        result.extra.update({"type": op.type, "form": form})
        conclude(ctx, result)

    return ConformanceCase(
        op.case_id,
        body,
        mandatory=False,
        description=f"{op.name} on {op.type} ({form}), bit-exact against numpy over edges x edges and random words",
    )


def _conversion_case(conversion: Conversion, api: str) -> ConformanceCase:
    form = conversion.opencl_form if api == OPENCL else conversion.glsl_form

    def body(ctx: CaseContext) -> None:
        if api == VULKAN and conversion.selector is None:
            ctx.record(
                {"kind": "numerics", "function": conversion.case_id.split(".")[1], "api": api, "cell": "not in GLSL"}
            )
            ctx.skip(
                f"{conversion.opencl_form} has no GLSL form: SPIR-V's SaturatedConversion decoration and rounding-mode "
                "conversions need the Kernel capability, which Vulkan does not allow"
            )
        x = conversion_sweep(conversion.case_id)
        count = x.size
        out = run_once(
            ctx,
            api,
            "int",
            entry=conversion.kernel,
            selector=conversion.selector,
            global_size=count,
            buffers=[x.view(np.uint32), np.zeros(count, np.uint32), np.zeros(count, np.uint32)],
            what=f"{conversion.kernel} x {count}",
        )
        got = words(out[2])
        expected, in_range = conversion_reference(x, conversion)
        if conversion.saturate:
            judged = np.ones(count, dtype=bool)
            promise = f"{form}: exact on every value (clamps, NaN → 0)"
        elif api == VULKAN and conversion.target == "u32":
            with np.errstate(invalid="ignore"):
                judged = in_range & (x.astype(np.float64) >= 0)
            promise = f"{form}: exact where 0 ≤ x and trunc(x) fits (negative → uint undefined in GLSL)"
        else:
            judged = in_range
            promise = f"{form}: exact where the rounded value fits; out of range " + (
                "implementation-defined" if api == OPENCL else "undefined"
            )

        def inputs(i: int) -> tuple[str, ...]:
            value = float(x[i])
            return (f"{value!r} ({value.hex()}, {hex32(x.view(np.uint32)[i])})",)

        result = compare_exact(
            conversion.case_id,
            api,
            promise=promise,
            section=OPENCL_CVT_SECTION if api == OPENCL else VULKAN_CVT_SECTION,
            expected=expected,
            got=got,
            describe_inputs=inputs,
            judged=judged,
            signed=conversion.target == "i32",
        )
        if result.mismatches:
            wrong = judged & (got != expected)
            by_class = {label: int((mask & wrong).sum()) for label, mask in input_classes(x, conversion).items()}
            by_class = {label: n for label, n in by_class.items() if n}
            result.extra["wrong_by_input"] = by_class
            result.notes.append("wrong values by input: " + ", ".join(f"{label} {n}" for label, n in by_class.items()))
        if not conversion.saturate:
            behaviour = out_of_range_behaviour(x, got, conversion, judged)
            result.extra["out_of_range"] = behaviour
            result.cell_suffix = _short_behaviour(behaviour)
            if behaviour:
                result.notes.append(
                    "not judged: "
                    + "; ".join(f"{label} ({e['count']} values) → {e['behaviour']}" for label, e in behaviour.items())
                )
        result.extra.update(
            {"type": "f32", "form": form, "rounding": conversion.rounding, "saturate": conversion.saturate}
        )
        conclude(ctx, result)

    return ConformanceCase(
        conversion.case_id,
        body,
        mandatory=False,
        description=f"float32 -> {conversion.target} ({form}): bit-exact where the API promises a value",
    )


def integer_cases(api: str, claims: Mapping[str, Any]) -> tuple[ConformanceCase, ...]:
    """The integer, conversion, atomic and barrier cases for ``api``."""
    cases = [_int_case(op, api) for op in INT_OPS]
    cases.extend(_conversion_case(conversion, api) for conversion in CONVERSIONS)
    cases.extend(atomic_cases(api))
    cases.extend(barrier_cases(api))
    return tuple(cases)
