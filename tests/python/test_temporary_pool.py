"""Calls on host arrays reuse the device's temporary buffers (``Device.pool``), never while in flight.

Every case runs on every real OpenCL and Vulkan device, through a counting wrapper around the real
provider (it forwards every call and counts ``allocate_buffer`` / ``free_buffer``). Results are
checked exactly against numpy: the inputs are small integers, so ``a * x + y`` is exact in f32.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind, EventStatus
from accelcore.devices.environment import apply_defaults
from accelcore.devices.inventory import discover
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

N = 1024
A = 2.5


DEVICES, DEVICE_IDS = provider_device_params()


class _Counting:
    """Forwards everything to a real provider; counts buffer allocations and frees."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.allocated = 0
        self.freed = 0

    def allocate_buffer(self, context: Any, desc: Any) -> Any:
        made = self.inner.allocate_buffer(context, desc)
        self.allocated += 1
        return made

    def free_buffer(self, buffer: Any) -> None:
        self.inner.free_buffer(buffer)
        self.freed += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Rig:
    def __init__(self, entry: Any, corpus_saxpy: Any, **options: Any) -> None:
        family = discover().family_of(entry)
        self.setup = family.conformance(entry)
        self.provider = self.setup.factory()
        self.counting = _Counting(self.provider)
        self.dev = ac.Device(self.counting, entry, **options)
        self.count = corpus_saxpy.count(self.dev, N)
        self.kernel = corpus_saxpy.kernel(self.dev)

    def arrays(self, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        x = rng.integers(0, 1000, N).astype(np.float32)
        y = rng.integers(0, 1000, N).astype(np.float32)
        return x, y, np.float32(A) * x + y

    def submit(self, x: np.ndarray, y: np.ndarray) -> ac.Run:
        return self.kernel.submit(a=np.float32(A), x=x, y=y, n=self.count, global_size=N)

    def handle(self, run: ac.Run) -> Any:
        return self.dev.engine._events.lookup(run.event).handle

    def close(self) -> None:
        self.dev.close()


@pytest.fixture
def rig(request: pytest.FixtureRequest, corpus_saxpy: Any) -> Iterator[_Rig]:
    made = _Rig(request.param, corpus_saxpy)
    yield made
    made.close()
    # Everything the pool kept is released by close(): as many frees as allocations.
    assert made.counting.freed == made.counting.allocated, (made.counting.allocated, made.counting.freed)


@pytest.mark.parametrize("rig", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_repeated_calls_reuse_their_buffers_and_stay_exact(rig: _Rig) -> None:
    before = rig.counting.allocated
    for seed in range(4):
        x, y, want = rig.arrays(seed)
        assert rig.submit(x, y).wait(timeout=60) is y
        assert np.array_equal(y, want), seed
    assert rig.counting.allocated - before == 2  # x and y, once
    assert rig.dev.pool.taken == 6 and len(rig.dev.pool) == 2
    assert rig.dev.pool.idle_bytes == 2 * 4 * N


@pytest.mark.parametrize("rig", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_run_in_flight_keeps_its_buffers(rig: _Rig) -> None:
    x1, y1, want1 = rig.arrays(1)
    x2, y2, want2 = rig.arrays(2)
    first = rig.submit(x1, y1)
    second = rig.submit(x2, y2)  # the first one's buffers are bound to its event: none to reuse
    assert {b for b, _ in first._temporary}.isdisjoint(b for b, _ in second._temporary)
    assert rig.dev.pool.taken == 0
    second.wait(timeout=60)
    first.wait(timeout=60)
    assert np.array_equal(y1, want1) and np.array_equal(y2, want2)
    assert len(rig.dev.pool) == 4


@pytest.mark.parametrize("rig", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_cancelled_run_gives_nothing_back(rig: _Rig) -> None:
    if not rig.dev.can_cancel:
        pytest.skip(f"{rig.dev.id} does not advertise EVENT_CANCELLATION")
    x, y, _ = rig.arrays(3)
    given = y.copy()
    rig.setup.hooks.hold_submissions(rig.provider)
    run = rig.submit(x, y)
    run.cancel()
    with pytest.raises(ac.RunCancelled):
        run.wait(timeout=60)
    assert run.state().status is EventStatus.CANCELLED
    assert len(rig.dev.pool) == 0 and rig.counting.freed == 2  # freed, not pooled
    assert np.array_equal(y, given)  # nothing was read back


@pytest.mark.parametrize("rig", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_wait_that_times_out_keeps_the_buffers_out_of_the_pool(rig: _Rig) -> None:
    x, y, want = rig.arrays(4)
    rig.setup.hooks.hold_submissions(rig.provider)
    run = rig.submit(x, y)
    with raises_kind(ErrorKind.DEADLINE_EXPIRED):
        run.wait(timeout=0.05)
    # Still pending: its buffers are neither pooled nor freed, and a new call cannot take them.
    assert len(rig.dev.pool) == 0 and rig.counting.freed == 0
    assert rig.dev.engine.poll(run.event).status is EventStatus.PENDING
    rig.setup.hooks.complete_held(rig.provider, rig.handle(run))
    assert run.wait(timeout=60) is y and np.array_equal(y, want)
    assert len(rig.dev.pool) == 2


@pytest.mark.parametrize("entry", DEVICES, ids=DEVICE_IDS)
def test_the_pool_is_bounded(entry: Any, corpus_saxpy: Any) -> None:
    rig = _Rig(entry, corpus_saxpy, pool_bytes=4 * N)  # room for one of the two arrays
    try:
        for seed in range(3):
            x, y, want = rig.arrays(seed)
            rig.submit(x, y).wait(timeout=60)
            assert np.array_equal(y, want)
            assert rig.dev.pool.idle_bytes <= 4 * N and len(rig.dev.pool) == 1
        # First call: 2 allocations; later ones reuse one buffer and allocate the other afresh.
        assert rig.counting.allocated - rig.counting.freed == 1
    finally:
        rig.close()
    none = _Rig(entry, corpus_saxpy, pool_bytes=0)
    try:
        x, y, want = none.arrays(5)
        none.submit(x, y).wait(timeout=60)
        assert np.array_equal(y, want) and len(none.dev.pool) == 0 and none.counting.freed == 2
    finally:
        none.close()


@pytest.mark.parametrize("rig", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_a_failed_read_back_is_raised_on_every_later_wait(rig: _Rig) -> None:
    """The read of the results fails (an injected OUT_OF_MEMORY on the real provider's read): the call
    raises it, and so does every later wait on that run (it never reports Complete with arrays that were
    not filled in); the next call on the device works and is exact."""
    from accelcore.testing.faults import Fault, FaultAccelerator, FaultKind

    faults = FaultAccelerator(rig.provider)
    rig.counting.inner = faults
    x, y, want = rig.arrays(7)
    before = y.copy()
    faults.inject(Fault("read_buffer", FaultKind.OUT_OF_MEMORY))
    run = rig.submit(x, y)
    for _ in range(2):
        with raises_kind(ErrorKind.OUT_OF_MEMORY):
            run.wait(timeout=60)
    assert faults.fired and np.array_equal(y, before)
    x, y, want = rig.arrays(8)
    assert rig.submit(x, y).wait(timeout=60) is y
    assert np.array_equal(y, want)
    rig.counting.inner = rig.provider


@pytest.mark.parametrize("rig", DEVICES, ids=DEVICE_IDS, indirect=True)
def test_an_array_resized_in_place_is_uploaded_from_where_it_is_now(rig: _Rig) -> None:
    """A call remembers the last arrays per argument (and a byte view of each); an array resized without
    numpy's reference check (its data moves) is uploaded from its new memory, at its new size."""
    x, y, want = rig.arrays(9)
    assert rig.submit(x, y).wait(timeout=60) is y and np.array_equal(y, want)
    x.resize(2 * N, refcheck=False)  # moves the data: the old view would read freed memory
    x[:] = np.arange(2 * N, dtype=np.float32)
    y = np.ones(N, dtype=np.float32)
    assert rig.submit(x, y).wait(timeout=60) is y
    assert np.array_equal(y, np.float32(A) * x[:N] + 1)
