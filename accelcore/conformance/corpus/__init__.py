"""The kernel corpus in ``artifacts/``: specs, committed packages and numpy references.

Every corpus kernel follows one convention (docs/artifact-format.md): slot N
is Vulkan binding N in set 0 and OpenCL kernel argument N; when the kernel
takes an element count it is the OpenCL ``uint`` argument right after the
buffers and, on Vulkan, a 4-byte push constant at offset 0.

Besides those (:data:`KERNELS`, shipped for every kind in :data:`SHIPPED_KINDS`)
the corpus holds :data:`ARGUMENT_KERNELS`: kernels written the way real projects
write them — by-value and ``__local`` OpenCL arguments, push constants,
specialization constants, uniform buffers, descriptor set 1, 2-D global sizes —
each for the one API it was written for (:attr:`ArgumentKernelSpec.kinds`). Their
packages carry argument values, so :func:`argument_package` packs one for any
values (the committed package is the one for :attr:`ArgumentKernelSpec.defaults`)
and :func:`argument_case` builds the matching inputs and numpy expectation.

Promise: :func:`load_package` returns the committed bytes of one package (a
fresh copy; nothing is cached). :func:`make_case` builds inputs and the numpy
expectation for one kernel deterministically from ``seed``; :func:`compare`
checks a device result against it with the kernel's stated ulp tolerance.
Failures: an unknown kernel, or argument values a kernel does not take →
INVALID_ARGUMENT naming the known ones; a missing corpus or a kind the corpus
does not ship → UNSUPPORTED.
"""

from __future__ import annotations

import math
import os
import struct
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..contract.errors import BackendError, ErrorKind
from ..contract.flags import AccessMode, MemoryDomain
from ..contract.program import TargetIdentity
from ..kernels.pack import pack_module
from ..kernels.package import (
    NO_COUNT_ARGUMENT,
    DescriptorType,
    Dispatch,
    DispatchKind,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    format_for,
)
from ..support.text import plain
from .target import BindingFixture, ConformanceTarget

__all__ = [
    "ARGUMENT_KERNELS",
    "KERNELS",
    "SHIPPED_KINDS",
    "SPIN_MAX_ITERATIONS",
    "ArgumentKernelSpec",
    "KernelCase",
    "KernelSpec",
    "argument_case",
    "argument_package",
    "argument_spec",
    "argument_values",
    "compare",
    "corpus_root",
    "kernel_spec",
    "load_module",
    "load_package",
    "make_case",
    "module_path",
    "package_path",
    "standard_target",
]

ARTIFACTS_ENV = "ACCELCORE_ARTIFACTS"
"""Environment variable that overrides where the corpus lives."""

SPIN_MAX_ITERATIONS = 1 << 24
"""The spin kernel clamps its iteration parameter to this bound."""

SENTINEL = 0xA5A5A5A5
"""Initial content of every output word, so untouched outputs are visible."""

STANDARD_RESIDENT_BYTES = 64 << 20
"""resident_bytes of the standard target: generous for any compiled kernel, but finite."""

SHIPPED_KINDS = (ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL, ModuleKind.OPENCL_SOURCE)
"""Module kinds the corpus ships packages for (device binaries are built per device)."""

_KIND_SUFFIX = {
    ModuleKind.SPIRV_VULKAN: "vk.spv",
    ModuleKind.SPIRV_OPENCL: "cl.spv",
    ModuleKind.OPENCL_SOURCE: "cl",
}

U32 = npt.NDArray[np.uint32]
F32 = npt.NDArray[np.float32]
Array = npt.NDArray[np.generic]

R, W, RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE


@dataclass(frozen=True, slots=True)
class KernelSpec:
    """How a corpus kernel is packaged: the same table for every module kind.

    :meth:`entry_point` names the entry point per module kind (Vulkan: ``main``).
    """

    name: str
    summary: str
    opencl_entry: str
    local_size: tuple[int, int, int]
    bindings: tuple[PackageBinding, ...]
    dispatch: Dispatch

    def entry_point(self, kind: ModuleKind) -> str:
        return "main" if kind is ModuleKind.SPIRV_VULKAN else self.opencl_entry


def _binding(slot: int, access: AccessMode, element_size: int = 4) -> PackageBinding:
    return PackageBinding(slot=slot, native_index=slot, access=access, element_size=element_size)


def _from(slot: int, count_argument: int = NO_COUNT_ARGUMENT) -> Dispatch:
    return Dispatch(DispatchKind.FROM_BINDING, slot=slot, count_argument=count_argument)


