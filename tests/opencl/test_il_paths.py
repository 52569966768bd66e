"""Both ways SPIR-V reaches an OpenCL driver, on every device: the core ``clCreateProgramWithIL``
(CL_DEVICE_IL_VERSION reported) and the ``cl_khr_il_program`` entry point through ctypes
(providers/accel_opencl/il.py), forced here on a device that offers both (Intel's CPU runtime
2026.2 lists cl_khr_il_program). A device with neither refuses UNSUPPORTED naming both."""

from __future__ import annotations

from typing import Any

import pytest
from accel_opencl import programs

from accelcore import ArtifactRef, ErrorKind, MemorySource, TargetIdentity
from accelcore.conformance.corpus import load_package, make_case
from accelcore.kernels.package import ModuleKind, format_for


def _run_saxpy_spirv(rig: Any) -> None:
    raw = load_package("saxpy", ModuleKind.SPIRV_OPENCL)
    ref = ArtifactRef(format_for(ModuleKind.SPIRV_OPENCL), TargetIdentity.any(), MemorySource(raw), 64 << 20)
    program = rig.accel.load_program(rig.context, ref)
    rig.programs.append(program)
    rig.run_corpus(program, "saxpy", make_case("saxpy", 1000, seed=3))


@pytest.mark.parametrize("path", ["core", "khr"])
def test_spirv_through_each_il_entry_point(
    rig: Any, raises_kind: Any, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    loader = rig.accel._loader
    calls: list[int] = []
    original = programs.create_program_with_il_khr

    def counted(*args: Any) -> Any:
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(programs, "create_program_with_il_khr", counted)
    reachable = bool(loader.il_version) if path == "core" else loader.il_khr
    if path == "khr":
        monkeypatch.setattr(loader, "il_version", "")  # the extension only: what an OpenCL 1.2 device offers
    if not reachable:
        if not loader.il_version and not loader.il_khr:
            raw = load_package("saxpy", ModuleKind.SPIRV_OPENCL)
            ref = ArtifactRef(format_for(ModuleKind.SPIRV_OPENCL), TargetIdentity.any(), MemorySource(raw), 64 << 20)
            with raises_kind(ErrorKind.UNSUPPORTED) as info:
                rig.accel.load_program(rig.context, ref)
            assert "CL_DEVICE_IL_VERSION" in info.value.message and "cl_khr_il_program" in info.value.message
        return
    _run_saxpy_spirv(rig)
    assert len(calls) == (1 if path == "khr" else 0)


def test_which_devices_offer_which_il_path(entry: Any, rig: Any) -> None:
    loader = rig.accel._loader
    tag = entry.native.get("tag")
    if tag == "intel":  # measured 2026-12-01: IL SPIR-V_1.0 .. SPIR-V_1.4 and the extension
        assert "SPIR-V_1.4" in loader.il_version and loader.il_khr
    elif tag in ("pocl", "rusticl"):  # PoCL 3.1 and rusticl 22.3 here: neither
        assert not loader.il_version and not loader.il_khr
