"""The recorded-dispatch cache: reuse is right, never touches a pending or destroyed object, stays bounded."""

from __future__ import annotations

from typing import Any

import pytest
from accel_vulkan.recording import IDLE_PER_CONTEXT

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
from accelcore.conformance.corpus import compare, load_package, make_case

from .conftest import VK, Rig

R, W = AccessMode.READ, AccessMode.WRITE


def _program(rig: Rig) -> Any:
    return rig.programs[0] if rig.programs else rig.load(load_package("conformance", VK))


def _run(rig: Rig, program: Any, bindings: list[BindingRef[Any]]) -> Any:
    event = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    assert rig.wait(event) == EventState.COMPLETE
    return event


def _cached(rig: Rig) -> int:
    return len(rig.context.recordings)


def _live(rig: Rig, kind: str) -> int:
    return int(rig.accel.live_resources().get(kind, 0))


def test_same_dispatch_reuses_one_recording_and_sees_new_data(rig: Rig) -> None:
    program = _program(rig)
    first = make_case("conformance", 256, 0)
    src = rig.buffer(first.initial_bytes(0), R)
    dst = rig.buffer(first.initial_bytes(1), W)
    bindings = rig.bind({0: (src, R), 1: (dst, W)})
    seen = set()
    for seed in range(12):
        case = make_case("conformance", 256, seed)
        rig.accel.write_buffer(src, 0, MemorySource(case.initial_bytes(0)))
        rig.accel.write_buffer(dst, 0, MemorySource(case.initial_bytes(1)))
        event = _run(rig, program, bindings)
        seen.add(id(event.recording))
        assert compare(case, 1, rig.read(dst)) is None, f"seed {seed}"
        rig.accel.destroy_event(event)
    assert len(seen) == 1, "an identical dispatch recorded again instead of reusing the idle recording"
    assert _cached(rig) == 1 and _live(rig, "VkCommandBuffer") == 1 and _live(rig, "VkDescriptorSet") == 1


def test_changing_bindings_ranges_and_counts_stay_right(rig: Rig) -> None:
    """Rotating buffers, sub-ranges and element counts (pushed) with several events in flight."""
    program = _program(rig)
    align = max(16, rig.accel.description.min_storage_buffer_offset_alignment)
    pool = [(rig.buffer(bytes(4096), R), rig.buffer(bytes(4096), W)) for _ in range(3)]
    plans = []
    for step in range(36):
        src, dst = pool[step % 3]
        elements = (64, 100, 256, 17)[step % 4]
        offset = align * (step % 5)
        plans.append((src, dst, elements, offset, make_case("conformance", elements, step)))
    for start in range(0, len(plans), 3):
        batch = plans[start : start + 3]
        # Three in flight at once must use three buffer pairs: a later one would overwrite an earlier one's data.
        events = []
        for src, dst, elements, offset, case in batch:
            nbytes = 4 * elements
            rig.accel.write_buffer(src, offset, MemorySource(case.initial_bytes(0)))
            rig.accel.write_buffer(dst, offset, MemorySource(case.initial_bytes(1)))
            bindings = [
                BindingRef(0, src, BufferRange(offset, nbytes), R),
                BindingRef(1, dst, BufferRange(offset, nbytes), W),
            ]
            events.append(rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE))
        for event, (_src, dst, elements, offset, case) in zip(events, batch, strict=True):
            assert rig.wait(event) == EventState.COMPLETE
            got = rig.read(dst)[offset : offset + 4 * elements]
            assert compare(case, 1, got) is None, f"{elements} elements at offset {offset}"
            rig.accel.destroy_event(event)
    assert _cached(rig) <= IDLE_PER_CONTEXT


