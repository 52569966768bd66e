"""The engine's fast paths (submit, poll, destroy_event, transfers) against its full checked path.

``submit`` decides the common case in one pass over plain ints and hands everything else to
``_submit_checked`` (the ordered checks). These tests pin that both give the same outcome: the
same error kind and message for bad input (with no provider call and no state change), the
same native bindings for good input, and right results across many submits with changing
bindings, released and re-allocated buffers and a provider that hands back a new handle.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from accelcore import (
    AccessMode,
    BackendError,
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    ErrorKind,
    EventState,
    MemoryDomain,
    MemorySink,
    ReleaseRejected,
    SubmitRejected,
    Timeout,
)
from accelcore.contract.buffers import validate_transfer
from accelcore.engine import CommandEngine, EngineState, IdTable, ObjectKind
from accelcore.testing import FaultAccelerator, ReferenceAccelerator

from .conftest import IN, OUT, N, Rig, add_artifact, populate

U = BufferUsage
R, W, RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE


class RecordingReference(ReferenceAccelerator):
    """The reference provider, remembering the native bindings of every submit it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[BindingRef[Any]]] = []

    def submit(self, queue: Any, program: Any, bindings: Sequence[BindingRef[Any]], timeout: Timeout) -> Any:
        self.seen.append(list(bindings))
        return super().submit(queue, program, bindings, timeout)


def recording_rig() -> tuple[Rig, RecordingReference]:
    reference = RecordingReference()
    faults = FaultAccelerator(reference)
    engine: CommandEngine[object, object, object, object, object] = CommandEngine(faults)
    return populate(engine, reference, faults), reference


class MyInt(int):
    """An int subclass: valid as an ID, but not the exact ``int`` the fast path takes."""


# -- BindingRef._trusted ------------------------------------------------------------------------


def test_trusted_binding_ref_equals_the_validated_one() -> None:
    rng = BufferRange(8, 16)
    for slot, access in ((0, R), (7, W), (2**32 - 1, RW)):
        fast = BindingRef._trusted(slot, "handle", rng, access)
        checked = BindingRef(slot, "handle", rng, access)
        assert fast == checked and hash(fast) == hash(checked)
        assert type(fast) is BindingRef and fast.access is checked.access
    with pytest.raises(AttributeError):
        fast.slot = 1  # type: ignore[misc]  # still frozen


@pytest.mark.parametrize("slot", [-1, 2**32, 1.0, True, "0"])
def test_the_public_binding_ref_constructor_still_validates(slot: Any) -> None:
    with pytest.raises(BackendError) as info:
        BindingRef(slot, 1, BufferRange(0, 4), R)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT and "BindingRef.slot" in info.value.message


# -- submit: fast path == checked path -------------------------------------------------------------

Change = Callable[[Rig], Any]

BAD_BINDINGS: dict[str, Change] = {
    "empty": lambda r: [],
    "duplicate-slot": lambda r: [*r.bindings(), (0, r.a, None, R)],
    "range-past-end": lambda r: [(0, r.a, BufferRange(4, 4 * N), R), *r.bindings()[1:]],
    "access-number-7": lambda r: [(0, r.a, None, 7), *r.bindings()[1:]],
    "access-text": lambda r: [(0, r.a, None, "read"), *r.bindings()[1:]],
    "access-none": lambda r: [(0, r.a, None, None), *r.bindings()[1:]],
    "slot-negative": lambda r: [(-1, r.a, None, R), *r.bindings()[1:]],
    "slot-too-big": lambda r: [(2**32, r.a, None, R), *r.bindings()[1:]],
    "slot-float": lambda r: [(0.0, r.a, None, R), *r.bindings()[1:]],
    "slot-bool": lambda r: [(False, r.a, None, R), *r.bindings()[1:]],
    "range-not-a-range": lambda r: [(0, r.a, (0, 4), R), *r.bindings()[1:]],
    "spec-too-short": lambda r: [(0, r.a, None), *r.bindings()[1:]],
    "spec-not-a-sequence": lambda r: [5, *r.bindings()[1:]],
    "too-many": lambda r: [(i, r.a, None, R) for i in range(9)],
    "permission": lambda r: [(0, r.a, None, W), *r.bindings()[1:]],
    "buffer-id-zero": lambda r: [(0, 0, None, R), *r.bindings()[1:]],
    "buffer-id-wrong-kind": lambda r: [(0, r.queue, None, R), *r.bindings()[1:]],
    "buffer-id-float": lambda r: [(0, float(r.a), None, R), *r.bindings()[1:]],
    "buffer-id-text": lambda r: [(0, str(r.a), None, R), *r.bindings()[1:]],
    "buffer-id-numpy": lambda r: [(0, np.uint64(r.a), None, R), *r.bindings()[1:]],
    "buffer-released": lambda r: [(0, _released_buffer(r), None, R), *r.bindings()[1:]],
    "buffer-other-context": lambda r: [(0, _foreign_buffer(r), None, R), *r.bindings()[1:]],
}


