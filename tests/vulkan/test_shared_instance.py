"""One ``VkInstance`` per process per validation mode, never destroyed while the process runs.

NVIDIA's driver (580.159.04, H200) refuses every ``vkCreateInstance`` after ~30 create/destroy
cycles in one process, which lavapipe does not reproduce; so these tests prove the promise by
counting instances (``instances_created``) rather than by hitting a limit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from accelcore import (
    BufferDesc,
    BufferUsage,
    ContextDesc,
    ErrorKind,
    MemoryDomain,
    MemorySink,
    MemorySource,
    QueueDesc,
    ReleaseRejected,
)
from accelcore.devices.registry import DeviceEntry

from .conftest import TRANSFER, VALIDATION, VUID_ZERO_SIZE, assert_clean, provoke_validation_error

CYCLES = 100
MODES = [
    pytest.param(False, id="plain"),
    pytest.param(
        True,
        id="validation",
        marks=pytest.mark.skipif(not VALIDATION, reason="ACCEL_VULKAN_VALIDATION=0: the layer is not used in this run"),
    ),
]


def round_trip(accel: Any, seed: int) -> None:
    """Allocate a buffer, write a pattern, read it back exactly; release everything."""
    data = bytes((seed + i) % 251 for i in range(256))
    ctx = accel.create_context(ContextDesc())
    try:
        desc = BufferDesc(len(data), 16, MemoryDomain.HOST, TRANSFER | BufferUsage.PROGRAM_INPUT)
        buf = accel.allocate_buffer(ctx, desc).buffer
        try:
            accel.write_buffer(buf, 0, MemorySource(data))
            out = bytearray(len(data))
            accel.read_buffer(buf, 0, MemorySink(out))
            assert bytes(out) == data, f"accelerator {seed}: read back differs from what was written"
        finally:
            accel.free_buffer(buf)
    finally:
        accel.destroy_context(ctx)


@pytest.mark.parametrize("validation", MODES)
def test_many_accelerators_share_one_instance(entry: DeviceEntry, validation: bool) -> None:
    from accel_vulkan import provider_family
    from accel_vulkan.instance import instances_created, shared_instance

    before = instances_created()
    seen = set()
    for i in range(CYCLES):
        accel = provider_family.open(entry, validation=validation)
        try:
            assert accel.validation_enabled == validation
            round_trip(accel, i)
            seen.add(id(accel._instance))
            assert_clean(accel)
        finally:
            accel.close()
        assert accel.closed
        assert not accel.validation_messages, accel.validation_messages[:1]
    created = instances_created() - before
    assert created <= 1, f"{CYCLES} accelerators created {created} instances"
    assert seen == {id(shared_instance(validation))}
    assert not shared_instance(validation).closed, "closing accelerators destroyed the shared instance"
    assert instances_created() - before == created, "asking for the shared instance created another"


def test_a_fresh_process_creates_one_instance_per_mode(entry: DeviceEntry) -> None:
    """From a clean process: discovery plus 40 accelerators per mode (past NVIDIA's ~30) → one instance per mode."""
    modes = [False, True] if VALIDATION else [False]
    code = textwrap.dedent(
        f"""
        from accel_vulkan import provider_family
        from accel_vulkan.instance import instances_created
        from accelcore import ContextDesc

        counts = []
        for validation in {modes!r}:
            for _ in range(5):
                entry = [e for e in provider_family.discover() if e.uuid == {entry.uuid!r}][0]
            for _ in range(40):
                accel = provider_family.open(entry, validation=validation)
                accel.destroy_context(accel.create_context(ContextDesc()))
                accel.close()
            counts.append(instances_created())
        print("COUNTS", counts)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    counts = [line for line in done.stdout.splitlines() if line.startswith("COUNTS")]
    assert counts == [f"COUNTS {list(range(1, len(modes) + 1))}"], done.stdout


def test_discovery_in_a_loop_creates_no_instance(entry: DeviceEntry) -> None:
    from accel_vulkan import provider_family
    from accel_vulkan.instance import instances_created

    provider_family.discover()
    before = instances_created()
    for _ in range(50):
        assert entry.uuid in {e.uuid for e in provider_family.discover()}
    assert instances_created() == before


def test_closing_one_accelerator_leaves_another_working(make_accel: Callable[..., Any]) -> None:
    first, second = make_accel(), make_accel()
    assert first._instance is second._instance
    ctx = second.create_context(ContextDesc())
    desc = BufferDesc(64, 16, MemoryDomain.HOST, TRANSFER | BufferUsage.PROGRAM_INPUT)
    buf = second.allocate_buffer(ctx, desc).buffer
    second.write_buffer(buf, 0, MemorySource(b"\x5a" * 64))
    round_trip(first, 1)
    first.close()
    assert first.closed and not second.closed
    round_trip(second, 2)
    out = bytearray(64)
    second.read_buffer(buf, 0, MemorySink(out))
    assert bytes(out) == b"\x5a" * 64
    second.free_buffer(buf)
    second.destroy_context(ctx)
    third = make_accel()
    round_trip(third, 3)


def test_a_closed_accelerator_refuses_every_call(accel: Any, raises_kind: Any) -> None:
    ctx = accel.create_context(ContextDesc())
    queue = accel.create_queue(ctx, QueueDesc())
    accel.close()
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        accel.create_context(ContextDesc())
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        accel.create_queue(ctx, QueueDesc())
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        accel.allocate_buffer(ctx, BufferDesc(64, 16, MemoryDomain.HOST, TRANSFER))
    with pytest.raises(ReleaseRejected) as refused:
        accel.destroy_queue(queue)
    assert refused.value.error.kind is ErrorKind.INVALID_ARGUMENT, refused.value
    assert {k: v for k, v in accel.live_resources().items() if v} == {}
    accel.close()  # idempotent


VUID = VUID_ZERO_SIZE


def test_messages_are_attributed_by_open_window(entry: DeviceEntry, make_accel: Callable[..., Any]) -> None:
    """A message provoked while one accelerator was open is its alone: neither a later one nor an earlier,
    already closed one reports it."""
    from accel_vulkan import provider_family

    if not VALIDATION:
        pytest.skip("ACCEL_VULKAN_VALIDATION=0: this run does not use the validation layer")
    earlier = provider_family.open(entry, validation=True)
    earlier.close()
    noisy = provider_family.open(entry, validation=True)
    try:
        provoke_validation_error(noisy)
    finally:
        noisy.close()
    assert VUID in [m.message_id for m in noisy.validation_messages]
    later = make_accel()  # checked clean at teardown by the fixture
    assert later._instance is noisy._instance
    round_trip(later, 4)
    assert later.validation_messages == []
    assert earlier.validation_messages == []
    assert VUID in [m.message_id for m in noisy.validation_messages], "a closed window lost its messages"


def test_concurrent_first_use_creates_one_instance(entry: DeviceEntry) -> None:
    """From a clean process: 8 threads opening accelerators at once on first use → exactly one instance."""
    code = textwrap.dedent(
        f"""
        import threading
        from accel_vulkan import provider_family
        from accel_vulkan.instance import instances_created
        from accelcore.devices.registry import DeviceEntry

        entry = DeviceEntry("vulkan", {entry.index}, "", {entry.uuid!r}, {{}})
        start, ok = threading.Barrier(8), []

        def work():
            start.wait()
            accel = provider_family.open(entry, validation=False)
            ok.append(accel._instance)
            accel.close()

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("RESULT", len(ok), len({{id(i) for i in ok}}), instances_created())
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "RESULT 8 1 1" in done.stdout, done.stdout + done.stderr
