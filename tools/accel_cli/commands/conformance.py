"""``accel conformance``: the suite on many devices (one worker process each), as a matrix."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from accelcore.contract.errors import BackendError
from accelcore.support.files import read_file, special_file_problem, write_regular_file

from ..case_catalogue import offered_case_ids
from ..caseselect import check_case_selection
from ..duration import parse_duration
from ..exitcodes import ExitCode
from ..expectations import (
    DEFAULT_EXPECTATIONS,
    Expectation,
    ExpectationError,
    baseline_toml,
    check_cases,
    check_cases_offered,
    check_providers,
    device_selector_for,
    load_expectations,
    match_expectation,
)
from ..failures import DeviceFailure, InputRejected, Interrupted, UsageProblem
from ..html_report import matrix_to_html
from ..inventory import discover, known_family_names
from ..junit import matrix_to_junit
from ..matrix import VERDICT_TEXT, Matrix, MatrixFormatError, load_matrix, now_iso, with_unique_labels
from ..matrix import merge as merge_matrices
from ..orchestrate import CaseOptions, ConformanceInterrupted, DeviceProgress, run_devices
from ..render import console, error_boundary, set_json_mode
from ..shard import Shard, device_key, parse_shard, plan_durations

__all__ = ["conformance"]

_STYLE = {
    "pass": "green",
    "fail": "bold red",
    "timeout": "bold red",
    "crash": "bold red",
    "flake": "magenta",
    "skip": "dim",
    "xfail": "yellow",
    "xpass": "bold blue",
    "interrupted": "bold red italic",
}


class _Reporter:
    """Per-device progress on stderr: a live bar on a terminal, one line per event otherwise."""

    def __init__(self, expectations: Sequence[Expectation] = ()) -> None:
        self.expectations = expectations
        self.live = sys.stderr.isatty()
        self.console = console(stderr=True)
        self.progress: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        if self.live:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[state]}"),
                TimeElapsedColumn(),
                console=self.console,
            )

    def __enter__(self) -> _Reporter:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def update(self, state: DeviceProgress) -> None:
        device_id = state.entry.device_id
        failing = [r for r in state.done if r.get("status") in ("failed", "timeout", "crash")]
        expected = sum(1 for r in failing if match_expectation(self.expectations, state.entry, str(r.get("id"))))
        failed = len(failing) - expected
        summary = f"{len(state.done)} cases, {failed} failed" + (f", {expected} xfail" if expected else "")
        if self.progress is not None:
            if device_id not in self.tasks:
                self.tasks[device_id] = self.progress.add_task(
                    f"{device_id} {state.entry.name}", total=None, state="starting"
                )
            task = self.tasks[device_id]
            label = state.outcome if state.finished else (state.done[-1]["id"] if state.done else "starting")
            self.progress.update(
                task,
                total=len(state.planned) or None,
                completed=len(state.done),
                state=f"{label} ({failed} failed" + (f", {expected} xfail)" if expected else ")"),
            )
            return
        if not state.finished and not state.done and not state.planned:
            self.console.print(f"{device_id} {state.entry.name}: started")
        elif state.finished:
            self.console.print(f"{device_id} {state.entry.name}: {state.outcome}, {summary}")


def _print_matrix(matrix: Matrix, *, reasons: bool, strict: bool) -> None:
    out = console()
    table = Table(title="Conformance matrix", title_justify="left")
    table.add_column("case", style="bold", no_wrap=True)
    for run in matrix.runs:
        table.add_column(f"{run.label}\n{run.device.name}", justify="center")
    for case_id in matrix.case_ids:
        row = [case_id]
        for run in matrix.runs:
            cell = run.cell(case_id)
            if cell is None:
                row.append("[dim]—[/dim]")
            else:
                measured = f"\n{escape(cell.measured)}" if cell.measured else ""
                row.append(
                    f"[{_STYLE.get(cell.verdict, '')}]{VERDICT_TEXT.get(cell.verdict, cell.verdict)}[/]{measured}"
                )
        table.add_row(*row)
    out.print(table)
    if reasons:
        for run in matrix.runs:
            for cell in run.cases:
                if cell.verdict == "pass" and not cell.reason:
                    continue
                why = cell.reason or "(no reason given)"
                if cell.expectation:
                    why = f"expected ({cell.expectation.get('date')}): {cell.expectation.get('reason')} | {why}"
                out.print(f"[{_STYLE.get(cell.verdict, '')}]{run.label} {cell.id} {cell.verdict}[/]: {why}")
    counts = matrix.counts()
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    failures = matrix.unexpected_failures()
    passes = matrix.unexpected_passes()
    verdict = "OK" if matrix.ok(strict=strict) else "FAILED"
    if matrix.interrupted or matrix.interrupted_cells():
        verdict = "INTERRUPTED (a partial run)"
    out.print(f"{verdict}: {summary or 'no cases'} on {len(matrix.runs)} device(s)")
    for run, cell in failures:
        out.print(f"  unexpected failure: {run.label} {cell.id}: {cell.reason.splitlines()[0] if cell.reason else ''}")
    for run, cell in passes:
        note = "" if strict else " (not an error without --strict)"
        out.print(f"  expected failure passed: {run.label} {cell.id}{note}")
    for run, cell in matrix.flakes():
        known = " (a known flake)" if cell.expectation else ("" if strict else " (counted as a pass without --strict)")
        out.print(f"  flaky: {run.label} {cell.id} failed, then passed on a retry{known}")
    stopped = [run for run in matrix.runs if run.outcome == "stopped" or "--max-fails" in run.detail]
    if stopped:
        out.print(f"  stopped early: {stopped[0].detail}")


def _load_expect(values: Sequence[str], *, merge: bool) -> list[Expectation] | None:
    """The shipped known failures (unless ``--expect none``) plus every ``--expect FILE``.

    Under ``--merge`` without ``--expect``: None (keep the expectations the reports were judged by).
    """
    if merge and not values:
        return None
    files = [Path(v) for v in values if v.lower() != "none"]
    if not any(v.lower() == "none" for v in values):
        files.insert(0, DEFAULT_EXPECTATIONS)
    expectations: list[Expectation] = []
    for path in files:
        try:
            expectations.extend(load_expectations(path))
        except ExpectationError as exc:
            raise InputRejected(str(exc), argument="--expect") from None
    try:
        check_providers(expectations, known_family_names())
        _undecided([e for e in expectations if e.source != str(DEFAULT_EXPECTATIONS)])  # typos, before any run
    except ExpectationError as exc:
        raise InputRejected(str(exc), argument="--expect") from None
    return expectations


def _undecided(expectations: Sequence[Expectation]) -> list[Expectation]:
    """ExpectationError for an entry whose case its provider cannot offer on any device (the built-in families
    list every id they have: :mod:`accel_cli.case_catalogue`); the entries of other families, which only the
    run's reports can judge."""
    return check_cases_offered(expectations, offered_case_ids, known_family_names())


