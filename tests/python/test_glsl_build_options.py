"""GLSL build options and entry points: ``Device.kernel(..., build_options=, entry=)`` and ``accel run/pack
--build-options/--entry`` hand ``-D``/``-U`` to glslangValidator, search ``-I`` folders for includes, compile a
named function as the entry point, and refuse any other option naming it (accelcore.kernels.glsl)."""

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
from accelcore.kernels.glsl import compile_glsl, glsl_build_options
from accelcore.kernels.package_codec import parse_package
from accelcore.kernels.spirv import inspect_spirv
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

VULKAN, VULKAN_IDS = provider_device_params("vulkan")
vulkan = pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)

COUNT = 256
SCALED = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
#ifdef SQUARE
    y[i] = x[i] * x[i] * SCALE;
#else
    y[i] = x[i] * SCALE;
#endif
}
"""
INCLUDING = SCALED.replace("#version 450\n", '#version 450\n#include "scale.h"\n')
RENAMED = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
float twice(float v) { return 2.0 * v; }
void main() { y[gl_GlobalInvocationID.x] = -1.0; }
void scale_by_two() { y[gl_GlobalInvocationID.x] = twice(x[gl_GlobalInvocationID.x]); }
"""


def _x() -> np.ndarray:
    return np.random.default_rng(3).uniform(0.5, 2.0, COUNT).astype(np.float32)


def _run(dev: Any, source: Path | bytes, **kernel: Any) -> np.ndarray:
    x, y = _x(), np.zeros(COUNT, np.float32)
    dev.kernel(source, **kernel)(x, y, global_size=COUNT)
    return y


def _accel(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accel_cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_options_glsl_takes_become_compiler_arguments_in_order() -> None:
    parsed = glsl_build_options("-D SCALE=2.5 -DSQUARE -DEMPTY= -U SQUARE -I inc -Iother '-DTEXT=a b'")
    assert parsed.macros == ("-DSCALE=2.5", "-DSQUARE=1", "-DEMPTY=", "-USQUARE", "-DTEXT=a b")
    assert parsed.include_dirs == ("inc", "other")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ("-cl-fast-relaxed-math", "'-cl-fast-relaxed-math'"),
        ("-DN=4 -O2", "'-O2'"),
        ("--foo", "'--foo'"),
        ("-D", "'-D'"),
        ("-D 4N=1", "'-D 4N=1'"),
        ("-UN=1", "'-UN=1'"),
        ("'-DN=1\nvoid x() {}'", "'-DN=1\\nvoid x() {}'"),
    ],
)
def test_any_other_option_is_refused_naming_it(options: str, named: str) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        compile_glsl(SCALED.encode(), name="k.comp", build_options=options)
    assert f"GLSL build option {named}" in str(info.value)
    assert "GLSL takes -D NAME[=VALUE], -U NAME, -I DIR" in str(info.value)


