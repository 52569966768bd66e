"""Run one artifact once on one provider instance, and time each phase.

Promise: creates one context, one buffer per bound slot, the program and one
queue; writes the inputs, submits once, polls (never blocking inside a poll,
sleeping between polls) until the event is terminal, reads back the slots to
save, and releases everything child-before-parent whatever happened. Only
``write_buffer``/``read_buffer`` move bytes. Failure: :class:`RunFailure`
naming the phase (allocate, load, write, submit, execute, read) and the
BackendError; a Failed or Cancelled event is a RunFailure of phase execute.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from accelcore.buffers import BufferDesc, BufferRange
from accelcore.device import ContextDesc, DeviceInfo, QueueDesc
from accelcore.errors import BackendError, ErrorKind, ReleaseFailure, SubmitFailure, SubmitIndeterminate
from accelcore.flags import AccessMode, BufferUsage, MemoryDomain
from accelcore.ports import MemorySink, MemorySource
from accelcore.program import ArtifactRef
from accelcore.submission import BindingRef, EventStatus, Timeout

from .artifacts import Artifact
from .bindings import BoundSlot

__all__ = ["RunFailure", "RunResult", "choose_domain", "run_once"]

_PROGRAM_USAGE = {
    AccessMode.READ: BufferUsage.PROGRAM_INPUT,
    AccessMode.WRITE: BufferUsage.PROGRAM_OUTPUT,
    AccessMode.READ_WRITE: BufferUsage.MUTABLE_STATE,
}
_DOMAIN_ORDER = (MemoryDomain.DEVICE, MemoryDomain.SHARED, MemoryDomain.HOST)
BUFFER_ALIGNMENT = 64


class RunFailure(Exception):
    """``phase`` failed with ``error`` (a BackendError) or ``message``."""

    def __init__(self, phase: str, message: str, error: BackendError | None = None) -> None:
        super().__init__(f"{phase}: {message}")
        self.phase = phase
        self.error = error


@dataclass
class RunResult:
    """Timings in seconds per phase and the arrays read back per saved slot."""

    timings: dict[str, float] = field(default_factory=dict)
    outputs: dict[int, npt.NDArray[np.generic]] = field(default_factory=dict)
    domain: MemoryDomain = MemoryDomain.DEVICE
    final_state: str = ""


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
) -> RunResult:
    """See the module docstring. ``wait_limit_s`` bounds the host's wait when ``timeout`` is infinite."""
    result = RunResult()
    info: DeviceInfo = _phase("device_info", provider.device_info)
    result.domain = chosen = _phase("allocate", choose_domain, info, domain)
    created: list[tuple[str, Any]] = []
    try:
        started = time.perf_counter()
        context = _phase("context", provider.create_context, ContextDesc())
        created.append(("context", context))
        buffers: dict[int, Any] = {}
        for slot in slots:
            usage = _PROGRAM_USAGE[slot.access] | BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
            desc = BufferDesc(slot.nbytes, BUFFER_ALIGNMENT, chosen, usage)
            _phase("allocate", info.validate_buffer_desc, desc)
            allocated = _phase("allocate", provider.allocate_buffer, context, desc)
            created.append(("buffer", allocated.buffer))
            _phase("allocate", info.validate_buffer_info, desc, allocated.info)
            buffers[slot.slot] = allocated.buffer
        result.timings["allocate_s"] = time.perf_counter() - started

        started = time.perf_counter()
        ref = ArtifactRef(artifact.format, artifact.target, MemorySource(artifact.payload), resident_bytes)
        program = _phase("load", provider.load_program, context, ref)
        created.append(("program", program))
        queue = _phase("queue", provider.create_queue, context, QueueDesc())
        created.append(("queue", queue))
        result.timings["load_s"] = time.perf_counter() - started

        started = time.perf_counter()
        for slot in slots:
            _phase(
                "write",
                provider.write_buffer,
                buffers[slot.slot],
                0,
                MemorySource(slot.array.view(np.uint8).reshape(-1)),
            )
        result.timings["transfer_in_s"] = time.perf_counter() - started

        bindings = [BindingRef(s.slot, buffers[s.slot], BufferRange(0, s.nbytes), s.access) for s in slots]
        started = time.perf_counter()
        try:
            event = provider.submit(queue, program, bindings, timeout)
        except SubmitIndeterminate as exc:
            created.append(("event", exc.event))
            raise RunFailure("submit", f"acceptance unknown: {exc.error}", exc.error) from exc
        except SubmitFailure as exc:
            raise RunFailure("submit", str(exc), exc.error) from exc
        except BackendError as exc:
            raise RunFailure("submit", str(exc), exc) from exc
        created.append(("event", event))
        state = _wait(provider, event, wait_limit_s)
        result.timings["execute_s"] = time.perf_counter() - started
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
            _phase("read", provider.read_buffer, buffers[slot.slot], 0, MemorySink(data))
            result.outputs[slot.slot] = np.frombuffer(bytes(data), dtype=slot.array.dtype).reshape(slot.array.shape)
        result.timings["transfer_out_s"] = time.perf_counter() - started
    finally:
        _release(provider, created)
    return result


def _wait(provider: Any, event: Any, limit_s: float | None) -> Any:
    deadline = None if limit_s is None else time.monotonic() + limit_s
    delay = 0.0001
    while True:
        state = _phase("execute", provider.poll_event, event)
        if state.is_terminal:
            return state
        if deadline is not None and time.monotonic() > deadline:
            raise RunFailure("execute", f"still pending after {limit_s:g} s (the host stopped waiting)")
        time.sleep(delay)
        delay = min(delay * 2, 0.01)


def _release(provider: Any, created: list[tuple[str, Any]]) -> None:
    calls = {
        "event": provider.destroy_event,
        "queue": provider.destroy_queue,
        "program": provider.unload_program,
        "buffer": provider.free_buffer,
        "context": provider.destroy_context,
    }
    for kind in ("event", "queue", "program", "buffer", "context"):
        for entry_kind, handle in reversed(created):
            if entry_kind != kind:
                continue
            if kind == "event":
                try:
                    _wait(provider, handle, 30.0)
                except RunFailure:
                    return  # a pending event keeps its resources alive: leave the instance to be discarded
            try:
                calls[kind](handle)
            except ReleaseFailure:
                return  # nothing more can be proven; the instance is discarded by the caller
