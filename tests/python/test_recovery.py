"""Recovery after a runaway kernel: ``Device.reset()``, a close that does not wait for the kernel, and Ctrl-C
that reaches a waiting caller.

A kernel past its ``timeout=`` that the device cannot stop ends the call with DEADLINE_EXPIRED and leaves the
engine needing a discard (every later call is DEVICE_LOST "call reset()"); ``dev.reset()`` starts again.
Closing or re-opening a device whose kernel still runs returns within seconds, and so does the process's exit;
``KeyboardInterrupt`` reaches a caller blocked in a call without ``timeout=`` (OpenCL's ``clWaitForEvents``
does not return to Python: the engine waits for it on a helper thread) or with a long one (Vulkan waits in
slices).

The deterministic cases run on the reference provider (``control.run_away()``: held kernels that ignore their
deadline) and on a provider whose blocking wait keeps SIGINT from its thread, as a driver call does. The
real-device cases run a long kernel (many work-items x a loop under 65,536 iterations, which llvmpipe does not
cut short) in a child process on every OpenCL and Vulkan device (PoCL and lavapipe here at least), so a
regression that hangs fails the case instead of pytest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accelcore import AccessMode, ArtifactRef, BackendError, ErrorKind, EventState, MemorySource
from accelcore.api import Binding, Device, Run
from accelcore.devices.environment import apply_defaults
from accelcore.engine import EngineState
from accelcore.testing import REFERENCE_FORMAT, REFERENCE_TARGET, FaultAccelerator, ReferenceAccelerator, encode_program
from accelcore.testing.pytest_support import provider_device_params

apply_defaults()

CHILD_LIMIT_S = 150.0
"""Wall-clock bound of one child (start-up, driver init and the checks); a hang fails the case."""


OPENCL, OPENCL_IDS = provider_device_params("opencl")
VULKAN, VULKAN_IDS = provider_device_params("vulkan")
DEVICES, DEVICE_IDS = OPENCL + VULKAN, OPENCL_IDS + VULKAN_IDS


# ----------------------------------------------------------------------------- the reference provider


def _add_program(device: Device) -> int:
    ref = ArtifactRef(REFERENCE_FORMAT, REFERENCE_TARGET, MemorySource(encode_program("add_u32")), 4096)
    return device.load_artifact(ref)


def _plan(out: np.ndarray) -> list[Binding]:
    a = np.arange(16, dtype=np.uint32)
    b = np.full(16, 100, dtype=np.uint32)
    return [
        Binding("a", 0, AccessMode.READ, a),
        Binding("b", 1, AccessMode.READ, b),
        Binding("out", 2, AccessMode.WRITE, out),
    ]


def test_reset_after_a_runaway_opens_a_fresh_instance_and_the_device_works_again() -> None:
    first = ReferenceAccelerator()
    opened: list[ReferenceAccelerator] = []

    def reopen() -> ReferenceAccelerator:
        opened.append(ReferenceAccelerator())
        return opened[-1]

    dev = Device(first, reopen=reopen)
    program = _add_program(dev)
    kept = dev.array(np.zeros(4, np.uint32))
    first.control.run_away()
    out = np.zeros(16, np.uint32)
    run = Run(dev, program, _plan(out), 0.05)
    first.control.stop_holding()
    time.sleep(0.1)
    with pytest.raises(BackendError) as overran:
        run.wait()
    assert overran.value.kind is ErrorKind.DEADLINE_EXPIRED
    assert dev.engine.state is EngineState.NEEDS_DISCARD
    with pytest.raises(BackendError) as refused:
        Run(dev, program, _plan(out), None)
    assert refused.value.kind is ErrorKind.DEVICE_LOST and "reset()" in str(refused.value)

    started = time.monotonic()
    quarantined = dev.reset()
    assert time.monotonic() - started < 5
    assert opened, "a discarded engine gets a fresh provider instance"
    assert dev.engine.provider is opened[0] and dev.engine.state is EngineState.READY
    assert quarantined == [] and dev.quarantined == []
    assert {q.kind.label for q in dev.engine.discarded} >= {"event", "queue", "program", "context"}
    assert first.control.held() == 1, "the old kernel is left to run; nothing waited for it"
    with pytest.raises(BackendError) as stale:  # made before the reset: gone with it
        kept.numpy()
    assert stale.value.kind is ErrorKind.STALE_OBJECT
    out = np.zeros(16, np.uint32)
    assert Run(dev, _add_program(dev), _plan(out), None).state() == EventState.COMPLETE
    assert out.tolist() == [i + 100 for i in range(16)]
    dev.close()


def test_reset_of_a_ready_device_keeps_its_instance() -> None:
    reference = ReferenceAccelerator()
    dev = Device(reference, reopen=lambda: pytest.fail("a ready device needs no fresh instance"))
    program = _add_program(dev)
    out = np.zeros(16, np.uint32)
    Run(dev, program, _plan(out), None).state()
    assert dev.reset() == []
    assert dev.engine.provider is reference and dev.generation == 1
    with pytest.raises(BackendError) as stale:
        Run(dev, program, _plan(out), None)
    assert stale.value.kind is ErrorKind.STALE_OBJECT
    assert Run(dev, _add_program(dev), _plan(out), None).state() == EventState.COMPLETE
    dev.close()
    with pytest.raises(BackendError):
        dev.reset()  # closed: nothing to start again


class _SignalDeafWait(FaultAccelerator):
    """The reference provider plus a blocking ``wait_event`` that, like ``clWaitForEvents``, does not let
    the thread it runs on see SIGINT until it returns: it blocks the signal on its thread and waits for the
    held event (released by the test after ``hold_s``)."""

    def wait_event(self, event: Any, timeout_ns: int | None) -> bool:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            ends = time.monotonic() + (10.0 if timeout_ns is None else timeout_ns / 1e9)
            while not self.inner.poll_event(event).is_terminal and time.monotonic() < ends:
                time.sleep(0.005)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return True


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread")
def test_ctrl_c_reaches_a_caller_blocked_in_a_driver_wait_that_ignores_signals() -> None:
    reference = ReferenceAccelerator()
    dev = Device(_SignalDeafWait(reference))
    program = _add_program(dev)
    out = np.zeros(16, np.uint32)
    reference.control.hold()
    run = Run(dev, program, _plan(out), None)
    release = threading.Timer(3.0, reference.control.release_all)
    interrupt = threading.Timer(0.3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    release.start()
    interrupt.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            run.wait()
        assert time.monotonic() - started < 1.3, "KeyboardInterrupt waited for the driver's wait to end"
        assert not run.done(), "the interrupted run is still pending, not failed"
    finally:
        interrupt.join()
        release.join()
    assert run.wait() is out and out.tolist() == [i + 100 for i in range(16)]  # a later wait takes it up
    dev.close()


# ----------------------------------------------------------------------------- real devices, in a child

RUNAWAY = Path(__file__).parent / "data"
LONG_CL = (RUNAWAY / "runaway.cl").read_text()
LONG_GLSL = (RUNAWAY / "runaway.comp").read_text()
ITERATIONS = 60_000
"""Under 65,536: llvmpipe (rusticl, lavapipe) silently ends longer loops (the dated long-loop driver bug)."""

CHILD = textwrap.dedent(
    r"""
    import json, sys, time
    import numpy as np
    import accelcore as ac

    device, source, case, items = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    seen = {}
    def note(key, value):
        seen[key] = value
        print(json.dumps({key: value}), flush=True)

    dev = ac.open(device)
    kernel = dev.kernel(source.encode())
    out = np.zeros(items, np.uint32)
    if case == "reset":
        started = time.monotonic()
        try:
            kernel(out, n=ITERATIONS, global_size=items, timeout=0.5)
            note("first", "ran")
        except ac.BackendError as exc:
            note("first", exc.kind.name)
        note("first_s", time.monotonic() - started)
        try:
            kernel(np.zeros(64, np.uint32), n=1, global_size=64)
            note("second", "ran")
        except ac.BackendError as exc:
            note("second", exc.kind.name + ": " + str(exc))
        started = time.monotonic()
        dev.reset()
        note("reset_s", time.monotonic() - started)
        small = np.zeros(64, np.uint32)
        kernel(small, n=3, global_size=64)
        note("small", small[:4].tolist())
    else:  # "interrupt" / "interrupt-timeout": wait for the kernel until SIGINT comes
        timeout = 600.0 if case == "interrupt-timeout" else None
        try:
            note("submitted", True)
            kernel(out, n=ITERATIONS, global_size=items, timeout=timeout)
            note("ran", True)
        except KeyboardInterrupt:
            note("interrupted", time.monotonic())
    started = time.monotonic()
    dev.close()
    note("close_s", time.monotonic() - started)
    started = time.monotonic()
    dev = ac.open(device)
    note("reopen_s", time.monotonic() - started)
    dev.close()
    note("exiting", time.monotonic())
    """
).replace("ITERATIONS", str(ITERATIONS))


def _source(entry: Any) -> str:
    return LONG_CL if entry.provider == "opencl" else LONG_GLSL


def _expected_small() -> list[int]:
    x = np.arange(4, dtype=np.uint64)
    for _ in range(3):
        x = (x * 1664525 + 1013904223) % (1 << 32)
    return [int(v) for v in x]


def _child(entry: Any, case: str, items: int, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-P", "-c", CHILD, entry.device_id, _source(entry), case, str(items)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "ACCELCORE_CACHE_DIR": str(tmp_path / "cache")},
        start_new_session=True,
    )


def _finish(process: subprocess.Popen[str]) -> tuple[dict[str, Any], float]:
    """Every line the child reported, merged, and when it exited (monotonic); a hang kills it and fails."""
    try:
        out, err = process.communicate(timeout=CHILD_LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"the child still ran after {CHILD_LIMIT_S:g} s (a hang)\n{out}\n{err[-2000:]}")
    ended = time.monotonic()
    assert process.returncode == 0, f"the child ended with {process.returncode}\n{out}\n{err[-2000:]}"
    seen: dict[str, Any] = {}
    for line in out.splitlines():
        seen.update(json.loads(line))
    return seen, ended


@pytest.mark.slow
@pytest.mark.parametrize("entry", DEVICES, ids=DEVICE_IDS)
def test_reset_after_a_runaway_kernel_and_close_within_seconds(entry: Any, tmp_path: Path) -> None:
    """A kernel of ~10-30 s stopped by ``timeout=0.5``; the next call says to reset; ``dev.reset()``,
    ``close()`` and a re-open each return within seconds, and a small kernel afterwards is right (on PoCL it
    runs once the old kernel has ended: the CPU's threads are its)."""
    seen, _ = _finish(_child(entry, "reset", 1 << 17, tmp_path))
    assert seen["first"] == "DEADLINE_EXPIRED", seen
    assert seen["first_s"] < 10, seen
    assert seen["second"].startswith("DEVICE_LOST") and "reset()" in seen["second"], seen
    assert seen["reset_s"] < 10, seen
    assert seen["small"] == _expected_small(), seen
    assert seen["close_s"] < 10 and seen["reopen_s"] < 10, seen


@pytest.mark.slow
@pytest.mark.parametrize("case", ["interrupt", "interrupt-timeout"])
@pytest.mark.parametrize("entry", DEVICES, ids=DEVICE_IDS)
def test_ctrl_c_reaches_a_call_waiting_for_a_long_kernel(entry: Any, case: str, tmp_path: Path) -> None:
    """SIGINT one second into a kernel of a minute or more: ``KeyboardInterrupt`` within a second, then
    ``close()``, a re-open and the process's exit within seconds, long before the kernel would end."""
    process = _child(entry, case, 1 << 20, tmp_path)
    assert process.stdout is not None
    first = process.stdout.readline()
    assert json.loads(first) == {"submitted": True}, first + (process.stderr.read() if process.stderr else "")
    time.sleep(1.0)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    seen, ended = _finish(process)
    assert "ran" not in seen, f"the kernel ended before the signal: make it longer ({seen})"
    assert "interrupted" in seen, seen
    assert seen["interrupted"] - sent < 1.0, f"KeyboardInterrupt came {seen['interrupted'] - sent:.2f} s after SIGINT"
    assert seen["close_s"] < 10 and seen["reopen_s"] < 10, seen
    assert ended - seen["exiting"] < 10, f"the process took {ended - seen['exiting']:.1f} s to exit"