def test_a_recording_held_by_a_live_event_is_never_reused(rig: Rig) -> None:
    program = _program(rig)
    case = make_case("conformance", 256, 3)
    src, dst = rig.buffer(case.initial_bytes(0), R), rig.buffer(case.initial_bytes(1), W)
    bindings = rig.bind({0: (src, R), 1: (dst, W)})
    rig.accel.destroy_event(_run(rig, program, bindings))
    assert _cached(rig) == 1
    rig.accel.hold()
    first = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    second = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    assert first.recording is not second.recording and _cached(rig) == 0
    rig.accel.release()
    for event in (first, second):
        assert rig.wait(event) == EventState.COMPLETE
        rig.accel.destroy_event(event)
    assert _cached(rig) == 2 and _live(rig, "VkCommandBuffer") == 2
    assert compare(case, 1, rig.read(dst)) is None


def test_free_buffer_frees_its_recordings_and_the_handle_is_refused(rig: Rig) -> None:
    program = _program(rig)
    case = make_case("conformance", 256, 4)
    src, dst = rig.buffer(case.initial_bytes(0), R), rig.buffer(case.initial_bytes(1), W)
    other = rig.buffer(case.initial_bytes(0), R)
    bindings = rig.bind({0: (src, R), 1: (dst, W)})
    rig.accel.destroy_event(_run(rig, program, bindings))
    rig.accel.destroy_event(_run(rig, program, rig.bind({0: (other, R), 1: (dst, W)})))
    assert _cached(rig) == 2
    rig.accel.free_buffer(src)
    rig.buffers.remove(src)
    assert _cached(rig) == 1 and _live(rig, "VkCommandBuffer") == 1
    with pytest.raises(SubmitRejected) as info:
        rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT
    # A new buffer (possibly at the freed one's address) gets a fresh recording and the right result.
    fresh = rig.buffer(case.initial_bytes(0), R)
    rig.accel.write_buffer(dst, 0, MemorySource(case.initial_bytes(1)))
    rig.accel.destroy_event(_run(rig, program, rig.bind({0: (fresh, R), 1: (dst, W)})))
    assert compare(case, 1, rig.read(dst)) is None
    rig.accel.free_buffer(dst)
    rig.buffers.remove(dst)
    assert _cached(rig) == 0 and _live(rig, "VkCommandBuffer") == 0 and _live(rig, "VkDescriptorSet") == 0


def test_unload_program_frees_its_recordings(rig: Rig) -> None:
    program = _program(rig)
    case = make_case("conformance", 256, 5)
    src, dst = rig.buffer(case.initial_bytes(0), R), rig.buffer(case.initial_bytes(1), W)
    rig.accel.destroy_event(_run(rig, program, rig.bind({0: (src, R), 1: (dst, W)})))
    assert _cached(rig) == 1
    rig.accel.unload_program(program)
    rig.programs.remove(program)
    assert _cached(rig) == 0 and _live(rig, "VkCommandBuffer") == 0 and _live(rig, "VkPipeline") == 0


def test_cache_stays_bounded_and_a_full_pool_yields_idle_sets(rig: Rig) -> None:
    program = _program(rig)
    src, dst = rig.buffer(bytes(4096), R), rig.buffer(bytes(4096), W)
    rig.context.recordings.limit = 4
    for elements in range(1, 11):  # ten distinct keys (the pushed count differs)
        case = make_case("conformance", elements, elements)
        rig.accel.write_buffer(src, 0, MemorySource(case.initial_bytes(0)))
        bindings = [
            BindingRef(0, src, BufferRange(0, 4 * elements), R),
            BindingRef(1, dst, BufferRange(0, 4 * elements), W),
        ]
        rig.accel.destroy_event(_run(rig, program, bindings))
        assert compare(case, 1, rig.read(dst)[: 4 * elements]) is None
        assert _cached(rig) <= 4 and _live(rig, "VkCommandBuffer") <= 4
    # With the descriptor pool "full" of idle sets, a new dispatch frees the oldest instead of failing.
    rig.context.descriptor_sets_max = rig.context.descriptor_sets_live
    case = make_case("conformance", 200, 11)
    rig.accel.write_buffer(src, 0, MemorySource(case.initial_bytes(0)))
    bindings = [BindingRef(0, src, BufferRange(0, 800), R), BindingRef(1, dst, BufferRange(0, 800), W)]
    event = _run(rig, program, bindings)
    assert compare(case, 1, rig.read(dst)[:800]) is None
    assert rig.context.descriptor_sets_live <= rig.context.descriptor_sets_max
    rig.accel.destroy_event(event)


