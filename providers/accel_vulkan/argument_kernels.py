"""GLSL kernels that take arguments besides buffers, and runs of them with their numpy expectations.

Used by the ``vulkan.kernel-arguments`` conformance case and tests/vulkan/test_kernel_arguments.py.
The sources live here and are compiled at run time (``glslangValidator -V --target-env vulkan1.1``,
once per process per source); packages are built with :class:`~accelcore.kernels.package.KernelPackage`
directly. Each kernel is written so that an argument that did not arrive shows in its output:

- ``saxpy_push``: ``y = a * x + y`` with ``{ float a; uint n; }`` in the push block (no count);
- ``counted_push``: the same with ``{ uint n; float a; }`` and a count argument — the package's ``n``
  is 0 and only the count the provider writes over bytes 0..4 makes it do anything;
- ``uniform_set1``: ``y = x * scale + bias`` for ``i < n`` with ``{ scale, bias, n }`` in a uniform
  buffer in descriptor set 1;
- ``specialised``: the work-group size comes from ``local_size_x_id = 0`` and a float from
  ``constant_id = 1``; each invocation writes ``gl_WorkGroupSize.x``, ``gl_LocalInvocationID.x`` and
  ``SCALE * i`` (a default (1, 1, 1) group would show in both ids);
- ``grid_2d``: a 2-D GLOBAL dispatch over ``width x height`` (not multiples of the 8x8 group) that
  writes ``x * 1000 + y`` inside the grid only.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from accelcore import AccessMode, BackendError, ErrorKind
from accelcore.kernels.package import (
    Coverage,
    DescriptorType,
    Dispatch,
    DispatchKind,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    SpecConstant,
)
from accelcore.kernels.values import ScalarType, ValueType
from accelcore.support.text import plain

R, W, RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE
SENTINEL = 0xDEADBEEF
"""What output buffers hold before a run (a value no kernel here writes)."""

SOURCES = {
    "saxpy_push": """#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform Params { float a; uint n; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) y[i] = p.a * x[i] + y[i];
}
""",
    "counted_push": """#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform Params { uint n; float a; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) y[i] = p.a * x[i] + y[i];
}
""",
    "uniform_set1": """#version 450
layout(local_size_x = 64) in;
layout(set = 1, binding = 0) uniform Params { float scale; float bias; uint n; } u;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < u.n) y[i] = x[i] * u.scale + u.bias;
}
""",
    "specialised": """#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const float SCALE = 1.0;
