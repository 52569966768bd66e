"""``accel pack`` and ``accel run`` of a raw OpenCL SPIR-V module (``artifacts/spirv/saxpy.cl.spv``,
clang-15 + llvm-spirv-15) on every OpenCL device, against numpy: it runs where the device takes
SPIR-V (Intel's CPU runtime here, IL SPIR-V 1.0-1.4) and is refused naming CL_DEVICE_IL_VERSION
where it does not (PoCL, rusticl)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from .test_real_drivers import _devices

pytestmark = pytest.mark.opencl

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "artifacts" / "spirv" / "saxpy.cl.spv"


def _takes_spirv() -> dict[str, bool]:
    """Per device id, whether the provider (in this process, same ICD order) takes OpenCL SPIR-V."""
    os.environ.setdefault("RUSTICL_ENABLE", "swrast")
    from accel_opencl import provider_family

    from accelcore.kernels.package import ModuleKind, format_for

    found = {}
    for entry in provider_family.discover():
        accel = provider_family.open(entry)
        found[entry.device_id] = format_for(ModuleKind.SPIRV_OPENCL) in accel.artifact_formats
    return found


def test_pack_and_run_a_raw_opencl_spirv_module(accel, tmp_path: Path) -> None:
    x = np.linspace(-3, 7, 1000, dtype=np.float32)
    y = np.arange(1000, dtype=np.float32)
    for name, array in (("x", x), ("y", y), ("d", np.zeros_like(x)), ("p", np.array([2.5], dtype=np.float32))):
        np.save(tmp_path / f"{name}.npy", array)
    packed = accel(
        ["pack", MODULE, "-o", "saxpy.kpkg", "--grid-from", "2", "--count-arg", "4"], providers=["opencl"], cwd=tmp_path
    )
    assert packed.returncode == 0, packed.stderr
    assert "SPIRV_OPENCL package" in packed.stdout
    binds = ["--bind", "0=x.npy", "--bind", "1=y.npy", "--bind", "2=d.npy:rw", "--bind", "3=p.npy"]
    takes = _takes_spirv()
    ran = 0
    for device in _devices(accel, "opencl"):
        for artifact in ("saxpy.kpkg", str(MODULE)):  # the package, and the raw module packed on the fly
            extra = [] if artifact.endswith(".kpkg") else ["--grid-from", "2", "--count-arg", "4"]
            out = f"out-{device.replace(':', '_')}.npy"
            proc = accel(
                ["run", device, artifact, *binds, *extra, "--out", f"2={out}"], providers=["opencl"], cwd=tmp_path
            )
            if takes[device]:
                assert proc.returncode == 0, (device, proc.stdout, proc.stderr)
                got = np.load(tmp_path / out)
                expected = np.float32(2.5) * x + y
                assert np.allclose(got, expected, rtol=0, atol=np.spacing(np.abs(expected)).max()), device
                ran += 1
            else:
                assert proc.returncode != 0, (device, proc.stdout)
                assert "CL_DEVICE_IL_VERSION" in proc.stdout + proc.stderr, (device, proc.stderr)
    assert ran == 2 * sum(takes.values())