def test_rejected_submission_gives_a_cached_recording_back(rig: Rig) -> None:
    program = _program(rig)
    case = make_case("conformance", 256, 6)
    src, dst = rig.buffer(case.initial_bytes(0), R), rig.buffer(case.initial_bytes(1), W)
    bindings = rig.bind({0: (src, R), 1: (dst, W)})
    rig.accel.destroy_event(_run(rig, program, bindings))
    before = {k: v for k, v in rig.accel.live_resources().items() if v}
    with pytest.raises(SubmitRejected) as info:
        rig.accel.submit(rig.queue, program, bindings, Timeout.after_ns(1))
    assert info.value.kind is ErrorKind.DEADLINE_EXPIRED
    assert {k: v for k, v in rig.accel.live_resources().items() if v} == before and _cached(rig) == 1
    assert src.events == 0 and program.events == 0


def test_close_frees_idle_recordings(make_accel: Any) -> None:
    accel = make_accel()
    rig = Rig(accel)
    program = _program(rig)
    case = make_case("conformance", 64, 7)
    src, dst = rig.buffer(case.initial_bytes(0), R), rig.buffer(case.initial_bytes(1), W)
    other = rig.buffer(case.initial_bytes(0), R)
    _run(rig, program, rig.bind({0: (src, R), 1: (dst, W)}))  # event left live: close() must cope
    accel.destroy_event(_run(rig, program, rig.bind({0: (other, R), 1: (dst, W)})))
    assert len(rig.context.recordings) == 1
    accel.close()
    assert not any(accel.live_resources().values())


def test_remembered_binding_sets_never_admit_different_values(rig: Rig) -> None:
    """A memoised valid binding set must not let an unequal one skip validation."""
    program = _program(rig)
    case = make_case("conformance", 64, 8)
    src, dst = rig.buffer(case.initial_bytes(0), R), rig.buffer(case.initial_bytes(1), W)
    good = rig.bind({0: (src, R), 1: (dst, W)})
    rig.accel.destroy_event(_run(rig, program, good))
    assert len(rig.context.plans) == 1
    bad = {
        ErrorKind.OUT_OF_BOUNDS: [good[0], BindingRef(1, dst, BufferRange(16, dst.desc.bytes), W)],
        ErrorKind.PERMISSION_DENIED: [BindingRef(0, src, BufferRange(0, 256), AccessMode.READ_WRITE), good[1]],
        ErrorKind.INCOMPATIBLE: [good[0]],
        ErrorKind.INVALID_ARGUMENT: [good[0], good[0]],
    }
    for kind, bindings in bad.items():
        with pytest.raises(SubmitRejected) as info:
            rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
        assert info.value.kind is kind, f"expected {kind.name}, got {info.value}"
    assert len(rig.context.plans) == 1 and src.events == 0 and dst.events == 0
    rig.accel.destroy_event(_run(rig, program, list(good)))  # an equal, fresh list: same plan
    assert len(rig.context.plans) == 1
    rig.context.plans.limit = 3
    for elements in range(1, 8):
        bindings = [
            BindingRef(0, src, BufferRange(0, 4 * elements), R),
            BindingRef(1, dst, BufferRange(0, 4 * elements), W),
        ]
        rig.accel.destroy_event(_run(rig, program, bindings))
        assert len(rig.context.plans) <= 3
    rig.accel.free_buffer(src)
    rig.buffers.remove(src)
    assert len(rig.context.plans) == 0


