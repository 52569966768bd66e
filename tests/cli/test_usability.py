"""Newcomer-review fixes: --case matching nothing, pack errors naming CLI flags, strict `accel inspect`,
and the warning for bound slots shorter than the dispatch count."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from accel_cli.bindings import BoundSlot, length_warnings
from accel_cli.caseselect import check_case_selection, unmatched_cases
from accel_cli.failures import UsageProblem
from accel_cli.main import main
from accel_cli.packing import cli_words
from click.testing import CliRunner

from accelcore.conformance.corpus import kernel_spec, module_path, package_path
from accelcore.contract.flags import AccessMode
from accelcore.kernels.package import ModuleKind
from accelcore.kernels.package_codec import parse_package
from accelcore.testing.programs import encode_program

ADD_CL = (
    "__kernel void add(__global const uint* a, __global const uint* b, __global uint* c, uint n)"
    " { uint i = get_global_id(0); if (i < n) c[i] = a[i] + b[i]; }\n"
)


# --------------------------------------------------------------------------- conformance --case


@pytest.mark.parametrize("value", ["metadata", "nosuch.case"])
def test_conformance_case_matching_nothing_is_a_usage_error(accel, value: str) -> None:
    proc = accel(["conformance", "reference:0", "--case", value], providers=["reference"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--case: {value!r} matches no case" in proc.stderr
    assert "metadata.stable-valid" in proc.stderr and "prefix ending in '.'" in proc.stderr
    if value == "metadata":
        assert "did you mean 'metadata.'" in proc.stderr
    assert "OK:" not in proc.stdout


def test_conformance_case_prefix_and_exact_id_still_run(accel) -> None:
    proc = accel(
        ["conformance", "reference:0", "--case", "metadata.", "--case", "intent.reserved-flags", "--json", "-"],
        providers=["reference"],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = {c["id"] for c in json.loads(proc.stdout)["runs"][0]["cases"]}
    assert ids == {"metadata.stable-valid", "intent.reserved-flags"}


def test_case_selection_judges_the_union_of_devices() -> None:
    known = [["a.one", "b.two"], [], ["c.three"]]
    check_case_selection(["c.", "a.one"], known)  # each matches on some device
    assert unmatched_cases(["a", "a.", "b.two", "x."], ["a.one", "b.two"]) == ["a", "x."]
    with pytest.raises(UsageProblem, match=r"'x\.' matches no case.*a\.one, b\.two, c\.three"):
        check_case_selection(["a.", "x."], known)
    check_case_selection(["x."], [[], []])  # no device reported its cases: nothing to judge


# --------------------------------------------------------------------------- pack / compile flags


def test_pack_errors_name_cli_flags(runner: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "add.cl"
    source.write_text(ADD_CL)
    out = str(tmp_path / "x.kpkg")
    result = runner.invoke(main, ["pack", str(source), "-o", out, "--groups", "4", "--count-arg", "3"])
    assert result.exit_code == 3
    assert "--local-size is required" in result.stderr and "local_size=" not in result.stderr
    result = runner.invoke(main, ["pack", str(source), "-o", out, "--local-size", "8"])
    assert result.exit_code == 3
    assert "--grid-from SLOT, --groups X,Y,Z or --global X[,Y,Z] is required" in result.stderr
    assert "dispatch=" not in result.stderr and "Dispatch(" not in result.stderr and "global_size" not in result.stderr
    result = runner.invoke(main, ["pack", str(source), "-o", out, "--local-size", "8", "--grid-from", "2"])
    assert (
        result.exit_code == 3 and "--count-arg n if it takes" in result.stderr and "count_argument" not in result.stderr
    )


def test_cli_words_translates_every_keyword() -> None:
    text = cli_words(
        "pack: an OpenCL device binary says nothing about itself; pass entry_point=, bindings=, dispatch=, "
        "local_size=; kind=ModuleKind.OPENCL_BINARY; kind=SPIRV_VULKAN but; entry_point='x' is not"
    )
    for python in ("entry_point", "bindings=", "dispatch", "local_size", "ModuleKind", "SPIRV_VULKAN"):
        assert python not in text
    assert (
        "pass --entry, --slot SLOT=NATIVE:r|w|rw[:BYTES], --grid-from SLOT, --groups X,Y,Z or --global X[,Y,Z], "
        "--local-size;" in text
    )
    assert "--kind opencl-binary;" in text and "--kind vulkan-spirv but" in text and "--entry 'x' is not" in text


def test_compile_checks_the_device_before_the_source(runner: CliRunner, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")
    source = tmp_path / "add.cl"
    source.write_text(ADD_CL)  # no --local-size: packing alone would fail
    result = runner.invoke(main, ["compile", "reference:0", str(source), "-o", str(tmp_path / "x.kpkg")])
    assert result.exit_code == 2, result.output
    assert "is not an OpenCL device" in result.stderr and "--local-size" not in result.stderr


# --------------------------------------------------------------------------- inspect


def _unknown_files(tmp_path: Path) -> list[Path]:
    np.save(tmp_path / "a.npy", np.arange(8, dtype=np.uint32))
    (tmp_path / "junk.bin").write_bytes(b"junk\n")
    (tmp_path / "random.bin").write_bytes(bytes(np.random.default_rng(3).integers(0, 256, 200, dtype=np.uint8)))
    (tmp_path / "notes.cl").write_text("float helper(float x) { return x; }\n")
    return [tmp_path / name for name in ("a.npy", "junk.bin", "random.bin", "notes.cl")]


def test_inspect_refuses_what_it_cannot_prove(runner: CliRunner, tmp_path: Path) -> None:
    for path in _unknown_files(tmp_path):
        result = runner.invoke(main, ["inspect", str(path), "--json"])
        assert result.exit_code == 3, (path, result.output)
        error = json.loads(result.stdout)["error"]
        assert error["kind"] == "invalid-input" and str(path) in error["message"]
        assert "not a recognised artifact" in error["message"] and "SPIR-V" in error["message"]


def test_inspect_still_recognises_every_real_format(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "add.acrp").write_bytes(encode_program("add_u32"))
    (tmp_path / "x.poclbin").write_bytes(b"poclbin\0" + bytes(120))
    cases = {
        package_path("saxpy", ModuleKind.SPIRV_VULKAN): "kernel-package",
        module_path("saxpy", ModuleKind.SPIRV_VULKAN): "spirv",
        module_path("saxpy", ModuleKind.OPENCL_SOURCE): "opencl-source",
        tmp_path / "add.acrp": "reference-program",
        tmp_path / "x.poclbin": "opencl-binary",
    }
    for path, kind in cases.items():
        result = runner.invoke(main, ["inspect", str(path), "--json"])
        assert result.exit_code == 0, (path, result.output)
        assert json.loads(result.stdout)["kind"] == kind


# --------------------------------------------------------------------------- run: slot lengths


def _bound(slot: int, n: int, access: AccessMode = AccessMode.READ) -> BoundSlot:
    return BoundSlot(slot, Path(f"s{slot}.npy"), np.zeros(n, dtype=np.float32), access, access)


def test_length_warnings_for_a_from_binding_package() -> None:
    pkg = parse_package(package_path("saxpy", ModuleKind.OPENCL_SOURCE).read_bytes())
    rule = kernel_spec("saxpy").dispatch
    slots = sorted(b.slot for b in pkg.bindings)
    count_slot = rule.slot
    other = next(s for s in slots if s != count_slot)
    equal = [_bound(s, 8) for s in slots]
    assert length_warnings(pkg, equal) == []
    longer = [_bound(s, 8 if s == count_slot else 9) for s in slots]
    assert length_warnings(pkg, longer) == []
    short = [_bound(s, 3 if s == other else 8) for s in slots]
    warnings = length_warnings(pkg, short)
    assert len(warnings) == 1
    assert f"slot {other} holds 3 elements, fewer than the 8" in warnings[0]
    assert f"from slot {count_slot}" in warnings[0]


def test_run_warns_when_reference_slots_differ(runner: CliRunner, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")
    (tmp_path / "add.acrp").write_bytes(encode_program("add_u32"))
    for name, n in (("a", 8), ("b", 3), ("o", 8)):
        np.save(tmp_path / f"{name}.npy", np.ones(n, dtype=np.uint32))
    binds = ["--bind", f"0={tmp_path / 'a.npy'}", "--bind", f"1={tmp_path / 'b.npy'}:r"]
    args = ["run", "reference:0", str(tmp_path / "add.acrp"), *binds, "--bind", f"2={tmp_path / 'o.npy'}:w"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "slot 0: 8, slot 1: 3, slot 2: 8 elements" in result.stderr
    np.save(tmp_path / "b.npy", np.ones(8, dtype=np.uint32))
    result = runner.invoke(main, args)
    assert result.exit_code == 0 and "warning" not in result.stderr
