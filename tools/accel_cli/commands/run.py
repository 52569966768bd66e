"""``accel run [DEVICE] ARTIFACT --bind SLOT=FILE.npy[:r|w|rw] ... [--out SLOT=FILE.npy] [--timeout DURATION]``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.table import Table

from accelcore.contract.errors import BackendError, ErrorKind
from accelcore.contract.flags import AccessMode, MemoryDomain

from ..artifacts import ArtifactError, load_artifact
from ..bindings import BindError, BoundSlot, length_warnings, plan_bindings
from ..bindspec import parse_bind, parse_out, resolve_names
from ..duration import parse_duration
from ..environment import DEVICE_ENV
from ..execute import RunFailure, run_once
from ..exitcodes import ExitCode
from ..failures import CliFailure, DeviceFailure, InputRejected, UsageProblem
from ..inventory import discover
from ..npyfile import ArrayFileError, load_array, output_problem, save_array
from ..packing import device_words, pack_options, pack_options_from
from ..progress import RunProgress
from ..render import console, emit_json, error_boundary, hexuuid, json_mode, set_json_mode
from ..runworker import GRACE_S, WorkerFailure, WorkerSetupError, run_in_worker
from ..targets import foreign_binary_problem
from .common import close_provider, require_device

__all__ = ["run"]

_INPUT_KINDS = {ErrorKind.INVALID_ARGUMENT, ErrorKind.UNSUPPORTED, ErrorKind.INCOMPATIBLE}


class KernelFailed(CliFailure):
    """The submission ran and ended Failed or Cancelled (exit 1)."""

    exit_code = int(ExitCode.FAILED)
    kind = "failed"


def _split_positionals(args: Sequence[str]) -> tuple[str, str]:
    import os

    if len(args) == 2:
        return args[0], args[1]
    if len(args) == 1:
        return require_device(os.environ.get(DEVICE_ENV)), args[0]
    raise UsageProblem("give [DEVICE] ARTIFACT (DEVICE defaults to $ACCEL_DEVICE)", argument="ARGS")


def _failure(exc: RunFailure) -> CliFailure:
    kind = exc.error.kind.name if exc.error is not None else None
    text = device_words(str(exc))  # the options to type, not the package's internal names
    if exc.indeterminate:
        # Acceptance unknown: a device failure whatever the error's kind (never "input refused").
        return DeviceFailure(f"{text} (indeterminate: the provider instance was discarded)", error_kind=kind)
    if exc.needs_discard and exc.error is not None and exc.error.kind is ErrorKind.DEADLINE_EXPIRED:
        # The deadline passed and the device could not stop the kernel: a device failure (exit 4).
        return DeviceFailure(f"{text} (--timeout)", argument="--timeout", error_kind=kind)
    if exc.phase == "execute" and (exc.error is None or exc.error.kind is not ErrorKind.DEVICE_LOST):
        return KernelFailed(text, error_kind=kind)
    if exc.error is not None and exc.error.kind is ErrorKind.DEADLINE_EXPIRED:
        return KernelFailed(f"--timeout: {text}", argument="--timeout", error_kind=kind)
    if exc.phase in ("load", "submit") and exc.error is not None and exc.error.kind in _INPUT_KINDS:
        return InputRejected(
            f"the device refused the artifact or bindings: {text}", argument="ARTIFACT", error_kind=kind
        )
    if exc.error is not None and exc.error.kind is ErrorKind.OUT_OF_BOUNDS and not exc.needs_discard:
        # The guard tail after a --bind array changed: the array is shorter than what the kernel writes.
        return InputRejected(text, argument="--bind", error_kind=kind)
    if exc.phase == "allocate" and exc.error is not None and exc.error.kind in _INPUT_KINDS:
        return UsageProblem(text, argument="--bind/--domain", error_kind=kind)
    return DeviceFailure(text, error_kind=kind)


def _slot_names(names: dict[str, int], declared: dict[int, Any]) -> dict[int, str]:
    """The kernel's name for each slot that has one: the name the Python layer uses for the argument (its
    declaration's label) when ``--bind`` takes it, else the first name ``--bind`` takes for the slot."""
    labels: dict[int, str] = {}
    for name, slot in names.items():
        labels.setdefault(slot, name)
    for slot, parameter in declared.items():
        if parameter.name and names.get(parameter.name) == slot:
            labels[slot] = parameter.name
    return labels


