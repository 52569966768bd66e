"""The binary probe child does not import from the folder the parent runs in.

A ``json.py`` in the current folder (the first module the probe imports) stands for any file
there: started as ``python -m``, the child would put that folder first on ``sys.path`` and run it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_opencl import binaries

from accelcore import ArtifactRef, MemorySource
from accelcore.kernels.package import ModuleKind
from accelcore.kernels.package_codec import write_package

HOSTILE = """\
import os, sys
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "IMPORTED-%d" % os.getpid()), "w").close()
sys.exit(86)
"""


def plant_hostile_modules(folder: Path) -> None:
    """``json.py`` and ``numpy.py`` in ``folder``: imported, each leaves a marker file and exits 86."""
    for name in ("json", "numpy"):
        (folder / f"{name}.py").write_text(HOSTILE)


def markers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("IMPORTED-*"))


def test_the_probe_ignores_modules_in_the_current_folder(
    rig: Any, make_package: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source_program = rig.load(make_package())
    binary = rig.accel.program_binary(source_program)
    package = dataclasses.replace(
        make_package(), module_kind=ModuleKind.OPENCL_BINARY, module=binary, target=rig.accel.binary_target
    )
    monkeypatch.setattr(binaries, "_trusted", set())  # as in a fresh process: this binary needs the probe
    plant_hostile_modules(tmp_path)
    monkeypatch.chdir(tmp_path)
    artifact = ArtifactRef(package.format, package.target, MemorySource(write_package(package)), 64 << 20)
    program = rig.accel.load_program(rig.context, artifact)
    rig.programs.append(program)
    assert markers(tmp_path) == []
    assert binaries.is_trusted(binary)  # the probe ran and answered
    src = np.arange(64, dtype=np.uint32)
    a, b = rig.buffer(src, "r"), rig.buffer(np.zeros(64, np.uint32), "w")
    event = rig.submit(program, {0: (a, "r"), 1: (b, "w")})
    assert str(rig.wait(event)) == "Complete"
    assert np.array_equal(np.frombuffer(rig.read(b), dtype=np.uint32), src * 2 + 1)
