"""Arrays shorter than the dispatch (coverage unknown): a kernel never reaches memory past them.

A host array's temporary buffer is sized to what the dispatch may reach (work-items launched times the
element size, :mod:`accelcore.kernels.dispatch_extent`), the bytes past the array holding the guard pattern,
then the guard tail: a store past the array is ``OUT_OF_BOUNDS`` naming it, a load past it reads the
pattern (the same output every run). A device array shorter than the work-items the call asks for
is refused (INVALID_ARGUMENT naming it) unless ``allow_short_device_arrays=True``. Every case runs on
every real OpenCL and Vulkan device (``ACCEL_DEVICES`` narrows them).

The cases that reached other memory before (the SAXPY overrun aborted the process with a heap
corruption; the short read returned other memory) run in a child process, so a regression fails the
case instead of ending the test session. Vulkan: lavapipe bounds-checks storage-buffer accesses
against the descriptor's range (the array's bytes): stores past it are dropped and loads read zero,
so there the overrun may also complete with the array's own elements (as in test_redzone.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind
from accelcore.api import guard_pattern
from accelcore.devices.environment import apply_defaults
from accelcore.devices.inventory import discover
from accelcore.engine import ResourcePolicy
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

"""``if (i < n) y[i] = a * x[i] + y[i]``: coverage unknown (a conditional), so nothing refuses a short array."""

# out[i] = src[i] for i < n (coverage unknown); uint, so the copied pattern bytes are exact.
COPY_CL = b"""
__kernel void copy(__global const uint* src, __global uint* out, const uint n)
{
    uint i = get_global_id(0);
    if (i < n) out[i] = src[i];
}
"""
COPY_GLSL = b"""#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform Params { uint n; } p;
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) buffer Out { uint dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) dst[i] = src[i];
}
"""
# The same copy without the check: coverage inferred per work-item (the engine's refusal).
COPY_UNGUARDED_CL = b"""
__kernel void copy(__global const uint* src, __global uint* out)
{
    out[get_global_id(0)] = src[get_global_id(0)];
}
"""
COPY_UNGUARDED_GLSL = b"""#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) buffer Out { uint dst[]; };
void main() {
    dst[gl_GlobalInvocationID.x] = src[gl_GlobalInvocationID.x];
}
"""

N, GLOBAL = 1000, 5000
SHORT, LONG = 16, 4096  # a 64-byte input read by 4,096 work-items: 16 KiB, past a 4 KiB guard tail


DEVICES, DEVICE_IDS = provider_device_params()


@pytest.fixture
def dev(request: pytest.FixtureRequest) -> Iterator[ac.Device]:
    with ac.open(request.param.device_id) as device:
        yield device


def _opencl(dev: ac.Device) -> bool:
    return dev.entry is not None and dev.entry.provider == "opencl"


CHILD = r"""
import json, sys
import numpy as np
import accelcore as ac
from accelcore.conformance.corpus import corpus_root
from accelcore.devices.environment import apply_defaults

apply_defaults()
device_id, case = sys.argv[1], sys.argv[2]
out = {}
with ac.open(device_id) as dev:
    opencl = dev.entry.provider == "opencl"
    if case == "saxpy":
        kernel = dev.kernel(corpus_root() / "src" / ("opencl/saxpy_args.cl" if opencl else "glsl/saxpy_pc.comp"))
        count = (np.int32 if opencl else np.uint32)(int(sys.argv[3]))
        x = np.arange(1000, dtype=np.float32)
        y = np.ones(1000, dtype=np.float32)
        try:
            kernel(a=np.float32(2), x=x, y=y, n=count, global_size=int(sys.argv[4]), timeout=60)
            out["returned"] = True
        except ac.BackendError as exc:
            out["kind"], out["message"] = exc.kind.name, str(exc)
        out["y_untouched"] = bool(np.array_equal(y, np.ones(1000, dtype=np.float32)))
        out["y_exact"] = bool(np.array_equal(y, 2 * x + 1))
        y = np.ones(1000, dtype=np.float32)  # the device goes on working: a correct call after it
        kernel(a=np.float32(2), x=x, y=y, n=(np.int32 if opencl else np.uint32)(1000), global_size=1000, timeout=60)
        out["next_exact"] = bool(np.array_equal(y, 2 * x + 1))
    elif case == "read":
        source = sys.argv[3].encode() if opencl else sys.argv[4].encode()
        kernel = dev.kernel(source)
        src = np.arange(1, 17, dtype=np.uint32)
        runs = []
        for _ in range(2):
            dst = np.zeros(4096, dtype=np.uint32)
            if opencl:
                kernel(src=src, out=dst, n=np.uint32(4096), global_size=4096, timeout=60)
            else:
                kernel(src=src, dst=dst, n=np.uint32(4096), global_size=4096, timeout=60)
            runs.append(dst.view(np.uint8).tolist())
        out["runs"] = runs
