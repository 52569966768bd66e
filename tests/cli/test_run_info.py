"""``accel info`` and ``accel run`` on the pure-Python reference device: outputs, timings, and every
kind of bad argument naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from accel_cli.main import main
from accel_cli.schemas import validate
from click.testing import CliRunner

from accelcore.testing.programs import encode_program


@pytest.fixture
def ref_env(monkeypatch: pytest.MonkeyPatch, cli_env) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference,fixture")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "add.acrp").write_bytes(encode_program("add_u32"))
    (tmp_path / "inc.acrp").write_bytes(encode_program("increment_u32"))
    rng = np.random.default_rng(7)
    np.save(tmp_path / "a.npy", rng.integers(0, 2**31, 257, dtype=np.uint32))
    np.save(tmp_path / "b.npy", rng.integers(0, 2**31, 257, dtype=np.uint32))
    np.save(tmp_path / "o.npy", np.zeros(257, dtype=np.uint32))
    np.save(tmp_path / "odd.npy", np.zeros(3, dtype=np.uint8))
    np.save(tmp_path / "empty.npy", np.zeros(0, dtype=np.uint32))
    np.savez(tmp_path / "z.npz", a=np.zeros(4))
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY garbage")
    return tmp_path


def test_info_json(runner: CliRunner, ref_env) -> None:
    result = runner.invoke(main, ["info", "reference:0", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    validate("info", document)
    assert document["device"]["id"] == "reference:0"
    assert document["valid"] is True
    assert set(document["memory_domains"]) <= {"HOST", "DEVICE", "SHARED"} and document["memory_domains"]
    assert all(v is None or v > 0 for v in document["limits"].values())
    assert document["limits"]["total_memory_bytes"] is None  # the reference provider reports no memory size


def test_info_text_and_env_default(runner: CliRunner, ref_env, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_DEVICE", "reference:*")
    result = runner.invoke(main, ["info"])
    assert result.exit_code == 0, result.output
    for text in ("reference:0", "capabilities", "max_buffer_bytes", "memory domains"):
        assert text in result.stdout


def test_info_without_device(runner: CliRunner, ref_env) -> None:
    result = runner.invoke(main, ["info", "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)
    validate("error", error)
    assert "ACCEL_DEVICE is not set" in error["error"]["message"]


def test_info_ambiguous_selector(runner: CliRunner, ref_env) -> None:
    result = runner.invoke(main, ["info", "fixture:*pocl*"])
    assert result.exit_code == 2
    assert "matches 2 devices" in result.stderr
    assert "fixture:0  Alpha PoCL CPU" in result.stderr and "fixture:1  Beta pocl GPU" in result.stderr


def test_run_writes_outputs_and_timings(runner: CliRunner, ref_env, files: Path) -> None:
    out = files / "sum.npy"
    result = runner.invoke(
        main,
        [
            "run",
            "reference:0",
            str(files / "add.acrp"),
            "--bind",
            f"0={files / 'a.npy'}",
            "--bind",
            f"1={files / 'b.npy'}:r",
            "--bind",
            f"2={files / 'o.npy'}:w",
            "--out",
            f"2={out}",
            "--timeout",
            "30s",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    validate("run", document)
    assert set(document["timings_s"]) == {"allocate_s", "load_s", "transfer_in_s", "execute_s", "transfer_out_s"}
    expected = np.load(files / "a.npy") + np.load(files / "b.npy")
    np.testing.assert_array_equal(np.load(out), expected)
    assert [s["access"] for s in document["slots"]] == ["READ", "READ", "WRITE"]


def test_run_read_write_slot_subprocess(accel, files: Path) -> None:
    state = files / "state.npy"
    np.save(state, np.arange(10, dtype=np.uint32))
    out = files / "after.npy"
    proc = accel(
        ["run", "reference:0", files / "inc.acrp", "--bind", f"0={state}:rw", "--out", f"0={out}"],
        providers=["reference"],
    )
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), np.arange(1, 11, dtype=np.uint32))
    assert "execute" in proc.stdout and "transfer_in" in proc.stdout


@pytest.mark.parametrize(
    ("args", "code", "argument", "message"),
    [
        (["--bind", "0=A", "--bind", "1=B"], 2, "--bind", "slot(s) [2] declared by the kernel are not bound"),
        (
            ["--bind", "0=A", "--bind", "1=B", "--bind", "2=O", "--bind", "5=O"],
            2,
            "--bind",
            "slot 5 is not declared by the kernel (its slots: 0:r, 1:r, 2:w)",
        ),
        (
            ["--bind", "0=A:w", "--bind", "1=B", "--bind", "2=O"],
            2,
            "--bind",
            "access w is more than the kernel declares (r)",
        ),
        (["--bind", "0=A", "--bind", "0=B", "--bind", "2=O"], 2, "--bind", "slot 0 is bound twice"),
        (["--bind", "zero=A"], 2, "--bind", "the kernel has no buffer called 'zero' (none)"),
        (["--bind", "-1=A"], 2, "--bind", "slot '-1' is not a slot number or a name"),
        (["--bind", "0=A", "--bind", "1=B", "--bind", "2=O", "--out", "0=X"], 2, "--out", "bound read-only"),
        (["--bind", "0=A", "--bind", "1=B", "--bind", "2=O", "--out", "3=X"], 2, "--out", "slot 3 has no --bind"),
        (["--bind", "0=JUNK", "--bind", "1=B", "--bind", "2=O"], 3, "--bind", "not a readable .npy array"),
        (["--bind", "0=NPZ", "--bind", "1=B", "--bind", "2=O"], 3, "--bind", "not one array"),
        (["--bind", "0=EMPTY", "--bind", "1=B", "--bind", "2=O"], 3, "--bind", "the array is empty"),
        (["--bind", "0=NOPE", "--bind", "1=B", "--bind", "2=O"], 3, "--bind", "no such file"),
        (
            ["--bind", "0=ODD", "--bind", "1=B", "--bind", "2=O"],
            3,
            "--bind",
            "not a whole number of the kernel's 4-byte",
        ),
        (["--bind", "0=A", "--bind", "1=B", "--bind", "2=O", "--timeout", "0s"], 2, "--timeout", "is zero"),
        (
            ["--bind", "0=A", "--bind", "1=B", "--bind", "2=O", "--domain", "device", "--timeout", "soon"],
            2,
            "--timeout",
            "not a duration",
        ),
    ],
)
def test_run_bad_arguments(
    runner: CliRunner, ref_env, files: Path, args: list[str], code: int, argument: str, message: str
) -> None:
    names = {
        "A": "a.npy",
        "B": "b.npy",
        "O": "o.npy",
        "JUNK": "junk.npy",
        "NPZ": "z.npz",
        "EMPTY": "empty.npy",
        "NOPE": "nope.npy",
        "ODD": "odd.npy",
        "X": "x.npy",
    }
    resolved = []
    for arg in args:
        if "=" in arg and not arg.startswith("-"):
            slot, _, rest = arg.partition("=")
            name, sep, access = rest.partition(":")
            arg = f"{slot}={files / names.get(name, name)}{sep}{access}"
        resolved.append(arg)
    result = runner.invoke(main, ["run", "reference:0", str(files / "add.acrp"), *resolved, "--json"])
    assert result.exit_code == code, result.output
    error = json.loads(result.stdout)["error"]
    assert error["argument"] == argument
    assert message in error["message"]


def test_run_bad_artifacts(runner: CliRunner, ref_env, files: Path) -> None:
    good = encode_program("add_u32")
    (files / "flipped.acrp").write_bytes(good[:-1] + bytes([good[-1] ^ 0xFF]))
    (files / "empty.bin").write_bytes(b"")
    binds = ["--bind", f"0={files / 'a.npy'}", "--bind", f"1={files / 'b.npy'}", "--bind", f"2={files / 'o.npy'}"]
    for name, message in (
        ("flipped.acrp", "INVALID_ARGUMENT"),
        ("empty.bin", "empty file"),
        ("missing", "no such file"),
    ):
        result = runner.invoke(main, ["run", "reference:0", str(files / name), *binds])
        assert result.exit_code == 3, (name, result.output)
        assert "ARTIFACT" in result.stderr and message in result.stderr
    result = runner.invoke(main, ["run", "reference:0", str(files), *binds])
    assert result.exit_code == 3 and "is a directory" in result.stderr


def test_run_device_refuses_foreign_format(runner: CliRunner, ref_env, files: Path) -> None:
    from accelcore.conformance.corpus import package_path
    from accelcore.kernels.package import ModuleKind

    package = package_path("conformance", ModuleKind.SPIRV_VULKAN)
    np.save(files / "in.npy", np.arange(64, dtype=np.uint32))
    result = runner.invoke(
        main, ["run", "reference:0", str(package), "--bind", f"0={files / 'in.npy'}", "--bind", f"1={files / 'o.npy'}"]
    )
    assert result.exit_code == 3, result.output
    assert "the device refused the artifact" in result.stderr


def test_run_usage(runner: CliRunner, ref_env, files: Path) -> None:
    result = runner.invoke(main, ["run", str(files / "add.acrp")])
    assert result.exit_code == 2 and "ACCEL_DEVICE is not set" in result.stderr
    result = runner.invoke(main, ["run", "a", "b", "c"])
    assert result.exit_code == 2 and "[DEVICE] ARTIFACT" in result.stderr


def test_run_deadline_is_a_failed_run(runner: CliRunner, ref_env, files: Path) -> None:
    binds = ["--bind", f"0={files / 'a.npy'}", "--bind", f"1={files / 'b.npy'}", "--bind", f"2={files / 'o.npy'}"]
    result = runner.invoke(main, ["run", "reference:0", str(files / "add.acrp"), *binds, "--timeout", "1ns", "--json"])
    assert result.exit_code == 1, result.output
    error = json.loads(result.stdout)["error"]
    assert error["backend_error"] == "DEADLINE_EXPIRED"


def test_info_names_declared_formats() -> None:
    from accel_cli.commands.info import declared_formats

    from accelcore.kernels.package import ModuleKind, format_for
    from accelcore.testing.programs import REFERENCE_FORMAT

    class Declares:
        def artifact_formats(self) -> list[object]:
            return [format_for(ModuleKind.SPIRV_VULKAN), REFERENCE_FORMAT]

    assert declared_formats(Declares()) == [
        {"format": "0x4b500001", "module_kind": "SPIRV_VULKAN"},
        {"format": f"{int(REFERENCE_FORMAT):#010x}", "module_kind": "provider-specific"},
    ]
    assert declared_formats(object()) is None


def test_info_invalid_metadata_prints_facts_and_exits_4(runner: CliRunner, cli_env, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "badmeta")
    result = runner.invoke(main, ["info", "badmeta:0", "--json"])
    assert result.exit_code == 4, result.output
    document = json.loads(result.stdout)
    validate("info", document)
    assert document["valid"] is False and "ReservedCapabilities" in document["problem"]
    assert "SECURE_CONTEXTS" in document["capabilities"]["names"]


def test_run_refuses_invalid_metadata(runner: CliRunner, cli_env, monkeypatch, files: Path) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "badmeta")
    binds = ["--bind", f"0={files / 'a.npy'}", "--bind", f"1={files / 'b.npy'}", "--bind", f"2={files / 'o.npy'}"]
    result = runner.invoke(main, ["run", "badmeta:0", str(files / "add.acrp"), *binds])
    assert result.exit_code == 4, result.output
    assert "invalid device metadata" in result.stderr and "ReservedCapabilities" in result.stderr


def test_conformance_case_selection(accel, tmp_path: Path) -> None:
    report = tmp_path / "m.json"
    proc = accel(
        ["conformance", "reference:0", "--case", "metadata.stable-valid", "--case", "memory.", "--json", report],
        providers=["reference"],
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(report.read_text())["runs"]
    assert [c["id"] for c in run["cases"]] == ["metadata.stable-valid", "memory.host", "memory.device", "memory.shared"]
