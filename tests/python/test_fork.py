"""A device opened before ``os.fork()`` refuses in the forked child instead of hanging.

Its native objects (a Vulkan device, an OpenCL queue and its driver threads) do not survive a fork: every
call on the Device, its Kernel, DeviceArray or Run in the child is ``BackendError(INVALID_ARGUMENT)`` "this
device was opened in process P; a forked child must open its own", and ``close()`` in the child touches
nothing native. The fork runs in a separate Python process (never in pytest's), and the child ends with a
status the test checks, within a timeout.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import provider_device_params

apply_defaults()
ENTRIES, IDS = provider_device_params()
FORK_LIMIT_S = 60.0

KERNELS = {
    "opencl": ("twice.cl", "__kernel void twice(__global float* v) { size_t i = get_global_id(0); v[i] *= 2.0f; }"),
    "vulkan": (
        "twice.comp",
        "#version 450\nlayout(local_size_x = 1) in;\nlayout(set = 0, binding = 0) buffer V { float v[]; };\n"
        "void main() { v[gl_GlobalInvocationID.x] *= 2.0; }\n",
    ),
}

SCRIPT = textwrap.dedent(
    """
    import os, sys, signal
    import numpy as np
    import accelcore as ac
    from accelcore.devices.environment import apply_defaults

    apply_defaults()
    device_id, kernel_path = sys.argv[1], sys.argv[2]
    dev = ac.open(device_id)
    twice = dev.kernel(kernel_path)
    resident = dev.array(np.ones(8, np.float32))
    run = twice.submit(resident, global_size=8)
    run.wait(timeout=30)
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)  # an alarm is not inherited: the child's own, so a hang ends it (status -14)
        status = 0
        expected = f"this device was opened in process {os.getppid()}; a forked child must open its own"
        calls = {
            "kernel call": lambda: twice(np.ones(8, np.float32), global_size=8),
            "submit": lambda: twice.submit(resident, global_size=8),
            "array": lambda: dev.array(np.ones(4, np.float32)),
            "numpy": lambda: resident.numpy(),
            "run state": lambda: run.state(timeout=5),
        }
        for what, call in calls.items():
            try:
                call()
                print(f"child: {what} did not refuse", flush=True)
                status = 1
            except ac.BackendError as exc:
                if expected not in str(exc) or exc.kind is not ac.ErrorKind.INVALID_ARGUMENT:
                    print(f"child: {what}: {exc.kind.name} {exc}", flush=True)
                    status = 1
        dev.close()  # touches nothing native
        os._exit(status)
    _, code = os.waitpid(pid, 0)
    # The parent's device is untouched by the child.
    out = twice(resident, global_size=8)
    assert np.array_equal(resident.numpy(), np.full(8, 4, np.float32)), resident.numpy()
    dev.close()
    sys.exit(os.waitstatus_to_exitcode(code) and 3)
    """
)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_a_device_refuses_in_a_forked_child(entry, tmp_path) -> None:
    name, source = KERNELS[entry.provider]
    (tmp_path / name).write_text(source)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, entry.device_id, str(tmp_path / name)],
        capture_output=True,
        text=True,
        timeout=FORK_LIMIT_S,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
