"""Cases built from the corpus kernels without arguments: numpy references and the standard target.

:func:`make_case` builds inputs and the numpy expectation for one kernel of :data:`~.table.KERNELS`
deterministically from ``seed``; :func:`spin_case` a spin run of a chosen length (the run-time
knob); :func:`standard_target` the standard conformance target over the committed
``conformance`` package.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...contract.errors import BackendError, ErrorKind
from ...contract.flags import AccessMode, MemoryDomain
from ...contract.program import TargetIdentity
from ...kernels.package import ModuleKind, format_for
from ..target import BindingFixture, ConformanceTarget
from .files import load_package
from .kernel_case import U32, Array, KernelCase, _sentinel, _u32
from .table import kernel_spec

SPIN_MAX_ITERATIONS = 1 << 24
"""The spin kernel clamps its iteration parameter to this bound."""

STANDARD_RESIDENT_BYTES = 64 << 20
"""resident_bytes of the standard target: generous for any compiled kernel, but finite."""


# --------------------------------------------------------------------------- references


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
