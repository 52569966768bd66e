"""The numerics suite's quick subset on one real OpenCL device and one real Vulkan device, through the
conformance library's provider-factory interface (the same path as `accel conformance`), and a
deliberately wrong kernel on each (exp as a 2-term polynomial) that the suite must flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from accel_cli.expectations import DEFAULT_EXPECTATIONS, load_expectations, match_expectation
from accel_cli.inventory import discover

from accelcore.conformance.numerics import is_quick, kernels
from accelcore.conformance.numerics.functions import F32_FUNCTIONS
from accelcore.conformance.report import CaseStatus
from accelcore.conformance.suite import run

from .conftest import run_wrong_glsl

EXPECTED = load_expectations(DEFAULT_EXPECTATIONS)
F32_NAMES = {fn.name for fn in F32_FUNCTIONS}


def _first(provider: str) -> Any:
    inventory = discover([provider])
    if not inventory.devices:
        pytest.skip(f"no {provider} device here: {[p.reason for p in inventory.providers if not p.available]}")
    return inventory, inventory.devices[0]


def _run(provider: str, select: list[str] | None = None) -> tuple[Any, Any]:
    inventory, entry = _first(provider)
    setup = inventory.family_of(entry).conformance(entry)
    cases = [c for c in setup.numerics_cases if is_quick(c.id) and (select is None or c.id in select)]
    assert cases, "the family offers no numerics cases"
    return entry, run(setup.factory, setup.target, setup.hooks, cases, select=[c.id for c in cases])


@pytest.mark.parametrize("provider", ["opencl", "vulkan"])
def test_quick_numerics_subset_passes_or_is_a_known_finding(provider: str) -> None:
    entry, report = _run(provider)
    assert len(report.cases) >= 10
    problems = []
    for result in report.cases:
        assert result.metrics.get("kind") == "numerics", result.id
        if result.status is CaseStatus.SKIPPED:
            assert result.reason, f"{result.id}: a skip must say why"
            continue
        assert result.metrics.get("cell"), f"{result.id}: a measured case shows a cell"
        if result.id.split(".")[1] in F32_NAMES and result.id.endswith(".f32"):
            # the float32 function cases: a full sweep, judged in ulps (or absolute error for sin/cos)
            assert result.metrics["values"] >= 1 << 16 and result.metrics["judged"] > 0, result.id
            assert "ulp" in result.metrics["cell"] or "abs" in result.metrics["cell"], result.metrics["cell"]
        if result.status is CaseStatus.FAILED and match_expectation(EXPECTED, entry, result.id) is None:
            problems.append(f"{result.id}: {result.reason}")
    assert not problems, "\n".join(problems)


_WRONG_EXP_CL = "r[i] = 1.0f + x + 0.5f * x * x;"


def test_a_wrong_opencl_exp_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    real = kernels.module_bytes

    def wrong(api: str, name: str) -> bytes:
        data = real(api, name)
        return data.replace(b"r[i] = exp(x);", _WRONG_EXP_CL.encode()) if api == "opencl" else data

    monkeypatch.setattr(kernels, "module_bytes", wrong)
    _, report = _run("opencl", ["numerics.exp.f32"])
    (result,) = report.cases
    assert result.status is CaseStatus.FAILED
    assert "OUTSIDE the limit 3" in result.reason and "worst input" in result.reason
    assert result.metrics["failures"] > 10_000 and ">" in result.metrics["cell"]


def test_a_wrong_glsl_exp_is_flagged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run_wrong_glsl(
        monkeypatch, tmp_path, "f32", "case 7: v = exp(x); break;", "case 7: v = 1.0 + x + 0.5 * x * x; break;"
    )
    _, report = _run("vulkan", ["numerics.exp.f32"])
    (result,) = report.cases
    assert result.status is CaseStatus.FAILED and "OUTSIDE" in result.reason
