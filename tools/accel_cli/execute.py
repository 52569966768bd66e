"""Run one artifact once on one provider instance through the command engine, and time each phase.

Promise: a :class:`~accelcore.engine.CommandEngine` over the instance makes
every host-side check (IDs, usage vs access, limits, ranges) before the
provider is called. One context, one buffer per bound slot, the program and
one queue are created; the inputs are written, one submission is admitted
and waited for (the engine sleeps between polls), the slots to save are read
back, and ``engine.reset()`` releases everything child-before-parent whatever
happened. Only ``write_buffer``/``read_buffer`` move bytes. Failure:
:class:`RunFailure` naming the phase (device_info, allocate, load, write,
submit, execute, read) and the BackendError; a Failed or Cancelled event is a
RunFailure of phase execute; ``needs_discard`` says the engine was left needing a
discard (a kernel that overran its deadline on a device that cannot stop it, a
DEVICE_LOST, an indeterminate release).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from accelcore.buffers import BufferDesc
from accelcore.device import DeviceInfo
from accelcore.engine import CommandEngine, EngineState, ResourcePolicy
from accelcore.errors import BackendError, DeviceInfoError, ErrorKind, SubmitFailure, SubmitIndeterminate
from accelcore.flags import BufferUsage, MemoryDomain
from accelcore.ports import MemorySource
from accelcore.program import ArtifactRef
from accelcore.submission import EventStatus, Timeout

from .artifacts import Artifact
from .bindings import BoundSlot

__all__ = ["RunFailure", "RunResult", "choose_domain", "run_once"]

_DOMAIN_ORDER = (MemoryDomain.DEVICE, MemoryDomain.SHARED, MemoryDomain.HOST)
BUFFER_ALIGNMENT = 64


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


def choose_domain(info: DeviceInfo, requested: MemoryDomain | None) -> MemoryDomain:
    """``requested`` if the device offers it (else UNSUPPORTED); otherwise the first of Device, Shared, Host."""
    if requested is not None:
        if not info.capabilities & requested.capability:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"the device does not offer the {requested.name} memory domain "
                f"(offers: {', '.join(d.name for d in MemoryDomain if info.capabilities & d.capability)})",
            )
        return requested
    for domain in _DOMAIN_ORDER:
        if info.capabilities & domain.capability:
            return domain
    raise BackendError(ErrorKind.UNSUPPORTED, "the device advertises no memory domain")


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
        engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(
            provider, ResourcePolicy(max_resident_bytes=resident_bytes)
        )
    except DeviceInfoError as exc:
        raise RunFailure("device_info", f"invalid device metadata: {exc}") from exc
    except BackendError as exc:
        raise RunFailure("device_info", str(exc), exc) from exc
    info = engine.info
    result.domain = chosen = _phase("allocate", choose_domain, info, domain)
    try:
        started = time.perf_counter()
        context = _phase("context", engine.create_context)
        buffers: dict[int, int] = {}
        for slot in slots:
            usage = BufferUsage.for_access(slot.access) | BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
            desc = _phase("allocate", BufferDesc, slot.nbytes, BUFFER_ALIGNMENT, chosen, usage)
            buffers[slot.slot] = _phase("allocate", engine.allocate_buffer, context, desc)
        result.timings["allocate_s"] = time.perf_counter() - started

        started = time.perf_counter()
        ref = ArtifactRef(artifact.format, artifact.target, MemorySource(artifact.payload), resident_bytes)
        program = _phase("load", engine.load_program, context, ref)
        queue = _phase("queue", engine.create_queue, context)
        result.timings["load_s"] = time.perf_counter() - started

        started = time.perf_counter()
        for slot in slots:
            source = MemorySource(slot.array.reshape(-1).view(np.uint8).data)
            _phase("write", engine.write_buffer, buffers[slot.slot], 0, source)
        result.timings["transfer_in_s"] = time.perf_counter() - started

        bindings = [(s.slot, buffers[s.slot], None, s.access) for s in slots]
        started = time.perf_counter()
        if on_phase is not None:
            on_phase("submit")
        try:
            event = engine.submit(queue, program, bindings, timeout)
        except SubmitIndeterminate as exc:
            raise RunFailure("submit", f"acceptance unknown: {exc.error}", exc.error, indeterminate=True) from exc
        except SubmitFailure as exc:
            raise RunFailure("submit", str(exc), exc.error) from exc
        except BackendError as exc:
            raise RunFailure("submit", str(exc), exc) from exc
        try:
            state = engine.wait(event, wait_limit_s)
        except BackendError as exc:
            if exc.kind is ErrorKind.DEADLINE_EXPIRED:
                raise RunFailure(
                    "execute", f"still pending after {wait_limit_s:g} s (the host stopped waiting)"
                ) from exc
            raise RunFailure("execute", str(exc), exc) from exc
        result.timings["execute_s"] = time.perf_counter() - started
        if on_phase is not None:
            on_phase("executed")
        result.final_state = str(state)
        if state.status is EventStatus.FAILED:
            assert state.error is not None
            raise RunFailure("execute", f"the event ended Failed: {state.error}", state.error)
        if state.status is EventStatus.CANCELLED:
            raise RunFailure("execute", "the event ended Cancelled")

        started = time.perf_counter()
        for slot in slots:
            if slot.out is None:
                continue
            data = bytearray(slot.nbytes)
            _phase("read", engine.read_buffer_into, buffers[slot.slot], 0, data)
            result.outputs[slot.slot] = np.frombuffer(bytes(data), dtype=slot.array.dtype).reshape(slot.array.shape)
        result.timings["transfer_out_s"] = time.perf_counter() - started
    except RunFailure as exc:
        exc.needs_discard = engine.state is EngineState.NEEDS_DISCARD
        raise
    finally:
        result.quarantined = len(engine.reset())
    return result
