"""What a newcomer hits next: reaching ``accel`` and ``accelcore`` after ``make
run``; messages that name what the user types (a missing file, the local size, a missing binding, an
overrun, ``inspect``'s element sizes, OpenCL without a driver, an expectation's typo); ``accel run``
showing progress and saying where its results went; ``accel bench --json -``. The documentation blocks
themselves are run by tests/cli/test_docs.py."""

from __future__ import annotations

import json
import os
import pickle
import pty
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from accel_cli.main import main
from click.testing import CliRunner

import accelcore as ac
from accelcore.testing.programs import encode_program

from .conftest import PLUGINS
from .test_docs import doc_blocks, make_environment, sh_script

ROOT = Path(__file__).resolve().parents[2]
ACTIVATE = ". .venv/bin/activate"


@pytest.fixture
def ref_env(monkeypatch: pytest.MonkeyPatch, cli_env) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")


@pytest.fixture
def add_files(tmp_path: Path) -> Path:
    (tmp_path / "add.acrp").write_bytes(encode_program("add_u32"))
    np.save(tmp_path / "a.npy", np.arange(8, dtype=np.uint32))
    np.save(tmp_path / "b.npy", np.full(8, 10, dtype=np.uint32))
    np.save(tmp_path / "out.npy", np.zeros(8, dtype=np.uint32))
    return tmp_path


def _add_args(folder: Path, *extra: str) -> list[str]:
    return [
        str(folder / "add.acrp"),
        "--bind",
        f"0={folder / 'a.npy'}",
        "--bind",
        f"1={folder / 'b.npy'}",
        "--bind",
        f"2={folder / 'out.npy'}",
        *extra,
    ]


# 1. After `make run`: the README's opening and make say how to reach accel and the package in .venv.


def test_readme_opening_says_how_to_reach_accel_and_accelcore() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    opening = readme.split("\n## ", 1)[0]
    first = doc_blocks(ROOT / "README.md")[0]
    assert first.language == "sh" and [line.split()[:2] for line in first.body.splitlines()] == [
        ["make", "run"],
        ["make", "test"],
    ], "the README starts with the two commands"
    assert ".venv" in opening and ACTIVATE in opening and "command not found" in opening
    newcomer = [b for b in doc_blocks(ROOT / "README.md") if b.language == "sh" and ACTIVATE in b.body]
    assert newcomer and newcomer[0].doc.read_text().index(newcomer[0].body) < len(opening), "in the opening"
    commands = [line.split("#", 1)[0].strip() for line in newcomer[0].body.splitlines() if line.strip()]
    assert commands == ["make run", ACTIVATE, "accel devices"], commands


