"""Importing accelcore (and every module under it) imports no driver binding.

Each check runs in a fresh interpreter, so modules the test session already
imported (pyopencl by another test folder, say) cannot hide or fake a result.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

DRIVER_BINDINGS = ("pyopencl", "vulkan")

PROBE = f"""
import importlib, json, pkgutil, sys
DRIVER_BINDINGS = {DRIVER_BINDINGS!r}
names = sys.argv[1:]
failed = {{}}
if names == ["--all"]:
    import accelcore
    names = ["accelcore"] + [m.name for m in pkgutil.walk_packages(accelcore.__path__, "accelcore.")]
for name in names:
    try:
        importlib.import_module(name)
    except Exception as error:  # report, do not hide, a module that cannot be imported
        failed[name] = f"{{type(error).__name__}}: {{error}}"
drivers = sorted(m for m in sys.modules if m.split(".")[0] in DRIVER_BINDINGS)
print(json.dumps({{"imported": names, "failed": failed, "drivers": drivers}}))
"""


def probe(*modules: str) -> dict[str, object]:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def test_the_probe_does_see_a_driver_binding_when_one_is_imported() -> None:
    # Guards the probe itself: importing pyopencl directly must be reported.
    pytest.importorskip("pyopencl", reason="the opencl extra is not installed")
    assert "pyopencl" in probe("pyopencl")["drivers"]  # type: ignore[operator]


@pytest.mark.parametrize(
    "module",
    [
        "accelcore",
        "accelcore.kernels.package",
        "accelcore.devices.registry",
        "accelcore.conformance",
        "accelcore.conformance.suite",
        "accelcore.testing",
    ],
)
def test_named_module_imports_no_driver_binding(module: str) -> None:
    result = probe(module)
    assert result["failed"] == {}
    assert result["drivers"] == [], f"import {module} pulled in {result['drivers']}"


def test_every_module_under_accelcore_imports_and_stays_driver_free() -> None:
    result = probe("--all")
    assert len(result["imported"]) > 10  # type: ignore[arg-type]
    assert result["failed"] == {}, f"modules that cannot be imported: {result['failed']}"
    assert result["drivers"] == [], f"driver bindings imported: {result['drivers']}"