def _judged_after_run(expectations: Sequence[Expectation]) -> list[Expectation]:
    """The entries the run's reported case ids judge: the shipped list's (its own tests hold it to the cases
    offered) and those of a named file that no catalogue could judge before the run."""
    shipped = str(DEFAULT_EXPECTATIONS)
    return [e for e in expectations if e.source == shipped] + _undecided(
        [e for e in expectations if e.source != shipped]
    )


def _check_cases(expectations: Sequence[Expectation] | None, matrix: Matrix) -> None:
    """Exit 3 for an expectation of a named file whose case pattern matches no case its provider's devices
    reported. The shipped file is not checked against the reports: it covers every suite (a merge of
    numerics-only reports holds no ``opencl.long-loop``), and its own tests hold it to the offered cases."""
    shipped = str(DEFAULT_EXPECTATIONS)
    expectations = _undecided([e for e in expectations or () if e.source != shipped])
    if not expectations:
        return
    by_provider: dict[str, set[str]] = {}
    for run in matrix.runs:
        by_provider.setdefault(run.device.provider.lower(), set()).update(c.id for c in run.cases)
    try:
        check_cases(expectations, {p: sorted(ids) for p, ids in by_provider.items()})
    except ExpectationError as exc:
        raise InputRejected(str(exc), argument="--expect") from None


def _write(path: str, text: str, option: str) -> None:
    if path == "-":
        click.echo(text, nl=False)
        return
    try:
        write_regular_file(path, text.encode("utf-8"))
    except OSError as exc:
        raise UsageProblem(f"cannot write {path}: {exc.strerror or exc}", argument=option) from None


MAX_LIST_BYTES = 64 << 20
"""The most a ``--cases`` or ``--skips`` file may hold (a million case ids fit)."""
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")