def test_the_newcomer_commands_work_in_a_shell_without_the_venv(tmp_path: Path) -> None:
    """The README's first three commands (make as a dry run), then the package from a plain ``python``."""
    block = next(b for b in doc_blocks(ROOT / "README.md") if b.language == "sh" and ACTIVATE in b.body)
    venv_bin = str(ROOT / ".venv" / "bin")
    env = {k: v for k, v in make_environment().items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p and p != venv_bin)
    env["ACCEL_PROVIDERS"] = "reference"
    script = sh_script(block.body) + 'python -c "import accelcore as ac; print(ac.devices()[0].device_id)"\n'
    proc = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "reference:0" in proc.stdout and "command not found" not in proc.stderr


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    """``make ARGS`` in the repository, with the environment a newcomer's shell has (test_docs.make_environment)."""
    return subprocess.run(
        ["make", *args], cwd=ROOT, env=make_environment(), capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("target", ["run", "setup"])
def test_make_run_and_setup_end_with_the_line_to_paste(target: str) -> None:
    proc = _make("-n", target)
    assert proc.returncode == 0, proc.stderr
    assert ACTIVATE in proc.stdout.strip().splitlines()[-1], proc.stdout[-500:]


def test_make_run_prints_the_line_after_a_failing_conformance_run_and_keeps_its_status(tmp_path: Path) -> None:
    """``accel`` replaced by a script whose conformance fails; ``setup`` not remade (``-o setup``)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "accel").write_text('#!/bin/sh\necho "accel $1"\n[ "$1" = conformance ] && exit 1\nexit 0\n')
    (fake / "accel").chmod(0o755)
    proc = _make("-o", "setup", "run", f"BIN={fake}")
    assert proc.returncode != 0, proc.stdout
    lines = proc.stdout.strip().splitlines()
    assert lines[-1].strip() == ACTIVATE and "accel conformance" in proc.stdout, proc.stdout


# 3a. A missing file: FileNotFoundError in Python (also a BackendError), "no such file: PATH" (exit 3) in the CLI.


def test_a_missing_kernel_file_is_file_not_found_and_a_backend_error(tmp_path: Path) -> None:
    missing = tmp_path / "sxapy.cl"
    with ac.open("reference:0") as dev:
        with pytest.raises(FileNotFoundError) as caught:
            dev.kernel(missing)
    error = caught.value
    assert isinstance(error, ac.BackendError) and isinstance(error, ac.MissingFileError)
    assert error.kind is ac.ErrorKind.INVALID_ARGUMENT and error.errno == 2 and error.filename == str(missing)
    assert str(error) == f"INVALID_ARGUMENT: no such file: {missing}"
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is ac.MissingFileError and again.filename == str(missing)
    with pytest.raises(FileNotFoundError, match="no such file"):
        ac.compare(missing, devices="reference:0")


@pytest.mark.parametrize(
    ("command", "argument"),
    [
        (["inspect", "{missing}"], "FILE"),
        (["pack", "{missing}", "-o", "{tmp}/o.kpkg"], "SOURCE"),
        (["run", "reference:0", "{missing}"], "ARTIFACT"),
        (["run", "reference:0", "{add}", "--bind", "0={missing}", "--bind", "1={b}", "--bind", "2={b}"], "--bind"),
        (["conformance", "reference:0", "--expect", "{missing}"], "--expect"),
        (["conformance", "--merge", "{missing}"], "--merge"),
        (["conformance", "reference:0", "--cases", "{missing}"], "--cases"),
    ],
    ids=["inspect", "pack", "run", "bind", "expect", "merge", "cases"],
)
def test_a_missing_file_is_no_such_file_exit_3(
    runner: CliRunner, ref_env, add_files: Path, command: list[str], argument: str
) -> None:
    missing = add_files / "nothere.bin"
    names = {"missing": str(missing), "tmp": str(add_files), "add": str(add_files / "add.acrp")}
    names["b"] = str(add_files / "b.npy")
    result = runner.invoke(main, [part.format(**names) for part in command])
    assert result.exit_code == 3, result.output
    assert f"Error: {argument}: no such file: {missing}" in result.output, result.output
    assert "No such file or directory" not in result.output


# 3b. The local-size refusal says what the CLI user types, not ANY_LOCAL_SIZE.


def test_device_words_replace_the_internal_local_size_name() -> None:
    from accel_cli.packing import device_words

    text = device_words(
        "INCOMPATIBLE: kernel 'k': ... Use a global size that is a multiple of the local size, or ANY_LOCAL_SIZE "
        "(the driver chooses a local size that divides it)"
    )
    assert "ANY_LOCAL_SIZE" not in text and "or leave out --local-size (the driver then chooses" in text


@pytest.mark.opencl
def test_run_with_an_uneven_global_size_names_the_option_to_leave_out(accel, tmp_path: Path) -> None:
    from .test_real_drivers import _devices

    np.save(tmp_path / "x.npy", np.ones(1000, np.float32))
    np.save(tmp_path / "y.npy", np.ones(1000, np.float32))
    args = ["--arg", "a=2", "--bind", "x=x.npy", "--bind", "y=y.npy:rw", "--arg", "n=1000", "--global", "1000"]
    source = str(ROOT / "artifacts" / "src" / "opencl" / "saxpy_args.cl")
    for device in _devices(accel, "opencl"):
        proc = accel(["run", device, source, *args, "--local-size", "64"], providers=["opencl"], cwd=tmp_path)
        if proc.returncode == 0:
            continue  # this device runs non-uniform work-groups
        assert proc.returncode == 3, proc.stderr
        assert "ANY_LOCAL_SIZE" not in proc.stderr and "leave out --local-size" in proc.stderr, proc.stderr
        return
    pytest.skip("every OpenCL device here runs non-uniform work-groups")


# 3c. A missing binding names the kernel's name for the slot.


def test_a_missing_binding_names_the_parameter(runner: CliRunner, ref_env, tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.ones(64, np.float32))
    source = ROOT / "artifacts" / "src" / "opencl" / "saxpy_args.cl"
    args = ["--arg", "a=2", "--arg", "n=64", "--global", "64", "--bind", f"x={tmp_path / 'x.npy'}"]
    result = runner.invoke(main, ["run", "reference:0", str(source), *args])
    assert result.exit_code == 2, result.output
    assert "slot(s) [2] (y) declared by the kernel are not bound; add --bind y=FILE.npy:rw" in result.output
    particles = ROOT / "artifacts" / "spirv" / "particles.vk.spv"
    np.save(tmp_path / "pos.npy", np.zeros((1024, 4), np.float32))
    args = [
        "--spec",
        "0=256",
        "--groups",
        "4",
        "--bind",
        f"0={tmp_path / 'x.npy'}",
        "--bind",
        f"pos={tmp_path}/pos.npy",
    ]
    result = runner.invoke(main, ["run", "reference:0", str(particles), *args])
    assert result.exit_code == 2, result.output
    assert "add --bind vel=FILE.npy:rw" in result.output, result.output


def test_an_unnamed_slot_is_still_named_by_number(runner: CliRunner, ref_env, add_files: Path) -> None:
    result = runner.invoke(main, ["run", "reference:0", str(add_files / "add.acrp"), "--bind", "0=a.npy"])
    assert result.exit_code == 2 and "add --bind 1=FILE.npy:r --bind 2=FILE.npy:w" in result.output, result.output


# 3d. A write past the end of a --bind array names the argument as the kernel does.


@pytest.mark.opencl
def test_an_overrun_names_the_argument_not_its_slot(accel, tmp_path: Path) -> None:
    from .test_real_drivers import _devices

    device = _devices(accel, "opencl")[0]
    np.save(tmp_path / "x.npy", np.ones(1000, np.float32))
    np.save(tmp_path / "y.npy", np.ones(1000, np.float32))
    source = str(ROOT / "artifacts" / "src" / "opencl" / "saxpy_args.cl")
    args = ["--arg", "a=2", "--bind", "x=x.npy", "--bind", "y=y.npy:rw", "--arg", "n=5000", "--global", "5000"]
    proc = accel(["run", device, source, *args, "--out", "y=out.npy"], providers=["opencl"], cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "wrote past the end of argument y (4000 bytes given" in proc.stderr, proc.stderr
    assert not (tmp_path / "out.npy").exists()


# 3e. accel inspect prints no None.


@pytest.mark.parametrize(
    ("module", "shown"),
    [("particles.vk.spv", "8 (the whole block)"), ("saxpy.cl.spv", "param 4: by value, bytes 4")],
)
def test_inspect_prints_no_none(runner: CliRunner, ref_env, module: str, shown: str) -> None:
    result = runner.invoke(main, ["inspect", str(ROOT / "artifacts" / "spirv" / module)])
    assert result.exit_code == 0, result.output
    assert "None" not in result.output and shown in result.output, result.output


# 3f. OpenCL without a driver says why it offers no device.


def test_opencl_without_an_icd_is_unavailable_with_the_reason(accel, tmp_path: Path) -> None:
    empty = tmp_path / "vendors"
    empty.mkdir()
    proc = accel(["devices", "--json"], providers=["opencl"], env={"OCL_ICD_VENDORS": str(empty)})
    (status,) = json.loads(proc.stdout)["providers"]
    if "not importable" in (status["reason"] or "") or "cannot be loaded" in (status["reason"] or ""):
        pytest.skip(f"no OpenCL binding here: {status['reason']}")
    assert proc.returncode == 4 and status["available"] is False and status["devices"] == 0, status
    assert status["reason"].startswith("no OpenCL platform found") and str(empty) in status["reason"], status
    assert f"opencl: {status['reason']}" in proc.stderr


# 3g. A typo in an expectation's case is an error whatever devices run, with the closest ids.


def _expect_file(tmp_path: Path, device: str, case: str) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(f'[[expected-failure]]\ndevice = "{device}"\ncase = "{case}"\nreason = "r"\ndate = 2026-01-01\n')
    return path


@pytest.mark.parametrize(
    ("device", "case", "suggestion"),
    [
        ("opencl:*", "opencl.long-lop", "did you mean 'opencl.long-loop'?"),
        ("vulkan:*llvmpipe*", "numerics.exp.f46", "did you mean 'numerics.exp.f64'"),
        ("*", "opencl.long-lop", "did you mean 'opencl.long-loop' or 'vulkan.long-loop'?"),
        ("opencl:*", "zzz", "no case id is close; the ids of opencl begin with accounting., "),
    ],
    ids=["opencl", "vulkan", "any-provider", "nothing-close"],
)
def test_a_case_typo_is_refused_before_anything_runs_with_the_closest_ids(
    runner: CliRunner, ref_env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, device: str, case: str, suggestion: str
) -> None:
    monkeypatch.delenv("ACCEL_EXTRA_PROVIDERS")  # only the built-in families, which list their case ids
    path = _expect_file(tmp_path, device, case)
    result = runner.invoke(main, ["conformance", "reference:0", "--case", "metadata.", "--expect", str(path)])
    assert result.exit_code == 3, result.output
    assert f"case {case!r} matches no case id of " in result.output and suggestion in result.output, result.output
    assert "started" not in result.output  # refused before any worker
    assert "numerics.fmod.f16" not in result.output and len(result.output) < 600  # not every id


def test_a_valid_case_of_a_provider_not_run_is_accepted(runner: CliRunner, ref_env, tmp_path: Path) -> None:
    path = _expect_file(tmp_path, "opencl:*", "numerics.convert-f32-*-sat*.f32")
    result = runner.invoke(main, ["conformance", "reference:0", "--case", "metadata.", "--expect", str(path)])
    assert result.exit_code == 0, result.output


def test_an_entry_of_a_family_without_a_catalogue_is_judged_after_the_run(
    runner: CliRunner, cli_env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "fixture")
    path = _expect_file(tmp_path, "fixture:*", "metadata.stabel-valid")
    result = runner.invoke(main, ["conformance", "fixture:0", "--case", "metadata.", "--expect", str(path)])
    assert result.exit_code == 3, result.output
    assert "started" in result.output and "did you mean 'metadata.stable-valid'?" in result.output


def test_the_catalogue_holds_every_case_the_devices_here_report() -> None:
    from accel_cli.case_catalogue import offered_case_ids

    from accelcore.conformance.suite import standard_case_ids
    from accelcore.devices.inventory import discover

    inventory = discover()
    for entry in inventory.devices:
        setup = inventory.families[entry.provider].conformance(entry)
        reported = {*standard_case_ids(), *(c.id for c in setup.extra_cases), *(c.id for c in setup.numerics_cases)}
        assert reported == offered_case_ids(entry.provider), entry.device_id
    assert offered_case_ids("fixture") is None


# 4. accel run: progress on a terminal, where the results went; accel bench --json -.


_SLOW_FAMILY = """
import os, time
from accelcore.devices.registry import DeviceEntry

class SlowFamily:
    name = "slow"
    def discover(self):
        return [DeviceEntry("slow", 0, "Slow reference device", b"\\xee" * 16, {"kind": "test slow"})]
    def open(self, entry):
        import accelcore.testing as testing
        class Slow(testing.ReferenceAccelerator):
            def submit(self, *args):
                time.sleep(float(os.environ.get("ACCEL_TEST_SLOW_S", "2.5")))
                return super().submit(*args)
        return Slow()
    def conformance(self, entry):
        raise AssertionError("not used")

slow = SlowFamily()
"""


def _slow_run(folder: Path, *, terminal: bool, in_process: bool) -> tuple[int, str, str]:
    """``accel run slow:0`` (a submission that takes 2.5 s) with stdout and stderr on a pty or on pipes."""
    plugins = folder / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "slowfam.py").write_text(_SLOW_FAMILY)
    env = dict(os.environ, ACCEL_PROVIDERS="slow", ACCEL_EXTRA_PROVIDERS="slow=slowfam:slow")
    env["PYTHONPATH"] = os.pathsep.join([str(plugins), str(PLUGINS), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "accel_cli", "run", "slow:0", *_add_args(folder)]
    command += ["--in-process"] if in_process else []
    if not terminal:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, env=env, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the pty closed (EIO on Linux)
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return process.wait(timeout=120), b"".join(chunks).decode(errors="replace"), ""


@pytest.mark.parametrize("in_process", [False, True], ids=["worker", "in-process"])
def test_a_long_run_shows_its_phase_and_time_on_a_terminal_only(add_files: Path, in_process: bool) -> None:
    code, screen, _ = _slow_run(add_files, terminal=True, in_process=in_process)
    assert code == 0, screen
    assert re.search(r"slow:0: execute for \d+\.\d s \(\d+\.\d s in all\)", screen), screen
    assert "Not saved (no --out): slot 2" in screen  # the report stays after the progress line is erased
    code, out, err = _slow_run(add_files, terminal=False, in_process=in_process)
    assert code == 0, err
    assert " for " not in err and "\x1b" not in out + err, err  # nothing of it in a pipe


def test_run_says_where_the_results_went(runner: CliRunner, ref_env, add_files: Path) -> None:
    result = runner.invoke(main, ["run", "reference:0", *_add_args(add_files)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "Not saved (no --out): slot 2; add --out 2=FILE.npy to keep what the kernel wrote. "
        "The --bind files are not changed."
    )
    saved = add_files / "sum.npy"
    result = runner.invoke(main, ["run", "reference:0", *_add_args(add_files, "--out", f"2={saved}")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"Saved slot 2 to {saved}. The --bind files are not changed."
    assert np.load(saved).tolist() == list(range(10, 18))


def test_the_results_line_uses_the_kernels_names() -> None:
    from accel_cli.bindings import BoundSlot
    from accel_cli.commands.run import _results_line

    from accelcore.contract.flags import AccessMode

    def slot(number: int, access: AccessMode, name: str | None, out: str | None = None) -> BoundSlot:
        return BoundSlot(
            number, Path(f"{number}.npy"), np.zeros(4, np.float32), access, access, out and Path(out), name
        )

    line = _results_line(
        [
            slot(0, AccessMode.READ, "x"),
            slot(1, AccessMode.READ_WRITE, "pos", "p.npy"),
            slot(2, AccessMode.READ_WRITE, "vel"),
        ]
    )
    assert line == (
        "Saved pos (slot 1) to p.npy. Not saved (no --out): vel (slot 2); add --out vel=FILE.npy to keep what the "
        "kernel wrote. The --bind files are not changed."
    )


def test_bench_json_dash_prints_the_document_on_stdout(
    cli_env, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import accel_bench

    calls: list[tuple[object, object]] = []
    document = {"schema": "accel-bench/1", "devices": [{"errors": []}]}

    def fake_run(entries, json_path, plot_dir, **kwargs):
        calls.append((json_path, plot_dir))
        return document

    monkeypatch.setattr(accel_bench, "run", fake_run)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["bench", "fixture:0", "--quick", "--json", "-"])
    assert result.exit_code == 0, result.output
    assert calls == [(None, None)] and json.loads(result.stdout) == document
    assert "1 devices, 0 failed items" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no file named '-' or '-.md'
    result = runner.invoke(main, ["bench", "fixture:0", "--json", "-", "--plot", "plots"])
    assert result.exit_code == 0 and json.loads(result.stdout) == document
    assert calls[-1][1] == "plots" and str(calls[-1][0]).endswith("results.json") and calls[-1][0] != "-"
