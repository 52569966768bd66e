"""The CLI on the real drivers of this machine (PoCL and rusticl through OpenCL, lavapipe through Vulkan).

Each test names the provider it needs and skips, with the provider's own
reason, when that driver stack is not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from accel_cli.schemas import validate

from accelcore.conformance.corpus import module_path, package_path
from accelcore.kernels.package import ModuleKind


def _devices(accel, provider: str) -> list[str]:
    """The provider's device ids as ``accel devices`` sees them (a subprocess: enumeration in a fresh process)."""
    proc = accel(["devices", "--json"], providers=[provider])
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    if not document["devices"]:
        reasons = [p["reason"] for p in document["providers"] if p["name"] == provider]
        pytest.skip(f"{provider} provider offers no device here: {reasons[0] if reasons else 'not installed'}")
    return [d["id"] for d in document["devices"]]


@pytest.fixture
def opencl_devices(accel) -> list[str]:
    return _devices(accel, "opencl")


@pytest.fixture
def vulkan_devices(accel) -> list[str]:
    return _devices(accel, "vulkan")


def _saxpy_inputs(tmp_path: Path) -> tuple[list[str], np.ndarray]:
    x = np.linspace(-3, 7, 1000, dtype=np.float32)
    y = np.arange(1000, dtype=np.float32)
    for name, array in (("x", x), ("y", y), ("d", np.zeros_like(x)), ("p", np.array([2.5], dtype=np.float32))):
        np.save(tmp_path / f"{name}.npy", array)
    binds = []
    for slot, name in enumerate("xydp"):
        binds += ["--bind", f"{slot}={tmp_path / f'{name}.npy'}"]
    return binds, np.float32(2.5) * x + y


