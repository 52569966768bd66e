"""Gated submission: validation, the release policy, cancellation, deadlines, terminal stability."""

from __future__ import annotations

import operator
import threading
import time
from typing import Any

import numpy as np
import pytest

from accelcore import (
    AccessMode,
    BackendError,
    BindingRef,
    BufferRange,
    ContextDesc,
    ErrorKind,
    EventState,
    MemorySource,
    ReleaseRejected,
    SubmitRejected,
    Timeout,
)
from accelcore.conformance.corpus import SENTINEL

N = 256


def _twice_rig(rig: Any, make_package: Any) -> tuple[Any, Any, Any]:
    program = rig.load(make_package())
    src = rig.buffer(np.arange(N, dtype=np.uint32), "r")
    dst = rig.buffer(np.full(N, SENTINEL, np.uint32), "w")
    return program, src, dst


def _out(rig: Any, dst: Any) -> np.ndarray:
    return np.frombuffer(rig.read(dst), dtype=np.uint32)


EXPECTED = np.arange(N, dtype=np.uint32) * 2 + 1
UNTOUCHED = np.full(N, SENTINEL, np.uint32)


def test_submission_completes_and_stays_complete(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    event = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
    assert rig.wait(event) == EventState.COMPLETE
    assert all(rig.accel.poll_event(event) == EventState.COMPLETE for _ in range(5))
    assert np.array_equal(_out(rig, dst), EXPECTED)


def test_cancel_of_a_gated_submission_wins(entry: Any, rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    rig.accel.hold_submissions()
    event = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
    assert rig.accel.poll_event(event) == EventState.PENDING  # held: poll returns instead of waiting
    with pytest.raises(ReleaseRejected) as info:
        rig.accel.destroy_event(event)
    assert info.value.resource is event and info.value.kind is ErrorKind.BUSY
    rig.accel.cancel_event(event)
    assert rig.accel.poll_event(event) == EventState.CANCELLED
    rig.accel.cancel_event(event)  # idempotent once cancelled
    rig.accel.release_held(event)  # too late: the gate already failed
    time.sleep(0.05)
    assert rig.accel.poll_event(event) == EventState.CANCELLED
    assert np.array_equal(_out(rig, dst), UNTOUCHED)
    status = int(event.submission.kernel_event.command_execution_status)
    if entry.native.get("tag") == "intel":
        # Intel's CPU runtime 2026.2 never runs the kernel (buffer untouched, above) but reports its
        # event CL_COMPLETE, not an error status (measured 2026-12-01; cancellation.py).
        assert status == 0, f"Intel reports a kernel behind a failed gate CL_COMPLETE, got {status}"
    else:
        assert status < 0, f"the native kernel event should end in an error status, got {status}"


def test_cancel_after_release_is_busy_and_completion_stands(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    rig.accel.hold_submissions()
    event = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
    rig.accel.release_held(event)
    with pytest.raises(BackendError) as info:
        rig.accel.cancel_event(event)
    assert info.value.kind is ErrorKind.BUSY
    assert rig.wait(event) == EventState.COMPLETE
    with pytest.raises(BackendError):
        rig.accel.cancel_event(event)
    assert rig.accel.poll_event(event) == EventState.COMPLETE
    assert np.array_equal(_out(rig, dst), EXPECTED)


def test_deadline_passing_while_gated_fails_without_running(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    rig.accel.hold_submissions()
    # 250 ms: long enough that admission (which refuses an already-passed deadline) always comes first --
    # 2 ms was not, on PoCL 5.0 on the H200 machine (2026-11-30) -- and the poll below waits it out.
    event = rig.submit(program, {0: (src, "r"), 1: (dst, "w")}, Timeout.after_ns(250_000_000))
    assert rig.accel.poll_event(event) == EventState.PENDING
    give_up = time.monotonic() + 10
    while (state := rig.accel.poll_event(event)) == EventState.PENDING and time.monotonic() < give_up:
        time.sleep(0.01)
    assert state.error is not None and state.error.kind is ErrorKind.DEADLINE_EXPIRED
    rig.accel.release_held(event)
    time.sleep(0.05)
    assert rig.accel.poll_event(event) == state
    assert np.array_equal(_out(rig, dst), UNTOUCHED)


def test_cancel_and_release_race_to_exactly_one_terminal_state(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    rig.accel.hold_submissions()
    outcomes = {"cancelled": 0, "completed": 0}
    for _ in range(30):
        rig.accel.write_buffer(dst, 0, MemorySource(UNTOUCHED.tobytes()))
        event = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
        releaser = threading.Thread(target=rig.accel.release_held, args=(event,))
        releaser.start()
        try:
            rig.accel.cancel_event(event)
            won = True
        except BackendError as exc:
            assert exc.kind is ErrorKind.BUSY
            won = False
        releaser.join()
        final = rig.wait(event)
        if won:
            assert final == EventState.CANCELLED
            assert np.array_equal(_out(rig, dst), UNTOUCHED)
            outcomes["cancelled"] += 1
        else:
            assert final == EventState.COMPLETE
            assert np.array_equal(_out(rig, dst), EXPECTED)
            outcomes["completed"] += 1
        rig.accel.destroy_event(event)
        rig.events.remove(event)
    assert sum(outcomes.values()) == 30


SLOW_SOURCE = """
__kernel void twice(__global const uint *p, __global uint *out, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i >= count) { return; }
    uint x = i + 1u;
    uint n = p[0];
    for (uint k = 0u; k < n; ++k) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; x += k; }
    out[i] = x;
}
"""
"""A kernel whose run time scales with p[0] (xorshift steps; no closed form for a compiler to find)."""


def test_release_policy_nothing_passes_a_submission_that_has_not_started(rig: Any, make_package: Any) -> None:
    """While the first submission is held, the later ones are neither released nor enqueued;
    once it is released they follow in order without any explicit release."""
    program, src, dst = _twice_rig(rig, make_package)
    outs = [rig.buffer(np.full(N, SENTINEL, np.uint32), "w") for _ in range(2)]
    rig.accel.hold_submissions()
    first = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
    second, third = (rig.submit(program, {0: (src, "r"), 1: (out, "w")}) for out in outs)
    assert [e.submission.phase.name for e in (first, second, third)] == ["GATED", "DEFERRED", "DEFERRED"]
    assert rig.accel.poll_event(third) == EventState.PENDING
    rig.accel.cancel_event(second)  # deferred: the driver never sees it
    rig.accel.hold_submissions(False)
    rig.accel.release_held(first)
    assert rig.wait(third) == EventState.COMPLETE  # released by the policy, driven by polling
    assert rig.wait(first) == EventState.COMPLETE
    assert rig.accel.poll_event(second) == EventState.CANCELLED
    assert np.array_equal(_out(rig, dst), EXPECTED) and np.array_equal(_out(rig, outs[1]), EXPECTED)
    assert np.array_equal(_out(rig, outs[0]), UNTOUCHED)


def test_cancelling_inside_a_burst_has_one_truthful_outcome_each(rig: Any, make_package: Any) -> None:
    """Four slow submissions back to back, then cancel the last two: each cancel either wins
    (Cancelled, output untouched) or loses with BUSY (Complete, output written)."""
    program = rig.load(make_package(source=SLOW_SOURCE))
    params = rig.buffer(np.array([1 << 18], np.uint32), "r")
    outs = [rig.buffer(np.full(64, SENTINEL, np.uint32), "w") for _ in range(4)]
    events = [rig.submit(program, {0: (params, "r"), 1: (out, "w")}) for out in outs]
    assert events[0].submission.phase.name == "RELEASED"  # an idle queue releases at admission
    won = []
    for event in events[2:]:
        try:
            rig.accel.cancel_event(event)
            won.append(True)
        except BackendError as exc:
            assert exc.kind is ErrorKind.BUSY
            won.append(False)
    assert rig.wait(events[0]) == EventState.COMPLETE and rig.wait(events[1]) == EventState.COMPLETE
    reference = rig.read(outs[0])
    assert rig.read(outs[1]) == reference != UNTOUCHED[:64].tobytes()
    for event, out, cancelled in zip(events[2:], outs[2:], won, strict=True):
        if cancelled:
            assert rig.wait(event) == EventState.CANCELLED and rig.read(out) == UNTOUCHED[:64].tobytes()
        else:
            assert rig.wait(event) == EventState.COMPLETE and rig.read(out) == reference
    again = rig.submit(program, {0: (params, "r"), 1: (outs[3], "w")})  # the queue keeps working
    assert rig.wait(again) == EventState.COMPLETE and rig.read(outs[3]) == reference


def test_a_gated_successor_runs_after_a_cancelled_predecessor(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    other = rig.buffer(np.full(N, SENTINEL, np.uint32), "w")
    rig.accel.hold_submissions()
    first = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
    second = rig.submit(program, {0: (src, "r"), 1: (other, "w")})
    rig.accel.cancel_event(first)
    rig.accel.release_held(second)
    assert rig.wait(second) == EventState.COMPLETE
    assert np.array_equal(_out(rig, other), EXPECTED) and np.array_equal(_out(rig, dst), UNTOUCHED)


def test_partial_ranges_bind_sub_buffers_and_size_the_grid(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    align = rig.accel.memory.base_alignment
    start = align if align < N * 4 else 0
    length = N * 4 - start - 4 * 16
    bindings = [
        BindingRef(0, src, BufferRange(start, length), AccessMode.READ),
        BindingRef(1, dst, BufferRange(start, length), AccessMode.WRITE),
    ]
    event = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    rig.events.append(event)
    assert rig.wait(event) == EventState.COMPLETE
    got = _out(rig, dst)
    first, count = start // 4, length // 4
    assert np.array_equal(got[first : first + count], np.arange(first, first + count, dtype=np.uint32) * 2 + 1)
    assert np.array_equal(got[:first], UNTOUCHED[:first]) and np.array_equal(
        got[first + count :], UNTOUCHED[first + count :]
    )


def test_submission_validation(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    whole = BufferRange(0, N * 4)

    def rejected(bindings: list[Any]) -> ErrorKind:
        with pytest.raises(SubmitRejected) as info:
            rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
        return info.value.error.kind

    r, w = AccessMode.READ, AccessMode.WRITE
    assert rejected([]) is ErrorKind.RESOURCE_LIMIT
    assert rejected([BindingRef(0, src, whole, r), BindingRef(0, dst, whole, w)]) is ErrorKind.INVALID_ARGUMENT
    assert rejected([BindingRef(0, src, BufferRange(4, N * 4), r), BindingRef(1, dst, whole, w)]) is (
        ErrorKind.OUT_OF_BOUNDS
    )
    assert rejected([BindingRef(0, src, whole, r)]) is ErrorKind.INCOMPATIBLE  # slot 1 missing
    assert rejected([BindingRef(0, src, whole, r), BindingRef(1, dst, whole, w), BindingRef(2, dst, whole, w)]) is (
        ErrorKind.INCOMPATIBLE  # slot 2 is not in the package
    )
    assert rejected([BindingRef(0, src, whole, w), BindingRef(1, dst, whole, w)]) is ErrorKind.PERMISSION_DENIED
    if rig.accel.memory.base_alignment > 4:
        misaligned = BufferRange(4, N * 4 - 4)
        assert rejected([BindingRef(0, src, misaligned, r), BindingRef(1, dst, misaligned, w)]) is (
            ErrorKind.INCOMPATIBLE
        )
    other_ctx = rig.accel.create_context(ContextDesc())
    try:
        from accelcore import BufferDesc

        foreign = rig.accel.allocate_buffer(other_ctx, BufferDesc(N * 4, 16, rig.domain, dst.info.desc.usage)).buffer
        assert rejected([BindingRef(0, src, whole, r), BindingRef(1, foreign, whole, w)]) is ErrorKind.INVALID_ARGUMENT
        rig.accel.free_buffer(foreign)
    finally:
        rig.accel.destroy_context(other_ctx)
    assert rig.accel.live_resources()["user_events"] == 0


def test_event_resources_are_released_with_the_event(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    align = rig.accel.memory.base_alignment
    event = rig.accel.submit(
        rig.queue,
        program,
        [
            BindingRef(0, src, BufferRange(0, align), AccessMode.READ),
            BindingRef(1, dst, BufferRange(0, align), AccessMode.WRITE),
        ],
        Timeout.INFINITE,
    )
    live = rig.accel.live_resources()
    # An idle queue releases at admission, so the kernel is enqueued without a gate.
    assert live["user_events"] == 0 and live["kernel_events"] == 1 and live["sub_buffers"] == 2
    with pytest.raises(ReleaseRejected):
        rig.accel.free_buffer(src)  # still bound to a live event
    assert rig.wait(event) == EventState.COMPLETE
    rig.accel.destroy_event(event)
    live = rig.accel.live_resources()
    # The event's kernel event is gone; the two views stay with their buffers until these are freed.
    assert live["user_events"] == 0 and live["kernel_events"] == 0 and live["sub_buffers"] == 2
    rig.accel.free_buffer(src)
    rig.accel.free_buffer(dst)
    rig.buffers.remove(src)
    rig.buffers.remove(dst)
    assert rig.accel.live_resources()["sub_buffers"] == 0


def test_a_bound_range_keeps_its_sub_buffer_and_ranges_past_the_kept_ones_own_theirs(
    rig: Any, make_package: Any
) -> None:
    """The first ``_VIEWS_KEPT`` distinct ranges of a buffer get a sub-buffer that every later submission
    of that range reuses (no clCreateSubBuffer per call); any further range's sub-buffer belongs to its
    submission and is released with its event. Every one binds the right bytes."""
    align = rig.accel.memory.base_alignment
    kept = rig.accel._VIEWS_KEPT
    lengths = [align * (i + 1) for i in range(kept + 2)]  # kept + 2 distinct ranges at offset 0
    size = (lengths[-1] + align) // 4  # longer than every range: none is the whole buffer
    expected, untouched = np.arange(size, dtype=np.uint32) * 2 + 1, np.full(size, SENTINEL, np.uint32)
    program = rig.load(make_package())
    src, dst = rig.buffer(np.arange(size, dtype=np.uint32), "r"), rig.buffer(untouched, "w")
    seen: list[Any] = []
    for round_ in range(2):
        for i, length in enumerate(lengths):
            rig.accel.write_buffer(dst, 0, MemorySource(untouched.tobytes()))
            bindings = [
                BindingRef(0, src, BufferRange(0, length), AccessMode.READ),
                BindingRef(1, dst, BufferRange(0, length), AccessMode.WRITE),
            ]
            event = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
            owned = len(event.submission.sub_buffers)
            assert owned == (0 if i < kept else 2), (i, owned)
            natives = [native for index, native in event.submission.arguments if index in (0, 1)]
            assert rig.wait(event) == EventState.COMPLETE
            rig.accel.destroy_event(event)
            got = _out(rig, dst)
            count = length // 4
            assert np.array_equal(got[:count], expected[:count]) and np.array_equal(got[count:], untouched[count:])
            if i < kept:
                if round_ == 0:
                    seen.append(natives)
                else:  # the very same sub-buffer objects as the first round's
                    assert all(map(operator.is_, natives, seen[i]))
            assert rig.accel.live_resources()["sub_buffers"] == 2 * min(kept, len(lengths) if round_ else i + 1)
    assert len(src.views) == kept and len(dst.views) == kept


def test_a_held_submission_holds_a_gate_until_its_event_is_destroyed(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    rig.accel.hold_submissions()
    event = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
    live = rig.accel.live_resources()
    assert live["user_events"] == 1 and live["kernel_events"] == 1
    assert rig.accel.poll_event(event) == EventState.PENDING
    rig.accel.release_held(event)
    assert rig.wait(event) == EventState.COMPLETE
    rig.accel.destroy_event(event)
    rig.events.remove(event)
    live = rig.accel.live_resources()
    assert live["user_events"] == 0 and live["kernel_events"] == 0


def test_polling_retains_no_memory(rig: Any, make_package: Any) -> None:
    """10 000 polls of a pending and of a completed event leave no allocation behind."""
    import tracemalloc

    program, src, dst = _twice_rig(rig, make_package)
    rig.accel.hold_submissions()
    event = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
    for label in ("pending", "complete"):
        if label == "complete":
            rig.accel.release_held(event)
            rig.wait(event)
        for _ in range(100):
            rig.accel.poll_event(event)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(10_000):
                rig.accel.poll_event(event)
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert grown < 4096, f"{label}: 10 000 polls kept {grown} bytes"


def test_deferred_submission_past_its_deadline_never_runs(rig: Any, make_package: Any) -> None:
    program, src, dst = _twice_rig(rig, make_package)
    late = rig.buffer(np.full(N, SENTINEL, np.uint32), "w")
    rig.accel.hold_submissions()
    first = rig.submit(program, {0: (src, "r"), 1: (dst, "w")})
    second = rig.submit(program, {0: (src, "r"), 1: (late, "w")}, Timeout.after_ns(1_000_000))
    assert second.submission.phase.name == "DEFERRED"
    time.sleep(0.005)
    state = rig.accel.poll_event(second)
    assert state.error is not None and state.error.kind is ErrorKind.DEADLINE_EXPIRED
    rig.accel.release_held(first)
    assert rig.wait(first) == EventState.COMPLETE
    assert np.array_equal(_out(rig, late), UNTOUCHED) and np.array_equal(_out(rig, dst), EXPECTED)


def test_submission_cycles_retain_nothing(rig: Any, make_package: Any) -> None:
    """submit + poll + destroy 1000 times keeps no more memory than 100 times (regression:
    each gated tail once kept a reference to its predecessor, a chain of every submission)."""
    import gc
    import tracemalloc

    program, src, dst = _twice_rig(rig, make_package)
    bindings = [
        BindingRef(0, src, BufferRange(0, N * 4), AccessMode.READ),
        BindingRef(1, dst, BufferRange(0, N * 4), AccessMode.WRITE),
    ]

    def cycles(count: int) -> int:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(count):
                event = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
                while not rig.accel.poll_event(event).is_terminal:
                    pass
                rig.accel.destroy_event(event)
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()

    cycles(20)
    few, many = cycles(100), cycles(1000)
    assert many <= few + 16384, (few, many)


def _ranged_run(entry: Any, make_package: Any, views_kept: int | None = None) -> tuple[Any, ...]:
    """A fresh instance with a context, queue, the ``twice`` program and two host buffers, and one
    completed submission binding a base-alignment range of each: (accel, context, queue, program, src,
    dst, event). ``views_kept`` overrides the instance's ``_VIEWS_KEPT``."""
    from accel_opencl import provider_family

    from accelcore import BufferDesc, BufferUsage, MemoryDomain, QueueDesc

    accel = provider_family.open(entry)
    if views_kept is not None:
        accel._VIEWS_KEPT = views_kept
    context = accel.create_context(ContextDesc())
    queue = accel.create_queue(context, QueueDesc())
    program = accel.load_package(context, make_package(), 64 << 20)
    transfer = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
    src = accel.allocate_buffer(context, BufferDesc(N * 4, 16, MemoryDomain.HOST, transfer | BufferUsage.PROGRAM_INPUT))
    dst = accel.allocate_buffer(
        context, BufferDesc(N * 4, 16, MemoryDomain.HOST, transfer | BufferUsage.PROGRAM_OUTPUT)
    )
    align = accel.memory.base_alignment
    event = accel.submit(
        queue,
        program,
        [
            BindingRef(0, src.buffer, BufferRange(0, align), AccessMode.READ),
            BindingRef(1, dst.buffer, BufferRange(0, align), AccessMode.WRITE),
        ],
        Timeout.INFINITE,
    )
    deadline = time.monotonic() + 60
    while not accel.poll_event(event).is_terminal and time.monotonic() < deadline:
        time.sleep(0.001)
    assert accel.poll_event(event) == EventState.COMPLETE
    return accel, context, queue, program, src, dst, event


def test_a_failed_sub_buffer_release_makes_destroy_event_indeterminate(entry: Any, make_package: Any) -> None:
    """destroy_event whose native sub-buffer release fails: ReleaseIndeterminate, never a raw binding error."""
    from accelcore import ReleaseIndeterminate

    # No kept views: the submission owns its sub-buffers (as for ranges past the kept ones).
    accel, context, queue, program, src, dst, event = _ranged_run(entry, make_package, views_kept=0)
    event.submission.sub_buffers[0].release()  # gone already: the provider's own release now fails natively
    with pytest.raises(ReleaseIndeterminate) as info:
        accel.destroy_event(event)
    assert "clReleaseMemObject" in str(info.value)
    live = accel.live_resources()
    assert live["sub_buffers"] == 0 and live["kernel_events"] == 0 and live["indeterminate"] == 1
    accel.free_buffer(src.buffer)  # the event no longer pins its buffers
    accel.free_buffer(dst.buffer)
    accel.unload_program(program)
    accel.destroy_queue(queue)
    accel.destroy_context(context)


def test_a_failed_release_of_a_kept_sub_buffer_makes_free_buffer_indeterminate(entry: Any, make_package: Any) -> None:
    """A kept view whose native release fails when its buffer is freed: the buffer is still released
    natively and gone, and free_buffer raises ReleaseIndeterminate naming the call (never a raw error)."""
    from accelcore import ReleaseIndeterminate

    accel, context, queue, program, src, dst, event = _ranged_run(entry, make_package)
    accel.destroy_event(event)
    assert accel.live_resources()["sub_buffers"] == 2
    next(iter(src.buffer.views.values())).release()  # gone already: the provider's own release now fails
    with pytest.raises(ReleaseIndeterminate) as info:
        accel.free_buffer(src.buffer)
    assert "clReleaseMemObject" in str(info.value) and "sub-buffer" in str(info.value)
    live = accel.live_resources()
    assert live["sub_buffers"] == 1 and live["buffers"] == 1 and live["indeterminate"] == 1
    assert not src.buffer.live and not src.buffer.views
    next(iter(dst.buffer.views.values())).release()  # the view and the buffer itself both fail now:
    dst.buffer.native.release()  # one indeterminate each, the first failure raised
    with pytest.raises(ReleaseIndeterminate) as info:
        accel.free_buffer(dst.buffer)
    assert "sub-buffer" in str(info.value)
    live = accel.live_resources()
    assert live["sub_buffers"] == 0 and live["buffers"] == 0 and live["indeterminate"] == 3
    accel.unload_program(program)
    accel.destroy_queue(queue)
    accel.destroy_context(context)


def test_the_driver_window_bounds_released_work_and_later_submissions_stay_cancellable(
    rig: Any, make_package: Any
) -> None:
    """With a window of 2, of six slow submissions at most two are with the driver (cancel: BUSY)
    and the rest wait on the host (cancel wins, output untouched); they follow in order as the
    window frees, and every event ends in exactly the state its cancel announced."""
    program = rig.load(make_package(source=SLOW_SOURCE))
    params = rig.buffer(np.array([60_000], np.uint32), "r")  # under llvmpipe's 65535-iteration loop limit
    gates = rig.queue.gates
    gates.window = 2
    outs = [rig.buffer(np.full(64, SENTINEL, np.uint32), "w") for _ in range(6)]
    events = [rig.submit(program, {0: (params, "r"), 1: (out, "w")}) for out in outs]
    phases = [event.submission.phase.name for event in events]
    assert phases.count("RELEASED") <= 2 and gates.in_window() <= 2, phases
    assert phases[-1] == "DEFERRED", phases  # the slow kernels cannot all have ended already
    with pytest.raises(BackendError) as info:
        rig.accel.cancel_event(events[0])
    assert info.value.kind is ErrorKind.BUSY
    won = {}
    for index in (3, 5):
        deferred = events[index].submission.phase.name == "DEFERRED"
        try:
            rig.accel.cancel_event(events[index])
            won[index] = True
        except BackendError as exc:
            assert exc.kind is ErrorKind.BUSY
            won[index] = False
        assert won[index] is deferred, f"submission {index}: deferred={deferred}, cancel won={won[index]}"
    assert won[5], "the newest submission was not kept on the host"
    for index, event in enumerate(events):
        state = rig.wait(event)
        assert gates.in_window() <= 2
        if won.get(index):
            assert state == EventState.CANCELLED and rig.read(outs[index]) == UNTOUCHED[:64].tobytes()
        else:
            assert state == EventState.COMPLETE and rig.read(outs[index]) != UNTOUCHED[:64].tobytes()
    released = [e.submission.seq for i, e in enumerate(events) if not won.get(i)]
    assert released == sorted(released) and 0 not in released, "the queue released out of order"


def test_work_behind_a_full_window_reaches_the_driver_without_polls(rig: Any, make_package: Any) -> None:
    """A caller that submits more than the window and then sleeps still gets everything run: the
    window's completion callback pumps the queue."""
    program = rig.load(make_package(source=SLOW_SOURCE))
    params = rig.buffer(np.array([30_000], np.uint32), "r")
    out = rig.buffer(np.full(64, SENTINEL, np.uint32), "w")
    gates = rig.queue.gates
    gates.window = 2
    events = [rig.submit(program, {0: (params, "r"), 1: (out, "w")}) for _ in range(12)]
    assert gates.waiting() > 0
    give_up = time.monotonic() + 10
    while gates.waiting() and time.monotonic() < give_up:
        time.sleep(0.01)  # no provider call: only the driver's callbacks can move the queue
    assert gates.waiting() == 0, f"{gates.waiting()} submissions never left the host"
    assert gates.callbacks_armed > 0
    assert all(rig.wait(event) == EventState.COMPLETE for event in events)
