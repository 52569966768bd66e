"""Submission: validation order, gates, cancellation vs completion, deadlines, polling, releases."""

from __future__ import annotations

import threading
import time
import tracemalloc
from typing import Any

import numpy as np
import pytest
from accel_vulkan.device_info import MAX_EVENTS_PER_CONTEXT

from accelcore import (
    AccessMode,
    BindingRef,
    BufferRange,
    ContextDesc,
    ErrorKind,
    EventState,
    QueueDesc,
    ReleaseRejected,
    SubmitRejected,
    Timeout,
)
from accelcore.conformance.corpus import SENTINEL, load_package, make_case

from .conftest import VK, Rig

R, W = AccessMode.READ, AccessMode.WRITE


def _conformance(rig: Rig, elements: int = 256, seed: int = 0) -> tuple[Any, dict[int, tuple[Any, AccessMode]], Any]:
    case = make_case("conformance", elements, seed)
    program = rig.programs[0] if rig.programs else rig.load(load_package("conformance", VK))
    slots = {0: (rig.buffer(case.initial_bytes(0), R), R), 1: (rig.buffer(case.initial_bytes(1), W), W)}
    return program, slots, case


def _rejected(kind: ErrorKind, call: Any, *args: Any) -> SubmitRejected[Any]:
    with pytest.raises(SubmitRejected) as info:
        call(*args)
    assert info.value.kind is kind, f"expected {kind.name}, got {info.value}"
    return info.value


def test_submission_runs_and_event_completes(rig: Rig) -> None:
    program, slots, case = _conformance(rig)
    event = rig.submit(program, slots)
    assert rig.wait(event) == EventState.COMPLETE
    assert rig.read(slots[1][0]) == case.expected_bytes(1)
    assert rig.accel.poll_event(event) == EventState.COMPLETE


def test_validation_order_and_kinds(rig: Rig) -> None:
    program, slots, _ = _conformance(rig)
    accel, q = rig.accel, rig.queue
    good = rig.bind(slots)
    _rejected(ErrorKind.RESOURCE_LIMIT, accel.submit, q, program, [], Timeout.INFINITE)
    _rejected(ErrorKind.INVALID_ARGUMENT, accel.submit, q, program, [good[0], good[0]], Timeout.INFINITE)
    past = BindingRef(1, slots[1][0], BufferRange(16, slots[1][0].desc.bytes), W)
    _rejected(ErrorKind.OUT_OF_BOUNDS, accel.submit, q, program, [good[0], past], Timeout.INFINITE)
    wrong_access = BindingRef(0, slots[0][0], BufferRange(0, 64), AccessMode.READ_WRITE)
    _rejected(ErrorKind.PERMISSION_DENIED, accel.submit, q, program, [wrong_access, good[1]], Timeout.INFINITE)
    write_input = BindingRef(0, slots[1][0], BufferRange(0, 64), W)
    error = _rejected(ErrorKind.INCOMPATIBLE, accel.submit, q, program, [write_input, good[1]], Timeout.INFINITE)
    assert "declares READ" in error.error.message
    _rejected(ErrorKind.INCOMPATIBLE, accel.submit, q, program, [good[0]], Timeout.INFINITE)
    unaligned = BindingRef(1, slots[1][0], BufferRange(4, 64), W)
    error = _rejected(ErrorKind.INCOMPATIBLE, accel.submit, q, program, [good[0], unaligned], Timeout.INFINITE)
    assert "minStorageBufferOffsetAlignment" in error.error.message
    extra = BindingRef(7, slots[0][0], BufferRange(0, 64), R)
    _rejected(ErrorKind.INCOMPATIBLE, accel.submit, q, program, [*good, extra], Timeout.INFINITE)
    assert not any(accel.live_resources().get(k, 0) for k in ("VkCommandBuffer", "VkDescriptorSet"))


def test_cross_context_buffer_is_rejected(make_accel: Any) -> None:
    accel = make_accel()
    first, second = Rig(accel), Rig(accel)
    try:
        program, slots, _ = _conformance(first)
        _, other, _ = _conformance(second)
        bindings = [BindingRef(0, other[0][0], BufferRange(0, other[0][0].desc.bytes), R), first.bind(slots)[1]]
        _rejected(ErrorKind.INVALID_ARGUMENT, accel.submit, first.queue, program, bindings, Timeout.INFINITE)
    finally:
        first.close()
        second.close()


