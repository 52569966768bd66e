"""Object IDs: layout, generation checks, retirement of exhausted slots, namespaces."""

from __future__ import annotations

import tracemalloc
from typing import Any

from accelcore import EventState
from accelcore.engine import IdTable, ObjectKind, decode_id, format_id


def test_layout_and_staleness() -> None:
    table: IdTable[str] = IdTable(ObjectKind.QUEUE)
    first = table.insert("a")
    decoded = decode_id(first)
    assert (decoded.kind, decoded.namespace, decoded.generation, decoded.slot) == (int(ObjectKind.QUEUE), 1, 1, 0)
    assert format_id(first) == f"queue:{first:#018x}"
    assert table.get(first) == "a"
    assert table.remove(first) == "a"
    assert table.get(first) is None
    second = table.insert("b")
    assert decode_id(second).slot == 0 and decode_id(second).generation == 2
    assert table.get(first) is None and table.get(second) == "b"
    other_kind = (int(ObjectKind.BUFFER) << 60) | (second & ((1 << 60) - 1))
    assert table.get(other_kind) is None


def test_exhausted_slots_are_retired_not_reused() -> None:
    table: IdTable[int] = IdTable(ObjectKind.BUFFER)
    seen = set()
    for value in range(70_000):  # more than the 16-bit generation space of one slot
        object_id = table.insert(value)
        assert object_id not in seen
        seen.add(object_id)
        table.remove(object_id)
    assert decode_id(object_id).slot == 1  # slot 0 retired after 65535 generations


def test_clear_moves_to_a_new_namespace() -> None:
    table: IdTable[str] = IdTable(ObjectKind.EVENT)
    old = [table.insert(x) for x in "abc"]
    table.clear()
    assert len(table) == 0 and all(table.get(i) is None for i in old)
    new = table.insert("d")
    assert decode_id(new).namespace == 2 and new not in old


def test_polling_a_terminal_event_retains_no_memory(rig: Any) -> None:
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings())
    assert rig.engine.wait(event, timeout_s=5) == EventState.COMPLETE
    poll = rig.engine.poll
    poll(event)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(2000):
            poll(event)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 512, f"{after - before} bytes retained by 2000 polls"
