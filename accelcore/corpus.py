"""The kernel corpus in ``artifacts/``: specs, committed packages and numpy references.

Every corpus kernel follows one convention (docs/artifact-format.md): slot N
is Vulkan binding N in set 0 and OpenCL kernel argument N; when the kernel
takes an element count it is the OpenCL ``uint`` argument right after the
buffers and, on Vulkan, a 4-byte push constant at offset 0.

Promise: :func:`load_package` returns the committed bytes of one package (a
fresh copy; nothing is cached). :func:`make_case` builds inputs and the numpy
expectation for one kernel deterministically from ``seed``; :func:`compare`
checks a device result against it with the kernel's stated ulp tolerance.
Failures: an unknown kernel → INVALID_ARGUMENT naming the known ones; a
missing corpus or a kind the corpus does not ship → UNSUPPORTED.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .conformance.target import BindingFixture, ConformanceTarget
from .errors import BackendError, ErrorKind
from .flags import AccessMode, MemoryDomain
from .package import NO_COUNT_ARGUMENT, Dispatch, DispatchKind, ModuleKind, PackageBinding, format_for
from .program import TargetIdentity

__all__ = [
    "KERNELS",
    "SHIPPED_KINDS",
    "SPIN_MAX_ITERATIONS",
    "KernelCase",
    "KernelSpec",
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
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT, f"no corpus kernel {kernel!r}; known: {', '.join(KERNELS)}"
        ) from None


# --------------------------------------------------------------------------- files


def corpus_root() -> Path:
    """The ``artifacts/`` directory: $ACCELCORE_ARTIFACTS, else the one beside the package."""
    override = os.environ.get(ARTIFACTS_ENV)
    root = Path(override) if override else Path(__file__).resolve().parent.parent / "artifacts"
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


def module_path(kernel: str, kind: ModuleKind) -> Path:
    """Path of the committed module (``.spv`` or ``.cl`` source) of ``kernel`` for ``kind``."""
    spec = kernel_spec(kernel)
    suffix = _shipped(kind)
    root = corpus_root()
    if kind is ModuleKind.OPENCL_SOURCE:
        return root / "src" / "opencl" / f"{spec.name}.cl"
    return root / "spirv" / f"{spec.name}.{suffix}"


def package_path(kernel: str, kind: ModuleKind) -> Path:
    """Path of the committed ``.kpkg`` of ``kernel`` for ``kind``."""
    spec = kernel_spec(kernel)
    suffix = _shipped(kind)
    return corpus_root() / "packages" / f"{spec.name}.{suffix}.kpkg"


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
    """The committed kernel package bytes of ``kernel`` for module ``kind``."""
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
    spec = kernel_spec(kernel)
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
        f" first at {first}: got {actual[first]!r}, expected {expected[first]!r}"
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