@pytest.mark.opencl
def test_devices_lists_opencl_with_rusticl_default(accel, opencl_devices: list[str]) -> None:
    proc = accel(["devices", "--json"], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validate("devices", document)
    assert [d["id"] for d in document["devices"]] == opencl_devices
    platforms = {d["native"].get("platform", "") for d in document["devices"]}
    if "rusticl" not in platforms:
        pytest.skip(f"no rusticl device among {sorted(platforms)} (mesa-opencl-icd not installed?)")
    hidden = accel(["devices", "--json"], providers=["opencl"], env={"RUSTICL_ENABLE": ""})
    hidden_platforms = {d["native"].get("platform", "") for d in json.loads(hidden.stdout)["devices"]}
    assert "rusticl" not in hidden_platforms  # the default is what makes it visible


@pytest.mark.opencl
def test_info_opencl(accel, opencl_devices: list[str]) -> None:
    proc = accel(["info", opencl_devices[0], "--json"], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validate("info", document)
    assert document["valid"] and document["native"]


@pytest.mark.opencl
def test_run_saxpy_package_on_every_opencl_device(accel, opencl_devices: list[str], tmp_path: Path) -> None:
    binds, expected = _saxpy_inputs(tmp_path)
    for device in opencl_devices:
        out = tmp_path / f"out-{device.replace(':', '-')}.npy"
        package = package_path("saxpy", ModuleKind.OPENCL_SOURCE)
        proc = accel(["run", device, package, *binds, "--out", f"2={out}", "--json"], providers=["opencl"])
        assert proc.returncode == 0, proc.stderr
        validate("run", json.loads(proc.stdout))
        np.testing.assert_allclose(np.load(out), expected, rtol=1e-6)


@pytest.mark.opencl
def test_compile_then_run_and_foreign_device_refuses(accel, opencl_devices: list[str], tmp_path: Path) -> None:
    binds, expected = _saxpy_inputs(tmp_path)
    source = module_path("saxpy", ModuleKind.OPENCL_SOURCE)
    binary = tmp_path / "saxpy.bin.kpkg"
    proc = accel(
        [
            "compile",
            opencl_devices[0],
            source,
            "-o",
            binary,
            "--grid-from",
            "2",
            "--count-arg",
            "4",
            "--local-size",
            "64",
            "--json",
        ],
        providers=["opencl"],
    )
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validate("pack", document)
    assert document["package"]["module_kind"] == "OPENCL_BINARY" and document["package"]["target"]
    out = tmp_path / "out.npy"
    proc = accel(["run", opencl_devices[0], binary, *binds, "--out", f"2={out}"], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-6)
    if len(opencl_devices) < 2:
        pytest.skip("only one OpenCL device: cannot show a foreign device refusing the binary")
    proc = accel(["run", opencl_devices[1], binary, *binds], providers=["opencl"])
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"OPENCL_BINARY package was built for {opencl_devices[0]} (" in proc.stderr, proc.stderr


@pytest.mark.slow
@pytest.mark.opencl
def test_conformance_on_opencl(accel, opencl_devices: list[str], tmp_path: Path) -> None:
    report = tmp_path / "m.json"
    proc = accel(["conformance", *opencl_devices, "--json", report], providers=["opencl"], timeout=600)
    document = json.loads(report.read_text())
    validate("conformance-matrix", document)
    assert [r["device"]["id"] for r in document["runs"]] == opencl_devices
    assert all(r["outcome"] == "completed" for r in document["runs"]), document
    assert proc.returncode == (0 if document["ok"] else 1)


@pytest.mark.vulkan
def test_run_saxpy_on_vulkan(accel, vulkan_devices: list[str], tmp_path: Path) -> None:
    binds, expected = _saxpy_inputs(tmp_path)
    out = tmp_path / "out.npy"
    package = package_path("saxpy", ModuleKind.SPIRV_VULKAN)
    proc = accel(["run", vulkan_devices[0], package, *binds, "--out", f"2={out}"], providers=["vulkan"])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-6)


@pytest.mark.vulkan
def test_compile_refuses_a_vulkan_device(accel, vulkan_devices: list[str], tmp_path: Path) -> None:
    source = module_path("saxpy", ModuleKind.OPENCL_SOURCE)
    proc = accel(
        [
            "compile",
            vulkan_devices[0],
            source,
            "-o",
            tmp_path / "x.kpkg",
            "--grid-from",
            "2",
            "--local-size",
            "64",
            "--count-arg",
            "4",
        ],
        providers=["vulkan"],
    )
    assert proc.returncode == 2 and "is not an OpenCL device" in proc.stderr


@pytest.mark.opencl
def test_run_raw_opencl_source_packed_on_the_fly(accel, opencl_devices: list[str], tmp_path: Path) -> None:
    binds, expected = _saxpy_inputs(tmp_path)
    out = tmp_path / "out.npy"
    source = module_path("saxpy", ModuleKind.OPENCL_SOURCE)
    packing = ["--grid-from", "2", "--count-arg", "4", "--local-size", "64"]
    proc = accel(["run", opencl_devices[0], source, *packing, *binds, "--out", f"2={out}"], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-6)


@pytest.mark.vulkan
def test_run_raw_spirv_packed_on_the_fly(accel, vulkan_devices: list[str], tmp_path: Path) -> None:
    binds, expected = _saxpy_inputs(tmp_path)
    out = tmp_path / "out.npy"
    module = module_path("saxpy", ModuleKind.SPIRV_VULKAN)
    proc = accel(
        [
            "run",
            vulkan_devices[0],
            module,
            "--grid-from",
            "2",
            "--count-arg",
            "4",
            *binds,
            "--out",
            f"2={out}",
            "--json",
        ],
        providers=["vulkan"],
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["artifact"]["kind"] == "spirv"
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-6)


@pytest.mark.opencl
def test_run_refuses_a_slot_shorter_than_its_stated_coverage(accel, opencl_devices: list[str], tmp_path: Path) -> None:
    """``--coverage 0=item``: the engine refuses a too-short slot 0 before submitting (exit 3); without
    it the same binding is only a warning (the committed package reads past the input on CPU stacks)."""
    package = tmp_path / "conformance.kpkg"
    source = module_path("conformance", ModuleKind.OPENCL_SOURCE)
    packing = ["--grid-from", "1", "--count-arg", "2", "--local-size", "64", "--coverage", "0=item"]
    proc = accel(["pack", source, "-o", package, *packing], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    np.save(tmp_path / "short.npy", np.arange(16, dtype=np.uint32))
    np.save(tmp_path / "full.npy", np.arange(1024, dtype=np.uint32))
    np.save(tmp_path / "out.npy", np.zeros(1024, dtype=np.uint32))
    out = ["--bind", f"1={tmp_path / 'out.npy'}"]
    for device in opencl_devices:
        proc = accel(["run", device, package, "--bind", f"0={tmp_path / 'short.npy'}", *out], providers=["opencl"])
        assert proc.returncode == 3, proc.stderr
        assert "slot 0" in proc.stderr and "16 elements" in proc.stderr and "needs 1024" in proc.stderr, proc.stderr
        assert "warning" not in proc.stderr, proc.stderr
        result = tmp_path / f"result-{device.replace(':', '_')}.npy"
        proc = accel(
            ["run", device, package, "--bind", f"0={tmp_path / 'full.npy'}", *out, "--out", f"1={result}"],
            providers=["opencl"],
        )
        assert proc.returncode == 0, proc.stderr
        assert np.load(result).shape == (1024,)