_SPECS = (
    KernelSpec(
        "conformance",
        "standard conformance target: out[i] = mix(in[i], i)",
        "conformance",
        (64, 1, 1),
        (_binding(0, R), _binding(1, W)),
        _from(1, count_argument=2),
    ),
    KernelSpec(
        "saxpy",
        "out[i] = a * x[i] + y[i] in f32, a from a parameter buffer",
        "saxpy",
        (64, 1, 1),
        (_binding(0, R), _binding(1, R), _binding(2, W), _binding(3, R)),
        _from(2, count_argument=4),
    ),
    KernelSpec(
        "intops",
        "bit-exact u32 add, mul, xor and shifts: out[4i..4i+3]",
        "intops",
        (64, 1, 1),
        (_binding(0, R), _binding(1, R), _binding(2, W, 16)),
        _from(0, count_argument=3),
    ),
    KernelSpec(
        "reduce",
        "workgroup sum of u32 in shared memory with barriers: one partial sum per 64 inputs",
        "reduce",
        (64, 1, 1),
        (_binding(0, R), _binding(1, W)),
        _from(0, count_argument=2),
    ),
    KernelSpec(
        "histogram",
        "256-bin histogram of (in[i] & 255) with local and global atomics",
        "histogram",
        (64, 1, 1),
        (_binding(0, R), _binding(1, RW)),
        _from(0, count_argument=2),
    ),
    KernelSpec(
        "matmul",
        "tiled f32 C = A B (8x8 tiles in shared memory); sizes M, N, K from a parameter buffer",
        "matmul",
        (64, 1, 1),
        (_binding(0, R), _binding(1, R), _binding(2, W), _binding(3, R)),
        _from(2),
    ),
    KernelSpec(
        "spin",
        "bounded spin: each item runs min(iterations, 2^24) LCG steps; iterations from a parameter buffer",
        "spin",
        (64, 1, 1),
        (_binding(0, R), _binding(1, W)),
        _from(1, count_argument=2),
    ),
)

KERNELS: tuple[str, ...] = tuple(spec.name for spec in _SPECS)
_BY_NAME = {spec.name: spec for spec in _SPECS}


def kernel_spec(kernel: str) -> KernelSpec:
    """The packaging spec of corpus kernel ``kernel``."""
    try:
        return _BY_NAME[kernel]
    except KeyError:
        if kernel in ARGUMENT_KERNELS:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"{kernel} takes kernel arguments: use argument_spec / argument_package / argument_case",
            ) from None
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"no corpus kernel {kernel!r}; known: {', '.join(KERNELS)}; with arguments: {', '.join(ARGUMENT_KERNELS)}",
        ) from None


# --------------------------------------------------------------------------- files


def corpus_root() -> Path:
    """The ``artifacts/`` directory: $ACCELCORE_ARTIFACTS, else the one beside the package."""
    override = os.environ.get(ARTIFACTS_ENV)
    root = Path(override) if override else Path(__file__).resolve().parents[2] / "artifacts"
    if not (root / "manifest.json").is_file():
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"kernel corpus not found at {root} (no manifest.json); run from a source checkout or set {ARTIFACTS_ENV}",
        )
    return root


def _shipped(kind: ModuleKind) -> str:
    kind = ModuleKind(kind)
    if kind not in _KIND_SUFFIX:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"the corpus ships no {kind.name} packages: device binaries are built per device "
            "(pack_module(binary, kind=OPENCL_BINARY, target=opencl_target_identity(...)) with kernel_spec())",
        )
    return _KIND_SUFFIX[kind]


def _shipped_for(kernel: str, kind: ModuleKind) -> tuple[str, str]:
    """(kernel name, file suffix) of a kernel of either collection shipped for ``kind``."""
    if kernel in _ARGUMENT_BY_NAME:
        spec = _ARGUMENT_BY_NAME[kernel]
        suffix = _shipped(kind)
        if ModuleKind(kind) not in spec.kinds:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"{kernel} is written for {', '.join(k.name for k in spec.kinds)} only; "
                f"the corpus ships no {ModuleKind(kind).name} package of it",
            )
        return spec.name, suffix
    name = kernel_spec(kernel).name
    return name, _shipped(kind)


def module_path(kernel: str, kind: ModuleKind) -> Path:
    """Path of the committed module (``.spv`` or ``.cl`` source) of ``kernel`` for ``kind``.

    ``kernel`` is one of :data:`KERNELS` or :data:`ARGUMENT_KERNELS` (those for their own kinds only).
    """
    name, suffix = _shipped_for(kernel, kind)
    root = corpus_root()
    if kind is ModuleKind.OPENCL_SOURCE:
        return root / "src" / "opencl" / f"{name}.cl"
    return root / "spirv" / f"{name}.{suffix}"


def package_path(kernel: str, kind: ModuleKind) -> Path:
    """Path of the committed ``.kpkg`` of ``kernel`` for ``kind`` (argument kernels: with their defaults)."""
    name, suffix = _shipped_for(kernel, kind)
    return corpus_root() / "packages" / f"{name}.{suffix}.kpkg"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise BackendError(
            ErrorKind.UNSUPPORTED, f"{path} is missing from the corpus; run tools/build_artifacts.py"
        ) from None


def load_module(kernel: str, kind: ModuleKind) -> bytes:
    """The raw module bytes (SPIR-V words or OpenCL C text) of a corpus kernel."""
    return _read(module_path(kernel, kind))


def load_package(kernel: str, kind: ModuleKind) -> bytes:
    """The committed kernel package bytes of ``kernel`` for module ``kind``.

    For an argument kernel this is the package for its recorded :attr:`ArgumentKernelSpec.defaults`
    (``write_package(argument_package(kernel, kind))``).
    """
    return _read(package_path(kernel, kind))


# --------------------------------------------------------------------------- references


@dataclass(frozen=True, slots=True)
class KernelCase:
    """Inputs and expectations for one run of a corpus kernel.

    ``initial[slot]`` is the content of every bound buffer before the run
    (outputs hold :data:`SENTINEL`); ``expected[slot]`` what checked slots must
    hold after it; ``ulp_tolerance`` applies to float32 slots (0 = bit-exact).
    """

    kernel: str
    elements: int
    initial: Mapping[int, Array]
    expected: Mapping[int, Array]
    ulp_tolerance: int

    def initial_bytes(self, slot: int) -> bytes:
        return self.initial[slot].tobytes()

    def expected_bytes(self, slot: int) -> bytes:
        return self.expected[slot].tobytes()