def test_held_event_cancels_and_outputs_stay_untouched(rig: Rig, raises_kind: Any) -> None:
    program, slots, case = _conformance(rig)
    rig.accel.hold()
    event = rig.submit(program, slots)
    assert rig.accel.poll_event(event) == EventState.PENDING
    with pytest.raises(ReleaseRejected) as pending:
        rig.accel.destroy_event(event)
    assert pending.value.kind is ErrorKind.BUSY and pending.value.resource is event
    with pytest.raises(ReleaseRejected):
        rig.accel.free_buffer(slots[0][0])
    rig.accel.cancel_event(event)
    assert rig.accel.poll_event(event) == EventState.CANCELLED
    rig.accel.release(event)  # a cancelled batch is never handed over
    time.sleep(0.01)
    assert rig.accel.poll_event(event) == EventState.CANCELLED
    assert rig.read(slots[1][0]) == case.initial_bytes(1)
    assert rig.accel.live_resources()["VkCommandBuffer"] == 1  # the event's recording
    rig.accel.destroy_event(event)
    rig.events.remove(event)
    # The never-submitted recording is kept idle for reuse until a buffer or the program it names goes.
    assert rig.accel.live_resources()["VkCommandBuffer"] == 1 and len(rig.context.recordings) == 1
    rig.accel.free_buffer(slots[0][0])
    rig.buffers.remove(slots[0][0])
    assert rig.accel.live_resources()["VkCommandBuffer"] == 0 and len(rig.context.recordings) == 0


def test_cancel_after_hand_over_is_busy_and_event_completes(rig: Rig, raises_kind: Any) -> None:
    program, slots, case = _conformance(rig)
    rig.accel.hold()
    event = rig.submit(program, slots)
    rig.accel.release(event)
    with raises_kind(ErrorKind.BUSY):
        rig.accel.cancel_event(event)
    assert rig.wait(event) == EventState.COMPLETE
    with raises_kind(ErrorKind.BUSY):
        rig.accel.cancel_event(event)
    assert rig.accel.poll_event(event) == EventState.COMPLETE
    assert rig.read(slots[1][0]) == case.expected_bytes(1)


def test_cancel_races_release_with_exactly_one_winner(rig: Rig) -> None:
    program = rig.load(load_package("conformance", VK))
    runs = []
    rig.accel.hold()
    for seed in range(24):
        _, slots, case = _conformance(rig, 64, seed)
        runs.append((rig.submit(program, slots), slots, case))
    outcomes: dict[int, str] = {}

    def cancel_all() -> None:
        for index, (event, _, _) in enumerate(runs):
            try:
                rig.accel.cancel_event(event)
                outcomes[index] = "cancelled"
            except Exception as error:  # BackendError BUSY expected
                outcomes[index] = getattr(getattr(error, "kind", None), "name", repr(error))

    canceller = threading.Thread(target=cancel_all)
    canceller.start()
    for event, _, _ in runs:
        rig.accel.release(event)
    canceller.join()
    for index, (event, slots, case) in enumerate(runs):
        state = rig.wait(event)
        if outcomes[index] == "cancelled":
            assert state == EventState.CANCELLED
            assert rig.read(slots[1][0]) == case.initial_bytes(1)
        else:
            assert outcomes[index] == "BUSY", outcomes[index]
            assert state == EventState.COMPLETE
            assert rig.read(slots[1][0]) == case.expected_bytes(1)
        assert rig.accel.poll_event(event) == state


def test_held_event_past_its_deadline_fails_and_never_runs(rig: Rig) -> None:
    program, slots, case = _conformance(rig)
    rig.accel.hold()
    event = rig.submit(program, slots, Timeout.after_ns(2_000_000))
    time.sleep(0.01)
    state = rig.accel.poll_event(event)
    assert state.error is not None and state.error.kind is ErrorKind.DEADLINE_EXPIRED
    rig.accel.release(event)
    assert rig.accel.poll_event(event) == state
    assert rig.read(slots[1][0]) == case.initial_bytes(1)


