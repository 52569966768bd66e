"""The command lines of "Running your own kernel" (docs/cli.md): scalars, __local memory, 2-D grids,
push constants, specialization constants and uniform buffers, on every real device, against numpy;
and the refusals that keep a wrong value from running."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from accelcore.conformance.corpus import corpus_root

from .test_real_drivers import _devices

CORPUS_SOURCES = {"saxpy.cl": "saxpy_args.cl", "reduce.cl": "reduce_local.cl", "gemm.cl": "gemm.cl"}
"""The OpenCL C kernels the commands run: the corpus sources docs/cli.md runs (artifacts/src/opencl/)."""
SAXPY_PC = """#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform Params { float a; uint n; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = p.a * x[i] + y[i]; }
"""
PARTICLES = """#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const float DT = 0.5;
layout(set = 0, binding = 0) uniform Params { float gravity; uint count; } params;
layout(set = 0, binding = 1) buffer Pos { vec4 pos[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < params.count) pos[i].y += DT * params.gravity + float(gl_WorkGroupSize.x);
}
"""


@pytest.fixture
def kernels(tmp_path: Path) -> Path:
    for name, corpus_name in CORPUS_SOURCES.items():
        shutil.copyfile(corpus_root() / "src" / "opencl" / corpus_name, tmp_path / name)
    compiler = shutil.which("glslangValidator")
    assert compiler, "glslangValidator is missing (make setup installs glslang-tools)"
    for name, text in (("saxpy_pc", SAXPY_PC), ("particles", PARTICLES)):
        (tmp_path / f"{name}.comp").write_text(text)
        done = subprocess.run(
            [
                compiler,
                "--target-env",
                "vulkan1.1",
                "-o",
                str(tmp_path / f"{name}.spv"),
                str(tmp_path / f"{name}.comp"),
            ],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout
    rng = np.random.default_rng(3)  # x, y >= 0: an FMA-contracted a*x+y is within 1 ulp
    np.save(tmp_path / "x.npy", rng.uniform(0, 1, 1024).astype(np.float32))
    np.save(tmp_path / "y.npy", rng.uniform(0, 1, 1024).astype(np.float32))
    np.save(tmp_path / "in.npy", rng.integers(-8, 8, 4096).astype(np.float32))
    np.save(tmp_path / "part.npy", np.zeros(16, np.float32))
    for name in "ABC":
        np.save(tmp_path / f"{name}.npy", rng.integers(-4, 4, (64, 64)).astype(np.float32) / 4)
    params = np.array([(9.5, 1000)], dtype=[("gravity", "<f4"), ("count", "<u4")])  # uniform { float; uint; }
    np.save(tmp_path / "params.npy", params)
    np.save(tmp_path / "params_bits.npy", np.array([np.float32(9.5).view(np.uint32), 1000], dtype=np.uint32))
    np.save(tmp_path / "pos.npy", np.zeros((1024, 4), np.float32))
    return tmp_path


def _run(accel, provider: str, line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return accel(line.split(), providers=[provider], cwd=cwd)


def _succeeds(accel, provider: str, line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``accel LINE`` with only ``provider`` loaded, which must exit 0 (its stderr is the failure message)."""
    proc = _run(accel, provider, line, cwd)
    assert proc.returncode == 0, proc.stderr
    return proc


def _refusal(accel, provider: str, line: str, cwd: Path) -> str:
    """The error message of ``accel LINE --json``, which must be a refusal (exit 3)."""
    proc = _run(accel, provider, f"{line} --json", cwd)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    message: str = json.loads(proc.stdout)["error"]["message"]
    return message


