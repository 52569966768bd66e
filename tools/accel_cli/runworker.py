"""``accel run`` in a worker process: ``python -m accel_cli.runworker`` and the parent that watches it.

Why: a kernel that crashes the driver takes its process with it, and a kernel a CPU driver cannot
preempt keeps its process busy (and, at exit, blocked) until it ends. So ``accel run`` runs the
kernel in a child (started like the conformance workers: :func:`accelcore.support.child.python_module_command`,
``-P``, its own process group) and the parent only waits, kills and reports.

The child calls the same run code as ``--in-process`` (:func:`accel_cli.execute.run_once`); nothing
of the run is restated here. It reads a pickled request (device id and uuid, the loaded artifact,
the bound slots, the run options) written by the parent into a private temporary folder, streams
JSON-line progress to ``--events`` (``{"event": "submit"}`` just before the submission,
``{"event": "executed"}`` once the event is terminal) and writes a pickled outcome to ``--result``
(a :class:`~accel_cli.execute.RunResult`, or the :class:`~accel_cli.execute.RunFailure`'s fields, or
a setup error). It then ends with ``os._exit`` so that no driver destructor runs behind a kernel
still on the device.

Limits the parent enforces (then it kills the worker's process group with SIGKILL):

- before the submission (discovery, compile, transfers in): ``--wait`` + :data:`GRACE_S`;
- from the submission to a terminal event: ``min(--timeout, --wait)`` + :data:`GRACE_S`;
- after it (transfers out): ``--wait`` + :data:`GRACE_S` again.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from accelcore.support.child import child_environment, die_with_parent, python_module_command

from . import signals
from .execute import RunFailure, RunResult
from .failures import InterruptedWork

__all__ = ["GRACE_S", "WorkerFailure", "WorkerSetupError", "run_in_worker"]

GRACE_S = 2.0
"""Seconds the parent allows past a limit before it kills the worker.

After a deadline the worker's engine notices at its next poll (its back-off is at most 5 ms), ends
the event, resets and writes the outcome, all in milliseconds; the grace covers a worker that is
descheduled on a loaded machine and the write of its result, and it is short enough that a runaway
kernel costs the caller about ``--timeout`` + 2 s, not the whole ``--wait``."""

_POLL_S = 0.02
_STDERR_TAIL = 1500


class WorkerFailure(Exception):
    """The worker ended without an outcome: killed at a limit (``limit`` names it) or by a signal,
    or it exited without writing a result. ``phase``: how far it had got."""

    def __init__(self, message: str, *, phase: str, limit: str | None = None, signal_name: str | None = None) -> None:
        super().__init__(message)
        self.phase = phase
        self.limit = limit
        self.signal_name = signal_name


@dataclass
class _Request:
    device_id: str
    uuid_hex: str
    artifact: Any
    slots: Any
    timeout: Any
    domain: Any
    resident_bytes: int
    wait_limit_s: float | None


def _describe(code: int) -> tuple[str, str | None]:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}", name
    return f"exited with status {code}", None


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-_STDERR_TAIL:].decode("utf-8", "replace").strip()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


def _phases(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    phases = []
    for line in lines:
        try:
            phases.append(str(json.loads(line).get("event", "")))
        except (json.JSONDecodeError, AttributeError):
            continue
    return phases


def _seconds(value: float | None) -> str:
    return "inf" if value is None else f"{value:g} s"


def run_in_worker(
    device_id: str,
    uuid_hex: str,
    artifact: Any,
    slots: Sequence[Any],
    *,
    timeout: Any,
    domain: Any,
    resident_bytes: int,
    wait_limit_s: float | None,
    on_phase: Callable[[str], None] | None = None,
) -> RunResult:
    """Run once in a worker: its RunResult, or its RunFailure re-raised here, or WorkerFailure.

    ``on_phase`` hears each phase the worker enters (``execute`` at the submission, ``transfer-out`` once the
    kernel ended), as the parent sees it in the worker's events."""
    timeout_s = None if timeout.ns is None else timeout.ns / 1e9
    kernel_limit = min((v for v in (timeout_s, wait_limit_s) if v is not None), default=None)
    with tempfile.TemporaryDirectory(prefix="accel-run-") as tmp:
        scratch = Path(tmp)
        request, events, result, stderr = (scratch / name for name in ("request", "events", "result", "stderr"))
        request.write_bytes(
            pickle.dumps(
                _Request(device_id, uuid_hex, artifact, list(slots), timeout, domain, resident_bytes, wait_limit_s)
            )
        )
        events.touch()
        command = python_module_command(
            "accel_cli.runworker", "--request", str(request), "--events", str(events), "--result", str(result)
        )
        with open(stderr, "wb") as err:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                env=child_environment(),
                start_new_session=True,
            )
        try:
            phase, since, killed = "setup", time.monotonic(), None
            while process.poll() is None:
                time.sleep(_POLL_S)
                seen = _phases(events)
                now_phase = "transfer-out" if "executed" in seen else "execute" if "submit" in seen else "setup"
                if now_phase != phase:
                    phase, since = now_phase, time.monotonic()
                    if on_phase is not None:
                        on_phase(phase)
                limit = kernel_limit if phase == "execute" else wait_limit_s
                if limit is not None and time.monotonic() - since > limit + GRACE_S and process.poll() is None:
                    _kill_group(process)
                    killed = "--timeout" if phase == "execute" and limit == timeout_s else "--wait"
        except KeyboardInterrupt:
            _kill_group(process)  # before anything else: a second Ctrl-C must not leave it running
            raise InterruptedWork(
                f"interrupted ({signals.words()}) during the {phase} phase of the run on {device_id}: the run worker "
                "and its process group were killed (SIGKILL); no --out file was written"
            ) from None
        finally:
            if process.poll() is None:  # the parent is leaving (an exception): no orphan
                _kill_group(process)
        code = process.returncode
        outcome: dict[str, Any] | None = None
        if result.exists():
            try:
                outcome = pickle.loads(result.read_bytes())
            except (pickle.UnpicklingError, EOFError, OSError):
                outcome = None
        tail = _tail(stderr)
    if outcome is not None and killed is None:
        return _unpack(outcome)
    note = f"\nworker stderr (tail):\n{tail}" if tail else ""
    if killed == "--timeout":
        raise WorkerFailure(
            f"the kernel ran past its deadline: still running {_seconds(timeout_s)} (--timeout) + {GRACE_S:g} s "
            f"grace after the submission, so the worker and its process group were killed (SIGKILL){note}",
            phase=phase,
            limit="--timeout",
        )
    if killed == "--wait":
        raise WorkerFailure(
            f"the worker was still in its {phase} phase {_seconds(wait_limit_s)} (--wait) + {GRACE_S:g} s grace "
            f"later, so it and its process group were killed (SIGKILL){note}",
            phase=phase,
            limit="--wait",
        )
    how, name = _describe(code)
    what = " (a driver crash)" if name is not None else " without a result"
    raise WorkerFailure(f"the run worker {how} during {phase}{what}{note}", phase=phase, signal_name=name)


