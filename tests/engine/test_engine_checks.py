"""Host-side checks of the command engine: they happen before (and instead of) any provider call."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from accelcore import (
    AccessMode,
    ArtifactRef,
    BackendError,
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    Capabilities,
    ContextDesc,
    ContextFlags,
    DeviceInfoError,
    ErrorKind,
    EventState,
    MemoryDomain,
    MemorySink,
    MemorySource,
    PatternSource,
    QueueDesc,
    QueueFlags,
)
from accelcore.engine import CommandEngine, EngineState, ObjectKind, ResourcePolicy, decode_id
from accelcore.testing import (
    REFERENCE_CAPABILITIES,
    REFERENCE_FORMAT,
    REFERENCE_LIMITS,
    REFERENCE_TARGET,
    FaultAccelerator,
    ReferenceAccelerator,
    encode_program,
)

U = BufferUsage
IN = U.TRANSFER_DESTINATION | U.TRANSFER_SOURCE | U.PROGRAM_INPUT


def host_side(rig: Any, kind: ErrorKind, call: Callable[..., Any], *args: Any) -> BackendError:
    """``call`` fails with ``kind`` and the provider saw no call at all."""
    before = dict(rig.faults.calls)
    with pytest.raises(BackendError) as info:
        call(*args)
    assert info.value.kind is kind, info.value
    assert dict(rig.faults.calls) == before, "the provider was called"
    return info.value


def test_ids_are_nonzero_encode_their_kind_and_run_end_to_end(rig: Any) -> None:
    ids = {rig.context: ObjectKind.CONTEXT, rig.a: ObjectKind.BUFFER, rig.program: ObjectKind.PROGRAM}
    ids[rig.queue] = ObjectKind.QUEUE
    for object_id, kind in ids.items():
        assert object_id != 0 and 0 < object_id < 2**64
        assert decode_id(object_id).kind == kind
    rig.run_and_check()


def test_zero_unknown_wrong_kind_and_released_ids_are_stale(rig: Any) -> None:
    engine = rig.engine
    message = host_side(rig, ErrorKind.STALE_OBJECT, engine.free_buffer, 0).message
    assert "0 is never valid" in message
    assert "expected a buffer" in host_side(rig, ErrorKind.STALE_OBJECT, engine.free_buffer, rig.queue).message
    host_side(rig, ErrorKind.STALE_OBJECT, engine.poll, rig.a | 0xFFFF)
    extra = engine.allocate_buffer(rig.context, BufferDesc(64, 16, MemoryDomain.HOST, IN))
    engine.free_buffer(extra)
    host_side(rig, ErrorKind.STALE_OBJECT, engine.write_buffer, extra, 0, b"x")
    again = engine.allocate_buffer(rig.context, BufferDesc(64, 16, MemoryDomain.HOST, IN))
    assert decode_id(again).slot == decode_id(extra).slot and again != extra  # slot reused, generation moved
    host_side(rig, ErrorKind.STALE_OBJECT, engine.free_buffer, extra)
    engine.free_buffer(again)


def test_no_id_resolves_after_reset(rig: Any) -> None:
    old = [rig.context, rig.a, rig.b, rig.out, rig.program, rig.queue]
    assert rig.engine.reset() == []
    for object_id in old:
        assert not rig.engine.exists(object_id)
    host_side(rig, ErrorKind.STALE_OBJECT, rig.engine.create_queue, rig.context)
    assert rig.reference.live_resources() == dict.fromkeys(("context", "buffer", "program", "queue", "event"), 0)


def test_reserved_flags_are_unsupported_before_the_provider(rig: Any) -> None:
    host_side(rig, ErrorKind.UNSUPPORTED, rig.engine.create_context, ContextDesc(ContextFlags.SECURE))
    host_side(rig, ErrorKind.UNSUPPORTED, rig.engine.create_queue, rig.context, QueueDesc(QueueFlags.IN_ORDER))


def test_usage_vs_access_is_permission_denied_before_submit(rig: Any) -> None:
    bindings = rig.bindings()
    bindings[0] = (0, rig.a, None, AccessMode.WRITE)  # an input-only buffer bound for writing
    error = host_side(rig, ErrorKind.PERMISSION_DENIED, rig.engine.submit, rig.queue, rig.program, bindings)
    assert "slot 0" in error.message


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        (lambda b, r: [], ErrorKind.RESOURCE_LIMIT),
        (lambda b, r: [*b, b[0]], ErrorKind.INVALID_ARGUMENT),
        (lambda b, r: [(0, r.a, BufferRange(4, 64), AccessMode.READ), *b[1:]], ErrorKind.OUT_OF_BOUNDS),
        (lambda b, r: [(0, r.a, None, 7), *b[1:]], ErrorKind.INVALID_ARGUMENT),
        (lambda b, r: [(0, r.a, None, AccessMode.READ)] * 9, ErrorKind.RESOURCE_LIMIT),
    ],
    ids=["empty", "duplicate-slot", "range-past-end", "bad-access", "too-many"],
)
def test_binding_checks_happen_host_side(rig: Any, change: Any, kind: ErrorKind) -> None:
    host_side(rig, kind, rig.engine.submit, rig.queue, rig.program, change(rig.bindings(), rig))


def test_objects_of_another_context_are_stale(rig: Any) -> None:
    engine = rig.engine
    other = engine.create_context()
    foreign = engine.allocate_buffer(other, BufferDesc(64, 16, MemoryDomain.HOST, IN))
    foreign_program = engine.load_program(other, _artifact())
    bindings = rig.bindings()
    bindings[0] = BindingRef(0, foreign, BufferRange(0, 64), AccessMode.READ)
    assert (
        "belongs to context"
        in host_side(rig, ErrorKind.STALE_OBJECT, engine.submit, rig.queue, rig.program, bindings).message
    )
    host_side(rig, ErrorKind.STALE_OBJECT, engine.submit, rig.queue, foreign_program, rig.bindings())


def _artifact(resident: int = 4096, name: str = "add_u32") -> ArtifactRef:
    return ArtifactRef(REFERENCE_FORMAT, REFERENCE_TARGET, MemorySource(encode_program(name)), resident)


def test_per_context_limits_are_resource_limit() -> None:
    limits = dataclasses.replace(REFERENCE_LIMITS, max_buffers_per_context=1, max_events_per_context=1, max_contexts=2)
    faults = FaultAccelerator(ReferenceAccelerator(limits=limits))
    engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(faults)
    rig = type("R", (), {"faults": faults})
    ctx = engine.create_context()
    engine.create_context()
    host_side(rig, ErrorKind.RESOURCE_LIMIT, engine.create_context)
    state = engine.allocate_buffer(ctx, BufferDesc(64, 16, MemoryDomain.HOST, IN | U.MUTABLE_STATE))
    host_side(rig, ErrorKind.RESOURCE_LIMIT, engine.allocate_buffer, ctx, BufferDesc(64, 16, MemoryDomain.HOST, IN))
    program = engine.load_program(ctx, _artifact(name="increment_u32"))
    queue = engine.create_queue(ctx)
    engine.submit(queue, program, [(0, state, None, AccessMode.READ_WRITE)])
    host_side(rig, ErrorKind.RESOURCE_LIMIT, engine.submit, queue, program, [(0, state, None, AccessMode.READ_WRITE)])
    big = BufferDesc(limits.max_buffer_bytes + 1, 16, MemoryDomain.HOST, IN)
    host_side(rig, ErrorKind.RESOURCE_LIMIT, engine.allocate_buffer, ctx, big)
    huge = ArtifactRef(REFERENCE_FORMAT, REFERENCE_TARGET, PatternSource(limits.max_artifact_bytes + 1), 4096)
    host_side(rig, ErrorKind.RESOURCE_LIMIT, engine.load_program, ctx, huge)


def test_cancel_without_the_capability_is_unsupported_and_leaves_the_event() -> None:
    reference = ReferenceAccelerator(capabilities=REFERENCE_CAPABILITIES & ~Capabilities.EVENT_CANCELLATION)
    faults = FaultAccelerator(reference)
    engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(faults)
    ctx = engine.create_context()
    state = engine.allocate_buffer(ctx, BufferDesc(64, 16, MemoryDomain.HOST, IN | U.MUTABLE_STATE))
    engine.write_buffer(state, 0, bytes(64))
    program, queue = engine.load_program(ctx, _artifact(name="increment_u32")), engine.create_queue(ctx)
    reference.control.hold()
    event = engine.submit(queue, program, [(0, state, None, AccessMode.READ_WRITE)])
    host_side(type("R", (), {"faults": faults}), ErrorKind.UNSUPPORTED, engine.cancel, event)
    assert engine.poll(event) == EventState.PENDING
    reference.control.release_all()
    assert engine.wait(event, timeout_s=5) == EventState.COMPLETE
    assert np.frombuffer(engine.read_buffer(state), np.uint32).tolist() == [1] * 16


def test_busy_parents_and_referenced_objects(rig: Any) -> None:
    engine = rig.engine
    rig.reference.control.hold()
    event = engine.submit(rig.queue, rig.program, rig.bindings())
    assert "still has" in host_side(rig, ErrorKind.BUSY, engine.destroy_context, rig.context).message
    for release, object_id in (
        (engine.free_buffer, rig.a),
        (engine.unload_program, rig.program),
        (engine.destroy_queue, rig.queue),
    ):
        assert "referenced by live event" in host_side(rig, ErrorKind.BUSY, release, object_id).message
    host_side(rig, ErrorKind.BUSY, engine.write_buffer, rig.out, 0, b"x")
    with pytest.raises(BackendError) as info:
        engine.destroy_event(event)  # polls once (non-blocking), still pending
    assert info.value.kind is ErrorKind.BUSY
    with pytest.raises(BackendError) as waited:
        engine.wait(event, timeout_s=0.05)
    assert waited.value.kind is ErrorKind.DEADLINE_EXPIRED
    engine.cancel(event)
    assert engine.poll(event) == EventState.CANCELLED
    before = dict(rig.faults.calls)
    engine.cancel(event)  # cancellation already won: idempotent, as on every provider; the provider is not called
    assert dict(rig.faults.calls) == before and engine.poll(event) == EventState.CANCELLED
    engine.destroy_event(event)
    engine.free_buffer(rig.a)


def test_transfers_check_usage_bounds_and_accept_any_buffer(rig: Any) -> None:
    engine = rig.engine
    source_only = engine.allocate_buffer(rig.context, BufferDesc(64, 16, MemoryDomain.HOST, U.TRANSFER_SOURCE))
    host_side(rig, ErrorKind.PERMISSION_DENIED, engine.write_buffer, source_only, 0, b"abc")
    dest_only = engine.allocate_buffer(rig.context, BufferDesc(64, 16, MemoryDomain.HOST, U.TRANSFER_DESTINATION))
    host_side(rig, ErrorKind.PERMISSION_DENIED, engine.read_buffer, dest_only)
    host_side(rig, ErrorKind.OUT_OF_BOUNDS, engine.write_buffer, rig.out, 60, b"12345")
    host_side(rig, ErrorKind.OUT_OF_BOUNDS, engine.read_buffer, rig.out, 65, 0)
    engine.write_buffer(rig.out, 8, MemorySource(b"ab", b"cd"))
    engine.write_buffer(rig.out, 12, np.array([7], dtype=np.uint32))
    sink = bytearray(8)
    engine.read_buffer_into(rig.out, 8, MemorySink(memoryview(sink)[:3], memoryview(sink)[3:]))
    assert bytes(sink) == b"abcd\x07\x00\x00\x00"
    assert engine.read_buffer(rig.out, 8, 4) == bytearray(b"abcd")


def test_policy_charges_actual_allocation_bytes_and_releases_over_the_cap(make: Any) -> None:
    rig = make(ResourcePolicy(max_allocation_bytes=4096))
    engine = rig.engine
    charged = engine.usage.allocation_bytes
    assert charged == sum(engine.buffer_info(b).allocation_bytes for b in (rig.a, rig.b, rig.out))
    assert charged > 3 * 64  # the reference retains alignment slack: the charge is the real size
    live = rig.faults.live_resources()["buffer"]
    # The request fits under the cap; the real allocation (with alignment slack) does not.
    room = 4096 - charged
    with pytest.raises(BackendError) as info:
        engine.allocate_buffer(rig.context, BufferDesc(room - 8, 16, MemoryDomain.HOST, IN))
    assert info.value.kind is ErrorKind.RESOURCE_LIMIT
    assert rig.faults.calls["allocate_buffer"] == 4 and rig.faults.calls["free_buffer"] == 1
    assert rig.faults.live_resources()["buffer"] == live
    assert engine.usage.allocation_bytes == charged and engine.state is EngineState.READY
    engine.free_buffer(rig.a)
    assert engine.usage.allocation_bytes < charged


def test_policy_charges_resident_bytes_before_the_load(make: Any) -> None:
    rig = make(ResourcePolicy(max_resident_bytes=5000))
    host_side(rig, ErrorKind.RESOURCE_LIMIT, rig.engine.load_program, rig.context, _artifact(1000))
    assert rig.engine.usage.resident_bytes == 4096
    rig.engine.unload_program(rig.program)
    assert rig.engine.usage.resident_bytes == 0
    rig.engine.load_program(rig.context, _artifact(5000))


def test_invalid_device_info_stops_the_engine() -> None:
    limits = dataclasses.replace(REFERENCE_LIMITS, max_queues_per_context=0)
    with pytest.raises(DeviceInfoError, match="ZeroLimit"):
        CommandEngine(ReferenceAccelerator(limits=limits))


def test_device_info_is_fetched_once(rig: Any) -> None:
    rig.run_and_check()
    rig.engine.reset()
    assert rig.faults.calls["device_info"] == 1
    assert rig.engine.info == rig.reference.device_info()


def test_reset_onto_an_invalid_provider_changes_nothing(rig: Any) -> None:
    broken = ReferenceAccelerator(limits=dataclasses.replace(REFERENCE_LIMITS, max_contexts=0))
    with pytest.raises(DeviceInfoError):
        rig.engine.reset(broken)
    assert rig.engine.provider is rig.faults and rig.engine.exists(rig.a)
    rig.run_and_check()
