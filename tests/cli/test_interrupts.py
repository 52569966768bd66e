"""Ctrl-C (SIGINT) in the CLI: every command exits 130 (never click's "Aborted!" with status 1, the status of
"failures found"), says what it interrupted, ends its workers, and ``accel conformance`` writes the reports it
was asked for with the unfinished cells marked ``interrupted``.

The CLI runs as a real subprocess and gets SIGINT once it has started a long case: the test family ``cases``
(``test.hang`` sleeps for ever in its worker), the ``hanging`` family (its ``submit`` never returns) and, on
real devices, a kernel that runs for minutes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_cli.junit import xml_tree
from accel_cli.matrix import load_matrix
from accel_cli.matrix import merge as merge_matrices
from accel_cli.schemas import validate
from click.testing import CliRunner

import accelcore as ac
from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import device_params

from .conftest import child_environment

apply_defaults()
DATA = Path(__file__).parent / "data"
SIGNAL_TO_EXIT_S = 10.0
"""How long the CLI may take from SIGINT to its exit (killing workers, writing reports)."""


def _start(
    args: Sequence[object], providers: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "accel_cli", *map(str, args)],
        env=child_environment(providers, env),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the test's SIGINT goes to the CLI alone, as os.kill does: it must end the rest
    )


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _interrupt(process: subprocess.Popen[str], ready: Any, limit_s: float = 60) -> tuple[str, str, float, set[int]]:
    """Wait until ``ready()`` (polling), send SIGINT, and return (stdout, stderr, seconds to exit, the
    descendants the CLI had when the signal was sent)."""
    started = time.monotonic()
    while not ready():
        if process.poll() is not None or time.monotonic() - started > limit_s:
            out, err = process.communicate()
            pytest.fail(f"never got ready (exit {process.returncode})\n{out}\n{err[-3000:]}")
        time.sleep(0.05)
    workers = _children(process.pid)
    sent = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the CLI's whole foreground group
    try:
        out, err = process.communicate(timeout=SIGNAL_TO_EXIT_S + 20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"still running long after SIGINT\n{out}\n{err[-3000:]}")
    return out, err, time.monotonic() - sent, workers


def _workers_gone(workers: set[int]) -> None:
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers if _alive(pid)], "a worker outlived the interrupted CLI"


# ----------------------------------------------------------------------------- accel conformance


def test_ctrl_c_in_conformance_writes_partial_reports_and_exits_130(tmp_path: Path) -> None:
    report, junit, html, csv = (tmp_path / name for name in ("m.json", "m.xml", "m.html", "m.csv"))
    reports = ["--json", report, "--junit", junit, "--html", html, "--csv", csv]
    process = _start(
        ["conformance", "cases:0", "fixture:0", "--jobs", "1", "--retries", "0", *reports],
        providers=["cases", "fixture"],
        env={"ACCEL_TEST_CASES": "slow,hang"},
    )
    # The worker reports each case as it starts it; test.hang follows test.slow and never ends.
    started = '{"event": "case-start", "id": "test.hang"}'
    out, err, seconds, workers = _interrupt(process, lambda: started in _events_text(process))
    assert process.returncode == 130, out + err
    assert "Aborted!" not in err
    assert "interrupted (SIGINT, Ctrl-C) while running cases:0 (case test.hang)" in err, err
    assert str(report) in err and str(junit) in err, err
    assert seconds < SIGNAL_TO_EXIT_S, f"{seconds:.1f} s from SIGINT to exit"
    assert workers, "the worker was not seen"
    _workers_gone(workers)

    document = json.loads(report.read_text())
    validate("conformance-matrix", document)
    assert document["interrupted"] is True and document["ok"] is False
    runs = {run["device"]["id"]: run for run in document["runs"]}
    cases_run = runs["cases:0"]
    assert cases_run["outcome"] == "interrupted", cases_run["detail"]
    cells = {c["id"]: c for c in cases_run["cases"]}
    assert cells["test.slow"]["verdict"] == "pass"  # finished before the signal: kept
    assert cells["metadata.stable-valid"]["verdict"] == "pass"
    hang = cells["test.hang"]
    assert (hang["status"], hang["verdict"]) == ("interrupted", "interrupted")
    assert "its worker was killed" in hang["reason"]
    assert cells["accounting.resource-lifecycle"]["verdict"] == "interrupted"  # not run yet
    assert "not run: the run was interrupted" in cells["accounting.resource-lifecycle"]["reason"]
    assert runs["fixture:0"]["outcome"] == "interrupted" and runs["fixture:0"]["cases"] == []
    assert "not started" in runs["fixture:0"]["detail"]
    assert document["summary"]["interrupted"] >= 2

    tree = xml_tree(junit.read_text())
    validate("junit", tree)
    suite = tree["children"][0]
    outcome = next(p for p in suite["children"][0]["children"] if p["attrib"]["name"] == "outcome")
    assert outcome["attrib"]["value"] == "interrupted"
    hang_case = next(c for c in suite["children"] if c["tag"] == "testcase" and c["attrib"]["name"] == "test.hang")
    assert hang_case["children"][0]["tag"] == "skipped" and hang_case["children"][0]["attrib"]["type"] == "interrupted"
    assert "INTERRUPTED" in html.read_text()
    assert "cases:0,test.hang,interrupted," in csv.read_text()

    matrix = load_matrix(report)  # a partial report reads back as one
    assert matrix.interrupted and not matrix.ok(strict=False)


def _events_text(process: subprocess.Popen[str]) -> str:
    """What the CLI's conformance workers have reported so far (their ``--events`` files)."""
    text = []
    for pid in _children(process.pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--events" in command:
            events = Path(command[command.index(b"--events") + 1].decode())
            try:
                text.append(events.read_text())
            except OSError:
                pass
    return "".join(text)


def test_reports_written_before_the_interrupted_field_still_read_and_merge(tmp_path: Path) -> None:
    old = DATA / "numerics-report.json"
    document = json.loads(old.read_text())
    assert "interrupted" not in document
    validate("conformance-matrix", document)  # the schema only grew
    matrix = load_matrix(old)
    assert matrix.interrupted is False
    partial = tmp_path / "partial.json"
    partial_doc = dict(document, interrupted=True)
    partial.write_text(json.dumps(partial_doc))
    merged = merge_matrices([matrix, load_matrix(partial)])
    assert merged.interrupted and not merged.ok(strict=False)


# ----------------------------------------------------------------------------- accel run


def _add_files(folder: Path) -> list[str]:
    from accelcore.testing.programs import encode_program

    (folder / "add.acrp").write_bytes(encode_program("add_u32"))
    np.save(folder / "a.npy", np.arange(8, dtype=np.uint32))
    np.save(folder / "b.npy", np.full(8, 10, dtype=np.uint32))
    np.save(folder / "out.npy", np.zeros(8, dtype=np.uint32))
    return ["add.acrp", "--bind", "0=a.npy", "--bind", "1=b.npy:r", "--bind", "2=out.npy:w", "--out", "2=sum.npy"]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_ctrl_c_in_run_kills_the_worker_group_and_exits_130(tmp_path: Path, as_json: bool) -> None:
    pidfile = tmp_path / "grandchild.pid"
    args = ["run", "hanging:0", *_add_files(tmp_path), *(["--json"] if as_json else [])]
    process = _start(args, ["hanging"], env={"ACCEL_TEST_HANG_PIDFILE": str(pidfile)}, cwd=tmp_path)
    seen: list[float] = []

    def in_submit() -> bool:  # the pid is written inside submit; the parent reads the phase every 20 ms
        if not seen and pidfile.exists() and pidfile.read_text().strip():
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] > 0.5

    out, err, seconds, workers = _interrupt(process, in_submit)
    assert process.returncode == 130, out + err
    assert "Aborted!" not in err
    message = "interrupted (SIGINT, Ctrl-C) during the execute phase of the run on hanging:0"
    assert message in err, err
    assert "the run worker and its process group were killed" in err
    assert seconds < SIGNAL_TO_EXIT_S
    grandchild = int(pidfile.read_text())
    _workers_gone(workers | {grandchild})  # the worker's own children went with its process group
    assert not (tmp_path / "sum.npy").exists()
    if as_json:
        document = json.loads(out)
        validate("error", document)
        assert document["error"]["kind"] == "interrupted" and document["error"]["exit_code"] == 130
        assert message in document["error"]["message"]