def test_deadline_before_hand_over_is_rejected_with_nothing_retained(rig: Rig) -> None:
    program, slots, _ = _conformance(rig)
    before = {k: v for k, v in rig.accel.live_resources().items() if v}
    _rejected(ErrorKind.DEADLINE_EXPIRED, rig.accel.submit, rig.queue, program, rig.bind(slots), Timeout.after_ns(1))
    assert {k: v for k, v in rig.accel.live_resources().items() if v} == before
    assert slots[0][0].events == 0 and program.events == 0


def test_poll_never_blocks_and_allocates_nothing(rig: Rig) -> None:
    program, slots, _ = _conformance(rig)
    rig.accel.hold()
    held = rig.submit(program, slots)
    rig.accel.release(held)
    rig.wait(held)
    _, other, _ = _conformance(rig)
    running = rig.submit(program, other)
    rig.accel.poll_event(running)
    tracemalloc.start()
    try:
        snapshot = tracemalloc.take_snapshot()
        for _ in range(2000):
            rig.accel.poll_event(held)
            rig.accel.poll_event(running)
        grown = sum(
            s.size_diff for s in tracemalloc.take_snapshot().compare_to(snapshot, "filename") if s.size_diff > 0
        )
    finally:
        tracemalloc.stop()
    assert grown < 16 << 10, f"4000 polls grew the heap by {grown} bytes"


def test_event_limit_is_the_descriptor_pool(make_accel: Any) -> None:
    accel = make_accel()
    rig = Rig(accel)
    try:
        program, slots, _ = _conformance(rig, 64)
        accel.hold()
        for _ in range(MAX_EVENTS_PER_CONTEXT):
            rig.submit(program, slots)
        _rejected(ErrorKind.RESOURCE_LIMIT, accel.submit, rig.queue, program, rig.bind(slots), Timeout.INFINITE)
        for event in rig.events:
            accel.cancel_event(event)
    finally:
        rig.close()


def test_queues_progress_independently(rig: Rig) -> None:
    program, first_slots, first_case = _conformance(rig, 128, 1)
    _, second_slots, second_case = _conformance(rig, 128, 2)
    other = rig.new_queue()
    rig.accel.hold(rig.queue)
    held = rig.submit(program, first_slots)
    free = rig.submit(program, second_slots, queue=other)
    assert rig.wait(free) == EventState.COMPLETE
    assert rig.accel.poll_event(held) == EventState.PENDING
    assert rig.read(second_slots[1][0]) == second_case.expected_bytes(1)
    rig.accel.release(queue=rig.queue)
    assert rig.wait(held) == EventState.COMPLETE
    assert rig.read(first_slots[1][0]) == first_case.expected_bytes(1)


def test_release_order_and_busy_parents(rig: Rig) -> None:
    program, slots, _ = _conformance(rig)
    rig.accel.hold()
    event = rig.submit(program, slots)
    for release, handle in (
        (rig.accel.unload_program, program),
        (rig.accel.destroy_queue, rig.queue),
        (rig.accel.free_buffer, slots[1][0]),
    ):
        with pytest.raises(ReleaseRejected) as info:
            release(handle)
        assert info.value.kind is ErrorKind.BUSY and info.value.resource is handle
    rig.accel.release(event)
    assert rig.wait(event) == EventState.COMPLETE


def test_large_dispatch_uses_many_workgroups(rig: Rig) -> None:
    program, slots, case = _conformance(rig, 70_000, 5)
    event = rig.submit(program, slots)
    assert rig.wait(event) == EventState.COMPLETE
    out = np.frombuffer(rig.read(slots[1][0]), dtype=np.uint32)
    assert not np.any(out == SENTINEL)
    assert out.tobytes() == case.expected_bytes(1)


def test_context_and_queue_flags_are_unsupported(accel: Any, raises_kind: Any) -> None:
    from accelcore import ContextFlags, QueueFlags

    with raises_kind(ErrorKind.UNSUPPORTED):
        accel.create_context(ContextDesc(ContextFlags.SECURE))
    ctx = accel.create_context(ContextDesc())
    with raises_kind(ErrorKind.UNSUPPORTED):
        accel.create_queue(ctx, QueueDesc(QueueFlags.IN_ORDER))
    accel.destroy_context(ctx)
