"""Every injectable fault at every boundary, driven through the engine: the recovery policy holds.

After each fault: the outcome has its contract shape (an indeterminate outcome is never a
BackendError), the engine's state is right, and after ``reset()`` no old ID resolves and every
native resource still alive is accounted for by the engine's quarantine (nothing leaked).
"""

from __future__ import annotations

from typing import Any

import pytest

from accelcore import (
    ArtifactRef,
    BackendError,
    BufferDesc,
    BufferUsage,
    ErrorKind,
    EventState,
    MemoryDomain,
    MemorySource,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitIndeterminate,
    SubmitRejected,
)
from accelcore.engine import CommandEngine, EngineState, ResourcePolicy
from accelcore.testing import (
    BOUNDARIES,
    REFERENCE_FORMAT,
    REFERENCE_TARGET,
    Fault,
    FaultAccelerator,
    FaultKind,
    ReferenceAccelerator,
    encode_program,
)

U = BufferUsage
IN = U.TRANSFER_DESTINATION | U.TRANSFER_SOURCE | U.PROGRAM_INPUT
RELEASES = {"destroy_context", "free_buffer", "unload_program", "destroy_queue", "destroy_event"}


def _artifact() -> ArtifactRef:
    return ArtifactRef(REFERENCE_FORMAT, REFERENCE_TARGET, MemorySource(encode_program("add_u32")), 4096)


class Scene:
    """A populated engine with a spare object of every kind, a completed and a held pending event."""

    def __init__(self, rig: Any) -> None:
        self.rig = rig
        engine = rig.engine
        self.engine = engine
        self.spare_context = engine.create_context()
        self.spare_buffer = engine.allocate_buffer(rig.context, BufferDesc(64, 16, MemoryDomain.HOST, IN))
        self.spare_program = engine.load_program(rig.context, _artifact())
        self.spare_queue = engine.create_queue(rig.context)
        self.done = engine.submit(rig.queue, rig.program, rig.bindings())
        assert engine.wait(self.done, timeout_s=5) == EventState.COMPLETE
        rig.reference.control.hold()
        self.pending = engine.submit(rig.queue, rig.program, rig.bindings())
        rig.reference.control.stop_holding()

    def act(self, call: str) -> Any:
        """Make the engine perform ``call`` on the provider."""
        engine, rig = self.engine, self.rig
        actions: dict[str, Any] = {
            "create_context": engine.create_context,
            "allocate_buffer": lambda: engine.allocate_buffer(rig.context, BufferDesc(64, 16, MemoryDomain.HOST, IN)),
            "write_buffer": lambda: engine.write_buffer(self.spare_buffer, 0, bytes(range(64))),
            "read_buffer": lambda: engine.read_buffer(self.spare_buffer),
            "load_program": lambda: engine.load_program(rig.context, _artifact()),
            "create_queue": lambda: engine.create_queue(rig.context),
            "submit": lambda: engine.submit(rig.queue, rig.program, rig.bindings()),
            "poll_event": lambda: engine.poll(self.pending),
            "cancel_event": lambda: engine.cancel(self.pending),
            "destroy_context": lambda: engine.destroy_context(self.spare_context),
            "free_buffer": lambda: engine.free_buffer(self.spare_buffer),
            "unload_program": lambda: engine.unload_program(self.spare_program),
            "destroy_queue": lambda: engine.destroy_queue(self.spare_queue),
            "destroy_event": lambda: engine.destroy_event(self.done),
        }
        return actions[call]()


def assert_recovered(rig: Any, old_ids: list[int]) -> None:
    """reset(): fresh namespace, nothing leaked, and the engine works again."""
    engine = rig.engine
    quarantine = engine.reset()
    assert engine.state is EngineState.READY
    for object_id in old_ids:
        assert not engine.exists(object_id)
        with pytest.raises(BackendError) as info:
            engine.poll(object_id)
        assert info.value.kind is ErrorKind.STALE_OBJECT
    live = rig.faults.live_resources()
    stuck = live.pop("indeterminate")
    assert sum(live.values()) == sum(1 for q in quarantine if q.handle is not None), (live, quarantine)
    assert stuck == sum(1 for q in quarantine if q.handle is None), (stuck, quarantine)
    assert engine.usage.allocation_bytes == sum(q.allocation_bytes for q in quarantine)
    fresh = _populate_again(rig)
    fresh.run_and_check()


def _populate_again(rig: Any) -> Any:
    from importlib import import_module  # the rig helpers live in this folder's conftest

    conftest = import_module(type(rig).__module__)
    return conftest.populate(rig.engine, rig.reference, rig.faults)