def test_ctrl_c_anywhere_in_a_command_exits_130(monkeypatch: pytest.MonkeyPatch, cli_env: dict[str, str]) -> None:
    """A command interrupted outside a worker (here discovery) also exits 130 saying so; JSON too."""
    import accel_cli.commands.devices as devices_command
    from accel_cli.main import main

    def interrupted() -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(devices_command, "discover", interrupted)
    for args in (["devices"], ["devices", "--json"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 130, result.output
        assert "Aborted!" not in result.output
        assert "interrupted (SIGINT, Ctrl-C): accel devices stopped before it finished" in result.output
    document = json.loads(result.stdout)
    validate("error", document)
    assert document["error"]["kind"] == "interrupted"


# ----------------------------------------------------------------------------- real devices

RUNAWAY = Path(__file__).parents[1] / "python" / "data"
LONG_CL = (RUNAWAY / "runaway.cl").read_text()  # shared with tests/python/test_recovery.py
LONG_GLSL = (RUNAWAY / "runaway.comp").read_text()
ITEMS = 65535 * 64  # x 60,000 iterations: minutes on a CPU device (65,535 groups: Vulkan's usual limit)


def _first(provider: str) -> list[Any]:
    found = [e for e in ac.devices() if e.provider == provider]
    return found[:1]


REAL, REAL_IDS = device_params(lambda: _first("opencl") + _first("vulkan"), "OpenCL or Vulkan")


@pytest.mark.slow
@pytest.mark.parametrize("in_process", [False, True], ids=["worker", "in-process"])
@pytest.mark.parametrize("entry", REAL, ids=REAL_IDS)
def test_ctrl_c_stops_a_long_kernel_run_on_a_real_device(entry: Any, in_process: bool, tmp_path: Path) -> None:
    if entry.provider == "opencl":
        (tmp_path / "spin.cl").write_text(LONG_CL)
        kernel = ["spin.cl", "--arg", "n=60000"]
    else:
        (tmp_path / "spin.comp").write_text(LONG_GLSL)
        kernel = ["spin.comp", "--push", "n=60000"]
    np.save(tmp_path / "o.npy", np.zeros(ITEMS, np.uint32))
    args = ["run", entry.device_id, *kernel, "--bind", "0=o.npy:w", "--global", ITEMS, "--out", "0=r.npy"]
    process = _start([*args, *(["--in-process"] if in_process else [])], [entry.provider], cwd=tmp_path)
    begun = time.monotonic()
    # Past start-up and the build (a few seconds here), into the kernel that then runs for minutes.
    out, err, seconds, workers = _interrupt(process, lambda: time.monotonic() - begun > 6)
    assert process.returncode == 130, out + err
    assert "Aborted!" not in err and "interrupted (SIGINT, Ctrl-C)" in err, err
    if in_process:
        assert "phase of the run in this process: the device was closed" in err, err
    else:
        assert f"the run on {entry.device_id}" in err and "killed" in err, err
    assert seconds < SIGNAL_TO_EXIT_S, f"{seconds:.1f} s from SIGINT to exit"
    _workers_gone(workers)
    assert not (tmp_path / "r.npy").exists()
