"""Run the conformance suite on many devices, each in its own worker process.

Promise: every device ends as one :class:`~accel_cli.matrix.DeviceRun`, whatever
its workers did. A device's cases run in one worker until something goes wrong
with a case: a worker that dies (a signal, an exit) while running a case makes
that cell ``crash`` (the signal and the last lines of its stderr), one running a
case past ``CaseOptions.case_timeout_s`` is killed and the cell is ``timeout``;
the device's remaining cases then run in a new worker. An unexpected failure is
rerun up to ``CaseOptions.retries`` times in fresh workers (a pass makes it
``flake``, every attempt kept). A worker that dies before its first case (or
between cases), or a device past ``timeout_s``, becomes a ``crashed`` /
``timeout`` / ``unavailable`` run that keeps the case results streamed before
the end and adds a failed ``worker`` case naming the signal or exit status and
the tail of its stderr. ``CaseOptions.max_fails`` stops scheduling: running
workers are killed, unrun cases recorded as skipped saying why, devices not
started become ``stopped`` runs. Shards (``CaseOptions.shard``) and skips are
applied in the worker (it knows the device's case list). Ctrl-C (``KeyboardInterrupt``
in :func:`run_devices`) kills every running worker at once and raises
:class:`ConformanceInterrupted` holding the partial runs: the cases reported
before it keep their results, the case a worker was running and those not run
yet are ``interrupted`` cells, and devices not started are ``interrupted`` runs.
Progress: the caller's ``on_progress`` is called from this thread whenever a
worker reports a case.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelcore.devices.registry import DeviceEntry
from accelcore.support.child import child_environment, python_module_command

from . import signals
from .failures import InterruptedWork
from .matrix import INTERRUPTED, WORKER_CASE, CaseCell, DeviceRecord, DeviceRun, hostname
from .shard import Shard

__all__ = ["CaseOptions", "ConformanceInterrupted", "DeviceProgress", "run_devices"]

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
class CaseOptions:
    """Per-case scheduling (``accel conformance`` options); the defaults keep one worker per device."""

    case_timeout_s: float = float("inf")
    """--case-timeout: kill the worker running one case past this; the cell is ``timeout``."""
    retries: int = 0
    """--retries: rerun an unexpected failure this many times, each in a fresh worker."""
    max_fails: int | None = None
    """--max-fails: start nothing more after this many unexpected failures."""
    shard: Shard | None = None
    skip: Sequence[tuple[str, str]] = ()
    """(pattern, reason) pairs: matching cases are recorded as skipped with the reason, never run."""
    expected: Callable[[DeviceEntry, str], bool] = field(default=lambda entry, case_id: False)
    """Whether a failure of ``case_id`` on ``entry`` is a known one (neither retried nor counted)."""


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
    current: str | None = None
    current_started: float = 0.0
    results: list[dict[str, Any]] = field(default_factory=list)
    started_event: bool = False
    start_event: dict[str, Any] | None = None
    handled: int = 0
    only: list[str] = field(default_factory=list)
    """A retry worker's cases: those it did not get to are queued again when it ends."""


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL a worker and its process group (what it started too)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


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
            worker.started_event = True
            worker.progress.planned = [str(c) for c in event.get("cases", [])]
            worker.progress.available = [str(c) for c in event.get("available", [])]
            worker.start_event = event
        elif kind == "case-start":
            worker.current = str(event.get("id"))
            worker.current_started = time.perf_counter()
        elif kind == "case":
            worker.current = None
            worker.results.append(event["result"])
        elif kind == "done":
            worker.report = event["report"]
        elif kind == "error":
            worker.error = str(event.get("message", "unknown error"))


def _stderr_tail(path: Path, lines: int = 0) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    text = data[-_STDERR_TAIL:].decode("utf-8", "replace").strip()
    if lines:
        text = "\n".join(text.splitlines()[-lines:])
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


def _cell(r: dict[str, Any]) -> CaseCell:
    return CaseCell(
        id=str(r["id"]),
        status=str(r["status"]),
        reason=str(r.get("reason", "")),
        duration_s=float(r.get("duration_s", 0.0)),
        metrics=dict(r.get("metrics") or {}),
        attempts=tuple(dict(a) for a in r.get("attempts", ())),
    )