def _released_buffer(rig: Rig) -> int:
    buffer = rig.engine.allocate_buffer(rig.context, BufferDesc(4 * N, 16, MemoryDomain.HOST, IN))
    rig.engine.free_buffer(buffer)
    return buffer


def _foreign_buffer(rig: Rig) -> int:
    other = rig.engine.create_context()
    return rig.engine.allocate_buffer(other, BufferDesc(4 * N, 16, MemoryDomain.HOST, IN))


def _outcome(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any, str]:
    try:
        return ("ok", call(*args, **kwargs), "")
    except (BackendError, SubmitRejected) as exc:
        error = exc if isinstance(exc, BackendError) else exc.error
        return (type(exc).__name__, error.kind, error.message)


@pytest.mark.parametrize("name", sorted(BAD_BINDINGS))
def test_bad_bindings_fail_alike_on_both_paths_before_the_provider(name: str) -> None:
    rig, reference = recording_rig()
    bindings = BAD_BINDINGS[name](rig)
    objects, calls = rig.engine.objects(), dict(rig.faults.calls)
    fast = _outcome(lambda: rig.engine.submit(rig.queue, rig.program, bindings))
    checked = _outcome(lambda: rig.engine._submit_checked(rig.queue, rig.program, bindings, None))
    assert fast == checked
    assert fast[0] == "BackendError", fast  # a host-side check: never a crash, never the provider
    assert dict(rig.faults.calls) == calls and reference.seen == []
    assert rig.engine.objects() == objects and rig.engine.state is EngineState.READY
    rig.run_and_check()  # nothing corrupted


@pytest.mark.parametrize(
    ("queue", "program"),
    [("queue", "a"), ("a", "program"), (0, "program"), ("queue", 0), ("queue", "foreign"), (1.5, "program")],
)
def test_bad_queue_or_program_fails_alike_on_both_paths(queue: Any, program: Any) -> None:
    rig, _ = recording_rig()
    foreign = rig.engine.load_program(rig.engine.create_context(), add_artifact())
    ids = {"queue": rig.queue, "program": rig.program, "a": rig.a, "foreign": foreign}
    q, p = ids.get(queue, queue), ids.get(program, program)
    fast = _outcome(lambda: rig.engine.submit(q, p, rig.bindings()))
    checked = _outcome(lambda: rig.engine._submit_checked(q, p, rig.bindings(), None))
    assert fast == checked and fast[1] is ErrorKind.STALE_OBJECT


def test_refusals_after_the_host_checks_match_too() -> None:
    rig, _ = recording_rig()
    unbound = rig.bindings()[:2]  # the program needs slot 2 as well: the provider refuses
    for bindings, timeout in ((unbound, None), (rig.bindings(), -1.0), (rig.bindings(), True)):
        fast = _outcome(rig.engine.submit, rig.queue, rig.program, bindings, timeout)
        checked = _outcome(rig.engine._submit_checked, rig.queue, rig.program, bindings, timeout)
        assert fast == checked and fast[0] == "SubmitRejected", fast
    assert rig.engine.live_objects()["event"] == 0
    rig.run_and_check()


def test_the_event_limit_is_checked_on_both_paths(rig: Rig) -> None:
    rig.reference.control.hold()
    limit = rig.engine.info.limits.max_events_per_context
    events = [rig.engine.submit(rig.queue, rig.program, rig.bindings()) for _ in range(limit)]
    fast = _outcome(lambda: rig.engine.submit(rig.queue, rig.program, rig.bindings()))
    checked = _outcome(lambda: rig.engine._submit_checked(rig.queue, rig.program, rig.bindings(), None))
    assert fast == checked and fast[1] is ErrorKind.RESOURCE_LIMIT
    rig.reference.control.release_all()
    for event in events:
        assert rig.engine.wait(event, 5) == EventState.COMPLETE
        rig.engine.destroy_event(event)


