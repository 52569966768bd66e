"""The numerics suite's feature cases: the per-operation denormal report and the subgroup cases.

Judges without a device (exact probes; flushed, partly flushed and wrong result arrays; subgroup ids and
sums with a deliberate error), then the cases on every real device through the provider-factory
interface, and deliberately wrong kernels on real devices that the suite must fail: a denormal kernel
whose mul flushes subnormal results on a device that reports CL_FP_DENORM, and subgroup sums that add one.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_cli.inventory import discover

from accelcore.conformance.numerics import kernels
from accelcore.conformance.numerics.features import (
    DENORM_OPS,
    WORKGROUP,
    check_subgroup_ids,
    check_subgroup_values,
    denormal_probes,
    judge_denormals,
)
from accelcore.conformance.numerics.ulp import is_subnormal
from accelcore.conformance.report import CaseStatus
from accelcore.conformance.suite import run
from accelcore.testing.pytest_support import real_device_params

from .conftest import run_wrong_glsl

FEATURE_IDS = [
    "numerics.denormals.f32",
    "numerics.subgroup-size",
    "numerics.subgroup-reduce-add.u32",
    "numerics.subgroup-broadcast.u32",
]
KEEP = "device reports CL_FP_DENORM: subnormals must be kept"


# ------------------------------------------------------------------------------------- denormal judge


def test_probes_are_exact_and_probe_what_they_say() -> None:
    probes = denormal_probes()
    assert len(probes) % WORKGROUP == 0
    for code, op in enumerate(DENORM_OPS):
        inputs = (probes.op == code) & (probes.kind == "inputs")
        assert inputs.sum() >= 64, op
        operands = [probes.a[inputs], probes.b[inputs], probes.c[inputs]]
        assert np.any([is_subnormal(x) for x in operands], axis=0).all(), f"{op}: an input probe without a subnormal"
        if op != "copy":
            assert not is_subnormal(probes.exact[inputs]).any(), f"{op}: an input probe must have a normal result"
        results = (probes.op == code) & (probes.kind == "results")
        if op in ("sqrt", "copy"):
            assert not results.any()
            continue
        assert results.sum() >= 64 and is_subnormal(probes.exact[results]).all(), op
        assert not any(is_subnormal(x[results]).any() for x in (probes.a, probes.b, probes.c)), op
    # spot checks of the exact values
    mul = (probes.op == DENORM_OPS.index("mul")) & (probes.kind == "results")
    assert np.array_equal(probes.exact[mul], (probes.a[mul].astype(np.float64) * 2.0**-30).astype(np.float32))
    assert (probes.flushed[mul] == 0).all()


@pytest.mark.parametrize("api", ["opencl", "vulkan"])
def test_exact_results_are_kept(api: str) -> None:
    probes = denormal_probes()
    report = judge_denormals(api, probes, probes.exact, must_keep=True, why=KEEP)
    assert report.passed and report.cell == "kept"
    assert all(kinds["inputs"].kept == kinds["inputs"].values for kinds in report.ops.values())


def test_a_flushing_device_that_reports_cl_fp_denorm_fails_naming_each_op() -> None:
    probes = denormal_probes()
    report = judge_denormals("opencl", probes, probes.flushed, must_keep=True, why=KEEP)
    assert not report.passed
    text = " ".join(report.problems)
    for op in DENORM_OPS:
        assert f"{op} flushes subnormal inputs" in text, op
    assert "mul flushes subnormal results" in text and "although device reports CL_FP_DENORM" in text
    assert report.cell.startswith("FTZ (") and "must keep" in report.cell


def test_flushing_is_recorded_and_allowed_without_the_claim() -> None:
    probes = denormal_probes()
    for api in ("opencl", "vulkan"):
        report = judge_denormals(api, probes, probes.flushed, must_keep=False, why="flushing allowed")
        assert report.passed, report.problems
        assert report.ops["mul"]["results"].text == "flushed" and report.ops["sqrt"]["results"].text == "n/a"
        assert "FTZ (" in report.cell and "inputs and results" in report.cell


def test_one_op_that_flushes_only_its_results_is_named_alone() -> None:
    probes = denormal_probes()
    got = probes.exact.copy()
    mul = (probes.op == DENORM_OPS.index("mul")) & (probes.kind == "results")
    got[mul] = 0.0
    report = judge_denormals("opencl", probes, got, must_keep=True, why=KEEP)
    assert report.cell == "FTZ (mul; results) — must keep"
    (problem,) = report.problems
    assert problem.startswith("mul flushes subnormal results (64 of 64 values") and "got 0.0" in problem
    allowed = judge_denormals("opencl", probes, got, must_keep=False, why="no CL_FP_DENORM: flushing allowed")
    assert allowed.passed and allowed.cell == "FTZ (mul; results), no CL_FP_DENORM"


def test_a_value_neither_kept_nor_flushed_fails_even_where_flushing_is_allowed() -> None:
    probes = denormal_probes()
    got = probes.exact.copy()
    add = (probes.op == DENORM_OPS.index("add")) & (probes.kind == "results")
    got[np.flatnonzero(add)[:3]] *= 2
    report = judge_denormals("vulkan", probes, got, must_keep=False, why="Vulkan allows flushing")
    assert not report.passed and report.ops["add"]["results"].wrong == 3
    assert "neither kept nor flushed" in report.problems[0] and "wrong: add" in report.cell


# ------------------------------------------------------------------------------------- subgroup judges


def _ids(size: int, groups: int = 2) -> np.ndarray[Any, np.dtype[np.uint32]]:
    rows = []
    for _ in range(groups):
        for item in range(WORKGROUP):
            rows.append([size, size, WORKGROUP // size, item // size, item % size])
    return np.array(rows, dtype=np.uint32).reshape(-1)


def test_subgroup_ids_are_checked_against_the_claim() -> None:
    assert not check_subgroup_ids("vulkan", _ids(8), {"subgroup_size": 8}).problems
    wrong = check_subgroup_ids("vulkan", _ids(16), {"subgroup_size": 8})
    assert wrong.problems and "claims subgroupSize 8" in wrong.problems[0] and "≠" in wrong.cell
    broken = _ids(16).reshape(-1, 5)
    broken[3, 4] = 0  # a local id twice in sub-group 0
    assert any("local ids" in p for p in check_subgroup_ids("opencl", broken.reshape(-1), {}).problems)
    too_many = check_subgroup_ids("opencl", _ids(4), {"max_num_sub_groups": 8})
    assert any("CL_DEVICE_MAX_NUM_SUB_GROUPS 8" in p for p in too_many.problems)
    # a subgroup larger than the work-group (subgroupSize 128): one partial subgroup of 64, reported as 128
    partial = np.array([[128, 128, 1, 0, item] for item in range(WORKGROUP)], dtype=np.uint32).reshape(-1)
    assert not check_subgroup_ids("vulkan", partial, {"subgroup_size": 128}).problems


def _sums(a: np.ndarray[Any, np.dtype[np.uint32]], size: int, extra: int = 0) -> np.ndarray[Any, np.dtype[np.uint32]]:
    rows = []
    x = a.astype(np.uint64)
    for start in range(0, a.size, size):
        part = x[start : start + size]
        total = (int(part.sum()) + extra) & 0xFFFFFFFF
        scan = np.cumsum(part) & 0xFFFFFFFF
        for lane in range(size):
            rows.append([total, int(scan[lane]), (start % WORKGROUP) // size, lane])
    return np.array(rows, dtype=np.uint32).reshape(-1)


def test_subgroup_sums_against_numpy_and_one_extra_is_flagged() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1 << 32, 4 * WORKGROUP, dtype=np.uint64).astype(np.uint32)
    good = check_subgroup_values("reduce-add", a, _sums(a, 16))
    assert not good.problems and good.cell == f"exact ({8 * WORKGROUP} values, size 16)"
    bad = check_subgroup_values("reduce-add", a, _sums(a, 16, extra=1))
    assert bad.problems and "sub_group_reduce_add" in bad.problems[0] and bad.details["wrong"] == 4 * WORKGROUP


# ------------------------------------------------------------------------------------- real devices


def _run_cases(family: Any, entry: Any, select: list[str]) -> Any:
    setup = family.conformance(entry)
    cases = [c for c in setup.numerics_cases if c.id in select]
    assert [c.id for c in cases] == select, "the family does not offer the feature cases"
    return run(setup.factory, setup.target, setup.hooks, cases, select=select)


@pytest.mark.parametrize(("family", "entry"), real_device_params())
def test_feature_cases_on_every_real_device(family: Any, entry: Any) -> None:
    report = _run_cases(family, entry, FEATURE_IDS)
    for result in report.cases:
        assert result.metrics.get("kind") == "numerics" and result.metrics.get("cell"), result.id
        if result.status is CaseStatus.SKIPPED:
            assert result.id != "numerics.denormals.f32", "the denormal report runs everywhere"
            assert result.reason.startswith("device does not claim"), result.reason
            continue
        assert result.status is CaseStatus.PASSED, f"{entry.provider}:{entry.index} {result.id}: {result.reason}"
    denormals = report.by_id("numerics.denormals.f32")
    ops = denormals.metrics["ops"]
    assert set(ops) == set(DENORM_OPS) and all(ops[op]["inputs"]["values"] >= 64 for op in DENORM_OPS)


def _opencl_device(wanted: str) -> tuple[Any, Any]:
    """The first OpenCL device whose numerics claims (what its family's cases are built with) have ``wanted``."""
    from accel_opencl.conformance_cases import numerics_claims
    from accel_opencl.discovery import find_device

    inventory = discover(["opencl"])
    for entry in inventory.devices:
        if numerics_claims(find_device(entry)).get(wanted):
            return inventory.family_of(entry), entry
    pytest.skip(f"no OpenCL device here claims {wanted} ({[e.name for e in inventory.devices]})")


def test_a_kernel_that_flushes_mul_results_fails_on_a_device_that_reports_cl_fp_denorm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    family, entry = _opencl_device("f32_denormals")
    real = kernels.module_bytes
    flushing = b"case 2: v = x * y; v = fabs(v) < FLT_MIN ? 0.0f : v; break;"

    def wrong(api: str, name: str) -> bytes:
        data = real(api, name)
        if api == "opencl" and name == "denorm":
            assert b"case 2: v = x * y; break;" in data
            return data.replace(b"case 2: v = x * y; break;", flushing)
        return data

    monkeypatch.setattr(kernels, "module_bytes", wrong)
    (result,) = _run_cases(family, entry, ["numerics.denormals.f32"]).cases
    assert result.status is CaseStatus.FAILED, result.reason
    assert "mul flushes subnormal results (64 of 64 values" in result.reason
    assert "although device reports CL_FP_DENORM" in result.reason and "add flushes" not in result.reason
    assert result.metrics["cell"] == "FTZ (mul; results) — must keep"


def test_an_opencl_subgroup_sum_that_adds_one_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    family, entry = _opencl_device("subgroups")
    real = kernels.module_bytes

    def wrong(api: str, name: str) -> bytes:
        data = real(api, name)
        if api == "opencl" and name == "subgroup":
            assert b"sub_group_reduce_add(x);" in data
            return data.replace(b"sub_group_reduce_add(x);", b"sub_group_reduce_add(x) + 1;")
        return data

    monkeypatch.setattr(kernels, "module_bytes", wrong)
    (result,) = _run_cases(family, entry, ["numerics.subgroup-reduce-add.u32"]).cases
    assert result.status is CaseStatus.FAILED, result.reason
    assert f"{16 * WORKGROUP} of {32 * WORKGROUP} results differ from numpy" in result.reason
    assert "sub_group_reduce_add in work-group 0, sub-group 0, local id 0" in result.reason


def test_a_glsl_subgroup_sum_that_adds_one_is_flagged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    inventory = discover(["vulkan"])
    if not inventory.devices:
        pytest.skip("no Vulkan device here")
    entry = inventory.devices[0]
    run_wrong_glsl(
        monkeypatch, tmp_path, "subgroup_arith", "r[4 * i] = subgroupAdd(x);", "r[4 * i] = subgroupAdd(x) + 1u;"
    )
    (result,) = _run_cases(inventory.family_of(entry), entry, ["numerics.subgroup-reduce-add.u32"]).cases
    if result.status is CaseStatus.SKIPPED:
        pytest.skip(f"{entry.name}: {result.reason}")
    assert result.status is CaseStatus.FAILED and "results differ from numpy" in result.reason
    assert "subgroupAdd in work-group 0" in result.reason and result.metrics["wrong"] == 16 * WORKGROUP


def test_the_denorm_preserve_module_declares_the_mode_and_validates() -> None:
    """numerics_denorm_preserve.vk.spv carries OpExecutionMode DenormPreserve 32 with its capability and
    extension (what the case relies on where a device reports shaderDenormPreserveFloat32)."""
    from accelcore.kernels.spirv import inspect_spirv

    module = kernels.module_bytes("vulkan", "denorm_preserve")
    inspected = inspect_spirv(module)
    assert "DenormPreserve" in inspected.capabilities
    assert "DenormPreserve" not in inspect_spirv(kernels.module_bytes("vulkan", "denorm")).capabilities
    words = np.frombuffer(module, dtype=np.uint32)
    # OpExecutionMode (opcode 16, 4 words): entry, mode 4459 (DenormPreserve), width 32
    modes = [words[i : i + 4] for i in range(5, words.size - 3) if words[i] == (4 << 16 | 16)]
    assert any(m[2] == 4459 and m[3] == 32 for m in modes)
    if shutil.which("spirv-val"):
        done = subprocess.run(
            ["spirv-val", "--target-env", "vulkan1.2", "/dev/stdin"], input=module, capture_output=True, check=False
        )
        assert done.returncode == 0, done.stderr


def test_a_claimed_denorm_preserve_that_does_not_run_fails() -> None:
    """The case as built for a Vulkan device that reports shaderDenormPreserveFloat32 (lavapipe does not, so the
    claim is handed in): the DenormPreserve module must run; here the provider refuses its capability, and the
    case fails saying so rather than passing on the first module alone."""
    from accelcore.conformance.numerics.features import feature_cases

    inventory = discover(["vulkan"])
    if not inventory.devices:
        pytest.skip("no Vulkan device here")
    entry = inventory.devices[0]
    setup = inventory.family_of(entry).conformance(entry)
    case = feature_cases("vulkan", {"shader_denorm_preserve_f32": True})[0]
    (result,) = run(setup.factory, setup.target, setup.hooks, [case], select=[case.id]).cases
    assert result.status is CaseStatus.FAILED, result.reason
    assert "device reports shaderDenormPreserveFloat32 but the DenormPreserve module did not run" in result.reason
    assert "needs capability DenormPreserve" in result.reason
