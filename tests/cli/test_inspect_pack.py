"""``accel inspect`` and ``accel pack`` on the corpus (no driver needed) and on malformed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accel_cli.main import main
from accel_cli.schemas import validate
from click.testing import CliRunner

from accelcore.conformance.corpus import kernel_spec, module_path, package_path
from accelcore.kernels.package import ModuleKind
from accelcore.kernels.package_codec import parse_package

KINDS = [ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL, ModuleKind.OPENCL_SOURCE]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_inspect_package_reports_the_binding_table(runner: CliRunner, kind: ModuleKind) -> None:
    result = runner.invoke(main, ["inspect", str(package_path("saxpy", kind)), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    validate("inspect", document)
    pkg = document["package"]
    spec = kernel_spec("saxpy")
    assert pkg["module_kind"] == kind.name
    assert pkg["entry_point"] == spec.entry_point(kind)
    assert pkg["local_size"] == list(spec.local_size)
    assert [(b["slot"], b["access"]) for b in pkg["bindings"]] == [(b.slot, b.access.name) for b in spec.bindings]
    assert pkg["dispatch"]["kind"] == "FROM_BINDING" and pkg["dispatch"]["slot"] == spec.dispatch.slot


def test_inspect_vulkan_spirv_descriptors(runner: CliRunner) -> None:
    result = runner.invoke(main, ["inspect", str(module_path("histogram", ModuleKind.SPIRV_VULKAN)), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    validate("inspect", document)
    spirv = document["spirv"]
    assert spirv["flavour"] == "vulkan"
    assert spirv["entry_points"][0]["local_size"] == [64, 1, 1]
    assert [(d["binding"], d["access"]) for d in spirv["descriptors"]] == [(0, "READ"), (1, "READ_WRITE")]


def test_inspect_text_output(runner: CliRunner) -> None:
    result = runner.invoke(main, ["inspect", str(module_path("saxpy", ModuleKind.OPENCL_SOURCE))])
    assert result.exit_code == 0, result.output
    assert "__kernel saxpy" in result.stdout and "[global, READ]" in result.stdout
    result = runner.invoke(main, ["inspect", str(package_path("reduce", ModuleKind.SPIRV_VULKAN))])
    assert result.exit_code == 0 and "GLCompute" in result.stdout and "bindings" in result.stdout


def _malformed(tmp_path: Path) -> dict[str, tuple[bytes, str]]:
    package = package_path("saxpy", ModuleKind.SPIRV_VULKAN).read_bytes()
    spirv = module_path("saxpy", ModuleKind.SPIRV_VULKAN).read_bytes()
    return {
        "truncated.kpkg": (package[:-3], "INVALID_ARGUMENT"),
        "trailing.kpkg": (package + b"\0\0\0\0", "INVALID_ARGUMENT"),
        "version.kpkg": (package[:8] + b"\x09\x00" + package[10:], "UNSUPPORTED"),
        "header.kpkg": (package[:60], "INVALID_ARGUMENT"),
        "cut.spv": (spirv[:22], "INVALID_ARGUMENT"),
        "wordcount.spv": (spirv[:20] + b"\xff\xff\xff\xff" + spirv[24:], "INVALID_ARGUMENT"),
        "empty.cl": (b"", "empty file"),
    }


def test_inspect_refuses_malformed_input(runner: CliRunner, tmp_path: Path) -> None:
    for name, (data, reason) in _malformed(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(data)
        result = runner.invoke(main, ["inspect", str(path), "--json"])
        assert result.exit_code == 3, (name, result.output)
        error = json.loads(result.stdout)
        validate("error", error)
        assert error["error"]["argument"] == "FILE"
        assert reason in error["error"]["message"], (name, error)
        assert str(path) in error["error"]["message"]


def test_inspect_missing_file(accel, tmp_path: Path) -> None:
    proc = accel(["inspect", tmp_path / "nope.spv"])
    assert proc.returncode == 3 and "no such file" in proc.stderr


def test_pack_vulkan_spirv_round_trips(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "saxpy.kpkg"
    source = module_path("saxpy", ModuleKind.SPIRV_VULKAN)
    result = runner.invoke(
        main, ["pack", str(source), "-o", str(out), "--grid-from", "2", "--count-arg", "4", "--json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    validate("pack", document)
    written = out.read_bytes()
    assert document["bytes"] == len(written)
    assert written == package_path("saxpy", ModuleKind.SPIRV_VULKAN).read_bytes()  # the corpus packs it the same way


def test_pack_opencl_source(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "reduce.kpkg"
    source = module_path("reduce", ModuleKind.OPENCL_SOURCE)
    result = runner.invoke(
        main, ["pack", str(source), "-o", str(out), "--grid-from", "0", "--count-arg", "2", "--local-size", "64"]
    )
    assert result.exit_code == 0, result.output
    pkg = parse_package(out.read_bytes())
    assert pkg.module_kind is ModuleKind.OPENCL_SOURCE and pkg.entry_point == "reduce"
    assert [b.slot for b in pkg.bindings] == [0, 1]


def test_pack_errors_name_the_missing_option(runner: CliRunner, tmp_path: Path) -> None:
    source = module_path("saxpy", ModuleKind.OPENCL_SOURCE)
    out = tmp_path / "x.kpkg"
    result = runner.invoke(main, ["pack", str(source), "-o", str(out), "--groups", "2", "--count-arg", "4"])
    assert result.exit_code == 3 and "--local-size is required" in result.stderr
    result = runner.invoke(main, ["pack", str(source), "-o", str(out), "--local-size", "64"])
    assert result.exit_code == 3 and "--grid-from SLOT, --groups X,Y,Z or --global X[,Y,Z] is required" in result.stderr
    result = runner.invoke(main, ["pack", str(source), "-o", str(out), "--local-size", "0"])
    assert result.exit_code == 2 and "positive integers" in result.output
    result = runner.invoke(main, ["pack", str(source), "-o", str(out), "--slot", "0=0:x", "--local-size", "64"])
    assert result.exit_code == 2 and "access 'x' is not r, w or rw" in result.output
    result = runner.invoke(main, ["pack", str(source), "-o", str(out), "--grid-from", "1", "--groups", "4"])
    assert result.exit_code == 2 and "give one of --grid-from, --groups, --global" in result.output
    result = runner.invoke(main, ["pack", str(package_path("saxpy", ModuleKind.OPENCL_SOURCE)), "-o", str(out)])
    assert result.exit_code == 3 and "already a kernel-package" in result.stderr
    assert not out.exists()