def _u32(values: npt.ArrayLike) -> U32:
    return np.asarray(values, dtype=np.uint32)


def _sentinel(count: int) -> U32:
    return np.full(count, SENTINEL, dtype=np.uint32)


def _mix(values: U32, index: U32) -> U32:
    x = values ^ (index * _u32(0x9E3779B9))
    x = x ^ (x >> _u32(16))
    x = x * _u32(0x7FEB352D)
    x = x ^ (x >> _u32(15))
    x = x * _u32(0x846CA68B)
    x = x ^ (x >> _u32(16))
    return _u32(x + index)


def _case_conformance(n: int, rng: np.random.Generator) -> tuple[dict[int, Array], dict[int, Array], int]:
    values = rng.integers(0, 2**32, n, dtype=np.uint32)
    index = np.arange(n, dtype=np.uint32)
    return {0: values, 1: _sentinel(n)}, {0: values, 1: _mix(values, index)}, 0


def _case_saxpy(n: int, rng: np.random.Generator) -> tuple[dict[int, Array], dict[int, Array], int]:
    # Non-negative operands: no cancellation, so a fused multiply-add and a separate
    # multiply and add differ by at most 1 ulp of the result.
    x = rng.uniform(0.0, 4.0, n).astype(np.float32)
    y = rng.uniform(0.0, 4.0, n).astype(np.float32)
    a = np.array([rng.uniform(0.5, 3.0)], dtype=np.float32)
    out = (a[0] * x + y).astype(np.float32)
    initial: dict[int, Array] = {0: x, 1: y, 2: _sentinel(n).view(np.float32), 3: a}
    return initial, {2: out}, 1


def _case_intops(n: int, rng: np.random.Generator) -> tuple[dict[int, Array], dict[int, Array], int]:
    a = rng.integers(0, 2**32, n, dtype=np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint32)
    out = np.empty((n, 4), dtype=np.uint32)
    out[:, 0] = a + b
    out[:, 1] = a * b
    out[:, 2] = a ^ b
    out[:, 3] = (a << (b & _u32(31))) ^ (a >> ((b >> _u32(5)) & _u32(31)))
    return {0: a, 1: b, 2: _sentinel(4 * n)}, {2: out.reshape(-1)}, 0


REDUCE_GROUP = 64


def _case_reduce(n: int, rng: np.random.Generator) -> tuple[dict[int, Array], dict[int, Array], int]:
    values = rng.integers(0, 2**32, n, dtype=np.uint32)
    groups = -(-n // REDUCE_GROUP)
    padded = np.zeros(groups * REDUCE_GROUP, dtype=np.uint32)
    padded[:n] = values
    sums = padded.reshape(groups, REDUCE_GROUP).sum(axis=1, dtype=np.uint32)
    return {0: values, 1: _sentinel(groups)}, {1: sums}, 0


HISTOGRAM_BINS = 256


def _case_histogram(n: int, rng: np.random.Generator) -> tuple[dict[int, Array], dict[int, Array], int]:
    values = rng.integers(0, 2**32, n, dtype=np.uint32)
    counts = np.bincount(values & _u32(HISTOGRAM_BINS - 1), minlength=HISTOGRAM_BINS).astype(np.uint32)
    return {0: values, 1: np.zeros(HISTOGRAM_BINS, dtype=np.uint32)}, {1: counts}, 0


def matmul_shape(elements: int) -> tuple[int, int, int]:
    """(M, N, K) used for ``elements`` outputs: M = N = isqrt(elements), K = M + 3 (not a tile multiple)."""
    side = max(1, int(np.sqrt(elements)))
    return side, side, side + 3


def _case_matmul(n: int, rng: np.random.Generator) -> tuple[dict[int, Array], dict[int, Array], int]:
    m, cols, k = matmul_shape(n)
    # Quarters in [-2, 2]: every product and partial sum is exact in f32, so any
    # summation order (and FMA contraction) gives the bit-exact result.
    a = (rng.integers(-8, 9, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-8, 9, (k, cols)) / 4).astype(np.float32)
    c = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    params = np.array([m, cols, k], dtype=np.uint32)
    initial: dict[int, Array] = {
        0: a.reshape(-1),
        1: b.reshape(-1),
        2: _sentinel(m * cols).view(np.float32),
        3: params,
    }
    return initial, {2: c.reshape(-1)}, 0


SPIN_MULTIPLIER = 1664525
SPIN_INCREMENT = 1013904223


def spin_affine(iterations: int) -> tuple[int, int]:
    """(A, C) with lcg^n(x) = A x + C mod 2^32 for n = min(iterations, SPIN_MAX_ITERATIONS)."""
    steps = min(iterations, SPIN_MAX_ITERATIONS)
    mask = 0xFFFFFFFF
    result = (1, 0)
    power = (SPIN_MULTIPLIER, SPIN_INCREMENT)
    while steps:
        if steps & 1:
            result = ((power[0] * result[0]) & mask, (power[0] * result[1] + power[1]) & mask)
        power = ((power[0] * power[0]) & mask, (power[0] * power[1] + power[1]) & mask)
        steps >>= 1
    return result


def spin_case(n: int, iterations: int) -> KernelCase:
    """A spin run of ``n`` items with ``iterations`` steps each (the run-time knob)."""
    index = np.arange(n, dtype=np.uint32)
    seeds = index * _u32(2654435761) + _u32(1)
    scale, offset = spin_affine(iterations)
    out = seeds * _u32(scale) + _u32(offset)
    params = np.array([iterations], dtype=np.uint32)
    return KernelCase("spin", n, {0: params, 1: _sentinel(n)}, {1: out}, 0)


def _case_spin(n: int, rng: np.random.Generator) -> tuple[dict[int, Array], dict[int, Array], int]:
    iterations = int(rng.integers(1, 64))
    case = spin_case(n, iterations)
    return dict(case.initial), dict(case.expected), 0


_CASES: dict[str, Callable[[int, np.random.Generator], tuple[dict[int, Array], dict[int, Array], int]]] = {
    "conformance": _case_conformance,
    "saxpy": _case_saxpy,
    "intops": _case_intops,
    "reduce": _case_reduce,
    "histogram": _case_histogram,
    "matmul": _case_matmul,
    "spin": _case_spin,
}


def make_case(kernel: str, elements: int = 1024, seed: int = 0) -> KernelCase:
    """Deterministic inputs and numpy expectation for ``kernel`` over ``elements`` items.

    ``elements`` is the dispatch size: for matmul the output count (see
    :func:`matmul_shape`), for reduce/histogram/intops the input count.
    """
    spec = kernel_spec(kernel)  # argument kernels: INVALID_ARGUMENT pointing at argument_case
    if isinstance(elements, bool) or not isinstance(elements, int) or not 1 <= elements <= 1 << 26:
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"elements = {elements!r} must be an int in 1..{1 << 26}")
    rng = np.random.default_rng(seed)
    initial, expected, ulps = _CASES[spec.name](elements, rng)
    return KernelCase(spec.name, elements, initial, expected, ulps)


