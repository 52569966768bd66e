"""The numpy-first layer (accelcore.open / Device.kernel / calls) on every real device, against numpy."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import accelcore as ac
from accelcore import BackendError, ErrorKind
from accelcore.conformance.corpus import corpus_root
from accelcore.devices.environment import apply_defaults
from accelcore.devices.selector import SelectorError
from accelcore.testing.pytest_support import provider_device_params

apply_defaults()

SAXPY_GLSL = """#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform Params { float a; int n; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (int(i) < p.n) y[i] = p.a * x[i] + y[i]; }
"""
GROUPS_GLSL = """#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const float A = 1.0;
layout(set = 0, binding = 0) buffer Out { float v[]; };
void main() { v[gl_GlobalInvocationID.x] = A * float(gl_WorkGroupSize.x) + float(gl_LocalInvocationID.x); }
"""


OPENCL, OPENCL_IDS = provider_device_params("opencl")
VULKAN, VULKAN_IDS = provider_device_params("vulkan")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    opencl = corpus_root() / "src" / "opencl"  # the corpus sources docs/cli.md runs
    shutil.copyfile(opencl / "saxpy_args.cl", tmp_path / "saxpy.cl")
    shutil.copyfile(opencl / "reduce_local.cl", tmp_path / "reduce.cl")
    (tmp_path / "saxpy.comp").write_text(SAXPY_GLSL)
    (tmp_path / "groups.comp").write_text(GROUPS_GLSL)
    return tmp_path


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)  # x, y >= 0: an FMA-contracted a*x+y is within 1 ulp
    return rng.uniform(0, 1, 5000).astype(np.float32), rng.uniform(0, 1, 5000).astype(np.float32)


@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_the_readme_snippet_on_opencl(entry, files: Path) -> None:
    x, y = _inputs()
    expected = np.float32(2.5) * x + y
    with ac.open(entry.device_id) as dev:
        saxpy = dev.kernel(files / "saxpy.cl")
        out = saxpy(a=np.float32(2.5), x=x, y=y, n=np.int32(x.size), global_size=x.size)
        assert out is y  # read back into the caller's array, and returned
        np.testing.assert_array_max_ulp(y, expected, maxulp=1)
        # Positional order is the OpenCL parameter order; a new scalar value re-loads the program.
        y2 = np.zeros_like(x)
        saxpy(3.0, x, y2, x.size, global_size=x.size)
        np.testing.assert_array_max_ulp(y2, np.float32(3.0) * x, maxulp=1)


@pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)
def test_the_glsl_twin_on_vulkan(entry, files: Path) -> None:
    x, y = _inputs()
    expected = np.float32(2.5) * x + y
    with ac.open(entry.device_id) as dev:
        saxpy = dev.kernel(files / "saxpy.comp")  # compiled with glslangValidator
        out = saxpy(a=np.float32(2.5), x=x, y=y, n=np.int32(x.size), global_size=x.size)
        assert out is y
        np.testing.assert_array_max_ulp(y, expected, maxulp=1)


@pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)
def test_spec_constants_and_the_work_group_size(entry, files: Path) -> None:
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(files / "groups.comp", spec={"A": 2.0, "local_size_x": 32})
        out = np.zeros(256, np.float32)
        kernel(out, global_size=256)
        np.testing.assert_array_equal(out, 2.0 * 32 + np.arange(256) % 32)


@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_local_memory(entry, files: Path) -> None:
    data = np.random.default_rng(1).integers(-8, 8, 4096).astype(np.float32)
    partial = np.zeros(16, np.float32)
    with ac.open(entry.device_id) as dev:
        reduce = dev.kernel(files / "reduce.cl", local_size=(256,))
        reduce(data, partial, ac.local_memory(256 * 4), 4096, global_size=4096)
    np.testing.assert_array_equal(partial, data.reshape(16, 256).sum(axis=1))


@pytest.mark.parametrize("entry", OPENCL + VULKAN, ids=OPENCL_IDS + VULKAN_IDS)
def test_device_arrays_chain_without_host_round_trips(entry, files: Path) -> None:
    x, y = _inputs()
    source = files / ("saxpy.cl" if entry.provider == "opencl" else "saxpy.comp")
    with ac.open(entry.device_id) as dev:
        saxpy = dev.kernel(source)
        dx, dy = dev.array(x), dev.array(y)
        for _ in range(3):
            saxpy(a=1.0, x=dx, y=dy, n=x.size, global_size=x.size)
        np.testing.assert_allclose(dy.numpy(), 3 * x + y, rtol=1e-6)
        assert dev.engine.live_objects()["buffer"] == 2


@pytest.mark.parametrize("entry", OPENCL + VULKAN, ids=OPENCL_IDS + VULKAN_IDS)
def test_mismatched_arrays_are_refused_before_anything_runs(entry, files: Path) -> None:
    x, y = _inputs()
    source = files / ("saxpy.cl" if entry.provider == "opencl" else "saxpy.comp")
    with ac.open(entry.device_id) as dev:
        saxpy = dev.kernel(source)
        before = dict(dev.engine.live_objects())
        cases = {
            "float64 for a float buffer": ({"x": x.astype(np.float64), "y": y}, "declares f32 elements .* float64"),
            "int32 for a float buffer": ({"x": x.view(np.int32), "y": y}, "declares f32 elements .* int32"),
            "read-only array the kernel writes": ({"x": x, "y": _readonly(y)}, "read-only, but the kernel writes"),
            "not contiguous": ({"x": x, "y": np.zeros(2 * x.size, np.float32)[::2]}, "is not contiguous"),
        }
        for name, (arrays, message) in cases.items():
            with pytest.raises(BackendError, match=message) as info:
                saxpy(a=1.0, n=x.size, global_size=x.size, **arrays)
            assert info.value.kind is ErrorKind.INVALID_ARGUMENT, name
        with pytest.raises(BackendError, match=r"declares (f32|i32) but was given float"):
            saxpy(a=1.0, x=x, y=y, n=2.5, global_size=x.size)
        with pytest.raises(BackendError, match="has no argument 'z'"):
            saxpy(a=1.0, x=x, y=y, n=1, z=1, global_size=x.size)
        assert dict(dev.engine.live_objects()) == before  # nothing allocated, nothing submitted


def _readonly(array: np.ndarray) -> np.ndarray:
    out = array.copy()
    out.setflags(write=False)
    return out


@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_submit_then_wait_and_deterministic_release(entry, files: Path) -> None:
    x, y = _inputs()
    dev = ac.open(entry.device_id)
    try:
        run = dev.kernel(files / "saxpy.cl").submit(a=2.0, x=x, y=y, n=x.size, global_size=x.size)
        out = run.wait(timeout=60)
        assert run.done() and out is y
    finally:
        dev.close()
    assert all(count == 0 for count in dev.engine.live_objects().values())
    with pytest.raises(BackendError, match="closed"):
        dev.array(x)


def test_selectors_list_candidates() -> None:
    assert ac.devices("reference")[0].device_id == "reference:0"
    with pytest.raises(SelectorError, match=r"candidates|matches"):
        ac.open("*")
    with pytest.raises(SelectorError):
        ac.open("nosuchprovider:0")


def test_importing_accelcore_imports_no_driver() -> None:
    import subprocess

    code = "import sys, accelcore; print(sorted(m for m in ('pyopencl', 'vulkan') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


FILL_GLSL = """#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform P { uint n; } p;
layout(set = 0, binding = 0) writeonly buffer Out { float v[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) v[i] = 7.0; }
"""


@pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)
def test_elements_a_write_only_kernel_leaves_alone_come_back_as_given(entry, tmp_path: Path) -> None:
    (tmp_path / "fill.comp").write_text(FILL_GLSL)
    out = np.arange(256, dtype=np.float32)
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(tmp_path / "fill.comp")
        assert next(p for p in kernel.parameters if p.role == "buffer").access is ac.AccessMode.WRITE
        kernel(out, n=100, global_size=256)
    np.testing.assert_array_equal(out[:100], 7.0)
    np.testing.assert_array_equal(out[100:], np.arange(100, 256, dtype=np.float32))  # never device garbage


@pytest.mark.parametrize("entry", OPENCL[:1] + VULKAN, ids=OPENCL_IDS[:1] + VULKAN_IDS)
def test_a_kernel_package_checks_array_dtypes_too(entry, files: Path) -> None:
    """A .kpkg records its arguments; its buffers are still checked against the module's element types."""
    from accelcore.kernels.pack import pack_module
    from accelcore.kernels.package_codec import write_package

    if entry.provider == "opencl":
        pkg = pack_module((files / "saxpy.cl").read_bytes(), arguments={"a": 2.0, "n": 64}, global_size=64)
    else:
        from accelcore.kernels.glsl import compile_glsl

        pkg = pack_module(compile_glsl(SAXPY_GLSL.encode()), push_constants={"a": 2.0, "n": 64}, global_size=64)
    (files / "k.kpkg").write_bytes(write_package(pkg))
    x, y = (np.ones(64, np.float32), np.ones(64, np.float32))
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(files / "k.kpkg")
        with pytest.raises(BackendError, match=r"declares f32 elements .* float64"):
            kernel(x.astype(np.float64), y)
        kernel(x, y)
    np.testing.assert_array_equal(y, 3.0)


@pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)
def test_a_work_group_size_spec_must_be_a_positive_integer(entry, files: Path) -> None:
    with ac.open(entry.device_id) as dev:
        for bad in (64.5, "64", 0):
            with pytest.raises(BackendError, match="work-group size is a positive integer"):
                dev.kernel(files / "groups.comp", spec={"local_size_x": bad})
