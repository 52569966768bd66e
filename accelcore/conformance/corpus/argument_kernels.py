"""The corpus kernels that take arguments: their knobs, packers and numpy references (one table).

Each :class:`ArgumentKernelSpec` of :data:`ARGUMENT_KERNELS` is written the way real projects write
kernels — by-value and ``__local`` OpenCL arguments, push constants, specialization constants,
uniform buffers, descriptor set 1, 2-D global sizes — for the one API it was written for
(:attr:`ArgumentKernelSpec.kinds`), and carries how to pack a package for given values and how to
build the matching inputs and expectation. Looking kernels up by name is :mod:`.table`'s;
packing and building cases for checked values is :mod:`.argument_cases`'.
"""

from __future__ import annotations

import math
import struct
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...contract.errors import BackendError, ErrorKind
from ...contract.flags import AccessMode
from ...kernels.pack import pack_module
from ...kernels.package import DescriptorType, KernelPackage, ModuleKind, PackageBinding
from .kernel_case import F32, Array, _sentinel

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