GOOD_BINDINGS: dict[str, Change] = {
    "tuples-enum-access": lambda r: r.bindings(),
    "tuples-int-access": lambda r: [(0, r.a, None, 1), (1, r.b, None, 1), (2, r.out, None, 2)],
    "tuples-read-write-ranges": lambda r: [
        (2, r.out, BufferRange(8, 16), W),
        (0, r.a, BufferRange(0, 16), R),
        (1, r.b, BufferRange(16, 16), R),
    ],
    "binding-refs": lambda r: [
        BindingRef(0, r.a, BufferRange(0, 4 * N), R),
        BindingRef(1, r.b, BufferRange(4, 8), R),
        BindingRef(2, r.out, BufferRange(0, 8), W),
    ],
    "binding-ref-range-none": lambda r: [BindingRef(0, r.a, None, R), *r.bindings()[1:]],  # type: ignore[arg-type]
    "lists-not-tuples": lambda r: [list(b) for b in r.bindings()],
    "tuple-of-bindings": lambda r: tuple(r.bindings()),
    "generator": lambda r: (b for b in r.bindings()),
    "int-subclass-ids": lambda r: [(MyInt(0), MyInt(r.a), None, R), *r.bindings()[1:]],
    "int-subclass-access": lambda r: [(0, r.a, None, MyInt(1)), *r.bindings()[1:]],
    "access-bool-is-read": lambda r: [(0, r.a, None, True), *r.bindings()[1:]],  # int(True) == 1, as BindingRef
    "same-buffer-twice": lambda r: [(0, r.a, None, R), (1, r.a, None, R), (2, r.out, None, W)],
}


@pytest.mark.parametrize("name", sorted(GOOD_BINDINGS))
def test_good_bindings_reach_the_provider_alike_on_both_paths(name: str) -> None:
    rig, reference = recording_rig()
    engine = rig.engine
    results = []
    for submit in (engine.submit, lambda q, p, b: engine._submit_checked(q, p, b, None)):
        engine.write_buffer(rig.out, 0, bytes(4 * N))
        event = submit(rig.queue, rig.program, GOOD_BINDINGS[name](rig))
        assert engine.wait(event, 5) == EventState.COMPLETE
        engine.destroy_event(event)
        results.append(bytes(engine.read_buffer(rig.out)))
    assert reference.seen[0] == reference.seen[1]
    assert results[0] == results[1] and any(results[0])
    assert engine.live_objects()["event"] == 0


def test_int_subclass_queue_and_program_ids_work(rig: Rig) -> None:
    event = rig.engine.submit(MyInt(rig.queue), MyInt(rig.program), rig.bindings())
    assert rig.engine.poll(MyInt(event)) == EventState.COMPLETE
    rig.engine.destroy_event(MyInt(event))
    assert not rig.engine.exists(event)


# -- results stay right across many submits with changing bindings ----------------------------------