def _ordered(values: F32) -> npt.NDArray[np.int64]:
    """Map f32 bit patterns to integers whose difference counts ulps."""
    bits = values.view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def compare(case: KernelCase, slot: int, got: bytes) -> str | None:
    """None when ``got`` matches ``case.expected[slot]`` within tolerance, else a description."""
    expected = case.expected[slot]
    if len(got) != expected.nbytes:
        return f"slot {slot}: {len(got)} bytes, expected {expected.nbytes}"
    actual = np.frombuffer(got, dtype=expected.dtype)
    if expected.dtype == np.float32:  # ulp distance: +0.0 and -0.0 are 0 apart
        distance = np.abs(_ordered(actual.astype(np.float32)) - _ordered(expected.astype(np.float32)))
        bad = np.flatnonzero(distance > case.ulp_tolerance)
    else:
        bad = np.flatnonzero(actual.view(np.uint32) != expected.view(np.uint32))
    if bad.size == 0:
        return None
    first = int(bad[0])
    return (
        f"slot {slot}: {bad.size} of {actual.size} elements differ (tolerance {case.ulp_tolerance} ulp);"
        f" first at {first}: got {plain(actual[first])}, expected {plain(expected[first])}"
    )


# --------------------------------------------------------------------------- standard target


def standard_target(
    kind: ModuleKind,
    elements: int = 1024,
    *,
    domain: MemoryDomain = MemoryDomain.HOST,
    alignment: int = 16,
    seed: int = 0,
    artifact: bytes | None = None,
    target: TargetIdentity | None = None,
) -> ConformanceTarget:
    """The standard conformance target for packages of ``kind``.

    Slot 0 (READ) holds random u32 words and must stay unchanged; slot 1
    (WRITE) starts as :data:`SENTINEL` words and must end as the reference
    transform. ``artifact``/``target`` let a provider supply its own package
    (for OPENCL_BINARY, which the corpus cannot ship); otherwise the committed
    package is used.
    """
    kind = ModuleKind(kind)
    case = make_case("conformance", elements, seed)
    if artifact is None:
        artifact = load_package("conformance", kind)
    fixtures = (
        BindingFixture(0, AccessMode.READ, domain, alignment, case.initial_bytes(0), case.expected_bytes(0)),
        BindingFixture(1, AccessMode.WRITE, domain, alignment, case.initial_bytes(1), case.expected_bytes(1)),
    )
    return ConformanceTarget(
        name=f"conformance.{kind.name.lower()}",
        format=format_for(kind),
        target=target if target is not None else TargetIdentity.any(),
        artifact=artifact,
        resident_bytes=STANDARD_RESIDENT_BYTES,
        fixtures=fixtures,
    )


# --------------------------------------------------------------------------- kernels that take arguments

ArgumentValue = int | float
"""One knob of an argument kernel: an integer (sizes, counts) or a float (carried as f32)."""

_Pack = Callable[[bytes, ModuleKind, Mapping[str, ArgumentValue]], KernelPackage]
_Case = Callable[[Mapping[str, ArgumentValue], np.random.Generator], tuple[dict[int, Array], dict[int, Array], int]]


@dataclass(frozen=True, slots=True)
class _Knob:
    name: str
    kind: type  # int or float
    low: int = 0
    high: int = 0
    meaning: str = ""


