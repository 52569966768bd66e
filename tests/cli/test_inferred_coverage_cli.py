"""``accel pack`` says which coverage it inferred, and ``accel run`` of an unguarded kernel with a short buffer
is the engine's refusal (exit 3, naming the slot, its length and what the dispatch needs) on every real device,
where it used to be at most a warning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_cli.schemas import validate

from accelcore.testing.pytest_support import real_device_params

# The unguarded scale kernels tests/hostile/test_inferred_coverage.py runs through the engine.
DATA = Path(__file__).parent.parent / "hostile" / "data"
OPENCL = (DATA / "unguarded_scale.cl").read_text()
GLSL = (DATA / "unguarded_scale.comp").read_text()
N = 128


def test_pack_reports_inferred_and_stated_coverage(accel, tmp_path: Path) -> None:
    source = tmp_path / "scale.cl"
    source.write_text(OPENCL)
    out = tmp_path / "scale.kpkg"
    common = ["pack", source, "-o", out, "--global", str(N), "--arg", "a=2.5"]
    proc = accel([*common, "--coverage", "0=unknown"])
    assert proc.returncode == 0, proc.stderr
    assert "coverage of slot 1: one per work-item (inferred)" in proc.stdout
    assert "coverage of slot 0: unknown (stated); not checked" in proc.stdout
    proc = accel([*common, "--coverage", "0=32", "--json"])
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validate("pack", document)
    assert document["coverage"] == {"stated": [0], "inferred": [1]}
    rows = {b["slot"]: (b["coverage"], b["coverage_elements"]) for b in document["package"]["bindings"]}
    assert rows == {0: ("EXACT", 32), 1: ("PER_WORK_ITEM", 0)}
    inspected = accel(["inspect", out, "--json"])
    assert inspected.returncode == 0, inspected.stderr
    validate("inspect", json.loads(inspected.stdout))
    assert json.loads(inspected.stdout)["package"]["coverage_inference"]["per_work_item"] == [0, 1]
    text = accel(["inspect", out])
    assert "coverage inference: slots 0, 1: one element per work-item" in text.stdout


@pytest.mark.parametrize(("family", "entry"), real_device_params())
def test_run_refuses_a_short_buffer_of_an_unguarded_kernel(family: Any, entry: Any, accel, tmp_path: Path) -> None:
    vulkan = entry.device_id.startswith("vulkan")
    source = tmp_path / ("scale.comp" if vulkan else "scale.cl")
    source.write_text(GLSL if vulkan else OPENCL)
    x = np.arange(N, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "short.npy", x[:8])
    np.save(tmp_path / "y.npy", np.zeros(N, dtype=np.float32))
    providers = [entry.device_id.split(":")[0]]
    packing = ["--global", str(N), *([] if vulkan else ["--arg", "a=2.5"])]
    binds = ["--bind", f"1={tmp_path / 'y.npy'}", "--out", f"1={tmp_path / 'out.npy'}"]
    args = ["run", entry.device_id, source, *packing, *binds]
    proc = accel([*args, "--bind", f"0={tmp_path / 'x.npy'}"], providers=providers)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), 2.5 * x)
    proc = accel([*args, "--bind", f"0={tmp_path / 'short.npy'}"], providers=providers)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "slot 0: the bound range of 32 bytes holds 8 elements of 4 bytes" in proc.stderr
    assert f"the dispatch needs {N} (per-work-item coverage" in proc.stderr
    assert "fewer than" not in proc.stderr  # the refusal, not the old warning
