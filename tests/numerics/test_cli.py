"""`accel conformance --suite numerics --quick` on the Vulkan device: the matrix JSON carries the numbers
(schema-valid), the terminal cells show the measured value against the limit, and --suite contract
leaves the numerics cases out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from accel_cli.schemas import validate

ACCEL = [sys.executable, "-m", "accel_cli"]


def _accel(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "COLUMNS": "200"}
    return subprocess.run([*ACCEL, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600, check=False)


def test_numerics_suite_on_vulkan_from_the_cli(tmp_path: Path) -> None:
    done = _accel("conformance", "vulkan:0", "--suite", "numerics", "--quick", "--json", "out.json", cwd=tmp_path)
    if done.returncode == 4:
        pytest.skip(f"no Vulkan device: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "out.json").read_text())
    validate("conformance-matrix", document)
    (run,) = document["runs"]
    ids = [case["id"] for case in run["cases"]]
    assert ids and all(case_id.startswith("numerics.") for case_id in ids)
    exp = next(case for case in run["cases"] if case["id"] == "numerics.exp.f32")
    metrics = exp["metrics"]
    assert metrics["api"] == "vulkan" and metrics["values"] >= 1 << 16
    assert isinstance(metrics["max_ulp"], float) and metrics["limit"] == "3+2|x|"
    assert metrics["worst"]["inputs"] and metrics["worst"]["expected"] and metrics["worst"]["got"]
    assert "Vulkan" in metrics["section"]
    assert "ulp ≤" in done.stdout and "numerics.exp.f32" in done.stdout


def test_suite_contract_leaves_numerics_out(tmp_path: Path) -> None:
    done = _accel("conformance", "vulkan:0", "--suite", "contract", "--case", "metadata.", "--json", "-", cwd=tmp_path)
    if done.returncode == 4:
        pytest.skip("no Vulkan device")
    assert done.returncode == 0, done.stderr
    ids = [case["id"] for case in json.loads(done.stdout)["runs"][0]["cases"]]
    assert ids and not any(case_id.startswith("numerics.") for case_id in ids)