def test_opencl_scalars_local_memory_and_2d(accel, kernels: Path) -> None:
    x, y = np.load(kernels / "x.npy"), np.load(kernels / "y.npy")
    data = np.load(kernels / "in.npy")
    a_m, b_m, c_m = (np.load(kernels / f"{n}.npy") for n in "ABC")
    for device in _devices(accel, "opencl"):
        _succeeds(
            accel,
            "opencl",
            f"run {device} saxpy.cl --arg a=2.5 --bind x=x.npy --bind y=y.npy:rw --arg n=1024 --global 1024 "
            "--out y=out.npy",
            kernels,
        )
        np.testing.assert_array_max_ulp(np.load(kernels / "out.npy"), np.float32(2.5) * x + y, maxulp=1)

        _succeeds(
            accel,
            "opencl",
            f"run {device} reduce.cl --local-mem scratch=1024 --bind input=in.npy --bind partial_sums=part.npy:w "
            "--arg n=4096 --global 4096 --local-size 256 --out partial_sums=part.npy",
            kernels,
        )
        np.testing.assert_array_equal(np.load(kernels / "part.npy"), data.reshape(16, 256).sum(axis=1))

        _succeeds(
            accel,
            "opencl",
            f"run {device} gemm.cl --arg alpha=1.5 --arg beta=0.5 --arg ni=64 --arg nj=64 --arg nk=64 --bind a=A.npy "
            "--bind b=B.npy --bind c=C.npy:rw --global 64,64 --out c=C2.npy",
            kernels,
        )
        np.testing.assert_array_equal(
            np.load(kernels / "C2.npy"), np.float32(1.5) * (a_m @ b_m) + np.float32(0.5) * c_m
        )


def test_vulkan_push_spec_and_uniform_buffers(accel, kernels: Path) -> None:
    x, y = np.load(kernels / "x.npy"), np.load(kernels / "y.npy")
    for device in _devices(accel, "vulkan"):
        _succeeds(
            accel,
            "vulkan",
            f"run {device} saxpy_pc.spv --push a=2.5 --push n=1024 --bind 0=x.npy --bind 1=y.npy:rw --global 1024 "
            "--out 1=out.npy",
            kernels,
        )
        np.testing.assert_array_max_ulp(np.load(kernels / "out.npy"), np.float32(2.5) * x + y, maxulp=1)

        _succeeds(
            accel,
            "vulkan",
            f"run {device} particles.spv --spec 0=256 --spec DT=f32:0.01 --bind 0=params.npy --bind 1=pos.npy:rw "
            "--groups 4 --out 1=pos2.npy",
            kernels,
        )
        pos = np.load(kernels / "pos2.npy")
        refused = _run(  # the float's bits in a uint32 array: mixed member types take a structured array
            accel,
            "vulkan",
            f"run {device} particles.spv --spec 0=256 --bind 0=params_bits.npy --bind 1=pos.npy:rw --groups 4",
            kernels,
        )
        assert refused.returncode == 3 and "gravity at 0" in refused.stderr, refused.stderr
        expected = np.float32(0.01) * np.float32(9.5) + np.float32(256)  # the work-group size really is 256
        np.testing.assert_allclose(pos[:1000, 1], expected, rtol=1e-6)
        assert not pos[1000:].any() and not pos[:, [0, 2, 3]].any()


def test_pack_records_the_flags_and_inspect_shows_every_value(accel, kernels: Path) -> None:
    _succeeds(accel, "opencl", "pack saxpy.cl -o saxpy.kpkg --arg a=2.5 --arg n=1024 --global 1024", kernels)
    proc = _succeeds(accel, "opencl", "inspect saxpy.kpkg --json", kernels)
    pkg = json.loads(proc.stdout)["package"]
    assert pkg["version"] == 2 and pkg["dispatch"]["global_size"] == [1024, 1, 1]
    assert [(a["name"], a["type"], a["value"]) for a in pkg["arguments"]] == [("a", "f32", 2.5), ("n", "i32", 1024)]
    proc = _run(accel, "opencl", "inspect saxpy.kpkg", kernels)
    assert "2.5" in proc.stdout and "const int n" in proc.stdout
    _succeeds(accel, "vulkan", "pack particles.spv -o particles.kpkg --spec DT=0.25 --groups 4", kernels)
    pkg = json.loads(_run(accel, "vulkan", "inspect particles.kpkg --json", kernels).stdout)["package"]
    specs = {c["name"] or c["spec_id"]: (c["value"], c["source"]) for c in pkg["spec_constants"]}
    assert specs["DT"] == (0.25, "package")
    assert specs[0] == (1, "module default")  # the work-group size keeps its default, and says so


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--arg a=i32:2 --arg n=1024", "argument a (const float a) declares f32 but was given i32:2"),
        ("--arg a=2.5 --arg n=2.5", "argument n (const int n) declares i32"),
        ("--arg a=2.5", "argument 3 (const int n) is by value and has no value; pass --arg NAME=VALUE"),
        ("--arg a=2.5 --arg m=1", "no kernel argument 'm'"),
        ("--arg n=4 --count-arg a --grid-from 2", "declared f32; the element count is a 32-bit integer"),
    ],
)
def test_value_mismatches_exit_3_naming_the_argument(accel, kernels: Path, line: str, message: str) -> None:
    dispatch = "" if "--grid-from" in line else " --global 1024"
    refusal = _refusal(
        accel, "opencl", f"run opencl:0 saxpy.cl {line}{dispatch} --bind x=x.npy --bind y=y.npy:rw", kernels
    )
    assert message in refusal


