"""The provider's per-call shortcuts keep every promise.

* Submission checks are remembered per program for the last few lists of the very same BindingRef
  objects (calls alternating between lists all hit; the oldest is dropped past ``_PLANS_KEPT``):
  a freed buffer or an unloaded program is still refused, an invalid list is still refused, and a
  reused list object with new contents is checked again.
* Kernel arguments are set only when they changed: results stay right across many submissions
  with changing buffers, ranges (sub-buffers) and element counts, and after a buffer is freed and
  another allocated.
* A submission released at admission is enqueued without a gate; one that must wait keeps one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from accelcore import (
    AccessMode,
    BindingRef,
    BufferRange,
    ErrorKind,
    EventState,
    MemorySource,
    SubmitRejected,
    Timeout,
)
from accelcore.conformance.corpus import SENTINEL

N = 256
R, W = AccessMode.READ, AccessMode.WRITE


def _run(rig: Any, program: Any, bindings: list[Any]) -> None:
    event = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    assert rig.wait(event) == EventState.COMPLETE
    rig.accel.destroy_event(event)


def _twice(rig: Any, make_package: Any) -> tuple[Any, Any, Any, BufferRange, list[Any]]:
    """The ``twice`` program, its source (0..N-1) and SENTINEL-filled destination buffers, the whole-buffer
    range and the binding list of the two: (program, src, dst, whole, bindings)."""
    program = rig.load(make_package())
    src = rig.buffer(np.arange(N, dtype=np.uint32), "r")
    dst = rig.buffer(np.full(N, SENTINEL, np.uint32), "w")
    whole = BufferRange(0, N * 4)
    return program, src, dst, whole, [BindingRef(0, src, whole, R), BindingRef(1, dst, whole, W)]


def _reset(rig: Any, dst: Any) -> None:
    rig.accel.write_buffer(dst, 0, MemorySource(np.full(N, SENTINEL, np.uint32)))


def _values(rig: Any, buffer: Any) -> np.ndarray:
    return np.frombuffer(rig.read(buffer), dtype=np.uint32)


def _expected(src_values: np.ndarray, src_range: BufferRange, dst_range: BufferRange) -> np.ndarray:
    """What ``twice`` leaves in a SENTINEL-filled dst: 2*src+1 over dst's range, read from src's range."""
    out = np.full(N, SENTINEL, np.uint32)
    count = dst_range.bytes // 4
    start, first = dst_range.offset // 4, src_range.offset // 4
    out[start : start + count] = src_values[first : first + count] * 2 + 1
    return out


def test_results_stay_right_across_many_submits_with_changing_bindings(rig: Any, make_package: Any) -> None:
    program = rig.load(make_package())
    sources = [np.arange(N, dtype=np.uint32) * 3, np.arange(N, dtype=np.uint32)[::-1].copy() + 1000]
    srcs = [rig.buffer(values, "r") for values in sources]
    dsts = [rig.buffer(np.full(N, SENTINEL, np.uint32), "w") for _ in range(2)]
    align = rig.accel.memory.base_alignment
    whole = BufferRange(0, N * 4)
    # (N - 5) elements: not a multiple of the local size, so a stale count argument would show.
    ranges = [whole, BufferRange(0, (N - 5) * 4)]
    if align <= N * 4 // 4:
        ranges += [BufferRange(align, N * 4 - 2 * align), BufferRange(0, N * 4 - align), BufferRange(align, align)]
    # A few list objects reused as they are (the remembered checks apply), others built fresh.
    reused = {i: [BindingRef(0, srcs[i], whole, R), BindingRef(1, dsts[1 - i], whole, W)] for i in range(2)}
    for step in range(40):
        s, d = step % 2, (step // 2) % 2
        if step % 5 == 0:
            bindings, s, d = reused[s], s, 1 - s
            src_range = dst_range = whole
        else:
            src_range = ranges[step % len(ranges)]
            dst_range = ranges[(step // 3) % len(ranges)]
            size = min(src_range.bytes, dst_range.bytes)
            src_range = BufferRange(src_range.offset, size)
            dst_range = BufferRange(dst_range.offset, size)
            bindings = [BindingRef(0, srcs[s], src_range, R), BindingRef(1, dsts[d], dst_range, W)]
        _reset(rig, dsts[d])
        _run(rig, program, bindings)
        assert np.array_equal(_values(rig, dsts[d]), _expected(sources[s], src_range, dst_range)), (
            f"step {step}: src {s} {src_range}, dst {d} {dst_range}"
        )
    live = rig.accel.live_resources()
    kept = [len(buffer.views) for buffer in srcs + dsts]
    # What outlives the events: each buffer's kept views (at most _VIEWS_KEPT), released with the buffer.
    assert all(count <= rig.accel._VIEWS_KEPT for count in kept) and sum(kept) > 0, kept
    assert live["sub_buffers"] == sum(kept) and live["kernel_events"] == 0 and live["user_events"] == 0
    for buffer in srcs + dsts:
        rig.accel.free_buffer(buffer)
        rig.buffers.remove(buffer)
    assert rig.accel.live_resources()["sub_buffers"] == 0


def test_alternating_lists_are_all_remembered(rig: Any, make_package: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_opencl import accelerator

    program = rig.load(make_package())
    whole = BufferRange(0, N * 4)
    kept = accelerator._PLANS_KEPT
    sources = [np.arange(N, dtype=np.uint32) + 7 * i for i in range(kept + 1)]
    srcs = [rig.buffer(values, "r") for values in sources]
    dst = rig.buffer(np.full(N, SENTINEL, np.uint32), "w")
    lists = [[BindingRef(0, src, whole, R), BindingRef(1, dst, whole, W)] for src in srcs]
    planned = []
    plan = rig.accel._plan_submission
    monkeypatch.setattr(rig.accel, "_plan_submission", lambda p, key: planned.append(key) or plan(p, key))

    def cycle(count: int, rounds: int) -> None:
        for step in range(rounds * count):
            i = step % count
            _reset(rig, dst)
            _run(rig, program, lists[i])
            assert np.array_equal(_values(rig, dst), sources[i] * 2 + 1), f"step {step}: list {i}"

    cycle(2, 4)  # host arrays, device arrays, host arrays, ...: each list checked once
    assert len(planned) == 2
    cycle(kept, 2)  # as many lists as are kept: the two new ones checked once each
    assert len(planned) == kept
    planned.clear()
    # One more than kept, in turn: the first round checks only the new list, which evicts the oldest;
    # from then on each call's list is the one evicted just before, so every call is checked again.
    cycle(kept + 1, 2)
    assert len(planned) == 1 + (kept + 1)


def test_a_remembered_list_is_refused_once_its_buffer_is_freed(rig: Any, make_package: Any) -> None:
    program, src, dst, whole, bindings = _twice(rig, make_package)
    _run(rig, program, bindings)
    _run(rig, program, bindings)  # the checks are remembered now
    rig.accel.free_buffer(dst)
    rig.buffers.remove(dst)
    with pytest.raises(SubmitRejected) as info:
        rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT and "slot 1" in str(info.value)
    # A new buffer (possibly at the freed one's native address) is bound anew and written correctly.
    fresh = rig.buffer(np.full(N, SENTINEL, np.uint32), "w")
    _run(rig, program, [BindingRef(0, src, whole, R), BindingRef(1, fresh, whole, W)])
    assert np.array_equal(_values(rig, fresh), np.arange(N, dtype=np.uint32) * 2 + 1)
    assert rig.accel.live_resources()["buffers"] == 2


def test_a_remembered_list_is_refused_once_its_program_is_unloaded(rig: Any, make_package: Any) -> None:
    program, _src, dst, _whole, bindings = _twice(rig, make_package)
    _run(rig, program, bindings)
    rig.accel.unload_program(program)
    rig.programs.remove(program)
    assert program.checked == [] and program.bound == {}
    with pytest.raises(SubmitRejected) as info:
        rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT and "program" in str(info.value)
    again = rig.load(make_package())
    _reset(rig, dst)
    _run(rig, again, bindings)
    assert np.array_equal(_values(rig, dst), np.arange(N, dtype=np.uint32) * 2 + 1)


def test_invalid_lists_after_a_remembered_one_are_still_refused(rig: Any, make_package: Any) -> None:
    program, src, dst, whole, good = _twice(rig, make_package)
    _run(rig, program, good)

    def kind_of(bindings: list[Any]) -> ErrorKind:
        with pytest.raises(SubmitRejected) as info:
            rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
        return info.value.kind

    assert kind_of([BindingRef(0, src, whole, W), BindingRef(1, dst, whole, W)]) is ErrorKind.PERMISSION_DENIED
    assert kind_of([BindingRef(1, dst, whole, W)]) is ErrorKind.INCOMPATIBLE
    assert kind_of([BindingRef(0, src, BufferRange(0, N * 8), R), BindingRef(1, dst, whole, W)]) is (
        ErrorKind.OUT_OF_BOUNDS
    )
    # The same list object, changed in place, is checked again (its contents decide, not its identity).
    good[0] = BindingRef(0, src, whole, W)
    assert kind_of(good) is ErrorKind.PERMISSION_DENIED
    good[0] = BindingRef(0, src, whole, R)
    _reset(rig, dst)
    _run(rig, program, good)
    assert np.array_equal(_values(rig, dst), np.arange(N, dtype=np.uint32) * 2 + 1)
    assert rig.accel.live_resources()["kernel_events"] == 0


def test_only_a_submission_that_must_wait_gets_a_gate(rig: Any, make_package: Any) -> None:
    program, _src, dst, _whole, bindings = _twice(rig, make_package)
    gates = rig.queue.gates
    before = gates.ungated
    event = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    assert gates.ungated == before + 1 and event.submission.gate is None  # idle queue: released at once
    assert rig.wait(event) == EventState.COMPLETE
    rig.accel.destroy_event(event)
    rig.accel.hold_submissions()
    held = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    rig.events.append(held)
    assert gates.ungated == before + 1 and held.submission.gate is not None
    assert rig.accel.poll_event(held) == EventState.PENDING
    rig.accel.cancel_event(held)
    assert rig.accel.poll_event(held) == EventState.CANCELLED
    assert np.array_equal(_values(rig, dst), np.arange(N, dtype=np.uint32) * 2 + 1)


def test_pipelined_submissions_all_complete(rig: Any, make_package: Any) -> None:
    """Many submissions in flight (released, gated and deferred at once) all reach Complete.

    Regression: with one flush per pump, rusticl got a released kernel and the closed gate
    behind it in one flushed batch and ran neither (it waits for the whole batch's gates).
    """
    program, _src, dst, _whole, bindings = _twice(rig, make_package)
    events = [rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE) for _ in range(40)]
    phases = {event.submission.phase.name for event in events}
    for index, event in enumerate(events):
        assert rig.wait(event, limit_s=10.0) == EventState.COMPLETE, f"submission {index} of {phases}"
        rig.accel.destroy_event(event)
    assert np.array_equal(_values(rig, dst), np.arange(N, dtype=np.uint32) * 2 + 1)