def _start(
    entry: DeviceEntry,
    scratch: Path,
    number: int,
    select: Sequence[str] | None,
    suite: str = "all",
    quick: bool = False,
    plan: dict[str, Any] | None = None,
    progress: DeviceProgress | None = None,
) -> _Worker:
    events = scratch / f"worker{number}.jsonl"
    stderr = scratch / f"worker{number}.stderr"
    events.touch()
    arguments = ["--device", entry.device_id, "--uuid", entry.uuid.hex(), "--events", str(events)]
    arguments += ["--suite", suite] + (["--quick"] if quick else [])
    if select:  # in the plan file, not on the command line: a million ids exceed any argument list
        plan = {**(plan or {}), "select": list(select)}
    if plan:
        plan_path = scratch / f"worker{number}.plan.json"
        plan_path.write_text(json.dumps(plan), encoding="utf-8")
        arguments += ["--plan", str(plan_path)]
    command = python_module_command("accel_cli.worker", *arguments)
    with open(stderr, "wb") as err:
        # Its own process group: a terminal's Ctrl-C reaches accel alone, which ends the workers (and whatever
        # they started) and writes the partial reports; a worker never half-reports an interrupted case.
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=child_environment(), process_group=0
        )
    return _Worker(entry, process, events, stderr, time.perf_counter(), progress or DeviceProgress(entry))


FAILING = ("failed", "timeout", "crash")
"""Raw statuses that are failures (``timeout``: past --case-timeout; ``crash``: the worker died in the case)."""


@dataclass
class _Device:
    number: int
    entry: DeviceEntry
    progress: DeviceProgress
    started: float = 0.0
    worker: _Worker | None = None
    retrying: bool = False
    order: list[str] | None = None
    remaining: list[str] = field(default_factory=list)
    cells: dict[str, CaseCell] = field(default_factory=dict)
    attempts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    queue: list[str] = field(default_factory=list)
    rounds: int = 0
    spawns: int = 0
    broken: CaseCell | None = None
    outcome: str = "completed"
    detail: str = ""
    exit_code: int | None = 0