def _must_be_discarded(engine: CommandEngine[Any, Any, Any, Any, Any]) -> None:
    assert engine.state is EngineState.NEEDS_DISCARD
    with pytest.raises(BackendError) as info:
        engine.create_context()
    assert info.value.kind is ErrorKind.DEVICE_LOST
    assert "reset()" in info.value.message


FAULTS = [(kind, call) for kind, calls in BOUNDARIES.items() for call in calls if call != "device_info"]


@pytest.mark.parametrize(("kind", "call"), FAULTS, ids=[f"{k.value}@{c}" for k, c in FAULTS])
def test_fault_at_boundary_follows_the_recovery_policy(rig: Any, kind: FaultKind, call: str) -> None:
    scene = Scene(rig)
    engine = rig.engine
    old_ids = [object_id for object_id, _, _ in engine.objects()]
    before = set(old_ids)
    usage = (engine.usage.allocation_bytes, engine.usage.resident_bytes)
    rig.faults.inject(Fault(call, kind))

    with pytest.raises(Exception) as raised:
        scene.act(call)
    outcome = raised.value
    assert rig.faults.fired == [Fault(call, kind)]
    target = {
        "write_buffer": scene.spare_buffer,
        "read_buffer": scene.spare_buffer,
        "poll_event": scene.pending,
        "cancel_event": scene.pending,
        "destroy_context": scene.spare_context,
        "free_buffer": scene.spare_buffer,
        "unload_program": scene.spare_program,
        "destroy_queue": scene.spare_queue,
        "destroy_event": scene.done,
    }.get(call)

    if kind is FaultKind.REJECT_RELEASE:
        assert isinstance(outcome, ReleaseRejected) and not isinstance(outcome, BackendError)
        assert outcome.resource == target and engine.exists(target)
        assert engine.state is EngineState.READY
        scene.act(call)  # the retry releases
        assert not engine.exists(target)
    elif kind is FaultKind.INDETERMINATE_RELEASE:
        assert isinstance(outcome, ReleaseIndeterminate) and not isinstance(outcome, BackendError)
        assert not engine.exists(target)
        assert [q.object_id for q in engine.quarantine if q.handle is None] == [target]
        _must_be_discarded(engine)
    elif kind is FaultKind.INDETERMINATE_SUBMIT:
        assert isinstance(outcome, SubmitIndeterminate) and not isinstance(outcome, BackendError)
        event = outcome.event
        assert isinstance(event, int) and engine.exists(event)
        assert engine.state is EngineState.READY
        assert engine.wait(event, timeout_s=5).is_terminal
        engine.destroy_event(event)
    elif kind is FaultKind.DEVICE_LOST:
        if call in RELEASES:
            assert isinstance(outcome, ReleaseIndeterminate) and outcome.kind is ErrorKind.DEVICE_LOST
            assert not engine.exists(target)
        elif call == "submit":
            assert isinstance(outcome, SubmitRejected) and outcome.kind is ErrorKind.DEVICE_LOST
        else:
            assert isinstance(outcome, BackendError) and outcome.kind is ErrorKind.DEVICE_LOST
        _must_be_discarded(engine)
    elif kind is FaultKind.OUT_OF_MEMORY:
        error = outcome.error if isinstance(outcome, SubmitRejected) else outcome
        assert isinstance(error, BackendError) and error.kind is ErrorKind.OUT_OF_MEMORY
        assert {object_id for object_id, _, _ in engine.objects()} == before  # nothing published
        assert (engine.usage.allocation_bytes, engine.usage.resident_bytes) == usage
        assert engine.state is EngineState.READY
    else:
        assert kind is FaultKind.PARTIAL_WRITE
        assert isinstance(outcome, BackendError) and outcome.kind is ErrorKind.OUT_OF_MEMORY
        assert engine.state is EngineState.READY
        engine.write_buffer(scene.spare_buffer, 0, bytes(range(64)))  # a full rewrite replaces the range
        assert engine.read_buffer(scene.spare_buffer) == bytearray(range(64))

    assert_recovered(rig, old_ids)


def test_device_lost_in_device_info_creates_no_engine() -> None:
    faults = FaultAccelerator(ReferenceAccelerator(), [Fault("device_info", FaultKind.DEVICE_LOST)])
    with pytest.raises(BackendError) as info:
        CommandEngine(faults)
    assert info.value.kind is ErrorKind.DEVICE_LOST


