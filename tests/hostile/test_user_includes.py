"""A user's OpenCL C file with ``#include "common.h"`` next to it runs on every OpenCL device, from Python
(``dev.kernel(path)``) and through ``accel run`` (the includes are inlined on the host at pack time, so the
driver never looks a file up); a compile error in the header names the header and its line; escapes are
refused before any driver sees the source."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore.contract.errors import BackendError, ErrorKind
from accelcore.testing.pytest_support import real_device_params

OPENCL_DEVICES = [p for p in real_device_params() if p.id == "opencl" or any(m.name == "opencl" for m in p.marks)]
"""Every OpenCL device (or the one skip param saying why there is none)."""

KERNEL = """#include "common.h"
kernel void affine(global const float* x, global float* y, uint n) {
    uint i = get_global_id(0);
    if (i < n) y[i] = affine_of(x[i]);
}
"""
COMMON = (
    '#pragma once\n#include "detail/coefficients.h"\ninline float affine_of(float v) { return SLOPE * v + OFFSET; }\n'
)
COEFFICIENTS = "#ifndef COEFFICIENTS_H\n#define COEFFICIENTS_H\n#define SLOPE 3.0f\n#define OFFSET 0.5f\n#endif\n"
N = 100


def _project(tmp_path: Path, common: str = COMMON) -> Path:
    (tmp_path / "detail").mkdir()
    (tmp_path / "detail" / "coefficients.h").write_text(COEFFICIENTS)
    (tmp_path / "common.h").write_text(common)
    (tmp_path / "affine.cl").write_text(KERNEL)
    return tmp_path / "affine.cl"


@pytest.mark.parametrize(("family", "entry"), OPENCL_DEVICES)
def test_a_kernel_with_a_local_include_runs_from_python(
    family: Any, entry: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ACCELCORE_OPENCL_INCLUDE_ROOTS", raising=False)  # no roots needed for the user's own file
    source = _project(tmp_path)
    x = np.linspace(-1, 1, N, dtype=np.float32)
    with ac.open(entry.device_id) as dev:
        y = np.zeros(N, dtype=np.float32)
        dev.kernel(source)(x=x, y=y, n=np.uint32(N), global_size=N)
        np.testing.assert_allclose(y, 3.0 * x + 0.5, rtol=1e-6)

        (tmp_path / "link.h").symlink_to("/dev/stdin")
        (tmp_path / "affine.cl").write_text(KERNEL.replace("common.h", "link.h"))
        with pytest.raises(BackendError) as info:
            dev.kernel(source)
        assert info.value.kind is ErrorKind.INVALID_ARGUMENT
        assert "'#include \"link.h\"': it resolves to /dev/" in str(info.value)


@pytest.mark.parametrize(("family", "entry"), OPENCL_DEVICES)
def test_a_compile_error_in_a_header_names_the_header_and_line(family: Any, entry: Any, tmp_path: Path) -> None:
    source = _project(tmp_path, COMMON.replace("SLOPE * v", "SLOPE * v +* "))
    with ac.open(entry.device_id) as dev, pytest.raises(BackendError) as info:
        y = np.zeros(4, dtype=np.float32)
        dev.kernel(source)(x=y.copy(), y=y, n=np.uint32(4), global_size=4)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT
    assert f"{tmp_path / 'common.h'}:3:" in str(info.value), str(info.value)


@pytest.mark.parametrize(("family", "entry"), OPENCL_DEVICES)
def test_accel_run_of_a_kernel_with_a_local_include(family: Any, entry: Any, tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    source = _project(tmp_path / "project")
    x = np.linspace(0, 4, N, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.zeros(N, dtype=np.float32))
    env = {k: v for k, v in os.environ.items() if k != "ACCELCORE_OPENCL_INCLUDE_ROOTS"}
    env["ACCEL_PROVIDERS"] = "opencl"
    command = [sys.executable, "-m", "accel_cli", "run", entry.device_id, str(source), "--global", str(N)]
    command += ["--count-arg", "n", "--bind", f"0={tmp_path / 'x.npy'}", "--bind", f"1={tmp_path / 'y.npy'}"]
    command += ["--out", f"1={tmp_path / 'out.npy'}"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), 3.0 * x + 0.5, rtol=1e-6)

    (source.parent / "affine.cl").write_text(KERNEL.replace('"common.h"', '"../x.npy"'))
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 3, done.stderr
    assert "'#include \"../x.npy\"': '..' leaves the source file's folder" in done.stderr