def _results_line(slots: Sequence[BoundSlot]) -> str:
    """Where the results went: the --out files, or that nothing was saved and the --out to add."""
    saved = [s for s in slots if s.out is not None]
    unsaved = [s for s in slots if s.out is None and int(s.access) & int(AccessMode.WRITE)]
    parts = []
    if saved:
        parts.append("Saved " + ", ".join(f"{s.label} to {s.out}" for s in saved) + ".")
    if unsaved:
        add = " ".join(f"--out {s.name or s.slot}=FILE.npy" for s in unsaved)
        labels = ", ".join(s.label for s in unsaved)
        parts.append(f"Not saved (no --out): {labels}; add {add} to keep what the kernel wrote.")
    elif not saved:
        parts.append("The kernel writes no bound slot: nothing to save.")
    return " ".join([*parts, "The --bind files are not changed."])


@click.command(context_settings={"show_default": True})
@click.argument("args", nargs=-1, required=True, metavar="[DEVICE] ARTIFACT")
@click.option(
    "--bind",
    "binds",
    multiple=True,
    metavar="SLOT|NAME=FILE.npy[:r|w|rw]",
    help="Bind slot SLOT (or the buffer parameter/descriptor NAME) to a buffer holding FILE's array; "
    "access defaults to what the kernel declares.",
)
@click.option(
    "--out", "outs", multiple=True, metavar="SLOT|NAME=FILE.npy", help="After the run, save slot SLOT to FILE."
)
@click.option(
    "--timeout", default="inf", metavar="DURATION", help="Submission timeout from admission (250ms, 2s, inf)."
)
@click.option(
    "--wait", "wait_limit", default="10m", metavar="DURATION", help="How long the host waits for a pending event."
)
@click.option(
    "--domain",
    type=click.Choice(["auto", "device", "shared", "host"], case_sensitive=False),
    default="auto",
    help="Memory domain of the buffers (auto: device, else shared, else host).",
)
@click.option("--resident-bytes", default=64 << 20, type=click.IntRange(1), help="Ceiling on what the program retains.")
@click.option(
    "--in-process",
    is_flag=True,
    help="Run the kernel in this process instead of a worker process (a driver crash or a kernel the device "
    f"cannot stop then takes this process with it; the worker is killed {GRACE_S:g} s past --timeout).",
)
@click.option(
    "--expect-output",
    "expect_outputs",
    multiple=True,
    metavar="SLOT|NAME=FILE.npy",
    help="Compare slot SLOT's result with FILE (instead of the first device's) when DEVICE matches several.",
)
@click.option(
    "--tolerance",
    default="ulp:0",
    metavar="ulp:N|rel:X|abs:X",
    help="How far a float output may be from the reference (integers are always compared exactly).",
)
@pack_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print timings and outputs as JSON (schema accel-run/1; several devices: accel-run-compare/1).",
)
@error_boundary
def run(
    args: Sequence[str],
    binds: Sequence[str],
    outs: Sequence[str],
    timeout: str,
    wait_limit: str,
    domain: str,
    resident_bytes: int,
    in_process: bool,
    expect_outputs: Sequence[str],
    tolerance: str,
    as_json: bool,
    **packing: Any,
) -> None:
    """Run ARTIFACT once on DEVICE and save the slots named by --out.

    ARTIFACT is a kernel package (.kpkg), a SPIR-V module, a GLSL compute
    shader (.comp, .glsl), OpenCL C source or an OpenCL device binary; raw
    modules are packed on the fly from the
    packing options and what inspection finds (see `accel pack`). Every slot
    the kernel declares needs a --bind. Reports the time spent allocating,
    loading, transferring in, executing and transferring out.

    The kernel runs in a worker process (unless --in-process): a driver crash
    ends only the worker, and a kernel still running --timeout plus a 2 s grace
    after its submission is killed with the worker's process group. --out files
    are written only after a successful run.

    When DEVICE matches several devices (e.g. `opencl`, `*llvmpipe*`), the kernel runs on each, each
    in its own worker, and one table compares every output with the first device's (or with
    --expect-output) within --tolerance; exit 1 when any device disagrees or fails.

    Exit status: 0 ran, 1 the kernel ended Failed/Cancelled or missed --timeout (the device
    ended it), 2 bad option (bad --bind, missing slot, bad selector), 3 a file was refused
    (artifact, .npy), 4 the device failed (a driver crash, naming the signal; a kernel the
    device could not stop at --timeout).
    """
    set_json_mode(as_json)
    device_text, artifact_text = _split_positionals(args)
    try:
        timeout_value = parse_duration(timeout)
    except ValueError as exc:
        raise UsageProblem(str(exc), argument="--timeout") from None
    try:
        wait_value = parse_duration(wait_limit)
    except ValueError as exc:
        raise UsageProblem(str(exc), argument="--wait") from None
    try:
        bind_specs = [parse_bind(text) for text in binds]
        out_specs = [parse_out(text) for text in outs]
    except ValueError as exc:
        raise UsageProblem(str(exc), argument="--bind" if "--bind" in str(exc) else "--out") from None
    for out_spec in out_specs:  # /dev/full, a FIFO, a directory: refused before anything runs
        problem = output_problem(out_spec.path)
        if problem is not None:
            raise UsageProblem(problem, argument="--out")
    try:
        artifact = load_artifact(Path(artifact_text), pack_options_from(packing))
    except ArtifactError as exc:
        raise InputRejected(str(exc), argument="ARTIFACT", error_kind=exc.kind) from None
    from accelcore.kernels.pack import binding_names

    # Every named --bind/--out is resolved (an artifact without names, like a reference program, has none,
    # so a name is refused rather than read as slot 0).
    names = binding_names(artifact.package) if artifact.package is not None else {}
    try:
        bind_specs = resolve_names("--bind", bind_specs, names)
        out_specs = resolve_names("--out", out_specs, names)
    except ValueError as exc:
        raise UsageProblem(str(exc), argument="--bind" if "--bind" in str(exc) else "--out") from None
    from accelcore.api import check_buffer_array, declared_elements

    declared_buffers = declared_elements(artifact.package) if artifact.package is not None else {}
    try:
        slots = plan_bindings(artifact.slots, bind_specs, out_specs, _slot_names(names, declared_buffers))
    except BindError as exc:
        failure = InputRejected if exc.input_file else UsageProblem
        raise failure(str(exc), argument=exc.argument) from None
    if artifact.package is not None:
        for slot_number, declared in declared_buffers.items():
            bound = next((b for b in slots if b.slot == slot_number), None)
            if bound is not None:
                what = f"--bind {declared.name or slot_number} ({bound.path})"
                try:
                    check_buffer_array(what, bound.array.dtype, bound.array.shape, declared)
                except BackendError as exc:
                    raise InputRejected(exc.message, argument="--bind", error_kind="INVALID_ARGUMENT") from None
    for warning in length_warnings(artifact.package, slots):
        console(stderr=True).print(f"warning: --bind: {warning}", markup=False)

    options = _run_options(timeout_value, wait_value, domain, resident_bytes)
    inventory = discover()
    matched = inventory.select_many([device_text])
    if len(matched) > 1:
        _compare_devices(
            matched,
            artifact,
            slots,
            out_specs,
            expect_outputs,
            names,
            tolerance,
            options,
            in_process,
            artifact_text,
        )
        return
    if expect_outputs:
        raise UsageProblem("--expect-output compares several devices; DEVICE names one", argument="--expect-output")
    entry = inventory.select_one(device_text)
    foreign = foreign_binary_problem(artifact, entry, inventory.devices)
    if foreign is not None:  # the provider would refuse it (INCOMPATIBLE); name the device it is for
        raise InputRejected(foreign, argument="ARTIFACT", error_kind="INCOMPATIBLE")
    # A run over a second shows its phase and time on a terminal (stderr), erased when it ends.
    progress = RunProgress(entry.device_id)
    if in_process:
        provider = inventory.family_of(entry).open(entry)
        try:
            with progress:
                result = run_once(
                    provider,
                    artifact,
                    slots,
                    **options,
                    on_phase=lambda event: progress.phase("execute" if event == "submit" else "transfer-out"),
                )
        except RunFailure as exc:
            raise _failure(exc) from None
        finally:
            close_provider(provider)
    else:
        try:
            with progress:
                result = run_in_worker(
                    entry.device_id, entry.uuid.hex(), artifact, slots, **options, on_phase=progress.phase
                )
        except RunFailure as exc:
            raise _failure(exc) from None
        except WorkerSetupError as exc:
            raise DeviceFailure(f"{entry.device_id}: {exc}") from None
        except WorkerFailure as exc:
            kind = "DEADLINE_EXPIRED" if exc.limit == "--timeout" else None
            raise DeviceFailure(str(exc), argument=exc.limit, error_kind=kind) from None
    for slot in slots:
        if slot.out is not None:
            try:  # exactly slot.out, whole or not at all (npyfile)
                save_array(slot.out, result.outputs[slot.slot])
            except OSError as exc:
                reason = f"cannot write {slot.out}: {exc.strerror}" if exc.strerror else str(exc)
                raise UsageProblem(reason, argument="--out") from None
    document = {
        "schema": "accel-run/1",
        "device": {"id": entry.device_id, "name": entry.name, "uuid": hexuuid(entry.uuid)},
        "artifact": {"path": artifact_text, "kind": artifact.kind.value, "summary": artifact.summary},
        "domain": result.domain.name,
        "state": result.final_state,
        "timings_s": result.timings,
        "slots": [
            {
                "slot": s.slot,
                "input": str(s.path),
                "access": s.access.name,
                "bytes": s.nbytes,
                "dtype": str(s.array.dtype),
                "shape": list(s.array.shape),
                "output": None if s.out is None else str(s.out),
            }
            for s in slots
        ],
    }
    if json_mode():
        emit_json(document)
        return
    out = console()
    out.print(f"[bold]{entry.device_id}[/bold] {entry.name}: {artifact.summary} -> {result.final_state}")
    table = Table(show_header=True)
    table.add_column("phase")
    table.add_column("ms", justify="right")
    for name, seconds in result.timings.items():
        table.add_row(name.removesuffix("_s"), f"{seconds * 1e3:.3f}")
    out.print(table)
    for s in slots:
        saved = f" -> {s.out}" if s.out is not None else ""
        out.print(
            f"slot {s.slot} [{s.access.name}] {s.path} ({s.nbytes} bytes {s.array.dtype}{list(s.array.shape)}){saved}",
            markup=False,
        )
    out.print(_results_line(slots), markup=False)


