"""Kernels written the way well-known public projects write them (PolyBench/GPU, Rodinia, CLBlast, AMD/Khronos
samples, Kompute, Sascha Willems' Vulkan examples), run unmodified through ``accelcore.open(...).kernel(path)``
on every device that can run them, each result checked against numpy. The sources are in
``tests/python/data/public_style/``; they are written for these tests, in those projects' styles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind
from accelcore.devices.environment import apply_defaults
from accelcore.kernels.opencl_signature import opencl_kernels
from accelcore.kernels.values import ScalarType, ValueType
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

DATA = Path(__file__).parent / "data" / "public_style"


OPENCL, OPENCL_IDS = provider_device_params("opencl")
VULKAN, VULKAN_IDS = provider_device_params("vulkan")
opencl = pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
vulkan = pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)


def _rng() -> np.random.Generator:
    return np.random.default_rng(11)


@opencl
def test_polybench_gemm_with_a_typedef_data_type(entry: Any) -> None:
    ni, nj, nk = 48, 40, 32
    rng = _rng()
    a, b = rng.random((ni, nk), dtype=np.float32), rng.random((nk, nj), dtype=np.float32)
    c = rng.random((ni, nj), dtype=np.float32)
    expected = 0.5 * c + 1.5 * (a @ b)
    with ac.open(entry.device_id) as dev:
        gemm = dev.kernel(DATA / "gemm_polybench.cl")
        gemm(a, b, c, 1.5, 0.5, ni, nj, nk, global_size=(nj, ni))  # alpha, beta typed f32 from the typedef
    np.testing.assert_allclose(c, expected, rtol=1e-5)


@opencl
def test_polybench_atax_two_kernels_of_one_file(entry: Any) -> None:
    nx, ny = 96, 80  # the sizes the file #defines
    rng = _rng()
    a, x = rng.random((nx, ny), dtype=np.float32), rng.random(ny, dtype=np.float32)
    tmp, y = np.zeros(nx, np.float32), np.zeros(ny, np.float32)
    with ac.open(entry.device_id) as dev:
        dev.kernel(DATA / "atax_polybench.cl", entry="atax_kernel1")(A=a, x=x, tmp=tmp, nx=nx, ny=ny, global_size=nx)
        dev.kernel(DATA / "atax_polybench.cl", entry="atax_kernel2")(A=a, y=y, tmp=tmp, nx=nx, ny=ny, global_size=ny)
    np.testing.assert_allclose(tmp, a @ x, rtol=1e-5)
    np.testing.assert_allclose(y, a.T @ (a @ x), rtol=1e-5)


@opencl
def test_rodinia_style_local_tile_with_a_header_next_to_the_file(entry: Any) -> None:
    width, height = 64, 48
    image = _rng().random((height, width), dtype=np.float32)
    out = np.zeros((width, height), np.float32)
    with ac.open(entry.device_id) as dev:
        transpose = dev.kernel(DATA / "transpose_rodinia.cl", local_size=(16, 16))  # BLOCK_SIZE of common.h
        block = ac.local_memory(16 * 17 * 4)
        transpose(odata=out, idata=image, width=width, height=height, block=block, global_size=(width, height))
    assert np.array_equal(out, image.T)


@opencl
def test_clblast_style_build_options_and_vector_loads(entry: Any) -> None:
    n, wgs, wpt = 4096, 64, 2
    rng = _rng()
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    expected = np.float32(2.0) * x + y
    with ac.open(entry.device_id) as dev:
        axpy = dev.kernel(DATA / "xaxpy_clblast.cl", build_options=f"-DWGS={wgs} -DWPT={wpt}")
        axpy(n, 2.0, x, y, global_size=n // 4 // wpt)
    np.testing.assert_allclose(y, expected, rtol=1e-6)  # an FMA-contracted a*x+y is within 1 ulp


@opencl
def test_image_style_2d_convolution_with_a_constant_filter(entry: Any) -> None:
    width, height, taps = 50, 30, 3
    rng = _rng()
    image, kernel = rng.random((height, width), dtype=np.float32), rng.random((taps, taps), dtype=np.float32)
    out = np.zeros_like(image)
    with ac.open(entry.device_id) as dev:
        convolve = dev.kernel(DATA / "convolve2d.cl")
        convolve(
            input=image,
            filter=kernel,
            output=out,
            width=width,
            height=height,
            filterWidth=taps,
            global_size=(width, height),
        )
    padded = np.pad(image, 1, mode="edge")
    expected = sum(padded[r : r + height, c : c + width] * kernel[r, c] for r in range(taps) for c in range(taps))
    np.testing.assert_allclose(out, expected, rtol=1e-5)


@opencl
def test_double_precision_where_the_device_has_fp64(entry: Any) -> None:
    if not entry.facts.fp64:
        pytest.skip(f"{entry.device_id} reports no fp64 (cl_khr_fp64)")
    rng = _rng()
    x, y = rng.random(1000), rng.random(1000)
    expected = 3.0 * x + y
    with ac.open(entry.device_id) as dev:
        dev.kernel(DATA / "daxpy_fp64.cl")(n=x.size, alpha=3.0, x=x, y=y, global_size=x.size)
    np.testing.assert_allclose(y, expected, rtol=1e-15)
    with ac.open(entry.device_id) as dev, raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        dev.kernel(DATA / "daxpy_fp64.cl")(n=10, alpha=1.0, x=x[:10].astype(np.float32), y=y[:10], global_size=10)
    assert "argument x" in str(info.value) and "f64" in str(info.value)


@opencl
def test_half_storage_with_vload_half(entry: Any) -> None:
    x = _rng().random(1000).astype(np.float16)
    out = np.zeros_like(x)
    with ac.open(entry.device_id) as dev:
        dev.kernel(DATA / "half_storage.cl")(x, out, 1.5, x.size, global_size=x.size)
    assert np.array_equal(out, (x.astype(np.float32) * np.float32(1.5)).astype(np.float16))


@opencl
def test_a_constant_table_and_a_struct_by_value(entry: Any) -> None:
    rng = _rng()
    x = rng.integers(-8, 8, 64).astype(np.float32)
    coeffs = np.array([0.5, 0.25, 0.125], np.float32)
    out = np.full(64, -1.0, np.float32)
    n, taps = 50, 3
    with ac.open(entry.device_id) as dev:
        dev.kernel(DATA / "scale_constant_struct.cl")(
            x, out, coeffs, p={"scale": 2.0, "offset": 0.5, "n": n, "taps": taps}, global_size=64
        )
    padded = np.concatenate([np.zeros(taps - 1, np.float32), x])
    fir = sum(padded[taps - 1 - t : taps - 1 - t + n] * coeffs[t] for t in range(taps))
    np.testing.assert_array_equal(out[:n], fir * np.float32(2.0) + np.float32(0.5))  # eighths: exact
    assert (out[n:] == -1.0).all()  # p.n really is 50


@opencl
def test_a_struct_by_value_given_as_a_tuple_is_refused_naming_it(entry: Any) -> None:
    x = np.zeros(16, np.float32)
    with ac.open(entry.device_id) as dev, raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        dev.kernel(DATA / "scale_constant_struct.cl")(
            x, x.copy(), np.ones(3, np.float32), (1.0, 0.0, 16, 3), global_size=16
        )
    assert "argument p (const Params p; struct Params, 16 bytes) was given tuple" in str(info.value)


@vulkan
def test_kompute_style_push_constant_and_specialization_constant(entry: Any) -> None:
    a = _rng().random(100, dtype=np.float32)
    out = np.zeros_like(a)
    with ac.open(entry.device_id) as dev:
        dev.kernel(DATA / "kompute_mult.comp", spec={"addend": 0.5})(in_a=a, out_a=out, val=3.0, global_size=a.size)
    np.testing.assert_allclose(out, a * np.float32(3.0) + np.float32(0.5), rtol=1e-6)


UBO = np.dtype(
    {
        "names": ["deltaT", "particleCount", "gravity", "damping"],
        "formats": ["<f4", "<i4", ("<f4", 2), ("<f4", 4)],
        "offsets": [0, 4, 8, 16],  # std140: vec2 at 8, vec4 at 16
        "itemsize": 32,
    }
)


@vulkan
def test_sascha_willems_style_std140_uniform_block(entry: Any) -> None:
    count = 1000
    particles = _rng().random((1024, 4), dtype=np.float32)  # struct { vec2 pos; vec2 vel; }
    before = particles.copy()
    ubo = np.array((0.1, count, (0.0, -9.8), (0.99, 0, 0, 0)), dtype=UBO)
    with ac.open(entry.device_id) as dev:
        dev.kernel(DATA / "particles_ubo.comp")(particles=particles, ubo=ubo, global_size=count)
    dt, gravity = np.float32(0.1), np.array([0.0, -9.8], np.float32)
    velocity = (before[:count, 2:] + gravity * dt) * np.float32(0.99)
    np.testing.assert_allclose(particles[:count, 2:], velocity, rtol=1e-5)
    np.testing.assert_allclose(particles[:count, :2], before[:count, :2] + velocity * dt, rtol=1e-5)
    assert np.array_equal(particles[count:], before[count:])


@vulkan
def test_a_float64_array_for_a_struct_of_floats_is_refused(entry: Any) -> None:
    ubo = np.array((0.1, 8, (0.0, -9.8), (0.99, 0, 0, 0)), dtype=UBO)
    with ac.open(entry.device_id) as dev, raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        dev.kernel(DATA / "particles_ubo.comp")(particles=np.zeros((64, 4)), ubo=ubo, global_size=8)
    assert "particles" in str(info.value) and "float64" in str(info.value)


@vulkan
def test_shared_memory_reduction_with_barriers(entry: Any) -> None:
    data = _rng().random(1000, dtype=np.float32)
    partial = np.zeros(8, np.float32)
    with ac.open(entry.device_id) as dev:
        dev.kernel(DATA / "reduce_shared.comp")(data_in=data, data_out=partial, n=data.size, global_size=1024)
    np.testing.assert_allclose(partial, np.pad(data, (0, 24)).reshape(8, 128).sum(axis=1), rtol=1e-5)


@vulkan
def test_two_descriptor_sets_by_name_and_by_position(entry: Any) -> None:
    rng = _rng()
    a, b = rng.random(500, dtype=np.float32), rng.random(500, dtype=np.float32)
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(DATA / "two_sets.comp")
        c, d = np.zeros_like(a), np.zeros_like(a)
        kernel(a=a, b=b, c=c, d=d, global_size=a.size)
        assert np.array_equal(c, a + b) and np.array_equal(d, a * b)
        c2, d2 = np.zeros_like(a), np.zeros_like(a)
        kernel(a, b, c2, d2, global_size=a.size)  # positions: (set, binding) order
        assert np.array_equal(c2, a + b) and np.array_equal(d2, a * b)


def test_typedef_aliases_type_parameters_and_the_preprocessor_chooses_between_definitions() -> None:
    source = """
    typedef float DATA_TYPE;
    typedef unsigned int index_t;
    typedef struct { float a; } S;
    #ifdef USE_DOUBLE
    typedef double real;
    #else
    typedef float real;
    #endif
    __kernel void k(__global DATA_TYPE *a, DATA_TYPE alpha, index_t n, S s, real r) {}
    """
    (kernel,) = opencl_kernels(source)
    types = {p.name: p.value_type for p in kernel.parameters}
    assert types == {
        "a": ValueType(ScalarType.F32),
        "alpha": ValueType(ScalarType.F32),
        "n": ValueType(ScalarType.U32),
        "s": None,
        "r": ValueType(ScalarType.F32),  # Clang's preprocessor took the #else
    }
    (chosen,) = opencl_kernels(source, "-DUSE_DOUBLE")
    assert chosen.parameters[4].value_type == ValueType(ScalarType.F64)


@opencl
def test_an_array_of_structs_takes_float32_rows_or_a_structured_array(entry: Any) -> None:
    rng = _rng()
    bodies = rng.random((64, 8), dtype=np.float32)  # Body { float4 pos; float4 vel; }: 32 bytes, all float
    before = bodies.copy()
    structured = np.zeros(64, dtype=[("pos", "<f4", 4), ("vel", "<f4", 4)])
    structured["vel"] = before[:, 4:]
    with ac.open(entry.device_id) as dev:
        integrate = dev.kernel(DATA / "nbody_struct.cl")
        integrate(bodies, 0.5, 60, global_size=64)
        integrate(structured, 0.5, 64, global_size=64)
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as wrong_dtype:
            integrate(bodies.astype(np.float64), 0.5, 60, global_size=64)
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as partial:
            integrate(np.zeros(12, np.float32), 0.5, 1, global_size=1)
    moved = before[:60, :3] + np.float32(0.5) * before[:60, 4:7]
    np.testing.assert_allclose(bodies[:60, :3], moved, rtol=1e-6)
    assert np.array_equal(bodies[:60, 3:], before[:60, 3:]) and np.array_equal(bodies[60:], before[60:])
    np.testing.assert_allclose(structured["pos"][:, :3], np.float32(0.5) * before[:, 4:7], rtol=1e-6)
    assert "argument bodies" in str(wrong_dtype.value) and "float64" in str(wrong_dtype.value)
    assert "32-byte elements" in str(partial.value)


@opencl
def test_an_image_argument_is_unsupported_naming_it(entry: Any, tmp_path: Path) -> None:
    source = tmp_path / "image.cl"
    source.write_text("__kernel void blur(__read_only image2d_t src, __global float *dst) { dst[0] = 1.0f; }\n")
    with ac.open(entry.device_id) as dev, raises_kind(ErrorKind.UNSUPPORTED) as info:
        dev.kernel(source)(np.zeros(4, np.float32), np.zeros(4, np.float32), global_size=1)
    assert "argument 0 (__read_only image2d_t src) is an image" in str(info.value)
    with ac.open(entry.device_id) as dev, raises_kind(ErrorKind.UNSUPPORTED):
        dev.kernel(source)(dst=np.zeros(4, np.float32), global_size=1)  # no value given: still named an image


def test_struct_layouts_follow_the_opencl_c_abi() -> None:
    source = """
    typedef struct { float4 pos; float4 vel; } Body;
    struct Mixed { float a; double b; char c; float3 d; int e[3]; };
    union Bits { float f; uint u[2]; };
    typedef struct Mixed MixedAlias;
    typedef struct Node { __global struct Node *next; } Node;
    #ifdef WIDE
    typedef struct { double x; } Twice;
    #else
    typedef struct { float x; } Twice;
    #endif
    __kernel void k(__global Body *b, __global struct Mixed *m, __global union Bits *u, __global MixedAlias *a,
                    __global Node *n, __global Twice *t, Body by_value) {}
    """
    (kernel,) = opencl_kernels(source)
    layout = {p.name: (p.aggregate, p.element_bytes, p.aggregate_scalar) for p in kernel.parameters}
    f32 = ValueType(ScalarType.F32)
    assert layout == {
        "b": (True, 32, f32),
        "m": (True, 64, None),  # a@0 b@8 c@16 d@32 (float3: 16 bytes, aligned 16) e@48..60, rounded to 16
        "u": (True, 8, None),
        "a": (True, 64, None),
        "n": (True, 8, None),  # a pointer member: laid out by Clang, but no array can be checked against it
        "t": (True, 4, f32),  # the #else definition, as the compiler sees it
        "by_value": (True, 32, f32),
    }
    (wide,) = opencl_kernels(source, "-DWIDE")
    assert wide.parameter("t").element_bytes == 8 and wide.parameter("t").aggregate_scalar == ValueType(ScalarType.F64)


def _blur_block(weights: np.ndarray, width: int, height: int) -> np.ndarray:
    """std140 ``{ float weights[9]; uint width; uint height; }``: each float of the array on a 16-byte stride."""
    padded = np.dtype({"names": ["w"], "formats": ["<f4"], "offsets": [0], "itemsize": 16})
    block = np.zeros(1, np.dtype({"names": ["weights", "width", "height"], "formats": [(padded, 9), "<u4", "<u4"]}))
    block["weights"]["w"][0] = weights.ravel()
    block["width"], block["height"] = width, height
    assert block.itemsize == 152
    return block


@vulkan
def test_glsl_include_next_to_the_shader_and_a_std140_array_in_a_uniform_block(entry: Any) -> None:
    width, height = 50, 30
    rng = _rng()
    image, weights = rng.random((height, width), dtype=np.float32), rng.random((3, 3), dtype=np.float32)
    out = np.zeros_like(image)
    with ac.open(entry.device_id) as dev:
        blur = dev.kernel(DATA / "blur2d.comp")  # #include "blur_params.glsl"
        blur(src=image, dst=out, filt=_blur_block(weights, width, height), global_size=(width, height))
        tight = np.zeros(1, [("weights", "<f4", 9), ("width", "<u4"), ("height", "<u4")])
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:  # packed like a C struct: 44 bytes, not 152
            blur(src=image, dst=out, filt=tight, global_size=(width, height))
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as flat:  # float bits of the uints: mixed types, refused
            blur(src=image, dst=out, filt=np.zeros(38, np.float32), global_size=(width, height))
        by_members = np.zeros_like(image)  # the block by member, laid out from the module's decorations
        blur(src=image, dst=by_members, filt={"weights": weights.ravel(), "width": width, "height": height},
             global_size=(width, height))  # fmt: skip
    padded = np.pad(image, 1, mode="edge")
    expected = sum(padded[r : r + height, c : c + width] * weights[r, c] for r in range(3) for c in range(3))
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    np.testing.assert_array_equal(by_members, out)
    message = str(info.value)
    assert "argument filt declares struct {float[9, stride 16] weights at 0; uint width at 144" in message
    assert "(152 bytes)" in message and "44 bytes per element against 152" in message
    assert "whose members have different types" in str(flat.value)


@vulkan
def test_a_glsl_include_error_names_the_header_and_line(entry: Any, tmp_path: Path) -> None:
    (tmp_path / "helpers.glsl").write_text("float twice(float x) { return 2.0 * x }\n")
    shader = tmp_path / "uses.comp"
    shader.write_text('#version 450\n#include "helpers.glsl"\nlayout(local_size_x = 1) in;\nvoid main() {}\n')
    escape = tmp_path / "sub" / "escape.comp"
    escape.parent.mkdir()
    escape.write_text('#version 450\n#include "../helpers.glsl"\nlayout(local_size_x = 1) in;\nvoid main() {}\n')
    with ac.open(entry.device_id) as dev:
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(shader)
        assert f"{tmp_path / 'helpers.glsl'}:1:" in str(info.value)
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as refused:
            dev.kernel(escape)  # '..' leaving the shader's folder, as for OpenCL C
        assert "#include refused" in str(refused.value) and "../helpers.glsl" in str(refused.value)


@opencl
def test_the_cli_runs_a_typedef_gemm_and_an_array_of_structs(entry: Any, tmp_path: Path) -> None:
    rng = _rng()
    a, b = rng.random((48, 32), dtype=np.float32), rng.random((32, 40), dtype=np.float32)
    c = rng.random((48, 40), dtype=np.float32)
    bodies = rng.random((64, 8), dtype=np.float32)
    for name, array in (("a", a), ("b", b), ("c", c), ("bodies", bodies)):
        np.save(tmp_path / f"{name}.npy", array)
    lines = (
        f"run {entry.device_id} {DATA / 'gemm_polybench.cl'} --bind a=a.npy --bind b=b.npy --bind c=c.npy "
        "--arg alpha=1.5 --arg beta=0.5 --arg ni=48 --arg nj=40 --arg nk=32 --global 40,48 --out c=c2.npy",
        f"run {entry.device_id} {DATA / 'nbody_struct.cl'} --bind bodies=bodies.npy --arg dt=0.5 --arg count=60 "
        "--global 64 --out bodies=bodies2.npy",
    )
    for line in lines:
        done = subprocess.run(
            [sys.executable, "-m", "accel_cli", *line.split()],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "c2.npy"), 0.5 * c + 1.5 * (a @ b), rtol=1e-5)
    moved = np.load(tmp_path / "bodies2.npy")
    np.testing.assert_allclose(moved[:60, :3], bodies[:60, :3] + np.float32(0.5) * bodies[:60, 4:7], rtol=1e-6)
    assert np.array_equal(moved[:60, 3:], bodies[:60, 3:]) and np.array_equal(moved[60:], bodies[60:])


@vulkan
def test_the_cli_compiles_a_glsl_shader_with_an_include_next_to_it(entry: Any, tmp_path: Path) -> None:
    """accel run of blur2d.comp (#include "blur_params.glsl") inlines the header as dev.kernel does."""
    width, height = 20, 12
    rng = _rng()
    image, weights = rng.random((height, width), dtype=np.float32), rng.random((3, 3), dtype=np.float32)
    np.save(tmp_path / "src.npy", image)
    np.save(tmp_path / "dst.npy", np.zeros_like(image))
    np.save(tmp_path / "filt.npy", _blur_block(weights, width, height))
    line = (
        f"run {entry.device_id} {DATA / 'blur2d.comp'} --bind src=src.npy --bind dst=dst.npy --bind filt=filt.npy "
        f"--global {width},{height} --out dst=out.npy"
    )
    done = subprocess.run(
        [sys.executable, "-m", "accel_cli", *line.split()], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    padded = np.pad(image, 1, mode="edge")
    expected = sum(padded[r : r + height, c : c + width] * weights[r, c] for r in range(3) for c in range(3))
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, rtol=1e-5)
