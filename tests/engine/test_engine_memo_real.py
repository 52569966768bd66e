"""The engine's per-program memo of the last binding list, reached from the Python layer on real devices.

``Run`` hands the engine the same spec tuple for the same (slot, buffer, access) (``Device._specs``), so a
repeated call takes the engine's memo; these tests check that calls through it stay numpy-exact while
the arrays change between device arrays and host arrays, that a freed device array is refused (stale)
rather than reached through a remembered spec, and that the spec cache stays bounded. Every OpenCL and
Vulkan device, the real provider.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind
from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

N = 256
A = 2.5


DEVICES, DEVICE_IDS = provider_device_params()


def _arrays(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, N).astype(np.float32)
    y = rng.integers(0, 1000, N).astype(np.float32)
    return x, y, np.float32(A) * x + y


@pytest.mark.parametrize("entry", DEVICES, ids=DEVICE_IDS)
def test_repeated_calls_take_the_memo_and_stay_exact(entry: Any, corpus_saxpy: Any) -> None:
    dev = ac.open(entry.device_id)
    try:
        kernel, n = corpus_saxpy.kernel(dev), corpus_saxpy.count(dev, N)
        x, y, _ = _arrays(1)
        dx, dy = dev.array(x), dev.array(y)
        expected = y.copy()
        for step in range(6):  # device arrays: the same specs every call after the first
            kernel(a=np.float32(A), x=dx, y=dy, n=n, global_size=N)
            expected = np.float32(A) * x + expected
            assert np.array_equal(dy.numpy(), expected), step
        programs = [entry for _, entry in dev.engine._programs.items()]
        assert any(p.memos for p in programs)
        for seed in range(4):  # host arrays in between: pool buffers, their own specs
            hx, hy, want = _arrays(10 + seed)
            kernel(a=np.float32(A), x=hx, y=hy, n=n, global_size=N)
            assert np.array_equal(hy, want), seed
        kernel(a=np.float32(A), x=dx, y=dy, n=n, global_size=N)  # back to the device arrays
        expected = np.float32(A) * x + expected
        assert np.array_equal(dy.numpy(), expected)
        dx.free()
        with raises_kind(ErrorKind.STALE_OBJECT):  # a remembered spec of a freed buffer is refused
            kernel(a=np.float32(A), x=dx, y=dy, n=n, global_size=N)
    finally:
        dev.close()