class _Scheduler:
    def __init__(
        self,
        entries: Sequence[DeviceEntry],
        scratch: Path,
        timeout_s: float,
        jobs: int,
        select: Sequence[str] | None,
        on_progress: Callable[[DeviceProgress], None] | None,
        suite: str,
        quick: bool,
        options: CaseOptions,
    ) -> None:
        self.host = hostname()
        self.scratch = scratch
        self.timeout_s = timeout_s
        self.jobs = max(1, jobs)
        self.select = select
        self.on_progress = on_progress
        self.suite = suite
        self.quick = quick
        self.options = options
        self.pending = [_Device(n, e, DeviceProgress(e)) for n, e in enumerate(entries)]
        self.active: list[_Device] = []
        self.results: dict[int, DeviceRun] = {}
        self.unexpected = 0
        self.stopped = False
        self.serial = 0

    # -- scheduling -------------------------------------------------------------------------------

    def run(self) -> list[DeviceRun]:
        try:
            return self._run()
        except KeyboardInterrupt:
            what = self._interrupt()
            raise ConformanceInterrupted(what, [self.results[i] for i in sorted(self.results)]) from None

    def _interrupt(self) -> str:
        """Ctrl-C: kill every running worker first, then end each device's run with what it reported before;
        what it had not finished is ``interrupted`` (see the module docstring). Returns what was running."""
        by = signals.received().name  # SIGINT, or SIGTERM / SIGHUP (accel_cli.signals)
        for device in self.active:
            if device.worker is not None and device.worker.process.poll() is None:
                _kill_group(device.worker.process)
        running = []
        for device in list(self.active):
            worker, device.worker = device.worker, None
            try:
                if worker is not None:
                    worker.process.wait()
                    self._drain(device, worker)  # the cases it finished before the signal
                    if worker.current is not None and worker.current not in device.cells:
                        spent = time.perf_counter() - worker.current_started
                        running.append(f"{device.entry.device_id} (case {worker.current})")
                        reason = f"interrupted ({by}) after {spent:.1f} s of it; its worker was killed"
                        device.cells[worker.current] = CaseCell(worker.current, INTERRUPTED, reason, spent)
                    elif worker.current is None:
                        running.append(device.entry.device_id)
                for case_id in device.queue:  # a retry that did not come: its first attempt stands
                    device.cells.setdefault(case_id, _cell(device.attempts[case_id][0]))
                not_run = f"not run: the run was interrupted ({by})"
                for case_id in [*device.remaining, *(device.order or [])]:
                    device.cells.setdefault(case_id, CaseCell(case_id, INTERRUPTED, not_run))
            finally:
                device.queue, device.remaining = [], []
                done = sum(1 for cell in device.cells.values() if cell.status != INTERRUPTED)
                planned = f" of {len(device.order)}" if device.order is not None else ""
                device.outcome = INTERRUPTED
                device.detail = f"interrupted ({by}) after {done}{planned} cases; its worker was killed"
                device.exit_code = worker.process.returncode if worker is not None else None
                self._finish(device)
        shard = self.options.shard.text if self.options.shard is not None else ""
        for device in self.pending:
            note = f"not started: the run was interrupted ({by})"
            self.results[device.number] = DeviceRun(
                _record(device.entry), self.host, INTERRUPTED, (), note, None, 0.0, shard=shard
            )
        self.pending = []
        return ", ".join(running)

    def _run(self) -> list[DeviceRun]:
        while self.pending or self.active:
            while self.pending and len(self.active) < self.jobs and not self.stopped:
                device = self.pending.pop(0)
                device.started = time.perf_counter()
                self.active.append(device)
                self._spawn(device, None)
                self._notify(device)
            if self.stopped and self.pending:
                for device in self.pending:
                    self.results[device.number] = DeviceRun(
                        _record(device.entry), self.host, "stopped", (), self._stop_note(), None, 0.0
                    )
                self.pending = []
            time.sleep(_POLL_S)
            for device in list(self.active):
                self._poll(device)
        return [self.results[i] for i in sorted(self.results)]

    def _stop_note(self) -> str:
        return f"not run: --max-fails {self.options.max_fails} reached ({self.unexpected} unexpected failures)"

    def _notify(self, device: _Device) -> None:
        if self.on_progress is not None:
            self.on_progress(device.progress)

    def _spawn(self, device: _Device, only: list[str] | None, retrying: bool = False) -> None:
        plan: dict[str, Any] = {"skip": [list(s) for s in self.options.skip]}
        if self.options.shard is not None:
            plan["shard"] = self.options.shard.to_json()
        if only is not None:
            plan["only"] = only
            plan["skip"] = []
        self.serial += 1
        device.worker = _start(
            device.entry, self.scratch, self.serial, self.select, self.suite, self.quick, plan, device.progress
        )
        device.retrying = retrying
        device.worker.only = list(only or []) if retrying else []
        device.spawns += 1

    def _poll(self, device: _Device) -> None:
        worker = device.worker
        if worker is None:
            self._next(device)
            return
        before = len(device.progress.done), len(device.progress.planned)
        self._drain(device, worker)
        now = time.perf_counter()
        if worker.process.poll() is None and now - device.started > self.timeout_s:
            self._kill(worker)
            self._end_device_timeout(device)
            return
        if (
            worker.process.poll() is None
            and worker.current is not None
            and now - worker.current_started > self.options.case_timeout_s
        ):
            case_id, spent = worker.current, now - worker.current_started
            self._kill(worker)
            self._drain(device, worker)
            self._result(
                device,
                {
                    "id": case_id,
                    "status": "timeout",
                    "reason": f"ran past --case-timeout ({self.options.case_timeout_s:g} s); its worker was killed "
                    "and the next cases run in a new worker",
                    "duration_s": spent,
                },
            )
            device.worker = None
            self._requeue(device, worker)
        elif worker.process.poll() is not None:
            self._drain(device, worker)
            self._worker_ended(device, worker)
        if self.stopped:
            self._stop_device(device)
        elif device.worker is None:
            self._next(device)
        elif before != (len(device.progress.done), len(device.progress.planned)):
            self._notify(device)

    def _drain(self, device: _Device, worker: _Worker) -> None:
        _read_events(worker)
        self._take_start(device, worker)
        while worker.handled < len(worker.results):
            worker.handled += 1
            self._result(device, worker.results[worker.handled - 1])

    @staticmethod
    def _kill(worker: _Worker) -> None:
        _kill_group(worker.process)
        worker.process.wait()

    def _take_start(self, device: _Device, worker: _Worker) -> None:
        event = worker.start_event
        if event is None or device.order is not None:
            return
        device.order = [str(c) for c in event.get("order", event.get("cases", []))]
        device.remaining = [str(c) for c in event.get("cases", [])]
        for case_id, why in event.get("skipped", []):
            device.cells[str(case_id)] = CaseCell(str(case_id), "skipped", str(why))
            device.progress.done.append({"id": str(case_id), "status": "skipped", "reason": str(why)})
        device.progress.planned = list(device.order)
        device.progress.available = [str(c) for c in event.get("available", [])]

    def _result(self, device: _Device, r: dict[str, Any]) -> None:
        case_id, status = str(r["id"]), str(r.get("status"))
        if case_id in device.cells:
            return
        if device.worker is not None and device.worker.current == case_id:
            device.worker.current = None
        if case_id in device.remaining:
            device.remaining.remove(case_id)
        if device.retrying and case_id in device.attempts:
            history = [*device.attempts[case_id], dict(r)]
            first = device.attempts[case_id][0]
            if status == "passed":
                reason = (
                    f"flaky: {first.get('status')} on the first attempt ({str(first.get('reason', '')).strip()}), "
                    f"then passed on retry {len(history) - 1}"
                )
                device.cells[case_id] = _cell({**r, "status": "flake", "reason": reason, "attempts": history})
                return
            device.attempts[case_id] = history
            if len(history) <= self.options.retries:
                device.queue.append(case_id)
                return
            reason = f"failed on all {len(history)} attempts; the last: {r.get('reason', '')}"
            device.cells[case_id] = _cell({**r, "reason": reason, "attempts": history})
            return
        device.progress.done.append(r)
        if status in FAILING and not self.options.expected(device.entry, case_id):
            self.unexpected += 1
            if self.options.max_fails is not None and self.unexpected >= self.options.max_fails:
                self.stopped = True
            if self.options.retries > 0 and not self.stopped:
                device.attempts[case_id] = [dict(r)]
                device.queue.append(case_id)
                return
        device.cells[case_id] = _cell(r)

    def _requeue(self, device: _Device, worker: _Worker) -> None:
        """A retry worker that ended early: its cases that got no new outcome wait for the next one."""
        for case_id in worker.only:
            attempts = device.attempts.get(case_id, [])
            if case_id not in device.cells and case_id not in device.queue and len(attempts) <= self.options.retries:
                device.queue.append(case_id)

    def _worker_ended(self, device: _Device, worker: _Worker) -> None:
        device.worker = None
        self._worker_outcome(device, worker)
        self._requeue(device, worker)

    def _worker_outcome(self, device: _Device, worker: _Worker) -> None:
        code = worker.process.returncode
        if worker.report is not None:
            return
        if not worker.started_event:
            stderr = _stderr_tail(worker.stderr_path)
            if worker.error is not None and device.order is None:
                device.outcome, device.detail = "unavailable", f"the suite could not start: {worker.error}"
            else:
                device.outcome = "crashed"
                device.detail = f"worker {_describe_exit(code)} before its first case"
                if worker.error is not None:
                    device.detail += f": {worker.error}"
            device.exit_code = code
            reason = device.detail + (f"\nstderr (tail):\n{stderr}" if stderr else "")
            device.broken = CaseCell(WORKER_CASE, "failed", reason, time.perf_counter() - worker.started)
            device.remaining, device.queue = [], []
            return
        if worker.current is not None:
            stderr = _stderr_tail(worker.stderr_path, lines=20)
            died = _describe_exit(code)
            died = f"was {died}" if died.startswith("killed") else died
            reason = f"its worker {died} while running this case; the next cases run in a new worker"
            self._result(
                device,
                {
                    "id": worker.current,
                    "status": "crash",
                    "reason": reason + (f"\nstderr (tail):\n{stderr}" if stderr else ""),
                    "duration_s": time.perf_counter() - worker.current_started,
                    "signal": _describe_exit(code),
                },
            )
            return
        planned = [c for c in worker.progress.planned if c not in device.cells and c not in device.attempts]
        if planned and not device.retrying:
            stderr = _stderr_tail(worker.stderr_path)
            device.outcome, device.exit_code = "crashed", code
            device.detail = f"worker {_describe_exit(code)} between cases"
            reason = device.detail + (f"\nstderr (tail):\n{stderr}" if stderr else "")
            device.broken = CaseCell(WORKER_CASE, "failed", reason, time.perf_counter() - worker.started)
            device.remaining = []

    def _next(self, device: _Device) -> None:
        if device.remaining:
            self._spawn(device, list(device.remaining))
        elif device.queue:
            only, device.queue = list(dict.fromkeys(device.queue)), []
            self._spawn(device, only, retrying=True)
        else:
            self._finish(device)

    def _stop_device(self, device: _Device) -> None:
        if device.worker is not None and device.worker.process.poll() is None:
            self._kill(device.worker)
        device.worker = None
        for case_id in device.queue:
            first = device.attempts[case_id][0]
            device.cells.setdefault(case_id, _cell(first))
        device.queue = []
        for case_id in device.remaining:
            device.cells.setdefault(case_id, CaseCell(case_id, "skipped", self._stop_note()))
        device.remaining = []
        device.detail = self._stop_note()
        self._finish(device)

    def _end_device_timeout(self, device: _Device) -> None:
        worker = device.worker
        device.worker = None
        elapsed = time.perf_counter() - device.started
        reported = [c for c in device.cells if c != WORKER_CASE]
        last = f" after case {reported[-1]}" if reported else " before any case finished"
        planned = len(device.order or [])
        counted = f" ({len(reported)} of {planned} cases reported)" if planned else ""
        device.outcome = "timeout"
        device.detail = f"worker ran past the per-device limit and was killed{last}{counted}"
        stderr = _stderr_tail(worker.stderr_path) if worker is not None else ""
        reason = device.detail + (f"\nstderr (tail):\n{stderr}" if stderr else "")
        for case_id in device.queue:
            device.cells.setdefault(case_id, _cell(device.attempts[case_id][0]))
        device.remaining, device.queue = [], []
        device.broken = CaseCell(WORKER_CASE, "failed", reason, elapsed)
        device.exit_code = worker.process.returncode if worker is not None else None
        self._finish(device)

    def _finish(self, device: _Device) -> None:
        if device not in self.active:
            return
        self.active.remove(device)
        order = device.order or []
        cells = [device.cells[c] for c in order if c in device.cells]
        cells += [cell for c, cell in device.cells.items() if c not in order]
        if device.broken is not None:
            cells.append(device.broken)
        shard = self.options.shard
        run = DeviceRun(
            _record(device.entry),
            self.host,
            device.outcome,
            tuple(cells),
            device.detail,
            device.exit_code,
            time.perf_counter() - device.started,
            shard=shard.text if shard is not None else "",
            case_order=tuple(order) if shard is not None else (),
        )
        self.results[device.number] = run
        device.progress.outcome = device.outcome
        device.progress.finished = True
        self._notify(device)