def _run_options(timeout_value: Any, wait_value: Any, domain: str, resident_bytes: int) -> dict[str, Any]:
    """--timeout, --wait, --domain and --resident-bytes as the keywords of ``run_once`` and ``run_in_worker``
    (the driver chooses the domain for ``auto``; no --wait is no host-side limit)."""
    return {
        "timeout": timeout_value,
        "domain": None if domain == "auto" else MemoryDomain[domain.upper()],
        "resident_bytes": resident_bytes,
        "wait_limit_s": None if wait_value.ns is None else wait_value.ns / 1e9,
    }


def _compare_devices(
    entries: Sequence[Any],
    artifact: Any,
    slots: Sequence[Any],
    out_specs: Sequence[Any],
    expect_outputs: Sequence[str],
    names: dict[str, int],
    tolerance_text: str,
    options: dict[str, Any],
    in_process: bool,
    artifact_text: str,
) -> None:
    """Run on each device in its own worker and print one comparison table (accelcore.api.compare)."""
    import dataclasses

    from accelcore.api.compare import Comparison, ComparisonRow, Tolerance, compare_arrays

    if out_specs:
        raise UsageProblem("--out saves one device's result; with several devices use --json", argument="--out")
    if in_process:
        raise UsageProblem(
            "several devices always run each in its own worker; drop --in-process", argument="--in-process"
        )
    try:
        tolerance = Tolerance.parse(tolerance_text)
    except BackendError as exc:
        raise UsageProblem(exc.message, argument="--tolerance") from None
    try:
        expected_specs = resolve_names("--expect-output", [parse_out(t) for t in expect_outputs], names)
    except ValueError as exc:
        raise UsageProblem(str(exc).replace("--out", "--expect-output"), argument="--expect-output") from None
    written = [s for s in slots if int(s.access) & int(AccessMode.WRITE)]
    if not written:
        raise UsageProblem("the kernel writes no bound slot; nothing to compare", argument="--bind")
    expected: dict[int, np.ndarray] = {}
    for spec in expected_specs:
        if spec.slot not in {s.slot for s in written}:
            raise UsageProblem(f"slot {spec.slot} is not a slot the kernel writes", argument="--expect-output")
        try:  # a regular .npy file, its header checked before numpy allocates (npyfile)
            expected[spec.slot] = load_array(spec.path, "--expect-output")
        except ArrayFileError as exc:
            raise InputRejected(str(exc), argument="--expect-output") from None
    probe = [dataclasses.replace(s, out=s.path) if s in written else s for s in slots]
    outputs: dict[str, dict[int, np.ndarray] | str] = {}
    for entry in entries:
        try:
            with RunProgress(entry.device_id) as progress:
                result = run_in_worker(
                    entry.device_id, entry.uuid.hex(), artifact, probe, **options, on_phase=progress.phase
                )
            outputs[entry.device_id] = dict(result.outputs)
        except (RunFailure, WorkerSetupError, WorkerFailure) as exc:
            outputs[entry.device_id] = device_words(str(exc))
    reference_name = "expected" if expected else entries[0].device_id
    reference = expected if expected else outputs[entries[0].device_id]
    comparison = Comparison(reference_name, tolerance)
    for entry in entries:
        got = outputs[entry.device_id]
        if isinstance(reference, str):
            comparison.rows.append(ComparisonRow("*", entry.device_id, error=f"reference failed: {reference}"))
            continue
        if isinstance(got, str):
            comparison.rows.append(ComparisonRow("*", entry.device_id, error=got))
            continue
        for slot, ref in sorted(reference.items()):
            label = next((n for n, v in sorted(names.items()) if v == slot), str(slot))
            try:
                max_abs, max_ulp, mismatches, ok = compare_arrays(np.asarray(ref), got[slot], tolerance)
            except BackendError as exc:
                comparison.rows.append(ComparisonRow(label, entry.device_id, error=exc.message))
                continue
            comparison.rows.append(
                ComparisonRow(label, entry.device_id, max_abs, max_ulp, mismatches, int(got[slot].size), ok)
            )
    document = {
        "schema": "accel-run-compare/1",
        "artifact": {"path": artifact_text, "kind": artifact.kind.value, "summary": artifact.summary},
        "devices": [{"id": e.device_id, "name": e.name, "uuid": hexuuid(e.uuid)} for e in entries],
        **comparison.as_dict(),
    }
    if json_mode():
        emit_json(document)
    else:
        out = console()
        out.print(f"{artifact.summary}: {len(entries)} devices against {reference_name}, tolerance {tolerance}")
        table = Table("output", "device", "max abs error", "max ulp / mismatches", "verdict")
        for row in comparison.rows:
            if row.error is not None:
                table.add_row(row.output, row.device, "-", "-", f"FAILED: {row.error}")
                continue
            measure = f"{row.max_ulp_error} ulp" if row.max_ulp_error is not None else f"{row.mismatches} differ"
            table.add_row(row.output, row.device, f"{row.max_abs_error:.6g}", measure, "ok" if row.ok else "DIFFERS")
        out.print(table)
    if not comparison.ok:
        raise KernelFailed(
            f"{sum(not r.ok for r in comparison.rows)} of {len(comparison.rows)} comparisons failed or differ "
            f"beyond {tolerance} (reference: {reference_name})"
        )
