"""A kernel that writes past the end of a host array lands in its temporary buffer's guard tail.

The numpy-first layer binds each host array's own bytes (offset 0) of a temporary buffer that a
guard tail of known bytes follows (``Device.guard_bytes``); after a Complete run every guard is read
back, and a changed one is ``BackendError(OUT_OF_BOUNDS)`` naming the argument, with nothing read
back into the caller's arrays. Every case runs on every real OpenCL and Vulkan device. The kernels
here index ``out[y * w + x]`` (a 2-D coverage the engine cannot tell from the binding), so the too
short arrays reach the device; each overrun stays well inside the guard (at most 64 bytes of a
4 KiB guard), so the test itself never writes outside the allocation.

On OpenCL the bound argument is a sub-buffer at offset 0 of the guarded allocation, and the CPU
drivers let the kernel's stores land in the guard: every such call must be refused. A Vulkan
descriptor's range is the array's bytes, and lavapipe (llvmpipe) bounds-checks storage-buffer
accesses against it: the stores past the end are dropped, nothing reaches the guard or any other
memory, and the call returns the array's own elements. The Vulkan cases accept exactly those two
outcomes: the refusal, or a completed call with numpy-exact elements and every pooled guard intact.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind
from accelcore.api import guard_pattern
from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

# out[y * w + x] = x[...] + 1 over a (w, h) grid; no bounds check.
GRID_CL = b"""
__kernel void grid(__global const float* src, __global float* out, const int w)
{
    int x = get_global_id(0), y = get_global_id(1);
    out[y * w + x] = src[y * w + x] + 1.0f;
}
"""
GRID_GLSL = b"""#version 450
layout(local_size_x = 1, local_size_y = 1) in;
layout(push_constant) uniform Params { int w; } p;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) buffer Out { float dst[]; };
void main() {
    int i = int(gl_GlobalInvocationID.y) * p.w + int(gl_GlobalInvocationID.x);
    dst[i] = src[i] + 1.0;
}
"""
# A kernel that writes past the end of its input (declared writable: not const / readonly, so its guard
# is checked; a const / readonly / uniform binding gets a guard that is not read back).
SCRIBBLE_CL = b"""
__kernel void scribble(__global float* src, __global float* out, const int w)
{
    int x = get_global_id(0), y = get_global_id(1);
    int i = y * w + x;
    out[i] = 2.0f;
    if (i >= w) src[i + 2 * w] = 7.0f;
}
"""
SCRIBBLE_GLSL = b"""#version 450
layout(local_size_x = 1, local_size_y = 1) in;
layout(push_constant) uniform Params { int w; } p;
layout(set = 0, binding = 0) buffer Src { float src[]; };
layout(set = 0, binding = 1) buffer Out { float dst[]; };
void main() {
    int i = int(gl_GlobalInvocationID.y) * p.w + int(gl_GlobalInvocationID.x);
    dst[i] = 2.0;
    if (i >= p.w) src[i + 2 * p.w] = 7.0;
}
"""
W, H = 4, 4  # 16 work-items


DEVICES, DEVICE_IDS = provider_device_params()


@pytest.fixture
def dev(request: pytest.FixtureRequest) -> Iterator[ac.Device]:
    with ac.open(request.param.device_id) as device:
        yield device


def _grid(dev: ac.Device) -> ac.Kernel:
    return dev.kernel(GRID_CL if dev.entry is not None and dev.entry.provider == "opencl" else GRID_GLSL)


def _opencl(dev: ac.Device) -> bool:
    return dev.entry is not None and dev.entry.provider == "opencl"


def _guards_intact(dev: ac.Device) -> bool:
    """Whether every idle pooled buffer's guard tail still holds the pattern."""
    for (nbytes, *_), buffers in dev.pool._idle.items():  # a longer guard (an extension) starts the same
        guard = dev.guard_bytes(nbytes)
        for buffer in buffers:
            seen = np.empty(guard, dtype=np.uint8)
            dev.engine.read_buffer_into(buffer, nbytes, seen.data)
            if not np.array_equal(seen, guard_pattern(guard)):
                return False
    return True


def _run(dev: ac.Device, kernel: ac.Kernel, src: np.ndarray, out: np.ndarray, w: int = W, h: int = H) -> Any:
    if _opencl(dev):
        return kernel(src=src, out=out, w=np.int32(w), global_size=(w, h), timeout=60)
    return kernel(src=src, dst=out, w=np.int32(w), global_size=(w, h), timeout=60)