print("RESULT " + json.dumps(out))
"""


def _child(*args: object) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *map(str, args)], capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, f"the child process ended with {proc.returncode}:\n{proc.stderr[-3000:]}"
    line = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    return result


@pytest.mark.parametrize("dev", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_saxpy_far_past_short_host_arrays_is_out_of_bounds_and_the_process_survives(dev: ac.Device) -> None:
    # 5,000 work-items, n = 5,000, on 1,000-element arrays: 16,000 bytes stored past y (the guard tail
    # alone is 4 KiB). Before, this aborted the process (malloc_consolidate(): invalid chunk size).
    assert dev.entry is not None
    result = _child(dev.entry.device_id, "saxpy", GLOBAL, GLOBAL)
    assert result["next_exact"], result
    if not _opencl(dev) and result.get("returned"):
        assert result["y_exact"], result  # lavapipe dropped the stores past the descriptor's range
        return
    assert result["kind"] == "OUT_OF_BOUNDS", result
    message = result["message"]
    assert "wrote past the end of argument y (4000 bytes given; " in message, message
    assert "argument x" not in message and "not returned" in message, message
    assert result["y_untouched"], result  # nothing was read back


@pytest.mark.parametrize("dev", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_read_past_a_short_input_sees_the_guard_pattern_every_run(dev: ac.Device) -> None:
    # 4,096 work-items read a 16-element input: 16,320 bytes past it, four times the guard tail. The
    # call completes (a load is not reported) and copies the guard pattern, the same in every run and
    # in every process; lavapipe reads zero past the descriptor's range instead.
    assert dev.entry is not None
    results = [_child(dev.entry.device_id, "read", COPY_CL.decode(), COPY_GLSL.decode()) for _ in range(2)]
    runs = [np.array(run, dtype=np.uint8) for result in results for run in result["runs"]]
    assert all(np.array_equal(run, runs[0]) for run in runs[1:])
    first = runs[0]
    assert np.array_equal(first[: 4 * SHORT].view(np.uint32), np.arange(1, 17, dtype=np.uint32))
    past = first[4 * SHORT :]
    if _opencl(dev):
        assert np.array_equal(past, guard_pattern(past.size)), "the kernel read something other than the guard"
    else:
        assert np.array_equal(past, guard_pattern(past.size)) or not past.any()


@pytest.mark.parametrize("dev", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_short_host_array_buffer_is_pooled_with_its_extent(dev: ac.Device, corpus_saxpy: Any) -> None:
    # A kernel that checks its index, on arrays shorter than the dispatch (the usual rounded-up global
    # size): exact results, and the second call reuses the extended buffers from the pool.
    kernel = corpus_saxpy.kernel(dev)
    x = np.arange(N, dtype=np.float32)
    for step in range(2):
        y = np.ones(N, dtype=np.float32)
        kernel(a=np.float32(2), x=x, y=y, n=corpus_saxpy.count(dev, N), global_size=1024, timeout=60)
        assert np.array_equal(y, 2 * x + 1), step
    assert dev.pool.taken == 2 and len(dev.pool) == 2
    assert all(key[0] == 4 * N and key[3] == 96 for key in dev.pool._idle)  # 1,024 elements - 1,000, in bytes
    assert dev.pool.idle_bytes == 2 * 4 * 1024


@pytest.mark.parametrize("entry", DEVICES, ids=DEVICE_IDS)
def test_an_extent_that_cannot_be_allocated_is_refused_naming_the_argument(entry: Any, corpus_saxpy: Any) -> None:
    # Never a shorter, unguarded buffer: the call is refused before anything runs.
    provider = discover().family_of(entry).open(entry)
    with ac.Device(provider, entry, policy=ResourcePolicy(max_allocation_bytes=1 << 20)) as dev:
        kernel = corpus_saxpy.kernel(dev)
        x, y = np.arange(N, dtype=np.float32), np.ones(N, dtype=np.float32)
        with raises_kind(ErrorKind.RESOURCE_LIMIT) as caught:  # 1 Mi work-items: 4 MiB past a 1 MiB cap
            kernel(a=np.float32(2), x=x, y=y, n=corpus_saxpy.count(dev, N), global_size=1 << 20, timeout=60)
        message = str(caught.value)
        assert message.startswith("RESOURCE_LIMIT: argument x (4000 bytes given) is shorter than the dispatch"), message
        assert "4194304 bytes" in message and "cannot be allocated" in message, message
        assert np.array_equal(y, np.ones(N, dtype=np.float32))
        # Past the device's largest buffer: refused before any allocation.
        largest = dev.engine.info.limits.max_buffer_bytes
        with raises_kind(ErrorKind.RESOURCE_LIMIT) as caught:
            dev._take_temporary(4 * N, ac.AccessMode.READ, largest + 1)
        assert f"passes the device's max_buffer_bytes {largest}" in str(caught.value), caught.value
        kernel(
            a=np.float32(2), x=x, y=y, n=corpus_saxpy.count(dev, N), global_size=N, timeout=60
        )  # and the device works
        assert np.array_equal(y, 2 * x + 1)


@pytest.mark.parametrize("dev", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_device_array_shorter_than_the_dispatch_is_refused_unless_allowed(dev: ac.Device, corpus_saxpy: Any) -> None:
    kernel = corpus_saxpy.kernel(dev)
    x = np.arange(N, dtype=np.float32)
    dx, dy = dev.array(x), dev.array(np.ones(N, dtype=np.float32))
    args = {"a": np.float32(2), "x": dx, "y": dy, "n": corpus_saxpy.count(dev, N)}
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as caught:
        kernel(**args, global_size=GLOBAL, timeout=60)
    message = str(caught.value)
    assert "argument x is a device array of 4000 bytes (1000 elements of 4 bytes)" in message, message
    assert f"the dispatch asks for {GLOBAL} work-items" in message and "allow_short_device_arrays" in message
    assert np.array_equal(dy.numpy(), np.ones(N, dtype=np.float32))  # nothing ran
    # The kernel checks its index: allowed, exact.
    kernel(**args, global_size=GLOBAL, timeout=60, allow_short_device_arrays=True)
    assert np.array_equal(dy.numpy(), 2 * x + 1)
    # The same call without the opt-out is refused again (not repeated from the previous call's binding).
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        kernel(**args, global_size=GLOBAL, timeout=60)
    # As many work-items as elements needs no opt-out; on Vulkan the launch rounds 1,000 up to 1,024
    # (whole work-groups of 64), which is the kernel's to check and is not refused.
    dy.write(np.ones(N, dtype=np.float32))
    kernel(**args, global_size=N, timeout=60)
    assert np.array_equal(dy.numpy(), 2 * x + 1)


@pytest.mark.parametrize("dev", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_known_coverage_is_still_the_engines_refusal(dev: ac.Device) -> None:
    kernel = dev.kernel(COPY_UNGUARDED_CL if _opencl(dev) else COPY_UNGUARDED_GLSL)
    src, out = np.arange(SHORT, dtype=np.uint32), np.zeros(LONG, dtype=np.uint32)
    for value in (src, dev.array(src)):
        for allowed in (False, True):
            with raises_kind(ErrorKind.INVALID_ARGUMENT) as caught:
                kernel(value, out, global_size=LONG, timeout=60, allow_short_device_arrays=allowed)
            assert "the dispatch needs 4096 (per-work-item coverage" in str(caught.value), caught.value
