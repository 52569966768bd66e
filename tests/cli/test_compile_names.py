"""``accel compile`` keeps the source's argument names (and element types) in the device-binary package, so
``accel run --bind NAME=...`` and Python's ``dev.kernel(...)`` still take them; ``accel run`` and ``accel
compile`` name the user's file and line in a compile error, not the driver's temporary copy."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from accelcore.contract.errors import BackendError
from accelcore.kernels.package import ArgumentName, ModuleKind
from accelcore.kernels.package_codec import parse_package, write_package
from accelcore.kernels.values import ScalarType, ValueType

SAXPY_CL = """__kernel void saxpy(const float a, __global const float* x_in, __global float* y_io, const int n)
{
    int i = get_global_id(0);
    if (i < n) y_io[i] = a * x_in[i] + y_io[i];
}
"""
BROKEN_CL = """__kernel void broken(__global float* y, const int n)
{
    int i = get_global_id(0);
    if (i < n) y[i] = undeclared_name + 1.0f;
}
"""


@pytest.fixture
def opencl_devices(accel) -> list[str]:
    proc = accel(["devices", "--json"], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    found = [d["id"] for d in json.loads(proc.stdout)["devices"]]
    if not found:
        pytest.skip("the opencl provider offers no device here")
    return found


def _compile(accel, device: str, tmp_path: Path) -> Path:
    (tmp_path / "saxpy.cl").write_text(SAXPY_CL)
    binary = tmp_path / "saxpy.bin.kpkg"
    packing = ["--arg", "a=2.5", "--arg", "n=64", "--global", "64"]
    proc = accel(["compile", device, tmp_path / "saxpy.cl", "-o", binary, *packing], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    return binary


@pytest.mark.opencl
def test_a_compiled_package_keeps_the_argument_names(accel, opencl_devices: list[str], tmp_path: Path) -> None:
    binary = _compile(accel, opencl_devices[0], tmp_path)
    pkg = parse_package(binary.read_bytes())
    assert pkg.module_kind is ModuleKind.OPENCL_BINARY
    f32 = ValueType(ScalarType.F32)
    assert pkg.argument_names == (
        ArgumentName(0, "a", f32),
        ArgumentName(1, "x_in", f32),
        ArgumentName(2, "y_io", f32),
        ArgumentName(3, "n", ValueType(ScalarType.I32)),
    )
    x = np.arange(64, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.ones(64, np.float32))
    out = tmp_path / "out.npy"
    binds = ["--bind", f"x_in={tmp_path / 'x.npy'}", "--bind", f"y_io={tmp_path / 'y.npy'}", "--out", f"y_io={out}"]
    proc = accel(["run", opencl_devices[0], binary, *binds], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), 2.5 * x + 1)
    np.save(tmp_path / "x64.npy", x.astype(np.float64))  # the recorded element type is checked, as from source
    wrong = ["--bind", f"x_in={tmp_path / 'x64.npy'}", "--bind", f"y_io={tmp_path / 'y.npy'}"]
    proc = accel(["run", opencl_devices[0], binary, *wrong], providers=["opencl"])
    assert proc.returncode == 3 and "x_in" in proc.stderr and "float64" in proc.stderr, proc.stderr


@pytest.mark.opencl
def test_python_binds_a_compiled_package_by_name(accel, opencl_devices: list[str], tmp_path: Path) -> None:
    import accelcore as ac
    from accelcore.devices.environment import apply_defaults

    apply_defaults()
    binary = _compile(accel, opencl_devices[0], tmp_path)
    x, y = np.arange(64, dtype=np.float32), np.ones(64, np.float32)
    with ac.open(opencl_devices[0]) as dev:
        kernel = dev.kernel(binary)
        assert [p.name for p in kernel.parameters] == ["x_in", "y_io"]
        kernel(x_in=x, y_io=y)
    np.testing.assert_array_equal(y, 2.5 * x + 1)


def test_names_are_version_2_records_of_device_binaries_only() -> None:
    """Record kind 5 (docs/artifact-format.md): canonical, round-trips, refused in other kinds and when malformed."""
    from accelcore.kernels.pack import pack_module

    source = pack_module(SAXPY_CL.encode(), arguments={"a": 2.5, "n": 64}, global_size=64)
    names = (ArgumentName(1, "x_in", ValueType(ScalarType.F32)), ArgumentName(2, "y_io"))
    binary = dataclasses.replace(
        source, module_kind=ModuleKind.OPENCL_BINARY, module=b"poclbin-ish", argument_names=names
    )
    data = write_package(binary)
    assert parse_package(data) == binary and write_package(parse_package(data)) == data
    for bad in (
        dataclasses.replace(source, argument_names=names),  # a source names its arguments itself
        dataclasses.replace(binary, argument_names=names[::-1]),  # not in index order
        dataclasses.replace(binary, argument_names=(ArgumentName(1, "x"), ArgumentName(2, "x"))),
        dataclasses.replace(binary, argument_names=(ArgumentName(1, ""),)),
        dataclasses.replace(binary, argument_names=(ArgumentName(1, "a\0b"),)),
    ):
        with pytest.raises(BackendError, match="kernel package"):
            write_package(bad)


@pytest.mark.opencl
def test_run_and_compile_name_the_file_in_a_compile_error(accel, opencl_devices: list[str], tmp_path: Path) -> None:
    source = tmp_path / "broken.cl"
    source.write_text(BROKEN_CL)
    np.save(tmp_path / "y.npy", np.zeros(4, np.float32))
    packing = ["--arg", "n=4", "--global", "4"]
    for device in opencl_devices:
        run = accel(["run", device, source, "--bind", f"y={tmp_path / 'y.npy'}", *packing], providers=["opencl"])
        built = accel(["compile", device, source, "-o", tmp_path / "b.kpkg", *packing], providers=["opencl"])
        for proc in (run, built):
            assert proc.returncode == 3, proc.stderr
            assert f"{source}:4:" in proc.stderr and "undeclared_name" in proc.stderr, proc.stderr
            assert "tempfile" not in proc.stderr and "input.cl" not in proc.stderr, proc.stderr
