"""Device limits checked before any driver runs the work: a ``__local`` scratch the kernel indexes by
``get_local_id`` given fewer bytes than the work-group needs (Intel's runtime and rusticl crashed the
process); a kernel whose own ``__local`` variables pass
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


REDUCE = """__kernel void reduce(__global const float *in, __global float *out, __local float *scratch) {
    int lid = get_local_id(0);
    scratch[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[get_group_id(0)] = scratch[0];
}
"""
SCRATCH_CALL = """
import sys, numpy as np, accelcore as ac
with ac.open(sys.argv[1]) as dev:
    reduce = dev.kernel(sys.argv[2], local_size=64)
    x, out = np.ones(256, np.float32), np.zeros(4, np.float32)
    for size in (4, 255, 256):
        try:
            reduce(x, out, ac.local_memory(size), global_size=256)
        except ac.BackendError as exc:
            print("REFUSED", exc)
        else:
            print("RAN", out.tolist())
"""


def test_a_local_scratch_indexed_by_the_local_id_needs_an_element_per_work_item(entry: Any, tmp_path: Any) -> None:
    (tmp_path / "reduce.cl").write_text(REDUCE)
    done = subprocess.run(
        [sys.executable, "-c", SCRATCH_CALL, entry.device_id, str(tmp_path / "reduce.cl")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    four, short, enough = done.stdout.splitlines()
    assert four.startswith("REFUSED INVALID_ARGUMENT") and "indexed by get_local_id" in four, four
    assert "needs at least 256 bytes" in four and "given 4 bytes" in four, four
    assert short.startswith("REFUSED INVALID_ARGUMENT") and "given 255 bytes" in short, short
    assert enough == "RAN [64.0, 64.0, 64.0, 64.0]", enough


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


def test_a_size_t_value_packed_for_spir64_is_refused_on_a_32_bit_device() -> None:
    """No 32-bit device is here: the check is run with the width such a device reports."""
    from accel_opencl.kernel_arguments import check_address_width

    from accelcore import BackendError, ErrorKind
    from accelcore.kernels.opencl_signature import opencl_kernels
    from accelcore.kernels.pack import pack_module

    source = "__kernel void k(__global float *x, size_t n) { if (get_global_id(0) < n) x[get_global_id(0)] = 1.0f; }"
    (kernel,) = opencl_kernels(source, address_bits=32)
    assert str(kernel.parameter("n").value_type) == "u32"
    package = pack_module(source.encode(), arguments={"n": 4}, global_size=4)  # SPIR64: size_t is u64
    check_address_width(package, 64)
    with pytest.raises(BackendError, match=r"argument 1 \(size_t n\) is u32 \(4 bytes\) on this 32-bit device") as info:
        check_address_width(package, 32)
    assert info.value.kind is ErrorKind.INCOMPATIBLE


def test_the_host_reading_is_checked_against_the_driver_argument_info() -> None:
    from accel_opencl.kernel_arguments import GLOBAL, PRIVATE, ArgumentInfo, check_reflection

    from accelcore import BackendError, ErrorKind
    from accelcore.kernels.pack import pack_module

    source = "__kernel void k(__global REAL *x, int n) { if (get_global_id(0) < n) x[get_global_id(0)] = 1; }"
    package = pack_module(source.encode(), build_options="-DREAL=float", arguments={"n": 4}, global_size=4)
    check_reflection(package, [ArgumentInfo(GLOBAL, "float*"), ArgumentInfo(PRIVATE, "int")])
    with pytest.raises(
        BackendError, match=r"the host read f32 \(float\), the driver builds a __global pointer"
    ) as info:
        check_reflection(package, [ArgumentInfo(GLOBAL, "double*"), ArgumentInfo(PRIVATE, "int")])
    assert info.value.kind is ErrorKind.INCOMPATIBLE
    with pytest.raises(BackendError, match=r"the host read it as a value, the driver builds a __global pointer"):
        check_reflection(package, [ArgumentInfo(GLOBAL, "float*"), ArgumentInfo(GLOBAL, "int*")])