def test_many_submits_with_changing_bindings_released_and_new_buffers() -> None:
    rig, reference = recording_rig()
    engine, rand = rig.engine, random.Random(8)
    host = {rig.a: np.arange(N, dtype=np.uint32), rig.b: np.full(N, 100, dtype=np.uint32)}
    for step in range(300):
        if step % 25 == 24:  # replace an input buffer: its slot comes back with a new generation
            old = rand.choice(sorted(host))
            engine.free_buffer(old)
            new = engine.allocate_buffer(rig.context, BufferDesc(4 * N, 16, MemoryDomain.HOST, IN))
            assert new != old and not engine.exists(old)
            with pytest.raises(BackendError) as info:
                engine.submit(rig.queue, rig.program, [(0, old, None, R), (1, new, None, R), (2, rig.out, None, W)])
            assert info.value.kind is ErrorKind.STALE_OBJECT
            data = np.array([rand.randrange(1000) for _ in range(N)], dtype=np.uint32)
            engine.write_buffer(new, 0, data)
            del host[old]
            host[new] = data
        first, second = rand.sample(sorted(host), 2) if rand.random() < 0.5 else [rand.choice(sorted(host))] * 2
        count = rand.randrange(1, N + 1)
        offsets = [4 * rand.randrange(0, N - count + 1) for _ in range(3)]
        whole = count == N and rand.random() < 0.5
        bindings: list[Any] = [
            (0, first, None if whole else BufferRange(offsets[0], 4 * count), R),
            BindingRef(1, second, BufferRange(0 if whole else offsets[1], 4 * count), R),
            (2, rig.out, None if whole else BufferRange(offsets[2], 4 * count), W),
        ]
        rand.shuffle(bindings)
        engine.write_buffer(rig.out, 0, bytes(4 * N))
        event = engine.submit(rig.queue, rig.program, bindings)
        assert engine.wait(event, 5) == EventState.COMPLETE
        engine.destroy_event(event)
        a = host[first][offsets[0] // 4 :][:count] if not whole else host[first]
        b = host[second][offsets[1] // 4 :][:count] if not whole else host[second]
        expected = np.zeros(N, dtype=np.uint32)
        start = 0 if whole else offsets[2] // 4
        expected[start : start + count] = a + b
        got = np.frombuffer(engine.read_buffer(rig.out), np.uint32)
        assert got.tolist() == expected.tolist(), step
        native = {ref.slot: ref for ref in reference.seen[-1]}
        assert native[0].range == (BufferRange(0, 4 * N) if whole else BufferRange(offsets[0], 4 * count))
    assert engine.live_objects() == {"context": 1, "buffer": 3, "program": 1, "queue": 1, "event": 0}


def test_the_per_buffer_cache_of_native_bindings_is_bounded(rig: Rig) -> None:
    for offset in range(0, 4 * N - 4, 4):
        bindings = [(0, rig.a, BufferRange(offset, 4), R), (1, rig.b, None, R), (2, rig.out, None, W)]
        rig.engine.wait(event := rig.engine.submit(rig.queue, rig.program, bindings), 5)
        rig.engine.destroy_event(event)
    assert 0 < len(rig.engine._buffers.get(rig.a).native) <= 16  # type: ignore[union-attr]


class Box:
    """A native buffer handle in a box, so a release can hand back a *different* live handle."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner


class HandleSwapping(ReferenceAccelerator):
    """The reference provider with boxed buffer handles; the first ``free_buffer`` is refused and hands
    back a new box for the same live buffer (a provider may return another handle with ReleaseRejected)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0
        self.boxes_seen: list[Box] = []

    def allocate_buffer(self, context: Any, desc: BufferDesc) -> Any:
        allocated = super().allocate_buffer(context, desc)
        return type(allocated)(Box(allocated.buffer), allocated.info)

    def write_buffer(self, buffer: Any, offset: int, data: Any) -> None:
        super().write_buffer(buffer.inner, offset, data)

    def read_buffer(self, buffer: Any, offset: int, data: Any) -> None:
        super().read_buffer(buffer.inner, offset, data)

    def free_buffer(self, buffer: Any) -> None:
        if not self.refused:
            self.refused += 1
            raise ReleaseRejected(BackendError(ErrorKind.BUSY, "try again"), Box(buffer.inner))
        super().free_buffer(buffer.inner)

    def submit(self, queue: Any, program: Any, bindings: Sequence[BindingRef[Any]], timeout: Timeout) -> Any:
        self.boxes_seen.extend(b.buffer for b in bindings)
        inner = [BindingRef(b.slot, b.buffer.inner, b.range, b.access) for b in bindings]
        return super().submit(queue, program, inner, timeout)


def test_a_new_handle_from_a_refused_release_is_what_the_next_submit_binds() -> None:
    provider = HandleSwapping()
    rig = populate(CommandEngine(provider), provider, FaultAccelerator(provider))  # type: ignore[arg-type]
    rig.run_and_check()
    old_box = provider.boxes_seen[0]
    with pytest.raises(ReleaseRejected):
        rig.engine.free_buffer(rig.a)
    provider.boxes_seen.clear()
    rig.run_and_check()
    new_box = provider.boxes_seen[0]
    assert new_box is not old_box and new_box.inner is old_box.inner
    rig.engine.free_buffer(rig.a)  # the retry releases through the new handle
    assert not rig.engine.exists(rig.a)


# -- poll, destroy_event and transfers ----------------------------------------------------------------


def test_poll_of_a_terminal_event_is_cached_and_fails_fast_when_discarding(rig: Rig) -> None:
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings())
    assert rig.engine.poll(event) == EventState.COMPLETE
    polls = rig.faults.calls.get("poll_event", 0)
    assert rig.engine.poll(event) == EventState.COMPLETE
    assert rig.faults.calls.get("poll_event", 0) == polls  # answered from the cache
    rig.engine._needs_discard("test")
    for call in (rig.engine.poll, rig.engine.destroy_event):
        with pytest.raises(BackendError) as info:
            call(event)
        assert info.value.kind is ErrorKind.DEVICE_LOST
    with pytest.raises(BackendError) as info:
        rig.engine.submit(rig.queue, rig.program, rig.bindings())
    assert info.value.kind is ErrorKind.DEVICE_LOST


def test_destroyed_events_unlink_everywhere_and_never_resolve_again(rig: Rig) -> None:
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings())
    rig.engine.wait(event, 5)
    rig.engine.destroy_event(event)
    for call in (rig.engine.poll, rig.engine.destroy_event, rig.engine.cancel):
        with pytest.raises(BackendError) as info:
            call(event)
        assert info.value.kind is ErrorKind.STALE_OBJECT
    for buffer in (rig.a, rig.b, rig.out):
        rig.engine.free_buffer(buffer)  # no live event references them any more
    rig.engine.unload_program(rig.program)
    rig.engine.destroy_queue(rig.queue)
    rig.engine.destroy_context(rig.context)
    assert rig.engine.objects() == []


