"""Random call sequences through engine + FaultAccelerator + ReferenceAccelerator (hypothesis).

Invariants after every step:
- an indeterminate outcome is never surfaced as an ordinary BackendError;
- in NEEDS_DISCARD every call fails fast with DEVICE_LOST;
- no ID resolves after its object was released or after a reset;
- every native resource alive in the provider is an engine object or a live quarantined handle,
  and every indeterminate one is a quarantined gone handle (nothing leaked);
- the policy charge equals the live buffers' allocation bytes plus the quarantined charges.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, multiple, rule

from accelcore import (
    AccessMode,
    ArtifactRef,
    BackendError,
    BufferDesc,
    BufferUsage,
    ErrorKind,
    MemoryDomain,
    MemorySource,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitIndeterminate,
    SubmitRejected,
)
from accelcore.engine import CommandEngine, EngineState, ObjectKind, ResourcePolicy
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
USAGE = U.TRANSFER_SOURCE | U.TRANSFER_DESTINATION | U.MUTABLE_STATE
FAULT = st.sampled_from([None, None, None, *FaultKind])
"""Per step: usually no fault, else one kind armed at all its boundaries for that step only."""
INDETERMINATE_KINDS = {FaultKind.INDETERMINATE_RELEASE, FaultKind.INDETERMINATE_SUBMIT}


class EngineMachine(RuleBasedStateMachine):
    contexts = Bundle("contexts")
    buffers = Bundle("buffers")
    programs = Bundle("programs")
    queues = Bundle("queues")
    events = Bundle("events")

    def __init__(self) -> None:
        super().__init__()
        self.reference = ReferenceAccelerator()
        self.faults = FaultAccelerator(self.reference)
        self.engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(
            self.faults, ResourcePolicy(max_allocation_bytes=8192, max_resident_bytes=16384)
        )
        self.dead: set[int] = set()
        context = self.engine.create_context()
        desc = BufferDesc(64, 16, MemoryDomain.HOST, USAGE)
        payload = MemorySource(encode_program("increment_u32"))
        self.base = (
            context,
            self.engine.allocate_buffer(context, desc),
            self.engine.allocate_buffer(context, desc),
            self.engine.load_program(context, ArtifactRef(REFERENCE_FORMAT, REFERENCE_TARGET, payload, 256)),
            self.engine.create_queue(context),
        )

    # -- the call wrapper --------------------------------------------------------------------

    def call(self, action: Any, *args: Any, fault: FaultKind | None = None) -> Any:
        """Run one engine call with ``fault`` armed at every boundary it applies to (disarmed after
        the call); check the outcome's shape against what the fault wrapper did."""
        if fault is not None:
            for boundary in BOUNDARIES[fault]:
                if boundary != "device_info":
                    self.faults.inject(Fault(boundary, fault))
        discard = self.engine.state is EngineState.NEEDS_DISCARD
        fired = len(self.faults.fired)
        try:
            return action(*args)
        except BackendError as exc:
            if any(f.kind in INDETERMINATE_KINDS for f in self.faults.fired[fired:]):
                # Only the release of an object the engine never published may end this way, and then
                # the engine itself demands a discard and says so.
                assert self.engine.state is EngineState.NEEDS_DISCARD, exc
                assert "was indeterminate: the instance needs a discard" in exc.message, exc
            if discard:
                assert exc.kind is ErrorKind.DEVICE_LOST, exc
            return None
        except (ReleaseRejected, ReleaseIndeterminate, SubmitRejected) as exc:
            assert not discard
            if isinstance(exc, ReleaseIndeterminate):
                assert self.engine.state is EngineState.NEEDS_DISCARD
            return None
        except SubmitIndeterminate as exc:
            assert not discard and self.engine.exists(exc.event)
            return exc.event
        finally:
            self.faults.clear()

    def released(self, object_id: int | None, action: Any, fault: FaultKind | None) -> None:
        if object_id is None:
            return
        self.call(action, object_id, fault=fault)
        if not self.engine.exists(object_id):
            self.dead.add(object_id)

    # -- a ready set-up, so that most sequences reach submissions quickly ---------------------

    @initialize(target=contexts)
    def first_context(self) -> int:
        return self.base[0]

    @initialize(target=buffers)
    def first_buffers(self) -> Any:
        return multiple(self.base[1], self.base[2])

    @initialize(target=programs)
    def first_program(self) -> int:
        return self.base[3]

    @initialize(target=queues)
    def first_queue(self) -> int:
        return self.base[4]

    # -- rules -------------------------------------------------------------------------------

    @rule(target=contexts, fault=FAULT)
    def create_context(self, fault: FaultKind | None) -> int | None:
        result: int | None = self.call(self.engine.create_context, fault=fault)
        return result

    @rule(
        target=buffers,
        context=contexts,
        size=st.integers(1, 3000),
        domain=st.sampled_from(list(MemoryDomain)),
        fault=FAULT,
    )
    def allocate(self, context: int | None, size: int, domain: MemoryDomain, fault: FaultKind | None) -> int | None:
        if context is None:
            return None
        result: int | None = self.call(
            self.engine.allocate_buffer, context, BufferDesc(size, 16, domain, USAGE), fault=fault
        )
        return result

    @rule(buffer=buffers, data=st.binary(min_size=1, max_size=64), fault=FAULT)
    def write_read(self, buffer: int | None, data: bytes, fault: FaultKind | None) -> None:
        if buffer is None:
            return
        if self.call(lambda: self.engine.write_buffer(buffer, 0, data) or True, fault=fault):
            got = self.call(self.engine.read_buffer, buffer, 0, len(data))
            if got is not None:
                assert bytes(got) == data

    @rule(target=programs, context=contexts, resident=st.sampled_from([256, 4096, 9000]), fault=FAULT)
    def load(self, context: int | None, resident: int, fault: FaultKind | None) -> int | None:
        if context is None:
            return None
        artifact = ArtifactRef(
            REFERENCE_FORMAT, REFERENCE_TARGET, MemorySource(encode_program("increment_u32")), resident
        )
        result: int | None = self.call(self.engine.load_program, context, artifact, fault=fault)
        return result

    @rule(target=queues, context=contexts, fault=FAULT)
    def create_queue(self, context: int | None, fault: FaultKind | None) -> int | None:
        if context is None:
            return None
        result: int | None = self.call(self.engine.create_queue, context, fault=fault)
        return result

    @rule(target=events, queue=queues, program=programs, buffer=buffers, hold=st.booleans(), fault=FAULT)
    def submit(
        self, queue: int | None, program: int | None, buffer: int | None, hold: bool, fault: FaultKind | None
    ) -> int | None:
        if None in (queue, program, buffer):
            return None
        if hold:
            self.reference.control.hold()
        try:
            result: int | None = self.call(
                self.engine.submit, queue, program, [(0, buffer, None, AccessMode.READ_WRITE)], fault=fault
            )
        finally:
            self.reference.control.stop_holding()
        return result

    @rule(event=events, fault=FAULT)
    def poll(self, event: int | None, fault: FaultKind | None) -> None:
        if event is not None:
            self.call(self.engine.poll, event, fault=fault)

    @rule(event=events, fault=FAULT)
    def cancel(self, event: int | None, fault: FaultKind | None) -> None:
        if event is not None:
            self.call(self.engine.cancel, event, fault=fault)

    @rule()
    def release_held(self) -> None:
        self.reference.control.release_all()

    @rule(event=consumes(events), fault=FAULT)
    def destroy_event(self, event: int | None, fault: FaultKind | None) -> None:
        self.released(event, self.engine.destroy_event, fault)

    @rule(queue=consumes(queues), fault=FAULT)
    def destroy_queue(self, queue: int | None, fault: FaultKind | None) -> None:
        self.released(queue, self.engine.destroy_queue, fault)

    @rule(program=consumes(programs), fault=FAULT)
    def unload(self, program: int | None, fault: FaultKind | None) -> None:
        self.released(program, self.engine.unload_program, fault)

    @rule(buffer=consumes(buffers), fault=FAULT)
    def free(self, buffer: int | None, fault: FaultKind | None) -> None:
        self.released(buffer, self.engine.free_buffer, fault)

    @rule(context=consumes(contexts), fault=FAULT)
    def destroy_context(self, context: int | None, fault: FaultKind | None) -> None:
        self.released(context, self.engine.destroy_context, fault)

    @rule()
    def reset(self) -> None:
        self.dead.update(object_id for object_id, _, _ in self.engine.objects())
        self.faults.clear()
        self.engine.reset()
        assert self.engine.state is EngineState.READY

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def dead_ids_never_resolve(self) -> None:
        for object_id in self.dead:
            assert not self.engine.exists(object_id), hex(object_id)

    @invariant()
    def nothing_leaked(self) -> None:
        live = self.faults.live_resources()
        gone = live.pop("indeterminate")
        quarantine = self.engine.quarantine
        objects = self.engine.objects()
        for kind in ObjectKind:
            engine_count = sum(1 for _, k, _ in objects if k is kind)
            held = sum(1 for q in quarantine if q.kind is kind and q.handle is not None)
            assert live[kind.label] == engine_count + held, (kind, live, objects, quarantine)
        assert gone == sum(1 for q in quarantine if q.handle is None)

    @invariant()
    def policy_charge_is_exact(self) -> None:
        buffers = [object_id for object_id, kind, _ in self.engine.objects() if kind is ObjectKind.BUFFER]
        live = sum(self.engine.buffer_info(b).allocation_bytes for b in buffers)
        assert self.engine.usage.allocation_bytes == live + sum(q.allocation_bytes for q in self.engine.quarantine)


EngineMachine.TestCase.settings = settings(
    max_examples=80,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_engine_state_machine = EngineMachine.TestCase