def _read_lines(path: str, option: str) -> list[tuple[int, str]]:
    """(line number, text) of every non-empty line of ``path`` without its ``#`` comment."""
    try:  # a regular file of at most MAX_LIST_BYTES, never a FIFO or device (accelcore.support.files)
        text = read_file(path, "file", MAX_LIST_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise InputRejected(f"no such file: {path}", argument=option) from None
    except BackendError as exc:
        raise InputRejected(exc.message, argument=option) from None
    except UnicodeDecodeError as exc:
        raise InputRejected(f"{path}: cannot read ({exc})", argument=option) from None
    control = _CONTROL.search(text)  # a NUL, an escape: no case id holds one (and a NUL ends a C string)
    if control is not None:
        number = text.count("\n", 0, control.start()) + 1
        raise InputRejected(
            f"{path} line {number} holds the control character {control.group()!r}; a case id or pattern never "
            "does (is it a text file of one id a line?)",
            argument=option,
        )
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        value = line.split("#", 1)[0].strip()
        if value:
            lines.append((number, value))
    return lines


def _shard(shard_text: str | None, durations_path: str | None) -> Shard | None:
    if shard_text is None:
        if durations_path is not None:
            raise UsageProblem("--durations balances shards; give --shard I/N with it", argument="--durations")
        return None
    try:
        index, total = parse_shard(shard_text)
    except ValueError as exc:
        raise UsageProblem(str(exc), argument="--shard") from None
    assigned: dict[str, dict[str, int]] = {}
    if durations_path is not None:
        try:
            previous = load_matrix(Path(durations_path))
        except MatrixFormatError as exc:
            raise InputRejected(str(exc), argument="--durations") from None
        cells = [
            (device_key(run.device.uuid.hex(), run.device.device_id), cell.id, cell.duration_s)
            for run in previous.runs
            for cell in run.cases
        ]
        assigned = plan_durations(cells, total)
    return Shard(index, total, assigned)


def _csv(matrix: Matrix) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["device", "case", "status", "duration", "reason"])
    for run in matrix.runs:
        for cell in run.cases:
            first = cell.reason.strip().splitlines()[0] if cell.reason.strip() else ""
            writer.writerow([run.label or run.device.device_id, cell.id, cell.verdict, f"{cell.duration_s:.6f}", first])
    return buffer.getvalue()