# 16 work-items; 71,000 (an output of 284 KB: past the size read back together with its guard).
SIZES = [(W, H), (1000, 71)]


@pytest.mark.parametrize("size", SIZES, ids=["small", "large"])
@pytest.mark.parametrize("dev", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_short_output_is_refused_and_the_next_call_is_exact(dev: ac.Device, size: tuple[int, int]) -> None:
    w, h = size
    kernel = _grid(dev)
    src = np.arange(w * h, dtype=np.float32)
    out = np.full(w * h - 6, -1.0, dtype=np.float32)  # 6 elements (24 bytes) short
    given = out.copy()
    name = "out" if _opencl(dev) else "dst"
    if not _opencl(dev):
        try:
            _run(dev, kernel, src, out, w, h)
        except ac.BackendError as exc:
            assert exc.kind is ErrorKind.OUT_OF_BOUNDS, exc
        else:  # the driver dropped the stores past the descriptor's range
            assert np.array_equal(out, src[: out.size] + 1) and _guards_intact(dev)
            return
        out[:] = given
    with raises_kind(ErrorKind.OUT_OF_BOUNDS) as caught:
        _run(dev, kernel, src, out, w, h)
    message = str(caught.value)
    assert f"argument {name} ({out.nbytes} bytes given; " in message, message
    assert "bytes beyond it changed" in message and "not returned" in message, message
    assert np.array_equal(out, given)  # nothing was read back
    # The overwritten buffer was freed, not pooled: the same short call again is refused again (a
    # pooled buffer with a stale guard would compare against old bytes).
    assert len(dev.pool) == 1  # src's buffer only
    with raises_kind(ErrorKind.OUT_OF_BOUNDS):
        _run(dev, kernel, src, out, w, h)
    # A correct call on the same device (reusing src's pooled buffer, whose guard was intact).
    taken = dev.pool.taken
    full = np.zeros(w * h, dtype=np.float32)
    _run(dev, kernel, src, full, w, h)
    assert np.array_equal(full, src + 1)
    assert dev.pool.taken > taken


@pytest.mark.parametrize("dev", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_correct_calls_do_not_trip_and_reuse_the_pool(dev: ac.Device) -> None:
    kernel = _grid(dev)
    for seed in range(3):
        src = np.random.default_rng(seed).integers(0, 1000, W * H).astype(np.float32)
        out = np.zeros(W * H, dtype=np.float32)
        _run(dev, kernel, src, out)
        assert np.array_equal(out, src + 1), seed
    assert dev.pool.taken == 4 and len(dev.pool) == 2


@pytest.mark.parametrize("dev", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_write_past_an_input_array_is_refused(dev: ac.Device) -> None:
    opencl = _opencl(dev)
    kernel = dev.kernel(SCRIBBLE_CL if opencl else SCRIBBLE_GLSL)
    src = np.zeros(W * H, dtype=np.float32)  # written at 3w..(w*h + 2w): up to 32 bytes past its end
    out = np.zeros(W * H, dtype=np.float32)
    out_name, src_given = ("out" if opencl else "dst"), src.copy()
    if not opencl:
        try:
            kernel(src, out, w=np.int32(W), global_size=(W, H), timeout=60)
        except ac.BackendError as exc:
            assert exc.kind is ErrorKind.OUT_OF_BOUNDS and f"argument {out_name}" not in str(exc), exc
            assert not out.any()
        else:  # dropped by the driver (see the module docstring)
            assert np.array_equal(out, np.full_like(out, 2.0)) and _guards_intact(dev)
        return
    with raises_kind(ErrorKind.OUT_OF_BOUNDS) as caught:
        kernel(src, out, w=np.int32(W), global_size=(W, H), timeout=60)
    message = str(caught.value)
    assert f"argument src ({src.nbytes} bytes given; " in message, message
    assert f"argument {out_name}" not in message, message
    assert not out.any() and np.array_equal(src, src_given)  # nothing returned, not even the intact out


def test_the_guard_pattern_is_fixed_and_read_only() -> None:
    first = guard_pattern(4096)
    assert np.array_equal(first, guard_pattern(4096)) and not first.flags.writeable
    assert len(np.unique(first)) > 200  # not a constant a kernel is likely to write