@dataclass(frozen=True, slots=True)
class ArgumentKernelSpec:
    """A corpus kernel whose package carries argument values (format version 2).

    ``kinds``: the module kinds it is shipped for (the API it is written for).
    ``defaults``: the values of the committed package, by knob name — kernel
    argument, push-constant member or specialization constant names as the
    source spells them, plus sizes such as ``global_size`` / ``group_size``
    where the host chooses them. ``optional``: knobs that may be given but
    default to something derived from the others (e.g. ``global_size`` = ``n``).
    ``tolerance``: what :func:`compare` allows for a case, in words.
    """

    name: str
    summary: str
    kinds: tuple[ModuleKind, ...]
    entry_point: str
    defaults: Mapping[str, ArgumentValue]
    optional: tuple[str, ...]
    tolerance: str
    size_knobs: tuple[str, ...]
    """The knobs whose product is a case's ``elements`` (the work-items the kernel acts on)."""
    _knobs: tuple[_Knob, ...] = field(repr=False, compare=False)
    _pack: _Pack = field(repr=False, compare=False)
    _case: _Case = field(repr=False, compare=False)

    @property
    def knobs(self) -> tuple[str, ...]:
        """Every value name :func:`argument_package` / :func:`argument_case` accept."""
        return tuple(k.name for k in self._knobs)


def _int_knob(name: str, low: int, high: int, meaning: str) -> _Knob:
    return _Knob(name, int, low, high, meaning)


def _float_knob(name: str, meaning: str) -> _Knob:
    return _Knob(name, float, meaning=meaning)


def _f32(value: ArgumentValue) -> float:
    return float(np.float32(value))


def _sign(value: float) -> float:
    return -1.0 if value < 0 else 1.0


def _dyadic(value: float, fraction_bits: int, limit: float) -> bool:
    """Whether ``value`` is a multiple of 2^-fraction_bits with |value| <= limit."""
    scaled = value * (1 << fraction_bits)
    return abs(value) <= limit and scaled == math.floor(scaled)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _sentinel_f32(count: int) -> F32:
    return _sentinel(count).view(np.float32)


# saxpy_args.cl (OpenCL C, by-value a and n) ---------------------------------------------------------


def _pack_saxpy_args(module: bytes, kind: ModuleKind, v: Mapping[str, ArgumentValue]) -> KernelPackage:
    n = int(v["n"])
    return pack_module(
        module,
        kind=kind,
        arguments={"a": float(v["a"]), "n": n},
        global_size=int(v.get("global_size", n)),
        coverage={1: n, 2: n},
    )


def _saxpy_inputs(a: float, n: int, rng: np.random.Generator) -> tuple[F32, F32, F32]:
    # x >= 0 and y with a's sign: a*x and y never cancel, so a fused multiply-add and a
    # separate multiply and add differ by at most 1 ulp of the result (for any finite a).
    x = rng.uniform(0.0, 4.0, n).astype(np.float32)
    y = (_sign(a) * rng.uniform(0.0, 4.0, n)).astype(np.float32)
    out = (np.float32(a) * x + y).astype(np.float32)
    return x, y, out


def _case_saxpy_args(
    v: Mapping[str, ArgumentValue], rng: np.random.Generator
) -> tuple[dict[int, Array], dict[int, Array], int]:
    x, y, out = _saxpy_inputs(float(v["a"]), int(v["n"]), rng)
    return {1: x, 2: y}, {1: x, 2: out}, 1


# reduce_local.cl (OpenCL C, __local scratch, by-value n) ---------------------------------------------


