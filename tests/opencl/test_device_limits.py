"""Device limits checked before any driver runs the work: a kernel whose own ``__local`` variables pass
``CL_DEVICE_LOCAL_MEM_SIZE`` (PoCL aborted the process, rusticl ran 32 MiB of it on a 32 KiB device) and one
whose private memory per work-item passes the project's bound (rusticl segfaulted on a 16 MiB private array)
are refused with RESOURCE_LIMIT at load. Each case runs in a child process, so a regression is a failed
test, not a dead test run."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from accel_opencl.kernel_arguments import DEFAULT_PRIVATE_LIMIT, PRIVATE_LIMIT_ENV

BIG_LOCAL = """__kernel void k(__global float *out) {
    __local float big[4 * 1024 * 1024];
    big[get_local_id(0)] = 1.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = big[0];
}
"""
BIG_PRIVATE = """__kernel void k(__global float *out) {
    float big[2 * 1024 * 1024];
    for (int i = 0; i < 2 * 1024 * 1024; i += 4096) big[i] = (float)i;
    out[get_global_id(0)] = big[(get_global_id(0) * 4096) % (2 * 1024 * 1024)];
}
"""
CALL = """
import sys, numpy as np, accelcore as ac
with ac.open(sys.argv[1]) as dev:
    out = np.zeros(64, np.float32)
    try:
        dev.kernel(sys.argv[2])(out, global_size=64)
    except ac.BackendError as exc:
        print("REFUSED", exc)
    else:
        print("RAN", out[:3].tolist())
"""


def _call(entry: Any, path: Any, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CALL, entry.device_id, str(path)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, **(env or {})},
    )


def test_local_variables_past_the_device_local_memory_are_refused(entry: Any, tmp_path: Any) -> None:
    (tmp_path / "big_local.cl").write_text(BIG_LOCAL)
    done = _call(entry, tmp_path / "big_local.cl")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REFUSED RESOURCE_LIMIT" in done.stdout and "CL_DEVICE_LOCAL_MEM_SIZE" in done.stdout, done.stdout


def test_private_memory_past_the_bound_is_refused_and_the_bound_can_be_raised(entry: Any, tmp_path: Any) -> None:
    if entry.native.get("tag") == "pocl":
        pytest.skip("PoCL 3.1 reports CL_KERNEL_PRIVATE_MEM_SIZE 1024 for any kernel: its bound cannot be checked")
    (tmp_path / "big_private.cl").write_text(BIG_PRIVATE)
    done = _call(entry, tmp_path / "big_private.cl")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REFUSED RESOURCE_LIMIT" in done.stdout and PRIVATE_LIMIT_ENV in done.stdout, done.stdout
    assert str(DEFAULT_PRIVATE_LIMIT) in done.stdout
    bad = _call(entry, tmp_path / "big_private.cl", {PRIVATE_LIMIT_ENV: "lots"})
    assert "REFUSED INVALID_ARGUMENT" in bad.stdout and PRIVATE_LIMIT_ENV in bad.stdout, bad.stdout