@click.command()
@click.argument("devices", nargs=-1, metavar="[DEVICE...]")
@click.option(
    "--json",
    "json_path",
    metavar="FILE",
    help="Write the matrix as JSON (schema accel-conformance-matrix/1); - = stdout.",
)
@click.option("--junit", "junit_path", metavar="FILE", help="Write JUnit XML (one testsuite per device); - = stdout.")
@click.option("--html", "html_path", metavar="FILE", help="Write the matrix as a self-contained HTML page.")
@click.option(
    "--expect",
    "expect_values",
    multiple=True,
    metavar="FILE|none",
    help="More known failures (TOML [[expected-failure]] with device, case, reason, date), on top of the ones "
    "shipped with accel (accel_cli/data/expected-failures.toml); 'none' drops the shipped ones. Repeatable.",
)
@click.option("--strict", is_flag=True, help="An expected failure that passes is an error (exit 1).")
@click.option(
    "--merge",
    is_flag=True,
    help="Do not run anything: the arguments are --json reports (from several machines) to combine into one matrix.",
)
@click.option("--reasons", is_flag=True, help="Print the reason of every non-passing cell (and pass notes).")
@click.option("--case", "cases", multiple=True, metavar="ID", help="Run only this case id (or prefix ending in '.').")
@click.option(
    "--suite",
    "suite_name",
    type=click.Choice(["all", "contract", "numerics"]),
    default="all",
    show_default=True,
    help="all: the contract cases and the numerics suite; contract: without the numerics suite; numerics: only "
    "the numerics suite (docs/numerics.md).",
)
@click.option(
    "--quick", is_flag=True, help="The numerics suite's quick subset (10 float32 functions and the non-f32 cases)."
)
@click.option(
    "--device-timeout", default="10m", show_default=True, metavar="DURATION", help="Kill a device's worker after this."
)
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(1, 64), help="Devices run at the same time.")
@click.option(
    "--shard",
    "shard_text",
    metavar="I/N",
    help="Run only shard I of N of the (device, case) cells (stable across machines: a hash of the device uuid "
    "or id and the case id); --merge the N --json reports for the whole matrix.",
)
@click.option(
    "--durations",
    "durations_path",
    metavar="FILE",
    help="A previous --json report: balance --shard by its recorded case durations (longest first).",
)
@click.option(
    "--case-timeout",
    default="inf",
    show_default=True,
    metavar="DURATION",
    help="Kill the worker running one case past this; the cell is TIMEOUT and the next cases run in a new worker.",
)
@click.option(
    "--retries",
    default=1,
    show_default=True,
    type=click.IntRange(0, 10),
    help="Rerun an unexpected failure up to N times, each in a fresh worker; a pass then makes it a flake.",
)
@click.option(
    "--max-fails",
    type=click.IntRange(1),
    metavar="N",
    help="Start no more cases after N unexpected failures (the rest are recorded as skipped, saying so).",
)
@click.option(
    "--cases",
    "cases_file",
    metavar="FILE",
    help="Run only the case ids or prefixes (ending in '.') listed in FILE, one a line; '#' starts a comment.",
)
@click.option(
    "--skip",
    "skip_patterns",
    multiple=True,
    metavar="PATTERN",
    help="Do not run the cases matching PATTERN (an id, a prefix ending in '.', or a glob); they are recorded as "
    "skip with the reason. Repeatable.",
)
@click.option(
    "--skips",
    "skips_file",
    metavar="FILE",
    help="Skip patterns, one a line ('#' comments); each skipped cell's reason is 'skipped by FILE:LINE'.",
)
@click.option(
    "--write-baseline",
    "baseline_path",
    metavar="FILE",
    help="Write the unexpected failures as an expectations file (TOML [[expected-failure]]) that --expect reads.",
)
@click.option("--csv", "csv_path", metavar="FILE", help="Write device,case,status,duration,reason rows; - = stdout.")
@error_boundary
def conformance(
    devices: Sequence[str],
    json_path: str | None,
    junit_path: str | None,
    html_path: str | None,
    expect_values: Sequence[str],
    strict: bool,
    merge: bool,
    reasons: bool,
    cases: Sequence[str],
    suite_name: str,
    quick: bool,
    device_timeout: str,
    jobs: int,
    shard_text: str | None,
    durations_path: str | None,
    case_timeout: str,
    retries: int,
    max_fails: int | None,
    cases_file: str | None,
    skip_patterns: Sequence[str],
    skips_file: str | None,
    baseline_path: str | None,
    csv_path: str | None,
) -> None:
    """Run the conformance suite on DEVICE... (default: every device found) and print the matrix.

    Each device runs in its own worker process, so a driver crash is recorded
    as that device's failure (case "worker") and the run goes on. Rows are
    case ids, columns devices; cells are pass, FAIL, skip, xfail (a known
    failure: the shipped list, or --expect) or XPASS (an expected failure passed).

    With --merge, the arguments are JSON reports written by --json (e.g. on
    several machines) and they are combined into one matrix; --expect then
    re-judges every cell.

    Exit status: 0 no unexpected failure, 1 an unexpected failure (or an XPASS
    with --strict), 2 bad usage or selector (or a --case matching no case), 3 a malformed --expect or report
    file, 4 no device to run on, 130 interrupted (Ctrl-C: the workers are killed, the reports asked for are
    written with the unfinished cells marked interrupted).
    """
    outputs = (("--json", json_path), ("--junit", junit_path), ("--html", html_path), ("--csv", csv_path))
    to_stdout = [o for o, v in outputs if v == "-"]
    if len(to_stdout) > 1:
        raise UsageProblem(
            f"{' and '.join(to_stdout)} both write to stdout (-); send at most one there and the others to files",
            argument=to_stdout[1],
        )
    set_json_mode(json_path == "-")
    for option, target in outputs:  # before the run, not after it: a FIFO would block the write
        problem = special_file_problem(target) if target not in (None, "-") else None
        if problem is not None:
            raise UsageProblem(f"cannot write {target}: {problem}", argument=option)
    expectations = _load_expect(expect_values, merge=merge)
    interrupted: ConformanceInterrupted | None = None
    if merge:
        running = [
            name
            for name, value in (
                ("--shard", shard_text),
                ("--durations", durations_path),
                ("--case-timeout", None if case_timeout == "inf" else case_timeout),
                ("--max-fails", max_fails),
                ("--cases", cases_file),
                ("--skip", skip_patterns or None),
                ("--skips", skips_file),
            )
            if value is not None
        ]
        if running:
            raise UsageProblem(
                f"{', '.join(running)} choose what runs; --merge runs nothing (it combines reports, shards included)",
                argument=running[0],
            )
        if not devices:
            raise UsageProblem("--merge needs at least one report file (written by --json)", argument="--merge")
        try:
            matrices = [load_matrix(Path(p)) for p in devices]
        except MatrixFormatError as exc:
            raise InputRejected(str(exc), argument="--merge") from None
        matrix = merge_matrices(matrices).reclassified(expectations)
        _check_cases(expectations, matrix)
    else:
        try:
            timeout = parse_duration(device_timeout)
        except ValueError as exc:
            raise UsageProblem(str(exc), argument="--device-timeout") from None
        timeout_s = float("inf") if timeout.ns is None else timeout.ns / 1e9
        try:
            per_case = parse_duration(case_timeout)
        except ValueError as exc:
            raise UsageProblem(str(exc), argument="--case-timeout") from None
        shard = _shard(shard_text, durations_path)
        cases = [*cases, *(value for _, value in (_read_lines(cases_file, "--cases") if cases_file else []))]
        cases = list(dict.fromkeys(cases))  # a caselist may repeat ids
        skip = [(p, f"skipped by --skip {p}") for p in skip_patterns]
        if skips_file:
            skip += [(p, f"skipped by {skips_file}:{n}") for n, p in _read_lines(skips_file, "--skips")]
        expected_failures = expectations or []
        options = CaseOptions(
            case_timeout_s=float("inf") if per_case.ns is None else per_case.ns / 1e9,
            retries=retries,
            max_fails=max_fails,
            shard=shard,
            skip=skip,
            expected=lambda entry, case_id: match_expectation(expected_failures, entry, case_id) is not None,
        )
        inventory = discover()
        entries = inventory.select_many(list(devices)) if devices else list(inventory.devices)
        if not entries:
            reasons_text = "; ".join(f"{p.name}: {p.reason}" for p in inventory.providers if not p.available)
            raise DeviceFailure(f"no device found to run on ({reasons_text or 'no provider installed'})")
        states: dict[str, DeviceProgress] = {}

        def on_progress(state: DeviceProgress) -> None:
            states[state.entry.device_id] = state
            reporter.update(state)

        with _Reporter(expectations or ()) as reporter:
            try:
                runs = run_devices(
                    entries,
                    timeout_s=timeout_s,
                    jobs=jobs,
                    select=cases or None,
                    on_progress=on_progress,
                    suite=suite_name,
                    quick=quick,
                    options=options,
                )
            except ConformanceInterrupted as exc:  # Ctrl-C: the workers are dead; report what ran (exit 130)
                runs, interrupted = exc.runs, exc
        if interrupted is None:  # (a partial run may not have listed every device's cases)
            check_case_selection(list(cases), [state.available for state in states.values()])
            known: dict[str, set[str]] = {}
            for state in states.values():
                known.setdefault(state.entry.provider.lower(), set()).update(state.available)
            try:
                check_cases(_judged_after_run(expectations or []), {p: sorted(ids) for p, ids in known.items()})
            except ExpectationError as exc:
                raise InputRejected(str(exc), argument="--expect") from None
        matrix = Matrix(
            runs=with_unique_labels(runs), generated=now_iso(), interrupted=interrupted is not None
        ).reclassified(expectations or [])
    document = matrix.to_json(strict=strict)
    written = [path for path in (json_path, junit_path, html_path, csv_path) if path is not None and path != "-"]
    if json_path is not None:
        _write(json_path, json.dumps(document, indent=2) + "\n", "--json")
    if junit_path is not None:
        _write(junit_path, matrix_to_junit(matrix, strict=strict), "--junit")
    if html_path is not None:
        _write(html_path, matrix_to_html(matrix, strict=strict), "--html")
    if csv_path is not None:
        _write(csv_path, _csv(matrix), "--csv")
    if baseline_path is not None and interrupted is None:  # a partial run's failures are no baseline
        failures = matrix.unexpected_failures()
        rows = [(device_selector_for(run.device), cell.id, cell.reason) for run, cell in failures]
        header = f"accel conformance --write-baseline, {now_iso()}: {len(rows)} unexpected failure(s)"
        text = baseline_toml(list(dict.fromkeys(rows)), dt.date.today().isoformat(), header)
        _write(baseline_path, text, "--write-baseline")
    if not to_stdout:
        _print_matrix(matrix, reasons=reasons, strict=strict)
    if interrupted is not None:
        reports = f"the partial reports: {', '.join(written)}" if written else "no report was asked for"
        skipped = f"; --write-baseline {baseline_path} was not written (a partial run)" if baseline_path else ""
        raise Interrupted(f"{interrupted}; unfinished cells are marked interrupted in {reports}{skipped}")
    if not matrix.ok(strict=strict):
        click.get_current_context().exit(int(ExitCode.FAILED))