def _pack_reduce_local(module: bytes, kind: ModuleKind, v: Mapping[str, ArgumentValue]) -> KernelPackage:
    n, group = int(v["n"]), int(v["group_size"])
    if group & (group - 1):
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT, f"reduce_local: group_size = {group} must be a power of two (a tree reduction)"
        )
    return pack_module(
        module,
        kind=kind,
        arguments={"n": n},
        local_memory={"scratch": 4 * group},
        local_size=(group, 1, 1),
        global_size=_round_up(n, group),
        coverage={0: n, 1: -(-n // group)},
    )


def _case_reduce_local(
    v: Mapping[str, ArgumentValue], rng: np.random.Generator
) -> tuple[dict[int, Array], dict[int, Array], int]:
    n, group = int(v["n"]), int(v["group_size"])
    # Quarters in [-8, 8]: with at most 1024 per group every partial sum is exact in f32, so
    # the tree order (or any other) gives the bit-exact result.
    values = (rng.integers(-32, 33, n) / 4).astype(np.float32)
    groups = -(-n // group)
    padded = np.zeros(groups * group, dtype=np.float64)
    padded[:n] = values
    sums = padded.reshape(groups, group).sum(axis=1).astype(np.float32)
    return {0: values, 1: _sentinel_f32(groups)}, {0: values, 1: sums}, 0


# gemm.cl (PolyBench/ACC, DATA_TYPE alpha, beta, int ni, nj, nk; 2-D) --------------------------------

GEMM_LOCAL_SIZE = (32, 8, 1)
"""PolyBench/ACC's DIM_LOCAL_WORK_GROUP_X/Y for gemm; the global size is rounded up to it."""


def _pack_gemm(module: bytes, kind: ModuleKind, v: Mapping[str, ArgumentValue]) -> KernelPackage:
    ni, nj, nk = int(v["ni"]), int(v["nj"]), int(v["nk"])
    return pack_module(
        module,
        kind=kind,
        arguments={"alpha": float(v["alpha"]), "beta": float(v["beta"]), "ni": ni, "nj": nj, "nk": nk},
        local_size=GEMM_LOCAL_SIZE,
        global_size=(_round_up(nj, GEMM_LOCAL_SIZE[0]), _round_up(ni, GEMM_LOCAL_SIZE[1])),
        coverage={0: ni * nk, 1: nk * nj, 2: ni * nj},
    )


def gemm_ulp_tolerance(alpha: float, beta: float, nk: int) -> int:
    """0 when alpha and beta are multiples of 1/8 within ±64 and nk <= 256 (every product and partial
    sum of the case's quarter inputs is then exact in f32, in any order, with or without FMA);
    else nk + 4 ulp (no term cancels, so recursive f32 summation stays within (nk + 2) u)."""
    if _dyadic(alpha, 3, 64) and _dyadic(beta, 3, 64) and nk <= 256:
        return 0
    return nk + 4


def _case_gemm(
    v: Mapping[str, ArgumentValue], rng: np.random.Generator
) -> tuple[dict[int, Array], dict[int, Array], int]:
    alpha, beta = float(v["alpha"]), float(v["beta"])
    ni, nj, nk = int(v["ni"]), int(v["nj"]), int(v["nk"])
    # Quarters in [0, 2]; C starts with the sign of alpha·beta so beta·C and every alpha·a·b term
    # share one sign (no cancellation).
    a = (rng.integers(0, 9, (ni, nk)) / 4).astype(np.float32)
    b = (rng.integers(0, 9, (nk, nj)) / 4).astype(np.float32)
    c0 = (_sign(alpha) * _sign(beta) * rng.integers(0, 9, (ni, nj)) / 4).astype(np.float32)
    c = alpha * (a.astype(np.float64) @ b.astype(np.float64)) + beta * c0.astype(np.float64)
    initial: dict[int, Array] = {0: a.reshape(-1), 1: b.reshape(-1), 2: c0.reshape(-1)}
    expected: dict[int, Array] = {0: a.reshape(-1), 1: b.reshape(-1), 2: c.astype(np.float32).reshape(-1)}
    return initial, expected, gemm_ulp_tolerance(alpha, beta, nk)


# saxpy_pc.comp (GLSL, push-constant block {float a; uint n}) -----------------------------------------


def _pack_saxpy_pc(module: bytes, kind: ModuleKind, v: Mapping[str, ArgumentValue]) -> KernelPackage:
    n = int(v["n"])
    return pack_module(
        module,
        kind=kind,
        push_constants={"a": float(v["a"]), "n": n},
        global_size=int(v.get("global_size", n)),
        coverage={0: n, 1: n},
    )


def _case_saxpy_pc(
    v: Mapping[str, ArgumentValue], rng: np.random.Generator
) -> tuple[dict[int, Array], dict[int, Array], int]:
    x, y, out = _saxpy_inputs(float(v["a"]), int(v["n"]), rng)
    return {0: x, 1: y}, {0: x, 1: out}, 1


# particles.comp (GLSL, local_size_x_id, constant_id DT, uniform block in set 0, storage in set 1) ----

PARTICLES_BINDINGS = (
    PackageBinding(0, 0, AccessMode.READ, 4, set=0, descriptor_type=DescriptorType.UNIFORM_BUFFER),
    PackageBinding(1, 0, AccessMode.READ_WRITE, 16, set=1),
    PackageBinding(2, 1, AccessMode.READ_WRITE, 16, set=1),
)
"""slot 0: the UBO {gravity, count} (set 0 binding 0); slot 1: positions, slot 2: velocities (set 1)."""


def _pack_particles(module: bytes, kind: ModuleKind, v: Mapping[str, ArgumentValue]) -> KernelPackage:
    count = int(v["count"])
    return pack_module(
        module,
        kind=kind,
        bindings=PARTICLES_BINDINGS,
        spec_constants={0: int(v["local_size"]), "DT": float(v["DT"])},
        global_size=count,
        coverage={0: 2, 1: count, 2: count},
    )


def particles_ulp_tolerance(gravity: float, dt: float) -> int:
    """0 when gravity and DT are multiples of 1/64 with |gravity| <= 16 and |DT| <= 1 (every step is
    then exact in f32 for the case's 1/16-grid inputs); else 4 ulp (signs chosen so nothing cancels)."""
    if _dyadic(gravity, 6, 16) and _dyadic(dt, 6, 1):
        return 0
    return 4


def _case_particles(
    v: Mapping[str, ArgumentValue], rng: np.random.Generator
) -> tuple[dict[int, Array], dict[int, Array], int]:
    count, gravity, dt = int(v["count"]), float(v["gravity"]), float(v["DT"])

    def sixteenths(low: int, high: int, shape: int | tuple[int, int]) -> npt.NDArray[np.float64]:
        return rng.integers(low * 16, high * 16 + 1, shape) / 16

    vel = sixteenths(-4, 4, (count, 4))
    # vel.y has the sign of -gravity·DT, and each position component the sign of the velocity·DT
    # added to it: every addition accumulates, none cancels.
    fall = _sign(-gravity * dt) if gravity * dt != 0 else 1.0
    vel[:, 1] = fall * np.abs(vel[:, 1])
    pos = np.abs(sixteenths(-8, 8, (count, 4)))
    new_vel = vel.copy()
    new_vel[:, 1] = vel[:, 1] - np.float64(np.float32(gravity)) * np.float64(np.float32(dt))
    for axis in range(3):
        pos[:, axis] *= np.where(new_vel[:, axis] * dt < 0, -1.0, 1.0)
    pos[:, 3] = sixteenths(-8, 8, count)
    pos32, vel32 = pos.astype(np.float32), vel.astype(np.float32)
    new_pos = pos32.astype(np.float64)
    new_pos[:, :3] += new_vel[:, :3] * np.float64(np.float32(dt))
    ubo = np.frombuffer(struct.pack("<fI", gravity, count), dtype=np.uint32).copy()
    initial: dict[int, Array] = {0: ubo, 1: pos32.reshape(-1), 2: vel32.reshape(-1)}
    expected: dict[int, Array] = {
        1: new_pos.astype(np.float32).reshape(-1),
        2: new_vel.astype(np.float32).reshape(-1),
    }
    return initial, expected, particles_ulp_tolerance(gravity, dt)


# transpose_tile.comp (GLSL, 16x16 shared tile, push {width, height}, 2-D) -----------------------------


def _pack_transpose_tile(module: bytes, kind: ModuleKind, v: Mapping[str, ArgumentValue]) -> KernelPackage:
    width, height = int(v["width"]), int(v["height"])
    return pack_module(
        module,
        kind=kind,
        push_constants={"width": width, "height": height},
        global_size=(width, height),
        coverage={0: width * height, 1: width * height},
    )


def _case_transpose_tile(
    v: Mapping[str, ArgumentValue], rng: np.random.Generator
) -> tuple[dict[int, Array], dict[int, Array], int]:
    width, height = int(v["width"]), int(v["height"])
    src = rng.uniform(-1000.0, 1000.0, (height, width)).astype(np.float32)
    return {0: src.reshape(-1), 1: _sentinel_f32(width * height)}, {0: src.reshape(-1), 1: src.T.reshape(-1)}, 0


_MAX_ITEMS = 1 << 24
_CL, _VK = (ModuleKind.OPENCL_SOURCE,), (ModuleKind.SPIRV_VULKAN,)


def _argument_spec(
    name: str,
    summary: str,
    kinds: tuple[ModuleKind, ...],
    entry_point: str,
    defaults: dict[str, ArgumentValue],
    knobs: tuple[_Knob, ...],
    tolerance: str,
    size_knobs: tuple[str, ...],
    pack: _Pack,
    case: _Case,
) -> ArgumentKernelSpec:
    optional = tuple(k.name for k in knobs if k.name not in defaults)
    proxy = types.MappingProxyType(defaults)
    return ArgumentKernelSpec(
        name, summary, kinds, entry_point, proxy, optional, tolerance, size_knobs, knobs, pack, case
    )


_ARGUMENT_SPECS = (
    _argument_spec(
        "saxpy_args",
        "y = a*x + y (f32) with a and n by value, Khronos-SDK / pyopencl style; driver-chosen local size",
        _CL,
        "saxpy",
        {"a": 2.5, "n": 1024},
        (
            _float_knob("a", "the scalar (argument 0)"),
            _int_knob("n", 1, _MAX_ITEMS, "elements (argument 3)"),
            _int_knob("global_size", 1, _MAX_ITEMS, "work-items (default n; more exercise the bounds check)"),
        ),
        "1 ulp (x >= 0 and y has a's sign, so FMA contraction differs by <= 1 ulp)",
        ("n",),
        _pack_saxpy_args,
        _case_saxpy_args,
    ),
    _argument_spec(
        "reduce_local",
        "work-group f32 sum in a host-sized __local scratch; one partial sum per group; n by value",
        _CL,
        "reduce_sum",
        {"n": 1024, "group_size": 64},
        (
            _int_knob("n", 1, _MAX_ITEMS, "inputs (argument 3)"),
            _int_knob("group_size", 1, 1024, "local size, a power of two; scratch = 4 * group_size bytes"),
        ),
        "bit-exact (quarter inputs: every partial sum is exact in any order)",
        ("n",),
        _pack_reduce_local,
        _case_reduce_local,
    ),
    _argument_spec(
        "gemm",
        "PolyBench/ACC gemm: C = alpha*A*B + beta*C (DATA_TYPE float), 2-D ids, local 32x8, global rounded up",
        _CL,
        "gemm",
        {"alpha": 1.5, "beta": 0.5, "ni": 64, "nj": 48, "nk": 40},
        (
            _float_knob("alpha", "argument 3"),
            _float_knob("beta", "argument 4"),
            _int_knob("ni", 1, 2048, "rows of A and C (argument 5)"),
            _int_knob("nj", 1, 2048, "columns of B and C (argument 6)"),
            _int_knob("nk", 1, 2048, "columns of A, rows of B (argument 7)"),
        ),
        "bit-exact for alpha, beta in 1/8 steps within ±64 and nk <= 256 (the recorded values); else nk + 4 ulp",
        ("ni", "nj"),
        _pack_gemm,
        _case_gemm,
    ),
    _argument_spec(
        "saxpy_pc",
        "y = a*x + y (f32) with push_constant Params { float a; uint n; }, Kompute style",
        _VK,
        "main",
        {"a": 2.5, "n": 1024},
        (
            _float_knob("a", "push-constant member at offset 0"),
            _int_knob("n", 1, _MAX_ITEMS, "push-constant member at offset 4"),
            _int_knob("global_size", 1, _MAX_ITEMS, "invocations (default n; rounded up to groups of 64)"),
        ),
        "1 ulp (x >= 0 and y has a's sign, so FMA contraction differs by <= 1 ulp)",
        ("n",),
        _pack_saxpy_pc,
        _case_saxpy_pc,
    ),
    _argument_spec(
        "particles",
        "Euler step of vec4 particles: local_size_x_id = 0, constant_id 1 DT, UBO {gravity, count} in set 0, "
        "positions and velocities in set 1, Sascha-Willems style",
        _VK,
        "main",
        {"count": 1024, "gravity": 9.75, "DT": 0.015625, "local_size": 64},
        (
            _int_knob("count", 1, _MAX_ITEMS, "particles (in the uniform block; also the global size)"),
            _float_knob("gravity", "in the uniform block (a buffer, not a package value)"),
            _float_knob("DT", "specialization constant 1 (the shader's default is 0.016)"),
            _int_knob("local_size", 1, 1024, "specialization constant 0 (local_size_x_id)"),
        ),
        "bit-exact for gravity, DT in 1/64 steps, |gravity| <= 16, |DT| <= 1 (the recorded values); else 4 ulp",
        ("count",),
        _pack_particles,
        _case_particles,
    ),
    _argument_spec(
        "transpose_tile",
        "2-D f32 transpose through a padded 16x16 shared tile with a barrier; push {width, height}",
        _VK,
        "main",
        {"width": 100, "height": 60},
        (
            _int_knob("width", 1, 4096, "columns of src (push-constant member at offset 0)"),
            _int_knob("height", 1, 4096, "rows of src (push-constant member at offset 4)"),
        ),
        "bit-exact (a copy)",
        ("width", "height"),
        _pack_transpose_tile,
        _case_transpose_tile,
    ),
)

ARGUMENT_KERNELS: tuple[str, ...] = tuple(spec.name for spec in _ARGUMENT_SPECS)
"""Corpus kernels whose packages carry argument values; each is shipped for its ``kinds`` only."""
_ARGUMENT_BY_NAME = {spec.name: spec for spec in _ARGUMENT_SPECS}


def argument_spec(kernel: str) -> ArgumentKernelSpec:
    """The spec of argument kernel ``kernel`` (one of :data:`ARGUMENT_KERNELS`)."""
    try:
        return _ARGUMENT_BY_NAME[kernel]
    except KeyError:
        hint = " (it takes no arguments: use kernel_spec / make_case)" if kernel in _BY_NAME else ""
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"no argument kernel {kernel!r}{hint}; known: {', '.join(ARGUMENT_KERNELS)}",
        ) from None


def argument_values(kernel: str, values: Mapping[str, ArgumentValue] | None = None) -> dict[str, ArgumentValue]:
    """The spec's defaults overridden by ``values``, checked: every name a knob of the kernel, integers
    within their range, floats finite in f32 (returned as the f32 value the package carries)."""
    spec = argument_spec(kernel)
    knobs = {k.name: k for k in spec._knobs}
    merged: dict[str, ArgumentValue] = dict(spec.defaults)
    for name, value in (values or {}).items():
        knob = knobs.get(name)
        if knob is None:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"{kernel} has no value {name!r}; it takes: {', '.join(knobs)}"
            )
        if knob.kind is int:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{kernel}: {name} = {value!r} must be an integer")
            if not knob.low <= int(value) <= knob.high:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT,
                    f"{kernel}: {name} = {value} is outside {knob.low}..{knob.high} ({knob.meaning})",
                )
            merged[name] = int(value)
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{kernel}: {name} = {value!r} must be a number")
            with np.errstate(over="ignore"):
                as_f32 = np.float32(value)
            if not np.isfinite(as_f32):
                raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{kernel}: {name} = {value!r} is not a finite f32")
            merged[name] = _f32(value)
    for name in spec.optional:
        if name == "global_size" and name in merged and int(merged[name]) < int(merged["n"]):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"{kernel}: global_size = {merged[name]} covers fewer work-items than n = {merged['n']}",
            )
    return merged