@pytest.mark.parametrize("write", [True, False])
@pytest.mark.parametrize(
    ("offset", "length"),
    [
        (0, 4 * N),
        (4, 8),
        (4 * N - 1, 1),
        (4 * N, 1),
        (0, 4 * N + 1),
        (-1, 4),
        (2**64, 4),
        (1.0, 4),
        (True, 4),
        ("0", 4),
    ],
)
def test_transfer_checks_match_validate_transfer(write: bool, offset: Any, length: int) -> None:
    rig, _ = recording_rig()
    engine = rig.engine
    for usage in (IN | OUT, U.TRANSFER_SOURCE | U.PROGRAM_INPUT, U.TRANSFER_DESTINATION | U.PROGRAM_INPUT):
        desc = BufferDesc(4 * N, 16, MemoryDomain.HOST, usage)
        buffer = engine.allocate_buffer(rig.context, desc)
        expected = _outcome(validate_transfer, desc, offset, length, write=write)
        calls = dict(rig.faults.calls)
        if write:
            got = _outcome(engine.write_buffer, buffer, offset, bytes(length))
        else:
            got = _outcome(engine.read_buffer_into, buffer, offset, MemorySink(bytearray(length)))
        if expected[0] == "ok":
            assert got == ("ok", None, "")
        else:
            assert got == expected and dict(rig.faults.calls) == calls
        engine.free_buffer(buffer)


def test_transfers_to_a_buffer_bound_to_a_pending_event_are_busy(rig: Rig) -> None:
    rig.reference.control.hold()
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings())
    for call in (lambda: rig.engine.write_buffer(rig.a, 0, b"1234"), lambda: rig.engine.read_buffer(rig.out)):
        with pytest.raises(BackendError) as info:
            call()
        assert info.value.kind is ErrorKind.BUSY and "pending" in info.value.message
    rig.reference.control.release_all()
    assert rig.engine.wait(event, 5) == EventState.COMPLETE
    rig.engine.write_buffer(rig.a, 0, b"1234")  # terminal now (not yet destroyed): allowed
    rig.engine.destroy_event(event)


# -- IdTable ------------------------------------------------------------------------------------------


def test_id_table_dict_and_slots_agree() -> None:
    table: IdTable[str] = IdTable(ObjectKind.BUFFER)
    ids = [table.insert(x) for x in "abcd"]
    assert [table.lookup(i) for i in ids] == list("abcd")
    assert table.get(MyInt(ids[1])) == "b" and table.remove(MyInt(ids[1])) == "b"
    assert table.lookup(ids[1]) is None and table.get(ids[1]) is None
    with pytest.raises(KeyError):
        table.remove(ids[1])
    with pytest.raises(TypeError):
        table.get(float(ids[0]))  # type: ignore[arg-type]  # never equal-valued floats
    again = table.insert("e")
    assert again != ids[1] and table.get(again) == "e" and len(table) == 4
    table.clear()
    assert all(table.lookup(i) is None for i in [*ids, again]) and len(table) == 0
    assert [i for i, _ in table.items()] == []


