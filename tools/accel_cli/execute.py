"""Run one artifact once on one provider instance through the command engine, and time each phase.

Promise: the run is the Python layer's (:class:`accelcore.api.Device` and
:class:`accelcore.api.Run`: one implementation of "run a kernel on arrays"),
so a :class:`~accelcore.engine.CommandEngine` over the instance makes every
host-side check (IDs, usage vs access, limits, ranges, coverage) before the
provider is called. One context and queue, the program, one buffer per bound
slot; the inputs are written, one submission is admitted and waited for (the
engine sleeps between polls), the slots to save are read back into their
arrays, and the engine's reset releases everything child-before-parent whatever
happened. Failure: :class:`RunFailure` naming the phase (device_info, allocate,
context, load, write, submit, execute, read) and the BackendError; a Failed or
Cancelled event is a RunFailure of phase execute; ``needs_discard`` says the
engine was left needing a discard (a kernel that overran its deadline on a
device that cannot stop it, a DEVICE_LOST, an indeterminate release).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from accelcore.api import Binding, Device, Progress, Run, choose_domain
from accelcore.contract.errors import BackendError, DeviceInfoError, ErrorKind, SubmitFailure, SubmitIndeterminate
from accelcore.contract.flags import MemoryDomain
from accelcore.contract.ports import MemorySource
from accelcore.contract.program import ArtifactRef
from accelcore.contract.submission import EventStatus, Timeout
from accelcore.engine import EngineState, ResourcePolicy

from . import signals
from .artifacts import Artifact
from .bindings import BoundSlot
from .failures import InterruptedWork

__all__ = ["RunFailure", "RunResult", "choose_domain", "run_once"]


class RunFailure(Exception):
    """``phase`` failed with ``error`` (a BackendError) or ``message``.

    ``indeterminate``: the outcome is unknown (a SubmitIndeterminate); whatever ``error``'s kind,
    it is never an ordinary refusal of the caller's input.
    """

    def __init__(
        self, phase: str, message: str, error: BackendError | None = None, *, indeterminate: bool = False
    ) -> None:
        super().__init__(f"{phase}: {message}")
        self.phase = phase
        self.message = message
        self.error = error
        self.indeterminate = indeterminate
        self.needs_discard = False
        """The engine needed a discard when the run failed (set by :func:`run_once`)."""


@dataclass
class RunResult:
    """Timings in seconds per phase and the arrays read back per saved slot."""

    timings: dict[str, float] = field(default_factory=dict)
    outputs: dict[int, npt.NDArray[np.generic]] = field(default_factory=dict)
    domain: MemoryDomain = MemoryDomain.DEVICE
    final_state: str = ""
    quarantined: int = 0
    """Objects the engine could not prove released at the end (the instance is then discarded)."""


def _phase(name: str, call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except BackendError as exc:
        raise RunFailure(name, str(exc), exc) from exc
    except SubmitFailure as exc:
        raise RunFailure(name, str(exc), exc.error) from exc


def run_once(
    provider: Any,
    artifact: Artifact,
    slots: Sequence[BoundSlot],
    *,
    timeout: Timeout,
    domain: MemoryDomain | None = None,
    resident_bytes: int = 64 << 20,
    wait_limit_s: float | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> RunResult:
    """See the module docstring. ``wait_limit_s`` bounds how long the host waits for the event.

    ``on_phase`` (the run worker's progress report) is called with ``"submit"`` just before the
    submission and ``"executed"`` once the event is terminal.
    """
    result = RunResult()
    try:
        device = Device(
            provider,
            resident_bytes=resident_bytes,
            policy=ResourcePolicy(max_resident_bytes=resident_bytes),
            owns_provider=False,
            start=False,
        )
    except DeviceInfoError as exc:
        raise RunFailure("device_info", f"invalid device metadata: {exc}") from exc
    except BackendError as exc:
        raise RunFailure("device_info", str(exc), exc) from exc
    progress = Progress(on_phase=on_phase, raw_submit_errors=True)
    context_s = load_s = 0.0
    try:
        device.domain = result.domain = _phase("allocate", choose_domain, device.engine.info, domain)
        started = time.perf_counter()
        _phase("context", device.start)
        context_s = time.perf_counter() - started
        started = time.perf_counter()
        ref = ArtifactRef(artifact.format, artifact.target, MemorySource(artifact.payload), resident_bytes)
        program = _phase("load", device.load_artifact, ref)
        load_s = time.perf_counter() - started
        # Named as the kernel names them, so a refusal says "argument y", not "argument 2".
        plan = [Binding(s.name or str(s.slot), s.slot, s.access, s.array, readback=s.out is not None) for s in slots]
        try:
            # The package sizes each temporary buffer to what the dispatch may reach (docs/python.md).
            run = Run(device, program, plan, timeout, label="the kernel", progress=progress, package=artifact.package)
        except SubmitIndeterminate as exc:
            raise RunFailure("submit", f"acceptance unknown: {exc.error}", exc.error, indeterminate=True) from exc
        except SubmitFailure as exc:
            raise RunFailure(progress.phase, str(exc), exc.error) from exc
        except BackendError as exc:
            raise RunFailure(progress.phase, str(exc), exc) from exc
        try:
            state = run.state(wait_limit_s)
        except BackendError as exc:
            if exc.kind is ErrorKind.DEADLINE_EXPIRED and progress.phase == "execute":
                raise RunFailure(
                    "execute", f"still pending after {wait_limit_s:g} s (the host stopped waiting)"
                ) from exc
            raise RunFailure(progress.phase, str(exc), exc) from exc
        result.final_state = str(state)
        if state.status is EventStatus.FAILED:
            assert state.error is not None
            raise RunFailure("execute", f"the event ended Failed: {state.error}", state.error)
        if state.status is EventStatus.CANCELLED:
            raise RunFailure("execute", "the event ended Cancelled")
        for s in slots:
            if s.out is not None:
                result.outputs[s.slot] = s.array  # read back in place by the run
    except RunFailure as exc:
        exc.needs_discard = device.engine.state is EngineState.NEEDS_DISCARD
        raise
    except KeyboardInterrupt:  # Ctrl-C in this process (accel run --in-process): say where it came
        raise InterruptedWork(
            f"interrupted ({signals.words()}) during the {progress.phase} phase of the run in this process: the device "
            "was closed (a kernel still running is left to its driver) and no --out file was written"
        ) from None
    finally:
        timings = dict(progress.timings)
        timings["allocate_s"] = context_s + timings.get("allocate_s", 0.0)
        result.timings = {"allocate_s": timings.pop("allocate_s"), "load_s": load_s, **timings}
        device.close()
        result.quarantined = len(device.quarantined)
    return result