def test_events_of_one_queue_polled_in_any_order(rig: Rig) -> None:
    program = _program(rig)
    cases = [make_case("conformance", 64, 20 + i) for i in range(3)]
    pairs = [(rig.buffer(c.initial_bytes(0), R), rig.buffer(c.initial_bytes(1), W)) for c in cases]
    events = [
        rig.accel.submit(rig.queue, program, rig.bind({0: (s, R), 1: (d, W)}), Timeout.INFINITE) for s, d in pairs
    ]
    assert rig.wait(events[-1]) == EventState.COMPLETE
    # The last event's counter read already covers the earlier ones (one queue, in order).
    for event in events[:-1]:
        assert rig.accel.poll_event(event) == EventState.COMPLETE
    for case, (_src, dst) in zip(cases, pairs, strict=True):
        assert compare(case, 1, rig.read(dst)) is None
    for event in events:
        rig.accel.destroy_event(event)


@pytest.mark.parametrize("kind", [ErrorKind.OUT_OF_MEMORY, ErrorKind.EXTERNAL], ids=["oom", "unknown"])
def test_failed_hand_over_keeps_the_books(rig: Rig, monkeypatch: pytest.MonkeyPatch, kind: ErrorKind) -> None:
    """A vkQueueSubmit failure (injected in front of the real hand-over, which is then not called).

    Out of memory: SubmitRejected, the cached recording goes back. Anything else: SubmitIndeterminate,
    the event ends Failed and its recording is freed on destroy, never cached again.
    """
    from accel_vulkan import submission

    from accelcore import BackendError, SubmitIndeterminate

    program = _program(rig)
    case = make_case("conformance", 64, 9)
    src, dst = rig.buffer(case.initial_bytes(0), R), rig.buffer(case.initial_bytes(1), W)
    bindings = rig.bind({0: (src, R), 1: (dst, W)})
    rig.accel.destroy_event(_run(rig, program, bindings))
    before = {k: v for k, v in rig.accel.live_resources().items() if v}

    def failing(event: Any) -> None:
        if kind is ErrorKind.EXTERNAL:
            raise BackendError.external(0x564B0001, -13, "injected vkQueueSubmit failure (VK_ERROR_UNKNOWN)")
        raise BackendError(kind, "injected vkQueueSubmit failure")

    monkeypatch.setattr(submission, "hand_over", failing)
    if kind is ErrorKind.OUT_OF_MEMORY:
        with pytest.raises(SubmitRejected) as rejected:
            rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
        assert rejected.value.kind is ErrorKind.OUT_OF_MEMORY
        assert {k: v for k, v in rig.accel.live_resources().items() if v} == before and _cached(rig) == 1
        return
    with pytest.raises(SubmitIndeterminate) as unknown:
        rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    event = unknown.value.event
    state = rig.accel.poll_event(event)
    assert state.error is not None and state.error.kind is ErrorKind.EXTERNAL
    assert _cached(rig) == 0
    rig.accel.destroy_event(event)
    assert _cached(rig) == 0 and _live(rig, "VkCommandBuffer") == 0
    monkeypatch.undo()
    rig.accel.destroy_event(_run(rig, program, bindings))  # records afresh and runs right
    assert compare(case, 1, rig.read(dst)) is None and _cached(rig) == 1


def test_a_bindingref_subclass_cannot_borrow_a_remembered_verdict(rig: Rig) -> None:
    """Only plain BindingRefs key the memo: a subclass that claims equality with a valid set is checked."""
    program = _program(rig)
    case = make_case("conformance", 64, 8)
    src, dst = rig.buffer(case.initial_bytes(0), R), rig.buffer(case.initial_bytes(1), W)
    good = rig.bind({0: (src, R), 1: (dst, W)})
    rig.accel.destroy_event(_run(rig, program, good))
    twin = good[1]

    class Liar(BindingRef[Any]):
        def __eq__(self, other: object) -> bool:
            return other == twin or other is self

        def __hash__(self) -> int:
            return hash(twin)

    past_the_end = Liar(1, dst, BufferRange(16, dst.desc.bytes), W)
    with pytest.raises(SubmitRejected) as info:
        rig.accel.submit(rig.queue, program, [good[0], past_the_end], Timeout.INFINITE)
    assert info.value.kind is ErrorKind.OUT_OF_BOUNDS
    assert len(rig.context.plans) == 1 and dst.events == 0