@vulkan
def test_a_define_sets_a_constant_and_without_it_the_compile_error_is_reported(entry: Any, tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text(SCALED)
    with ac.open(entry.device_id) as dev:
        np.testing.assert_array_equal(_run(dev, tmp_path / "k.comp", build_options="-DSCALE=3.0"), 3.0 * _x())
        np.testing.assert_array_equal(_run(dev, SCALED.encode(), build_options="-D SCALE=0.5"), 0.5 * _x())
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(tmp_path / "k.comp")
        assert "GLSL k.comp does not compile" in str(info.value) and "'SCALE' : undeclared identifier" in str(
            info.value
        )
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(tmp_path / "k.comp", build_options="-DSCALE=3.0 -cl-mad-enable")
        assert "'-cl-mad-enable'" in str(info.value)


@vulkan
def test_an_ifdef_chooses_the_code_path_and_minus_u_undefines(entry: Any, tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text(SCALED)
    x = _x()
    with ac.open(entry.device_id) as dev:
        squared = _run(dev, tmp_path / "k.comp", build_options="-DSCALE=2.0 -DSQUARE")
        np.testing.assert_allclose(squared, 2.0 * x * x, rtol=1e-6)
        linear = _run(dev, tmp_path / "k.comp", build_options="-DSCALE=2.0 -DSQUARE -U SQUARE")
        np.testing.assert_array_equal(linear, 2.0 * x)


@vulkan
def test_an_include_dir_is_searched_after_the_shaders_folder(
    entry: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "inc").mkdir()
    (tmp_path / "src" / "k.comp").write_text(INCLUDING)
    (tmp_path / "inc" / "scale.h").write_text("#define SCALE 4.0\n")
    monkeypatch.chdir(tmp_path)  # -I folders are relative to the current folder
    with ac.open(entry.device_id) as dev:
        np.testing.assert_array_equal(_run(dev, Path("src/k.comp"), build_options="-I inc"), 4.0 * _x())
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(Path("src/k.comp"))
        assert "'#include \"scale.h\"' is not found" in str(info.value)
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(INCLUDING.encode(), build_options="-Iinc")  # bytes have no folder to inline from
        assert "GLSL build option '-I inc'" in str(info.value) and "pass the file's path" in str(info.value)


@vulkan
def test_a_renamed_entry_point_is_compiled_and_called(entry: Any, tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text(RENAMED)
    with ac.open(entry.device_id) as dev:
        np.testing.assert_array_equal(_run(dev, tmp_path / "k.comp", entry="scale_by_two"), 2.0 * _x())
        np.testing.assert_array_equal(_run(dev, RENAMED.encode(), entry="scale_by_two"), 2.0 * _x())
        np.testing.assert_array_equal(_run(dev, tmp_path / "k.comp", entry="main"), -1.0)
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(tmp_path / "k.comp", entry="scale_by_three")
        assert "GLSL k.comp has no function named 'scale_by_three'" in str(info.value)
    module = inspect_spirv(compile_glsl(RENAMED.encode(), entry="scale_by_two"))
    assert [e.name for e in module.entry_points] == ["scale_by_two"]  # the SPIR-V entry keeps the name


def test_accel_pack_compiles_with_the_build_options_and_entry(tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text(SCALED)
    (tmp_path / "r.comp").write_text(RENAMED)
    done = _accel(
        ["pack", "k.comp", "-o", "k.kpkg", "--global", str(COUNT), "--build-options", "-DSCALE=3.0"], tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert parse_package((tmp_path / "k.kpkg").read_bytes()).build_options == "-DSCALE=3.0"
    done = _accel(["pack", "r.comp", "-o", "r.kpkg", "--global", str(COUNT), "--entry", "scale_by_two"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert parse_package((tmp_path / "r.kpkg").read_bytes()).entry_point == "scale_by_two"
    done = _accel(
        ["pack", "k.comp", "-o", "k.kpkg", "--global", str(COUNT), "--build-options", "-DSCALE=3 -O2"], tmp_path
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "GLSL build option '-O2'" in done.stderr and "GLSL takes -D NAME[=VALUE], -U NAME, -I DIR" in done.stderr


@vulkan
def test_accel_run_passes_the_build_options_to_the_glsl_compiler(entry: Any, tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "scale.h").write_text("#define SCALE 4.0\n")
    (tmp_path / "k.comp").write_text(INCLUDING)
    np.save(tmp_path / "x.npy", _x())
    np.save(tmp_path / "y.npy", np.zeros(COUNT, np.float32))
    line = ["run", entry.device_id, "k.comp", "--bind", "x=x.npy", "--bind", "y=y.npy", "--global", str(COUNT)]
    done = _accel([*line, "--build-options", "-I inc -DSQUARE", "--out", "y=out.npy"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), 4.0 * _x() * _x(), rtol=1e-6)
    done = _accel([*line, "--build-options", "-I inc -cl-fast-relaxed-math"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "GLSL build option '-cl-fast-relaxed-math'" in done.stderr
