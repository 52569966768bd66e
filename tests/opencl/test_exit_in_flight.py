"""A process that exits with OpenCL work in flight ends with status 0, not SIGABRT.

The failing pattern (reproduced 2026-12-01 on PoCL, the Intel runtime and rusticl, docs/opencl.md
"Process exit with work in flight"): more submissions than the driver window, so the provider arms a
pyopencl completion callback, and the interpreter exits before it fires. The callback thread then
takes the GIL during finalisation and libstdc++ ends the process: "terminate called without an
active exception", status 134. Each case runs a child (never pytest itself) and checks that the
child really armed a callback, so a pass means the pattern ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys, threading
from accelcore import (AccessMode, ArtifactRef, BindingRef, BufferDesc, BufferRange, BufferUsage,
    ContextDesc, MemoryDomain, MemorySource, QueueDesc, TargetIdentity, Timeout)
from accelcore.conformance.corpus import load_package, spin_case
from accelcore.kernels.package import ModuleKind, format_for
from accel_opencl import gating, provider_family

index, count, items, iterations, how, wait_s = sys.argv[1:7]
gating.EXIT_WAIT_S = float(wait_s)
accel = provider_family.open(provider_family.discover()[int(index)])
context = accel.create_context(ContextDesc())
queue = accel.create_queue(context, QueueDesc())
raw = load_package("spin", ModuleKind.OPENCL_SOURCE)
ref = ArtifactRef(format_for(ModuleKind.OPENCL_SOURCE), TargetIdentity.any(), MemorySource(raw), 64 << 20)
program = accel.load_program(context, ref)
case = spin_case(int(items), int(iterations))
usage = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
bindings = []
for slot, role, access in ((0, BufferUsage.PROGRAM_INPUT, AccessMode.READ),
                           (1, BufferUsage.PROGRAM_OUTPUT, AccessMode.WRITE)):
    data = case.initial[slot].tobytes()
    buffer = accel.allocate_buffer(context, BufferDesc(len(data), 16, MemoryDomain.HOST, usage | role)).buffer
    accel.write_buffer(buffer, 0, MemorySource(data))
    bindings.append(BindingRef(slot, buffer, BufferRange(0, len(data)), access))
events = [accel.submit(queue, program, bindings, Timeout.INFINITE) for _ in range(int(count))]
print("armed", queue.gates.callbacks_armed, flush=True)
if how == "thread":  # sys.exit in a thread ends only that thread; the main thread then exits
    worker = threading.Thread(target=sys.exit, args=(0,))
    worker.start()
    worker.join()
"""


def run_child(
    entry: Any, *, count: int = 48, items: int = 64, iterations: int = 200_000, how: str = "main", wait_s: float = 10.0
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", CHILD, str(entry.index), str(count), str(items), str(iterations), how, str(wait_s)]
    # The timeout is a hang guard (the exit wait is bounded), not a speed check.
    return subprocess.run(argv, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=180)


def check_clean_exit(done: subprocess.CompletedProcess[str]) -> None:
    assert "terminate called" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, f"exit status {done.returncode}: {done.stderr[-2000:]}"
    armed = [line for line in done.stdout.splitlines() if line.startswith("armed ")]
    assert armed and int(armed[0].split()[1]) >= 1, f"the child armed no callback: {done.stdout!r}"


def test_exit_with_a_callback_armed_ends_with_status_0(entry: Any) -> None:
    # Without the exit hook this aborts (134) in 10 of 10 runs on PoCL and rusticl, 7 of 10 on Intel.
    check_clean_exit(run_child(entry))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["main", "thread"])
def test_exit_with_work_in_flight_repeatedly(entry: Any, how: str) -> None:
    for _ in range(20):
        check_clean_exit(run_child(entry, how=how))


INTEL_PENDING_CALLBACK_AT_EXIT = (
    "2026-12-01: the Intel CPU runtime aborts at exit ('libc++abi: Pure virtual function called!', "
    "status 134, 16-21 s after exit began) when a CL_COMPLETE callback is still registered on a long "
    "kernel that has not ended (3 of 3 runs; raw pyopencl without this provider does the same)"
)


@pytest.mark.slow
def test_the_exit_wait_is_bounded_when_the_kernel_outlasts_it(entry: Any, request: pytest.FixtureRequest) -> None:
    # 16,384 items x 2^24 steps per kernel: the watched kernel (half a window in) is still running
    # when a 0.5 s exit wait ends; the process still exits (status 0) and says what it left.
    if entry.native.get("tag") == "intel":
        request.applymarker(pytest.mark.xfail(reason=INTEL_PENDING_CALLBACK_AT_EXIT, strict=True))
    done = run_child(entry, count=40, items=16384, iterations=1 << 24, wait_s=0.5)
    check_clean_exit(done)
    assert "completion callback(s) still armed after 0.5 s" in done.stderr, done.stderr[-2000:]
