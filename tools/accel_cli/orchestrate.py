"""Run the conformance suite on many devices, each in its own worker process.

Promise: every device ends as one :class:`~accel_cli.matrix.DeviceRun`, whatever
its worker did. A worker killed by a signal, exiting without a report, or
running past ``timeout_s`` (then killed) becomes a ``crashed`` / ``timeout``
run that keeps the case results streamed before the end and adds a failed
``worker`` case naming the signal or exit status and the tail of its stderr.
Progress: the caller's ``on_progress`` is called from this thread whenever a
worker reports a case.
"""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelcore._child import child_environment, python_module_command
from accelcore.registry import DeviceEntry

from .matrix import WORKER_CASE, CaseCell, DeviceRecord, DeviceRun, hostname

__all__ = ["DeviceProgress", "run_devices"]

_POLL_S = 0.05
_STDERR_TAIL = 1500


@dataclass
class DeviceProgress:
    """What is known so far about one device's worker (handed to ``on_progress``)."""

    entry: DeviceEntry
    planned: list[str] = field(default_factory=list)
    available: list[str] = field(default_factory=list)
    """Every case id the device offers (before --case selection); empty until its worker started."""
    done: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    outcome: str = "pending"


@dataclass
class _Worker:
    entry: DeviceEntry
    process: subprocess.Popen[bytes]
    events_path: Path
    stderr_path: Path
    started: float
    progress: DeviceProgress
    offset: int = 0
    report: dict[str, Any] | None = None
    error: str | None = None


def _record(entry: DeviceEntry) -> DeviceRecord:
    return DeviceRecord(entry.provider, entry.index, entry.name, entry.uuid, dict(entry.native))


def _read_events(worker: _Worker) -> None:
    try:
        with open(worker.events_path, "rb") as handle:
            handle.seek(worker.offset)
            chunk = handle.read()
    except OSError:
        return
    complete = chunk.rfind(b"\n") + 1
    worker.offset += complete
    for line in chunk[:complete].splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = event.get("event")
        if kind == "start":
            worker.progress.planned = [str(c) for c in event.get("cases", [])]
            worker.progress.available = [str(c) for c in event.get("available", [])]
        elif kind == "case":
            worker.progress.done.append(event["result"])
        elif kind == "done":
            worker.report = event["report"]
        elif kind == "error":
            worker.error = str(event.get("message", "unknown error"))


def _stderr_tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    text = data[-_STDERR_TAIL:].decode("utf-8", "replace").strip()
    return text


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _cells(results: Sequence[dict[str, Any]]) -> list[CaseCell]:
    return [
        CaseCell(
            id=str(r["id"]),
            status=str(r["status"]),
            reason=str(r.get("reason", "")),
            duration_s=float(r.get("duration_s", 0.0)),
            metrics=dict(r.get("metrics") or {}),
        )
        for r in results
    ]


def _finish(worker: _Worker, timed_out: bool, host: str) -> DeviceRun:
    _read_events(worker)
    elapsed = time.perf_counter() - worker.started
    code = worker.process.returncode
    record = _record(worker.entry)
    if worker.report is not None and not timed_out:
        cells = _cells(worker.report.get("cases", []))
        worker.progress.outcome = "completed"
        return DeviceRun(record, host, "completed", tuple(cells), "", code, elapsed)
    cells = _cells(worker.progress.done)
    stderr = _stderr_tail(worker.stderr_path)
    last = f" after case {cells[-1].id}" if cells else " before any case finished"
    planned = len(worker.progress.planned)
    counted = f" ({len(cells)} of {planned} cases reported)" if planned else ""
    if timed_out:
        outcome = "timeout"
        detail = f"worker ran past the per-device limit and was killed{last}{counted}"
    elif worker.error is not None and not worker.progress.planned:
        outcome = "unavailable"
        detail = f"the suite could not start: {worker.error}"
    else:
        outcome = "crashed"
        detail = f"worker {_describe_exit(code)}{last}{counted}"
        if worker.error is not None:
            detail += f": {worker.error}"
    reason = detail + (f"\nstderr (tail):\n{stderr}" if stderr else "")
    cells.append(CaseCell(WORKER_CASE, "failed", reason, elapsed))
    worker.progress.outcome = outcome
    return DeviceRun(record, host, outcome, tuple(cells), detail, code, elapsed)


def _start(
    entry: DeviceEntry,
    scratch: Path,
    number: int,
    select: Sequence[str] | None,
    suite: str = "all",
    quick: bool = False,
) -> _Worker:
    events = scratch / f"worker{number}.jsonl"
    stderr = scratch / f"worker{number}.stderr"
    events.touch()
    arguments = ["--device", entry.device_id, "--uuid", entry.uuid.hex(), "--events", str(events)]
    for case_id in select or ():
        arguments += ["--select", case_id]
    arguments += ["--suite", suite] + (["--quick"] if quick else [])
    command = python_module_command("accel_cli.worker", *arguments)
    with open(stderr, "wb") as err:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=child_environment())
    return _Worker(entry, process, events, stderr, time.perf_counter(), DeviceProgress(entry))


def run_devices(
    entries: Sequence[DeviceEntry],
    *,
    timeout_s: float,
    jobs: int = 1,
    select: Sequence[str] | None = None,
    on_progress: Callable[[DeviceProgress], None] | None = None,
    suite: str = "all",
    quick: bool = False,
) -> list[DeviceRun]:
    """One DeviceRun per entry, in ``entries`` order; at most ``jobs`` workers at a time."""
    host = hostname()
    results: dict[int, DeviceRun] = {}
    with tempfile.TemporaryDirectory(prefix="accel-conformance-") as tmp:
        scratch = Path(tmp)
        pending = list(enumerate(entries))
        active: dict[int, _Worker] = {}
        while pending or active:
            while pending and len(active) < max(1, jobs):
                number, entry = pending.pop(0)
                active[number] = _start(entry, scratch, number, select, suite, quick)
                if on_progress is not None:
                    on_progress(active[number].progress)
            time.sleep(_POLL_S)
            for number, worker in list(active.items()):
                seen = len(worker.progress.done), len(worker.progress.planned)
                _read_events(worker)
                timed_out = False
                if worker.process.poll() is None and time.perf_counter() - worker.started > timeout_s:
                    worker.process.kill()
                    worker.process.wait()
                    timed_out = True
                if worker.process.poll() is not None:
                    results[number] = _finish(worker, timed_out, host)
                    worker.progress.finished = True
                    del active[number]
                    if on_progress is not None:
                        on_progress(worker.progress)
                elif on_progress is not None and seen != (len(worker.progress.done), len(worker.progress.planned)):
                    on_progress(worker.progress)
    return [results[i] for i in range(len(entries))]