def argument_package(
    kernel: str,
    kind: ModuleKind | None = None,
    values: Mapping[str, ArgumentValue] | None = None,
    *,
    module: bytes | None = None,
) -> KernelPackage:
    """The package of argument kernel ``kernel`` for ``values`` (defaults where not given), packed
    with :func:`accelcore.kernels.pack.pack_module` from the committed module (or ``module``).

    ``kind`` defaults to the kernel's only kind. ``write_package(argument_package(k))`` is the
    committed package of ``k``; conformance cases re-pack with other values and check the result
    against :func:`argument_case` for the same values.
    """
    spec = argument_spec(kernel)
    chosen = spec.kinds[0] if kind is None else ModuleKind(kind)
    if module is None:
        module = load_module(kernel, chosen)
    else:
        _shipped_for(kernel, chosen)
    return spec._pack(module, chosen, argument_values(kernel, values))


def argument_case(kernel: str, values: Mapping[str, ArgumentValue] | None = None, seed: int = 0) -> KernelCase:
    """Deterministic inputs and numpy expectation for argument kernel ``kernel`` run with
    :func:`argument_package` of the same ``values``.

    ``initial`` has every slot of that package's binding table (outputs start as
    :data:`SENTINEL` words); ``expected`` lists what must hold afterwards, inputs
    that must come back unchanged included; ``elements`` is the dispatch's work-item count
    the kernel acts on (n, count, ni·nj, width·height). ``ulp_tolerance`` follows
    :attr:`ArgumentKernelSpec.tolerance` for these values.
    """
    spec = argument_spec(kernel)
    chosen = argument_values(kernel, values)
    rng = np.random.default_rng(seed)
    initial, expected, ulps = spec._case(chosen, rng)
    elements = math.prod(int(chosen[s]) for s in spec.size_knobs)
    return KernelCase(spec.name, elements, initial, expected, ulps)