def test_unperformed_indeterminate_release_is_quarantined_with_its_parent(rig: Any) -> None:
    old_ids = [object_id for object_id, _, _ in rig.engine.objects()]
    rig.faults.inject(Fault("free_buffer", FaultKind.INDETERMINATE_RELEASE, performed=False))
    with pytest.raises(ReleaseIndeterminate):
        rig.engine.free_buffer(rig.a)
    quarantine = rig.engine.reset()
    # The native buffer really stayed alive, so its context could not be destroyed either.
    assert [(q.kind.label, q.handle is None) for q in quarantine] == [("buffer", True), ("context", False)]
    assert rig.reference.live_resources()["buffer"] == 1
    assert_recovered(rig, old_ids)


def test_over_cap_allocation_whose_release_is_rejected_stops_admission(make: Any) -> None:
    rig = make(ResourcePolicy(max_allocation_bytes=1024))
    engine = rig.engine
    rig.faults.inject(Fault("free_buffer", FaultKind.REJECT_RELEASE))
    with pytest.raises(BackendError) as info:
        engine.allocate_buffer(rig.context, BufferDesc(1024 - engine.usage.allocation_bytes, 16, MemoryDomain.HOST, IN))
    assert info.value.kind is ErrorKind.RESOURCE_LIMIT and "admission stopped" in info.value.message
    assert engine.state is EngineState.ADMISSION_STOPPED
    assert [q.kind.label for q in engine.quarantine] == ["buffer"] and engine.quarantine[0].handle is not None
    with pytest.raises(BackendError) as refused:
        engine.create_queue(rig.context)
    assert refused.value.kind is ErrorKind.RESOURCE_LIMIT
    engine.write_buffer(rig.a, 0, bytes(8))  # existing objects keep working (no new admission)
    assert engine.read_buffer(rig.a, 0, 8) == bytearray(8)
    with pytest.raises(BackendError) as no_submit:
        engine.submit(rig.queue, rig.program, rig.bindings())
    assert no_submit.value.kind is ErrorKind.RESOURCE_LIMIT
    assert engine.reset() == []  # the retry during reset released the quarantined buffer
    assert sum(rig.faults.live_resources().values()) == 0


def test_over_cap_allocation_whose_release_is_indeterminate_needs_discard(make: Any) -> None:
    rig = make(ResourcePolicy(max_allocation_bytes=1024))
    rig.faults.inject(Fault("free_buffer", FaultKind.INDETERMINATE_RELEASE))
    with pytest.raises(BackendError) as info:
        room = 1024 - rig.engine.usage.allocation_bytes
        rig.engine.allocate_buffer(rig.context, BufferDesc(room - 8, 16, MemoryDomain.HOST, IN))
    assert info.value.kind is ErrorKind.RESOURCE_LIMIT and "indeterminate" in info.value.message
    _must_be_discarded(rig.engine)
    assert_recovered(rig, [])


def test_rejected_release_during_reset_is_quarantined_then_retried(rig: Any) -> None:
    rig.faults.inject(Fault("destroy_queue", FaultKind.REJECT_RELEASE))
    quarantine = rig.engine.reset()
    assert sorted(q.kind.label for q in quarantine) == ["context", "queue"]
    assert all(q.handle is not None for q in quarantine)
    assert rig.faults.live_resources() == {
        **dict.fromkeys(("buffer", "program", "event", "indeterminate"), 0),
        "context": 1,
        "queue": 1,
    }
    assert rig.engine.reset() == []
    assert sum(rig.faults.live_resources().values()) == 0


def test_reset_cancels_pending_work_and_a_fresh_provider_clears_the_quarantine(rig: Any) -> None:
    rig.reference.control.hold()
    event = rig.engine.submit(rig.queue, rig.program, rig.bindings())
    rig.faults.inject(Fault("free_buffer", FaultKind.INDETERMINATE_RELEASE))
    spare = rig.engine.allocate_buffer(rig.context, BufferDesc(64, 16, MemoryDomain.HOST, IN))
    with pytest.raises(ReleaseIndeterminate):
        rig.engine.free_buffer(spare)
    _must_be_discarded(rig.engine)
    fresh = FaultAccelerator(ReferenceAccelerator())
    assert rig.engine.reset(fresh) == []
    assert len(rig.engine.discarded) == 1 and rig.engine.usage.allocation_bytes == 0
    assert not rig.engine.exists(event)
    assert rig.reference.live_resources() == dict.fromkeys(("context", "buffer", "program", "queue", "event"), 0)
    assert rig.engine.provider is fresh
    context = rig.engine.create_context()
    assert rig.engine.exists(context) and fresh.live_resources()["context"] == 1
