"""The cross-device conformance matrix: per-device runs, verdicts against expectations, merge, JSON.

A :class:`DeviceRun` is one device's outcome on one host: ``completed`` (the
worker wrote its report), ``crashed`` (the worker died: a signal or a
non-zero exit without a report), ``timeout`` (killed after the per-device
limit), ``unavailable`` (the device could not be opened for the suite),
``stopped`` (not started: --max-fails) or ``interrupted`` (Ctrl-C ended the
run: its worker was killed, or it never started).
Every run that did not complete carries a synthetic case ``worker`` that
failed with the reason, so it counts as an unexpected failure unless an
expectation covers it.

Verdicts: pass, fail, timeout (past --case-timeout), crash (the worker died in
the case), flake (failed, then passed on a retry), skip, xfail (failed as
expected), xpass (an expected failure passed), interrupted (Ctrl-C came while
it ran or before it: no outcome; never judged by an expectation; a matrix with
one is not ok). ``fail``, ``timeout`` and
``crash`` always make the run unsuccessful; ``xpass`` and a flake no
``[[flake]]`` entry lists do under ``--strict``. A run of ``--shard I/N``
records its shard and full case order; :func:`merge` folds a device's shards.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import accelcore
from accelcore.contract.errors import BackendError
from accelcore.support.files import read_file

from .expectations import Expectation, match_expectation, match_flake

__all__ = [
    "INTERRUPTED",
    "MATRIX_FORMAT",
    "VERDICT_TEXT",
    "WORKER_CASE",
    "CaseCell",
    "DeviceRecord",
    "DeviceRun",
    "Matrix",
    "MatrixFormatError",
    "classify",
    "load_matrix",
    "merge",
]

MATRIX_FORMAT = "accel-conformance-matrix/1"
WORKER_CASE = "worker"
VERDICTS = ("pass", "fail", "timeout", "crash", "flake", "skip", "xfail", "xpass", "interrupted")
VERDICT_TEXT = {
    "pass": "pass",
    "fail": "FAIL",
    "timeout": "TIMEOUT",
    "crash": "CRASH",
    "flake": "flake",
    "skip": "skip",
    "xfail": "xfail",
    "xpass": "XPASS",
    "interrupted": "INTERRUPTED",
}
"""How a matrix cell writes each verdict (terminal and HTML alike): upper case where a reader must look."""
FAILING_VERDICTS = ("fail", "timeout", "crash")
"""Unexpected failures: ``timeout`` ran past --case-timeout, ``crash`` killed its worker."""
OUTCOMES = ("completed", "crashed", "timeout", "unavailable", "stopped", "interrupted")
INTERRUPTED = "interrupted"
"""The raw status and verdict of a case Ctrl-C left unfinished, and the outcome of a run it ended."""


class MatrixFormatError(ValueError):
    """A report file is not an accel conformance matrix (names the file and the problem)."""


def _object(value: Any, what: str) -> Mapping[str, Any]:
    """``value`` when it is a JSON object; TypeError naming ``what`` (a report's null or number) otherwise."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} is {_json_type(value)}, not an object")
    return value


def _array(value: Any) -> list[Any] | tuple[Any, ...]:
    """``value`` when it is a JSON array; TypeError otherwise."""
    if not isinstance(value, list | tuple):
        raise TypeError(f"{_json_type(value)} where a list belongs")
    return value


def _json_type(value: Any) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    return names.get(type(value), "a list" if isinstance(value, list) else type(value).__name__)


@dataclass(frozen=True, slots=True)
class DeviceRecord:
    """A device as a report remembers it; satisfies the selector's DeviceLike."""

    provider: str
    index: int
    name: str
    uuid: bytes
    native: Mapping[str, str] = field(default_factory=dict)

    @property
    def device_id(self) -> str:
        return f"{self.provider}:{self.index}"

    @property
    def driver_version(self) -> str:
        """The driver's version as the provider recorded it: OpenCL ``driver_version``, Vulkan ``driver``; else ''."""
        return self.native.get("driver_version") or self.native.get("driver") or ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.device_id,
            "provider": self.provider,
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid.hex(),
            "native": dict(self.native),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeviceRecord:
        return cls(
            provider=str(data["provider"]),
            index=int(data["index"]),
            name=str(data["name"]),
            uuid=bytes.fromhex(str(data["uuid"]).replace("-", "")),
            native={str(k): str(v) for k, v in _object(data.get("native", {}), "a device's native").items()},
        )


@dataclass(frozen=True, slots=True)
class CaseCell:
    """One case on one device: the raw status of the suite, and the verdict after expectations."""

    id: str
    status: str
    reason: str = ""
    duration_s: float = 0.0
    verdict: str = ""
    expectation: Mapping[str, str] | None = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    """What the case measured (the numerics suite: max error, limit, worst input; ``cell`` is its short text)."""
    attempts: tuple[Mapping[str, Any], ...] = ()
    """Every outcome of a rerun case (--retries), first attempt first: a ``flake`` failed, then passed."""

    @property
    def measured(self) -> str:
        """The short measured text a matrix cell shows next to the verdict (``2.1 ulp ≤ 4``), or ''."""
        return str(self.metrics.get("cell", "")) if self.metrics else ""

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "status": self.status,
            "verdict": self.verdict,
            "reason": self.reason,
            "duration_s": self.duration_s,
            "expectation": dict(self.expectation) if self.expectation else None,
        }
        if self.metrics:
            out["metrics"] = dict(self.metrics)
        if self.attempts:
            out["attempts"] = [dict(a) for a in self.attempts]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CaseCell:
        data = _object(data, "a case")
        expectation = _object(data.get("expectation") or {}, f"case {data.get('id')!r}: its expectation")
        return cls(
            id=str(data["id"]),
            status=str(data["status"]),
            reason=str(data.get("reason", "")),
            duration_s=float(data.get("duration_s", 0.0)),
            verdict=str(data.get("verdict", "")),
            expectation={str(k): str(v) for k, v in expectation.items()} if expectation else None,
            metrics=dict(_object(data.get("metrics") or {}, f"case {data.get('id')!r}: its metrics")),
            attempts=tuple(
                dict(_object(a, f"case {data.get('id')!r}: an attempt")) for a in _array(data.get("attempts") or ())
            ),
        )