layout(set = 0, binding = 0) writeonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 1) writeonly buffer Scaled { float scaled[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    ids[2 * i] = gl_WorkGroupSize.x;
    ids[2 * i + 1] = gl_LocalInvocationID.x;
    scaled[i] = SCALE * float(i);
}
""",
    "grid_2d": """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(push_constant) uniform Size { uint width; uint height; } s;
layout(set = 0, binding = 0) writeonly buffer Out { uint v[]; };
void main() {
    uvec2 g = gl_GlobalInvocationID.xy;
    if (g.x < s.width && g.y < s.height) v[g.y * s.width + g.x] = g.x * 1000u + g.y;
}
""",
}

VK = ModuleKind.SPIRV_VULKAN
U32 = ValueType(ScalarType.U32)
F32 = ValueType(ScalarType.F32)


def glslang_path() -> str | None:
    return shutil.which("glslangValidator")


@lru_cache(maxsize=32)
def compile_glsl(source: str) -> bytes:
    """SPIR-V of a GLSL compute shader (Vulkan 1.1 target); UNSUPPORTED when glslangValidator is missing."""
    tool = glslang_path()
    if tool is None:
        raise BackendError(
            ErrorKind.UNSUPPORTED, "glslangValidator is not installed (Debian: glslang-tools); make setup installs it"
        )
    with tempfile.TemporaryDirectory(prefix="accel-glsl-") as folder:
        src, out = Path(folder) / "k.comp", Path(folder) / "k.spv"
        src.write_text(source)
        done = subprocess.run(
            [tool, "-V", "--target-env", "vulkan1.1", str(src), "-o", str(out)], capture_output=True, check=False
        )
        if done.returncode != 0:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"glslangValidator failed: {done.stdout.decode()[-400:]}")
        return out.read_bytes()


def module(name: str) -> bytes:
    return compile_glsl(SOURCES[name])


@dataclass(frozen=True)
class ArgumentRun:
    """One run: a package, each slot's initial bytes and access, and what checked slots must hold after it."""

    what: str
    package: KernelPackage
    initial: dict[int, bytes]
    access: dict[int, AccessMode]
    expected: dict[int, np.ndarray] = field(default_factory=dict)
    ulp: int = 0
    """float32 tolerance in units in the last place (FMA contraction may round once instead of twice)."""

    def problem(self, slot: int, got: bytes) -> str | None:
        """None when ``got`` matches ``expected[slot]`` (float32 within ``ulp``), else what differs."""
        expected = self.expected[slot]
        if len(got) != expected.nbytes:
            return f"{self.what}: slot {slot} read {len(got)} bytes, expected {expected.nbytes}"
        actual = np.frombuffer(got, dtype=expected.dtype)
        if expected.dtype == np.float32:
            distance = np.abs(_ordered(actual) - _ordered(expected))
            bad = np.flatnonzero(distance > self.ulp)
        else:
            bad = np.flatnonzero(actual != expected)
        if bad.size == 0:
            return None
        first = int(bad[0])
        return (
            f"{self.what}: slot {slot}: {bad.size} of {actual.size} elements differ; first at {first}: "
            f"got {plain(actual[first])}, expected {plain(expected[first])}"
        )


def _ordered(values: np.ndarray) -> np.ndarray:
    bits = values.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def _sentinel(count: int) -> bytes:
    return np.full(count, SENTINEL, dtype=np.uint32).tobytes()


def _floats(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


def _saxpy_rows() -> tuple[PackageBinding, ...]:
    return (
        PackageBinding(0, 0, R, 4, coverage=Coverage.PER_WORK_ITEM),
        PackageBinding(1, 1, RW, 4, coverage=Coverage.PER_WORK_ITEM),
    )


def saxpy_package(a: float, n: int, *, push: bytes | None = None) -> KernelPackage:
    """``y = a * x + y`` over ``n`` elements, ``a`` and ``n`` in the push block (``push`` overrides the bytes)."""
    block = struct.pack("<fI", a, n) if push is None else push
    dispatch = Dispatch(DispatchKind.FROM_BINDING, slot=1)
    return KernelPackage(VK, "main", (64, 1, 1), _saxpy_rows(), dispatch, module("saxpy_push"), push_constants=block)


def saxpy_run(a: float, n: int, seed: int = 1) -> ArgumentRun:
    x, y = _floats(n, seed)
    expected = (np.float32(a) * x + y).astype(np.float32)
    return ArgumentRun(
        f"push-block saxpy (a={a}, n={n})",
        saxpy_package(a, n),
        {0: x.tobytes(), 1: y.tobytes()},
        {0: R, 1: RW},
        {1: expected},
        ulp=1,
    )


def counted_run(a: float, n: int, seed: int = 2) -> ArgumentRun:
    """The count (written over push bytes 0..4 each dispatch) is the kernel's ``n``; the package's is 0."""
    x, y = _floats(n, seed)
    dispatch = Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=0)
    package = KernelPackage(
        VK,
        "main",
        (64, 1, 1),
        _saxpy_rows(),
        dispatch,
        module("counted_push"),
        push_constants=struct.pack("<If", 0, a),
    )
    expected = (np.float32(a) * x + y).astype(np.float32)
    return ArgumentRun(
        f"push block with the count at offset 0 (a={a}, n={n})",
        package,
        {0: x.tobytes(), 1: y.tobytes()},
        {0: R, 1: RW},
        {1: expected},
        ulp=1,
    )


UNIFORM_BYTES = 16
"""The uniform parameter buffer: { float scale; float bias; uint n; } (12 bytes) padded to 16."""


def uniform_run(scale: float, bias: float, n: int, seed: int = 3) -> ArgumentRun:
    """Parameters in a uniform buffer in descriptor set 1 (slot 2)."""
    x, _ = _floats(n, seed)
    rows = (
        PackageBinding(0, 0, R, 4, coverage=Coverage.PER_WORK_ITEM),
        PackageBinding(1, 1, W, 4, coverage=Coverage.PER_WORK_ITEM),
        PackageBinding(2, 0, R, UNIFORM_BYTES, set=1, descriptor_type=DescriptorType.UNIFORM_BUFFER),
    )
    dispatch = Dispatch(DispatchKind.FROM_BINDING, slot=1)
    package = KernelPackage(VK, "main", (64, 1, 1), rows, dispatch, module("uniform_set1"))
    params = struct.pack("<ffI", scale, bias, n) + bytes(4)
    expected = (x * np.float32(scale) + np.float32(bias)).astype(np.float32)
    return ArgumentRun(
        f"uniform buffer in set 1 (scale={scale}, bias={bias}, n={n})",
        package,
        {0: x.tobytes(), 1: _sentinel(n), 2: params},
        {0: R, 1: W, 2: R},
        {1: expected},
        ulp=1,
    )


def specialised_package(local: int, scale: float, groups: int, *, stated_local: int | None = None) -> KernelPackage:
    """Work-group size ``local`` through SpecId 0, SCALE through SpecId 1; ``stated_local`` overrides what
    the package says its local size is (to provoke a mismatch)."""
    specs = (
        SpecConstant(0, U32, struct.pack("<I", local)),
        SpecConstant(1, F32, struct.pack("<f", scale)),
    )
    rows = (PackageBinding(0, 0, W, 8), PackageBinding(1, 1, W, 4))
    stated = local if stated_local is None else stated_local
    return KernelPackage(
        VK,
        "main",
        (stated, 1, 1),
        rows,
        Dispatch(DispatchKind.FIXED, (groups, 1, 1)),
        module("specialised"),
        spec_constants=specs,
    )


def specialised_run(local: int, scale: float, groups: int = 4) -> ArgumentRun:
    items = local * groups
    index = np.arange(items, dtype=np.uint32)
    ids = np.empty(2 * items, dtype=np.uint32)
    ids[0::2] = local
    ids[1::2] = index % local
    scaled = (np.float32(scale) * index.astype(np.float32)).astype(np.float32)
    return ArgumentRun(
        f"spec constants (local_size_x_id = {local}, SCALE = {scale})",
        specialised_package(local, scale, groups),
        {0: _sentinel(2 * items), 1: _sentinel(items)},
        {0: W, 1: W},
        {0: ids, 1: scaled},
    )


def grid_run(width: int, height: int) -> ArgumentRun:
    """A GLOBAL (width, height) dispatch of 8x8 groups: ceil(width / 8) x ceil(height / 8) of them."""
    rows = (PackageBinding(0, 0, W, 4, coverage=Coverage.PER_WORK_ITEM),)
    package = KernelPackage(
        VK,
        "main",
        (8, 8, 1),
        rows,
        Dispatch.global_items(width, height),
        module("grid_2d"),
        push_constants=struct.pack("<II", width, height),
    )
    ys, xs = np.meshgrid(np.arange(height, dtype=np.uint32), np.arange(width, dtype=np.uint32), indexing="ij")
    expected = (xs * np.uint32(1000) + ys).astype(np.uint32).reshape(-1)
    return ArgumentRun(
        f"2-D GLOBAL dispatch ({width} x {height} work-items, 8x8 groups)",
        package,
        {0: _sentinel(width * height)},
        {0: W},
        {0: expected},
    )


def standard_runs() -> list[ArgumentRun]:
    """What the conformance case runs."""
    return [
        saxpy_run(2.5, 1000),
        saxpy_run(-0.75, 333, seed=5),
        counted_run(1.5, 777),
        uniform_run(3.0, -1.25, 500),
        specialised_run(32, 0.5),
        specialised_run(16, 2.0, groups=3),
        grid_run(37, 21),
    ]