def _unpack(outcome: dict[str, Any]) -> RunResult:
    if "result" in outcome:
        result: RunResult = outcome["result"]
        return result
    if "failure" in outcome:
        fields = outcome["failure"]
        failure = RunFailure(fields["phase"], fields["message"], fields["error"], indeterminate=fields["indeterminate"])
        failure.needs_discard = fields["needs_discard"]
        raise failure
    raise WorkerSetupError(str(outcome.get("setup_error", "the worker could not start the run")))


class WorkerSetupError(RuntimeError):
    """The worker could not find or open the device (the message says why)."""


# ------------------------------------------------------------------------------------- the child


def _emit(stream: IO[str], event: str) -> None:
    stream.write(json.dumps({"event": event}) + "\n")
    stream.flush()


def _child(request: _Request, events: IO[str]) -> tuple[dict[str, Any], Any]:
    from .execute import run_once
    from .inventory import discover

    provider_name, _, _ = request.device_id.partition(":")
    try:
        inventory = discover([provider_name])
        entry = inventory.select_one(request.device_id)
        if entry.uuid.hex() != request.uuid_hex:
            raise RuntimeError(
                f"{request.device_id} is now {entry.name} (uuid {entry.uuid.hex()}), not uuid "
                f"{request.uuid_hex}: the device list changed"
            )
        provider = inventory.family_of(entry).open(entry)
    except Exception as exc:
        return {"setup_error": f"{type(exc).__name__}: {exc}"}, None
    try:
        result = run_once(
            provider,
            request.artifact,
            request.slots,
            timeout=request.timeout,
            domain=request.domain,
            resident_bytes=request.resident_bytes,
            wait_limit_s=request.wait_limit_s,
            on_phase=lambda phase: _emit(events, phase),
        )
    except RunFailure as exc:
        fields = {
            "phase": exc.phase,
            "message": exc.message,
            "error": exc.error,
            "indeterminate": exc.indeterminate,
            "needs_discard": exc.needs_discard,
        }
        # A kernel may still be on the device: leave the provider alone (os._exit follows).
        return {"failure": fields}, (None if exc.needs_discard else provider)
    return {"result": result}, provider


def main(argv: Sequence[str] | None = None) -> int:
    from .environment import apply_defaults

    die_with_parent()  # a parent killed (-9) or gone takes its worker with it
    apply_defaults()
    parser = argparse.ArgumentParser(prog="python -m accel_cli.runworker", description=__doc__.splitlines()[0])
    parser.add_argument("--request", required=True, type=Path)
    parser.add_argument("--events", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    args = parser.parse_args(argv)
    request: _Request = pickle.loads(args.request.read_bytes())
    provider = None
    with open(args.events, "a", encoding="utf-8") as events:
        try:
            outcome, provider = _child(request, events)
        except Exception as exc:  # a bug: report it rather than leave the parent guessing
            traceback.print_exc(file=sys.stderr)
            outcome = {"setup_error": f"the run worker failed: {type(exc).__name__}: {exc}"}
        partial = args.result.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(outcome))
        partial.replace(args.result)
        _emit(events, "done")
    if provider is not None:
        from .commands.common import close_provider

        try:
            close_provider(provider)
        except Exception:
            traceback.print_exc(file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