def test_float_ids_equal_to_a_live_id_are_stale_not_resolved(rig: Rig) -> None:
    for call, object_id in ((rig.engine.buffer_info, rig.a), (rig.engine.free_buffer, rig.a)):
        with pytest.raises(BackendError) as info:
            call(float(object_id))
        assert info.value.kind is ErrorKind.STALE_OBJECT and "must be an integer" in info.value.message


# -- the per-program memo of the last binding list ----------------------------------------------------


def test_the_same_binding_list_again_is_memoised_but_every_liveness_change_is_seen() -> None:
    """submit remembers the last spec list that passed for a program (by the identity of its spec
    objects); reusing it must still refuse a freed buffer, bind a handle a refused release handed
    back, re-check a list changed in place, and reach the provider with the same native bindings."""
    provider = HandleSwapping()
    rig = populate(CommandEngine(provider), provider, FaultAccelerator(provider))  # type: ignore[arg-type]
    engine = rig.engine
    same = rig.bindings()
    for _ in range(3):  # the first submit fills the memo, the next ones take it
        engine.wait(event := engine.submit(rig.queue, rig.program, same), 5)
        engine.destroy_event(event)
        got = np.frombuffer(engine.read_buffer(rig.out), np.uint32)
        assert got.tolist() == [i + 100 for i in range(N)]
    program = engine._programs.get(rig.program)
    assert program is not None and program.memos and program.memos[0][0] == tuple(same)
    first_boxes = provider.boxes_seen[:3]
    assert provider.boxes_seen[-3:] == first_boxes  # memoised: the very same native handles
    # A refused release hands back a new handle for rig.a: the memo must bind the new one.
    with pytest.raises(ReleaseRejected):
        engine.free_buffer(rig.a)
    provider.boxes_seen.clear()
    engine.wait(event := engine.submit(rig.queue, rig.program, same), 5)
    engine.destroy_event(event)
    assert provider.boxes_seen[0] is not first_boxes[0] and provider.boxes_seen[0].inner is first_boxes[0].inner
    # A list changed in place is checked again: a bad access mode is refused, not memoised.
    same[2] = (2, rig.out, rig.out, W)  # a range that is not a BufferRange
    outcome = _outcome(engine.submit, rig.queue, rig.program, same)
    checked = _outcome(engine._submit_checked, rig.queue, rig.program, same, None)
    assert outcome[0] != "ok" and outcome == checked
    same[2] = (2, rig.out, None, W)
    # A freed buffer behind the memoised list: STALE_OBJECT, no provider call.
    engine.free_buffer(rig.a)
    before = len(provider.boxes_seen)
    with pytest.raises(BackendError) as info:
        engine.submit(rig.queue, rig.program, same)
    assert info.value.kind is ErrorKind.STALE_OBJECT and len(provider.boxes_seen) == before
    # A new buffer in the same slot (new generation, new ID) is never reached through the old spec.
    new = engine.allocate_buffer(rig.context, BufferDesc(4 * N, 16, MemoryDomain.HOST, IN))
    assert new != rig.a
    with pytest.raises(BackendError) as info:
        engine.submit(rig.queue, rig.program, same)
    assert info.value.kind is ErrorKind.STALE_OBJECT


def test_alternating_binding_lists_are_each_remembered_once() -> None:
    """Calls alternating between binding lists (host arrays, then device arrays) each take their own memo:
    a hit adds nothing, so after A B A B the program holds exactly B and A; at most _MEMOS_KEPT are kept."""
    from accelcore.engine import entries

    provider = HandleSwapping()
    rig = populate(CommandEngine(provider), provider, FaultAccelerator(provider))  # type: ignore[arg-type]
    engine = rig.engine
    lists = [rig.bindings() for _ in range(entries._MEMOS_KEPT + 1)]
    program = engine._programs.get(rig.program)
    assert program is not None

    def run(bindings: list[Any]) -> None:
        engine.wait(event := engine.submit(rig.queue, rig.program, bindings), 5)
        engine.destroy_event(event)
        assert np.frombuffer(engine.read_buffer(rig.out), np.uint32).tolist() == [i + 100 for i in range(N)]

    for bindings in (lists[0], lists[1], lists[0], lists[1]):
        run(bindings)
    assert [memo[0] for memo in program.memos] == [tuple(lists[1]), tuple(lists[0])]
    for bindings in lists:
        run(bindings)
    assert len(program.memos) == entries._MEMOS_KEPT
    assert [memo[0] for memo in program.memos] == [tuple(b) for b in reversed(lists[1:])]