@dataclass(frozen=True, slots=True)
class DeviceRun:
    """One device's run on ``host``; ``label`` is its column title (unique within a matrix)."""

    device: DeviceRecord
    host: str
    outcome: str
    cases: tuple[CaseCell, ...]
    detail: str = ""
    exit_code: int | None = 0
    duration_s: float = 0.0
    label: str = ""
    shard: str = ""
    """``I/N`` when the run was one shard (--shard); --merge folds a device's shards into one run."""
    case_order: tuple[str, ...] = ()
    """A shard's full case order (every shard's cases), so a merge restores the unsharded order."""

    def to_json(self) -> dict[str, Any]:
        sharded = {"shard": self.shard, "case_order": list(self.case_order)} if self.shard else {}
        return {
            **sharded,
            "label": self.label or self.device.device_id,
            "host": self.host,
            "device": self.device.to_json(),
            "outcome": self.outcome,
            "detail": self.detail,
            "exit_code": self.exit_code,
            "duration_s": self.duration_s,
            "cases": [case.to_json() for case in self.cases],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeviceRun:
        data = _object(data, "a run")
        return cls(
            device=DeviceRecord.from_json(_object(data["device"], "a run's device")),
            host=str(data["host"]),
            outcome=str(data["outcome"]),
            cases=tuple(CaseCell.from_json(c) for c in _array(data.get("cases", []))),
            detail=str(data.get("detail", "")),
            exit_code=None if data.get("exit_code") is None else int(data["exit_code"]),
            duration_s=float(data.get("duration_s", 0.0)),
            label=str(data.get("label", "")),
            shard=str(data.get("shard", "")),
            case_order=tuple(str(c) for c in _array(data.get("case_order", ()))),
        )

    def cell(self, case_id: str) -> CaseCell | None:
        for case in self.cases:
            if case.id == case_id:
                return case
        return None


def _verdict(status: str, expected: bool) -> str:
    if status == INTERRUPTED:
        return INTERRUPTED  # no outcome to judge
    if status == "passed":
        return "xpass" if expected else "pass"
    if status == "skipped":
        return "skip"
    if status == "flake":
        return "flake"
    if expected:
        return "xfail"
    return status if status in ("timeout", "crash") else "fail"


def classify(run: DeviceRun, expectations: Sequence[Expectation] | None) -> DeviceRun:
    """Set every cell's verdict. ``expectations`` None keeps the expectations already recorded."""
    cells = []
    for case in run.cases:
        if expectations is None:
            recorded = case.expectation
        elif case.status == "flake":
            known = match_flake(expectations, run.device, case.id)
            recorded = known.to_json() if known else None
        else:
            found = match_expectation(expectations, run.device, case.id)
            recorded = found.to_json() if found else None
        expected = recorded is not None and recorded.get("kind", "expected-failure") != "flake"
        cells.append(replace(case, verdict=_verdict(case.status, expected), expectation=recorded))
    return replace(run, cases=tuple(cells))


@dataclass(frozen=True)
class Matrix:
    """Runs (columns) over case ids (rows, in first-seen order)."""

    runs: tuple[DeviceRun, ...]
    generated: str = ""
    sources: tuple[str, ...] = ()
    interrupted: bool = False
    """Ctrl-C ended the run (or one of the merged runs) before every case had run: a partial matrix."""

    @property
    def case_ids(self) -> list[str]:
        """Every case id, merging the runs' orders: an id new in a run goes just before the next id of
        that run already placed (so provider-specific cases stay before a shared final case)."""
        ids: list[str] = []
        for run in self.runs:
            sequence = [case.id for case in run.cases if case.id != WORKER_CASE]
            pending: list[str] = []
            for case_id in sequence:
                if case_id in ids:
                    if pending:
                        position = ids.index(case_id)
                        ids[position:position] = pending
                        pending = []
                elif case_id not in pending:
                    pending.append(case_id)
            ids.extend(pending)
        if any(run.cell(WORKER_CASE) for run in self.runs):
            ids.append(WORKER_CASE)
        return ids

    def counts(self) -> dict[str, int]:
        """Cells per verdict; ``interrupted`` only when there are some (a complete run's summary is unchanged)."""
        totals = dict.fromkeys(VERDICTS, 0)
        for run in self.runs:
            for case in run.cases:
                totals[case.verdict] = totals.get(case.verdict, 0) + 1
        if not totals[INTERRUPTED]:
            del totals[INTERRUPTED]
        return totals

    def unexpected_failures(self) -> list[tuple[DeviceRun, CaseCell]]:
        return [(run, case) for run in self.runs for case in run.cases if case.verdict in FAILING_VERDICTS]

    def flakes(self, *, known: bool | None = None) -> list[tuple[DeviceRun, CaseCell]]:
        """Cells that failed and then passed on a retry; ``known``: only those a [[flake]] entry covers (True)
        or only those none covers (False)."""
        return [
            (run, case)
            for run in self.runs
            for case in run.cases
            if case.verdict == "flake" and (known is None or (case.expectation is not None) == known)
        ]

    def unexpected_passes(self) -> list[tuple[DeviceRun, CaseCell]]:
        return [(run, case) for run in self.runs for case in run.cases if case.verdict == "xpass"]

    def interrupted_cells(self) -> list[tuple[DeviceRun, CaseCell]]:
        """Cells Ctrl-C left without an outcome."""
        return [(run, case) for run in self.runs for case in run.cases if case.verdict == INTERRUPTED]

    def ok(self, *, strict: bool) -> bool:
        """No unexpected failure and not interrupted; under ``strict`` also no XPASS and no flake a [[flake]]
        entry does not cover."""
        if self.interrupted or self.interrupted_cells():
            return False
        return not self.unexpected_failures() and not (
            strict and (self.unexpected_passes() or self.flakes(known=False))
        )

    def reclassified(self, expectations: Sequence[Expectation] | None) -> Matrix:
        return replace(self, runs=tuple(classify(run, expectations) for run in self.runs))

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        counts = self.counts()
        return {
            "format": MATRIX_FORMAT,
            "generated": self.generated or now_iso(),
            "accelcore_version": accelcore.__version__,
            "sources": list(self.sources),
            "strict": strict,
            "ok": self.ok(strict=strict),
            "interrupted": self.interrupted,
            "summary": {
                **counts,
                "devices": len(self.runs),
                "unexpected_failures": len(self.unexpected_failures()),
                "unexpected_passes": len(self.unexpected_passes()),
                "unknown_flakes": len(self.flakes(known=False)),
            },
            "case_ids": self.case_ids,
            "runs": [run.to_json() for run in self.runs],
        }


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def hostname() -> str:
    return socket.gethostname() or "localhost"


def with_unique_labels(runs: Iterable[DeviceRun]) -> tuple[DeviceRun, ...]:
    """Label each run by its device id; when the runs come from more than one host, every label is
    ``host/id`` (not only ids seen on several hosts: ``opencl:0`` alone on one of them is still that
    host's); a repeat on one host then gets ``#n``."""
    runs = list(runs)
    several_hosts = len({run.host for run in runs}) > 1
    labelled: list[DeviceRun] = []
    used: set[str] = set()
    for run in runs:
        base = run.device.device_id
        if several_hosts:
            base = f"{run.host}/{base}"
        label, number = base, 2
        while label in used:
            label, number = f"{base}#{number}", number + 1
        used.add(label)
        labelled.append(replace(run, label=label))
    return tuple(labelled)


def matrix_from_json(document: Any, source: str) -> Matrix:
    if not isinstance(document, dict) or document.get("format") != MATRIX_FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise MatrixFormatError(f"{source}: not an accel conformance matrix (format {found!r}, want {MATRIX_FORMAT!r})")
    try:
        runs = tuple(DeviceRun.from_json(run) for run in _array(document["runs"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise MatrixFormatError(f"{source}: malformed run entry ({type(exc).__name__}: {exc})") from None
    return Matrix(
        runs=runs,
        generated=str(document.get("generated", "")),
        sources=(source,),
        interrupted=bool(document.get("interrupted", False)),  # reports before this field: not interrupted
    )


MAX_REPORT_BYTES = 256 << 20
"""The most a report file (``--merge``, ``--durations``) may hold."""


def load_matrix(path: Path) -> Matrix:
    """Read one ``--json`` report; MatrixFormatError names the file and the problem."""
    try:  # a regular file of at most MAX_REPORT_BYTES, never a FIFO or device (accelcore.support.files)
        document = json.loads(read_file(path, "report file", MAX_REPORT_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise MatrixFormatError(f"no such file: {path}") from None
    except BackendError as exc:
        raise MatrixFormatError(exc.message) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MatrixFormatError(f"{path}: not JSON ({exc})") from None
    except RecursionError:
        raise MatrixFormatError(f"{path}: nested too deeply to be a conformance report") from None
    return matrix_from_json(document, str(path))


def _fold_shards(runs: Sequence[DeviceRun]) -> DeviceRun:
    """One device's shard runs as the run an unsharded run would have been: cells in the full case order,
    the accounting case (run in every shard) failed when any shard's copy failed."""
    first = runs[0]
    order = list(first.case_order)
    cells: dict[str, CaseCell] = {}
    for run in runs:
        for cell in run.cases:
            if cell.id not in cells:
                cells[cell.id] = cell
                continue
            old = cells[cell.id]
            if old.status == "passed" and cell.status != "passed":
                cells[cell.id] = cell
            elif cell.status not in ("passed", "skipped") and old.status not in ("passed", "skipped"):
                cells[cell.id] = replace(old, reason="; ".join(r for r in (old.reason, cell.reason) if r))
    ordered = [cells.pop(c) for c in order if c in cells]
    workers = [cells.pop(WORKER_CASE)] if WORKER_CASE in cells else []
    ordered += list(cells.values()) + workers
    outcomes = [run.outcome for run in runs if run.outcome != "completed"]
    shards = sorted({run.shard for run in runs})
    hosts = sorted({run.host for run in runs})
    detail = "; ".join(f"shard {run.shard}: {run.detail}" for run in runs if run.detail)
    return DeviceRun(
        device=first.device,
        host=hosts[0] if len(hosts) == 1 else ",".join(hosts),
        outcome=outcomes[0] if outcomes else "completed",
        cases=tuple(ordered),
        detail=(f"merged from shards {', '.join(shards)}" + (f"; {detail}" if detail else "")),
        exit_code=next((run.exit_code for run in runs if run.exit_code), runs[0].exit_code),
        duration_s=sum(run.duration_s for run in runs),
    )


def merge(matrices: Sequence[Matrix]) -> Matrix:
    """All runs of all matrices as one matrix (labels made unique across hosts). Runs of one device from
    ``--shard I/N`` reports (same N, any host) fold into one run whose cells equal an unsharded run's."""
    runs: list[DeviceRun] = []
    groups: dict[tuple[str, bytes, str], list[DeviceRun]] = {}
    for matrix in matrices:
        for run in matrix.runs:
            if run.shard:
                key = (run.device.device_id, run.device.uuid, run.shard.partition("/")[2])
                if key not in groups:
                    groups[key] = []
                    runs.append(run)
                groups[key].append(run)
            else:
                runs.append(run)
    runs = [
        _fold_shards(groups[(r.device.device_id, r.device.uuid, r.shard.partition("/")[2])]) if r.shard else r
        for r in runs
    ]
    sources = tuple(source for matrix in matrices for source in matrix.sources)
    interrupted = any(matrix.interrupted for matrix in matrices)
    return Matrix(runs=with_unique_labels(runs), generated=now_iso(), sources=sources, interrupted=interrupted)