def test_bind_by_an_unknown_name_is_a_usage_error(accel, kernels: Path) -> None:
    proc = _run(accel, "opencl", "run opencl:0 saxpy.cl --arg a=1 --arg n=4 --global 4 --bind z=x.npy", kernels)
    assert proc.returncode == 2
    assert "no buffer called 'z' (x (slot 1), y (slot 2))" in proc.stderr


def test_one_run_over_several_devices_prints_the_comparison(accel, kernels: Path) -> None:
    from accel_cli.schemas import validate

    devices = _devices(accel, "opencl")
    if len(devices) < 2:
        pytest.skip(f"a comparison needs two OpenCL devices; found {devices}")
    line = "run opencl saxpy.cl --arg a=2.5 --bind x=x.npy --bind y=y.npy:rw --arg n=1024 --global 1024"
    proc = _succeeds(accel, "opencl", f"{line} --tolerance ulp:1 --json", kernels)
    document = json.loads(proc.stdout)
    validate("run-compare", document)
    assert [r["device"] for r in document["rows"]] == devices and document["reference"] == devices[0]
    assert all(r["output"] == "y" and r["max_ulp_error"] <= 1 and r["elements"] == 1024 for r in document["rows"])
    # Against a wrong expectation every device differs: exit 1, and the table says so.
    proc = _run(accel, "opencl", f"{line} --expect-output y=y.npy", kernels)
    assert proc.returncode == 1 and "DIFFERS" in proc.stdout and "reference: expected" in proc.stderr
    x, y = np.load(kernels / "x.npy"), np.load(kernels / "y.npy")
    np.save(kernels / "want.npy", np.float32(2.5) * x + y)
    proc = _run(accel, "opencl", f"{line} --expect-output y=want.npy --tolerance ulp:1", kernels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _run(accel, "opencl", f"{line} --out y=o.npy", kernels)
    assert proc.returncode == 2 and "--out saves one device's result" in proc.stderr


@pytest.mark.parametrize(("dtype", "given"), [(np.float64, "float64"), (np.int32, "int32")])
def test_an_array_of_another_dtype_is_refused_naming_the_argument(accel, kernels: Path, dtype, given) -> None:
    np.save(kernels / "bad.npy", np.load(kernels / "x.npy").astype(dtype))
    refused = {  # provider: (the run after the device, what the refusal says)
        "opencl": (
            "saxpy.cl --arg a=2.5 --arg n=1024 --global 1024 --bind x=bad.npy --bind y=y.npy:rw",
            f"--bind x (bad.npy) declares f32 elements (float32) but was given an array of {given}",
        ),
        "vulkan": (
            "saxpy_pc.spv --push a=2.5 --push n=1024 --bind 0=bad.npy --bind 1=y.npy:rw --global 1024",
            f"but was given an array of {given}",
        ),
    }
    for provider, (line, says) in refused.items():
        for device in _devices(accel, provider)[:1]:
            assert says in _refusal(accel, provider, f"run {device} {line}", kernels)
