"""Allocations past a device's limits are refused (docs/python.md, "Device arrays"): one buffer past
``max_buffer_bytes``, and live buffers in all past the reported global memory, unless overcommit is allowed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import accelcore as ac
from accelcore import BackendError, ErrorKind
from accelcore.devices.environment import apply_defaults
from accelcore.engine import ResourcePolicy
from accelcore.engine.policy import MEMORY_OVERCOMMIT_ENV
from accelcore.testing.pytest_support import provider_device_params

apply_defaults()

ALL, ALL_IDS = provider_device_params()
KIB = 1024


def _with_total(dev: ac.Device, total: int) -> None:
    """Pretend the device reports ``total`` bytes of global memory (the engine's check, cheaply)."""
    info = dev.engine.info
    dev.engine._info = dataclasses.replace(info, limits=dataclasses.replace(info.limits, total_memory_bytes=total))


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_every_device_reports_its_global_memory(entry) -> None:
    with ac.open(entry.device_id) as dev:
        total = dev.engine.info.limits.total_memory_bytes
        assert total is not None and total > 0


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_one_buffer_past_the_limits_is_refused(entry) -> None:
    with ac.open(entry.device_id) as dev:
        limits = dev.engine.info.limits
        for nbytes in (limits.max_buffer_bytes + 1, limits.total_memory_bytes + 1):
            with pytest.raises(BackendError) as caught:
                dev.empty(nbytes, np.uint8)
            assert caught.value.kind is ErrorKind.RESOURCE_LIMIT
            assert str(nbytes) in caught.value.message
        assert dev.engine.usage.allocation_bytes == 0


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_live_buffers_past_global_memory_are_refused(entry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MEMORY_OVERCOMMIT_ENV, raising=False)
    with ac.open(entry.device_id) as dev:
        _with_total(dev, 1024 * KIB)
        first = dev.empty(600 * KIB, np.uint8)
        with pytest.raises(BackendError) as caught:
            dev.empty(600 * KIB, np.uint8)
        error = caught.value
        assert error.kind is ErrorKind.RESOURCE_LIMIT
        assert str(600 * KIB) in error.message and str(1024 * KIB) in error.message
        assert MEMORY_OVERCOMMIT_ENV in error.message
        # A kernel call's temporaries count too: no room for a host array that large either.
        first.free()
        second = dev.empty(600 * KIB, np.uint8)  # room again once the first is freed
        np.testing.assert_array_equal(dev.array(np.arange(16, dtype=np.int32)).numpy(), np.arange(16))
        second.free()


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
@pytest.mark.parametrize("how", ["environment", "policy"])
def test_overcommit_is_allowed_on_request(entry, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MEMORY_OVERCOMMIT_ENV, raising=False)
    if how == "environment":
        monkeypatch.setenv(MEMORY_OVERCOMMIT_ENV, "1")
        policy = ResourcePolicy()
    else:
        policy = ResourcePolicy(memory_overcommit=True)
    assert policy.memory_overcommit
    from accelcore.devices.inventory import discover

    found = discover()
    chosen = found.select_one(entry.device_id)
    dev = ac.Device(found.family_of(chosen).open(chosen), chosen, policy=policy)
    try:
        _with_total(dev, 1024 * KIB)
        arrays = [dev.empty(600 * KIB, np.uint8) for _ in range(3)]  # 1800 KiB live: allowed
        assert dev.engine.usage.allocation_bytes >= 1800 * KIB
        for array in arrays:
            array.free()
    finally:
        dev.close()


def test_the_policy_default_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_OVERCOMMIT_ENV, "0")
    assert not ResourcePolicy().memory_overcommit
    monkeypatch.setenv(MEMORY_OVERCOMMIT_ENV, "1")
    assert ResourcePolicy().memory_overcommit