class ConformanceInterrupted(InterruptedWork):
    """Ctrl-C stopped :func:`run_devices`: ``runs`` are the partial runs (one per device, in order), every
    worker was killed; ``running`` names the devices (and cases) that were running."""

    def __init__(self, running: str, runs: list[DeviceRun]) -> None:
        finished = sum(1 for run in runs if run.outcome != INTERRUPTED)
        where = f" while running {running}" if running else ""
        super().__init__(
            f"interrupted ({signals.words()}){where}: {finished} of {len(runs)} device(s) had finished, "
            "every conformance worker was killed"
        )
        self.running = running
        self.runs = runs


def run_devices(
    entries: Sequence[DeviceEntry],
    *,
    timeout_s: float,
    jobs: int = 1,
    select: Sequence[str] | None = None,
    on_progress: Callable[[DeviceProgress], None] | None = None,
    suite: str = "all",
    quick: bool = False,
    options: CaseOptions | None = None,
) -> list[DeviceRun]:
    """One DeviceRun per entry, in ``entries`` order; at most ``jobs`` devices at a time. Ctrl-C →
    :class:`ConformanceInterrupted` with the partial runs (the workers killed)."""
    with tempfile.TemporaryDirectory(prefix="accel-conformance-") as tmp:
        scheduler = _Scheduler(
            entries, Path(tmp), timeout_s, jobs, select, on_progress, suite, quick, options or CaseOptions()
        )
        return scheduler.run()
