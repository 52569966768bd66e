"""SIGTERM and SIGHUP end ``accel run`` and ``accel conformance`` as Ctrl-C does (exit 128 + the signal, the
message names it, workers killed, temporary folders removed, conformance's partial reports written), and a
worker never outlives its parent: ``kill -9`` of the CLI takes its workers with it within seconds.

The CLI runs as a real subprocess with its temporary folder (``TMPDIR``) inside the test's, so what it left
there can be seen; workers are found as its descendants in /proc before the signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from accel_cli.schemas import validate

from .test_interrupts import SIGNAL_TO_EXIT_S, _add_files, _alive, _children, _events_text, _start

WORKER_DEATH_S = 5.0
"""How long a worker may outlive a parent killed with SIGKILL."""

SIGNALS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGHUP, id="SIGHUP")]


def _wait_for(process: subprocess.Popen[str], ready: object, limit_s: float = 60) -> set[int]:
    started = time.monotonic()
    while not ready():  # type: ignore[operator]
        if process.poll() is not None or time.monotonic() - started > limit_s:
            out, err = process.communicate()
            pytest.fail(f"never got ready (exit {process.returncode})\n{out}\n{err[-3000:]}")
        time.sleep(0.05)
    return _children(process.pid)


def _send(process: subprocess.Popen[str], number: int) -> tuple[str, str, float]:
    sent = time.monotonic()
    os.kill(process.pid, number)  # to the CLI alone, as `kill PID` or a service manager does
    try:
        out, err = process.communicate(timeout=SIGNAL_TO_EXIT_S + 20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"still running long after {signal.Signals(number).name}\n{out}\n{err[-3000:]}")
    return out, err, time.monotonic() - sent


def _gone(pids: set[int], limit_s: float) -> list[int]:
    deadline = time.monotonic() + limit_s
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


def _scratch(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "tmp"
    folder.mkdir()
    return {"TMPDIR": str(folder)}


def _run_in_submit(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], set[int], int]:
    """``accel run`` on the ``hanging`` family, waited until its worker is inside submit (which never returns)."""
    pidfile = tmp_path / "grandchild.pid"
    process = _start(
        ["run", "hanging:0", *_add_files(tmp_path)],
        ["hanging"],
        env={**env, "ACCEL_TEST_HANG_PIDFILE": str(pidfile)},
        cwd=tmp_path,
    )
    seen: list[float] = []

    def in_submit() -> bool:
        if not seen and pidfile.exists() and pidfile.read_text().strip():
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] > 0.5

    workers = _wait_for(process, in_submit)
    return process, workers, int(pidfile.read_text())


@pytest.mark.parametrize("number", SIGNALS)
def test_a_signal_to_run_ends_the_worker_and_its_folder(tmp_path: Path, number: signal.Signals) -> None:
    env = _scratch(tmp_path)
    process, workers, grandchild = _run_in_submit(tmp_path, env)
    assert workers, "the worker was not seen"
    assert [p.name for p in Path(env["TMPDIR"]).iterdir()], "the run's temporary folder was not seen"
    out, err, seconds = _send(process, number)
    assert process.returncode == 128 + number, out + err
    assert f"interrupted ({number.name}) during the execute phase of the run on hanging:0" in err, err
    assert "the run worker and its process group were killed" in err
    assert seconds < SIGNAL_TO_EXIT_S
    assert not _gone(workers | {grandchild}, 5), "a worker outlived the stopped CLI"
    assert list(Path(env["TMPDIR"]).iterdir()) == [], "the temporary folder was left"
    assert not (tmp_path / "sum.npy").exists()


@pytest.mark.parametrize("number", SIGNALS)
def test_a_signal_to_conformance_writes_partial_reports(tmp_path: Path, number: signal.Signals) -> None:
    env = _scratch(tmp_path)
    report, junit = tmp_path / "m.json", tmp_path / "m.xml"
    process = _start(
        ["conformance", "cases:0", "fixture:0", "--jobs", "1", "--json", report, "--junit", junit],
        providers=["cases", "fixture"],
        env={**env, "ACCEL_TEST_CASES": "slow,hang"},
    )
    started = '{"event": "case-start", "id": "test.hang"}'
    workers = _wait_for(process, lambda: started in _events_text(process))
    assert workers
    out, err, seconds = _send(process, number)
    assert process.returncode == 128 + number, out + err
    assert f"interrupted ({number.name}) while running cases:0 (case test.hang)" in err, err
    assert seconds < SIGNAL_TO_EXIT_S
    assert not _gone(workers, 5), "a worker outlived the stopped CLI"
    assert list(Path(env["TMPDIR"]).iterdir()) == [], "the temporary folder was left"
    document = json.loads(report.read_text())
    validate("conformance-matrix", document)
    assert document["interrupted"] is True
    runs = {run["device"]["id"]: run for run in document["runs"]}
    cells = {c["id"]: c for c in runs["cases:0"]["cases"]}
    assert cells["test.slow"]["verdict"] == "pass"
    assert cells["test.hang"]["verdict"] == "interrupted"
    assert f"interrupted ({number.name})" in cells["test.hang"]["reason"]
    assert "not started" in runs["fixture:0"]["detail"]
    assert junit.exists()


def test_kill_9_of_run_takes_its_worker_with_it(tmp_path: Path) -> None:
    process, workers, grandchild = _run_in_submit(tmp_path, _scratch(tmp_path))
    assert workers
    process.kill()
    process.communicate()
    try:
        # The worker itself; what the test family's submit started (a stand-in for a driver's helper) is not a
        # worker and does not watch its parent: it is cleaned up here.
        assert not _gone(workers - {grandchild}, WORKER_DEATH_S), "a run worker outlived its killed parent"
    finally:
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_kill_9_of_conformance_takes_its_workers_with_them(tmp_path: Path) -> None:
    process = _start(["conformance", "cases:0", "--jobs", "1"], ["cases"], env={"ACCEL_TEST_CASES": "hang"})
    workers = _wait_for(process, lambda: '"id": "test.hang"' in _events_text(process))
    assert workers
    process.kill()
    process.communicate()
    assert not _gone(workers, WORKER_DEATH_S), "a conformance worker outlived its killed parent"
