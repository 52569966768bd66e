"""Prove, on the real device, that a negatively completed gate cancels a kernel.

The provider gates every submission on a user event and cancels a gated one
by setting that event's status negative. That only works if the driver then
(a) never runs the kernel and (b) moves the kernel's event to an error
status - and keeps the queue usable afterwards. :func:`gate_cancellation_proof`
checks all three with a tiny kernel, once per device per process (cached), and
EVENT_CANCELLATION is advertised only where it holds.

Finding (2026-11-30): rusticl moves the gated kernel to an error status only
after a ``clFlush`` of its queue (without one it stays QUEUED indefinitely,
which is what PLATFORM.md saw); the provider flushes after every gate
change, and the proof does the same.

Finding (2026-12-01): Intel's oneAPI CPU runtime 2026.2 never runs the gated
kernel either, but reports its event ``CL_COMPLETE`` (0), not an error status
(profiling start 0; ``clWaitForEvents`` on it answers
``CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST``; a command queued behind it
runs normally). The provider records a cancelled submission's state itself and
never reads the driver's status of that event, so what (b) needs is only a
terminal status: an error status, or ``CL_COMPLETE`` with the buffer proven
untouched.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["CancellationProof", "gate_cancellation_proof"]

_SOURCE = "__kernel void mark(__global uint *out) { out[get_global_id(0)] = 42u; }"
_ITEMS = 4
_UNTOUCHED = 7
_BOUND_S = 2.0

_cache: dict[tuple[str, ...], CancellationProof] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class CancellationProof:
    """Whether gate cancellation holds on a device, and what was observed."""

    holds: bool
    detail: str
    seconds: float


def gate_cancellation_proof(key: tuple[str, ...], device: Any) -> CancellationProof:
    """The (cached) proof for ``device``; ``key`` identifies it within the process."""
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        proof = _prove(device)
        _cache[key] = proof
        return proof


def _prove(device: Any) -> CancellationProof:
    import numpy as np
    import pyopencl as cl
    from pyopencl import _cl

    start = time.perf_counter()

    def result(holds: bool, detail: str) -> CancellationProof:
        return CancellationProof(holds, detail, time.perf_counter() - start)

    try:
        context = cl.Context([device])
        queue = cl.CommandQueue(context, device)
        program = _cl._Program(context, _SOURCE)
        program._build(options=b"", devices=[device])
        kernel = _cl.Kernel(program, "mark")
        host = np.full(_ITEMS, _UNTOUCHED, dtype=np.uint32)
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, host.nbytes)
        cl.enqueue_copy(queue, buffer, host, is_blocking=True)
        kernel.set_arg(0, buffer)
        gate = cl.UserEvent(context)
        gated = cl.enqueue_nd_range_kernel(queue, kernel, (_ITEMS,), None, wait_for=[gate])
        queue.flush()
        gate.set_status(-1)
        queue.flush()
        deadline = time.perf_counter() + _BOUND_S
        status = int(gated.command_execution_status)
        while status > 0 and time.perf_counter() < deadline:
            time.sleep(0.001)
            status = int(gated.command_execution_status)
        if status > 0:
            return result(False, f"gated kernel status {status} (not terminal) {_BOUND_S}s after its gate failed")
        cl.enqueue_copy(queue, host, buffer, is_blocking=True)
        if not (host == _UNTOUCHED).all():
            return result(False, f"the kernel ran although its gate failed (status {status}, buffer {host.tolist()})")
        ended = "an error status" if status < 0 else "CL_COMPLETE without running (the driver reports no error)"
        after = cl.enqueue_nd_range_kernel(queue, kernel, (_ITEMS,), None)
        after.wait()
        cl.enqueue_copy(queue, host, buffer, is_blocking=True)
        if not (host == 42).all():
            return result(False, f"the queue did not run the next kernel correctly (buffer {host.tolist()})")
        buffer.release()
        return result(True, f"gated kernel ended with status {status}, {ended}, did not run; the queue stayed usable")
    except cl.Error as exc:
        return result(False, f"proof kernel failed: {exc}")
