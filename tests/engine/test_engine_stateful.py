"""Random call sequences through engine + FaultAccelerator over the reference and every real provider (hypothesis).

One machine, two kinds of backend: the reference provider (``test_engine_state_machine``, the
default run) and every real device ``real_devices()`` finds (``test_engine_state_machine_on_a_real_device``,
marked ``slow``; narrow with ``ACCEL_DEVICES``). Each backend supplies fresh provider instances, two
kernels with numpy references and a map from its own native accounting to the engine's kinds.

What a step may do: create / release any object, write and read, load a kernel, start a *job* (the
buffers of one kernel case, every slot with its own access mode and a random memory domain) and run
it, hold and release submissions, poll, wait, cancel, call every engine method with a dead or
never-issued ID, and ``reset()`` — with or without a fresh provider. Faults: per step usually none,
else one ``FaultKind`` armed either at every boundary it applies to or at one boundary on its n-th
call (n in 1..3), with ``performed`` drawn for indeterminate releases (False: the provider did NOT
release). ``reset()`` is faulted too, so faults fire in its teardown and quarantine retry.

Invariants after every step (and checked again right after every reset):
- an indeterminate outcome is never surfaced as an ordinary BackendError;
- in NEEDS_DISCARD every call fails fast with DEVICE_LOST;
- no ID resolves after its object was released or after a reset;
- every engine method given a dead, never-issued or wrong-kind ID raises its documented error
  (STALE_OBJECT; DEVICE_LOST while discarding; RESOURCE_LIMIT for admitting calls while admission is
  stopped) and neither calls the provider nor changes the engine;
- every resource alive in the fault wrapper is an engine object or a live quarantined handle, and
  every indeterminate one is a quarantined gone handle (nothing leaked);
- the provider's *own* accounting (``live_resources()``) equals the engine's objects plus its live
  quarantined handles plus the objects whose release a fault made the engine give up without the
  provider running it (DEVICE_LOST at a release, or an indeterminate release not performed);
- the policy charge equals the live buffers' allocation bytes / live programs' resident bytes plus
  the quarantined charges;
- a job whose event is seen COMPLETE holds what its numpy reference says (``accelcore.conformance.corpus.compare``).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from accelcore import (
    AccessMode,
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
from accelcore.conformance.corpus import KernelCase, compare, load_package, make_case
from accelcore.contract.program import TargetIdentity
from accelcore.engine import CommandEngine, EngineState, ObjectKind, ResourcePolicy
from accelcore.kernels.package import ModuleKind, format_for
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
from accelcore.testing.faults import RELEASE_CALLS

from .conftest import real_devices

U = BufferUsage
USAGE = U.TRANSFER_SOURCE | U.TRANSFER_DESTINATION | U.MUTABLE_STATE
R, W, RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE
INDETERMINATE_KINDS = {FaultKind.INDETERMINATE_RELEASE, FaultKind.INDETERMINATE_SUBMIT}
KIND_OF_RELEASE = {
    "destroy_context": ObjectKind.CONTEXT,
    "free_buffer": ObjectKind.BUFFER,
    "unload_program": ObjectKind.PROGRAM,
    "destroy_queue": ObjectKind.QUEUE,
    "destroy_event": ObjectKind.EVENT,
}
ADMITTING = {"allocate_buffer", "load_program", "create_queue", "submit"}


@dataclass(frozen=True)
class Arm:
    """One step's fault: ``kind`` at ``boundary`` (None: every boundary it applies to) on its ``nth`` call."""

    kind: FaultKind
    boundary: str | None
    nth: int
    performed: bool

    def faults(self) -> list[Fault]:
        boundaries = [self.boundary] if self.boundary else [b for b in BOUNDARIES[self.kind] if b != "device_info"]
        return [Fault(b, self.kind, nth=self.nth, performed=self.performed) for b in boundaries]


def _arm(kind: FaultKind) -> st.SearchStrategy[Arm]:
    everywhere = st.builds(Arm, st.just(kind), st.none(), st.just(1), st.booleans())
    one = st.builds(
        Arm,
        st.just(kind),
        st.sampled_from([b for b in BOUNDARIES[kind] if b != "device_info"]),
        st.integers(1, 3),
        st.booleans(),
    )
    return everywhere | one


FAULT = st.one_of(st.none(), st.none(), st.none(), *(_arm(kind) for kind in FaultKind))
"""Per step: usually no fault, else one kind armed for that step only."""


# ----------------------------------------------------------------------------- backends


@dataclass(frozen=True)
class Kernel:
    """A program the backend runs, with the access mode of each slot and a case builder."""

    name: str
    slots: dict[int, AccessMode]

    def case(self, elements: int, seed: int) -> KernelCase:
        if self.name == "increment_u32":
            state = np.random.default_rng(seed).integers(0, 2**32, elements, dtype=np.uint32)
            return KernelCase(self.name, elements, {0: state}, {0: state + np.uint32(1)}, 0)
        if self.name == "add_and_count_u32":
            rng = np.random.default_rng(seed)
            a, b = (rng.integers(0, 2**32, elements, dtype=np.uint32) for _ in range(2))
            state = rng.integers(0, 2**32, 4, dtype=np.uint32)
            out = np.full(elements, 0xA5A5A5A5, dtype=np.uint32)
            return KernelCase(
                self.name, elements, {0: a, 1: b, 2: out, 3: state}, {2: a + b, 3: state + np.uint32(1)}, 0
            )
        return make_case(self.name, elements, seed)


class Backend:
    """The reference provider (the default backend)."""

    name = "reference"
    kernels = (
        Kernel("increment_u32", {0: RW}),
        Kernel("add_and_count_u32", {0: R, 1: R, 2: W, 3: RW}),
    )
    arbitrary_bindings = True
    """Whether any buffer may be bound to any program (the reference never touches memory it was not given)."""
    policy = ResourcePolicy(max_allocation_bytes=8192, max_resident_bytes=16384)
    residents: tuple[int, ...] = (256, 4096, 9000)

    def new(self) -> Any:
        return ReferenceAccelerator()

    def artifact(self, kernel: Kernel, resident: int) -> ArtifactRef:
        return ArtifactRef(REFERENCE_FORMAT, REFERENCE_TARGET, MemorySource(encode_program(kernel.name)), resident)

    def hold(self, inner: Any) -> None:
        inner.control.hold()

    def release_all(self, inner: Any) -> None:
        inner.control.stop_holding()
        inner.control.release_all()

    def native(self, inner: Any) -> dict[ObjectKind, tuple[int, int]]:
        """Per engine kind, the (low, high) bounds the provider's own accounting puts on its live objects."""
        counts = inner.live_resources()
        return {kind: (counts[kind.label], counts[kind.label]) for kind in ObjectKind}

    def close(self, inner: Any) -> None:
        pass


class RealBackend(Backend):
    """One real device: the corpus saxpy (R, R, W, R) and histogram (R, RW) kernels with numpy references."""

    kernels = (
        Kernel("saxpy", {0: R, 1: R, 2: W, 3: R}),
        Kernel("histogram", {0: R, 1: RW}),
    )
    arbitrary_bindings = False  # a real kernel bound to the wrong buffers reads past them
    policy = ResourcePolicy(max_allocation_bytes=64 << 10, max_resident_bytes=8 << 20)
    residents = (1 << 20, 3 << 20)  # a built program retains its binary: tens of KiB

    def __init__(self, family: Any, entry: Any) -> None:
        self.family = family.name
        self.name = f"{family.name}:{entry.index}"
        self.setup = family.conformance(entry)
        self.kind = ModuleKind.SPIRV_VULKAN if family.name == "vulkan" else ModuleKind.OPENCL_SOURCE
        self.packages = {k.name: load_package(k.name, self.kind) for k in self.kernels}

    def new(self) -> Any:
        return self.setup.factory()

    def artifact(self, kernel: Kernel, resident: int) -> ArtifactRef:
        payload = MemorySource(self.packages[kernel.name])
        return ArtifactRef(format_for(self.kind), TargetIdentity.any(), payload, resident)

    def hold(self, inner: Any) -> None:
        self.setup.hooks.hold_submissions(inner)

    def release_all(self, inner: Any) -> None:
        if self.family == "vulkan":
            inner.release()  # every gate opens and every held batch goes to the device
        else:
            inner.hold_submissions(False)  # gates open on the queue's next call (the engine's polls)

    def native(self, inner: Any) -> dict[ObjectKind, tuple[int, int]]:
        c = dict(inner.live_resources())

        def exact(n: int) -> tuple[int, int]:
            return n, n

        if self.family == "vulkan":
            assert c.get("VkDevice", 0) == c.get("VkCommandPool", 0) == c.get("VkDescriptorPool", 0), c
            # Pipelines are shared by a context's programs of one module: one per (context, kernel) at least.
            programs = c.get("VkPipeline", 0)
            return {
                ObjectKind.CONTEXT: exact(c.get("VkDevice", 0)),
                # Each buffer is one VkDeviceMemory; a context's staging buffer (made at its first
                # device-domain transfer) is another, with the one VkFence only staging makes.
                ObjectKind.BUFFER: exact(c.get("VkDeviceMemory", 0) - c.get("VkFence", 0)),
                ObjectKind.PROGRAM: (programs, 1 << 30) if programs else (0, 0),
                ObjectKind.QUEUE: exact(c.get("VkSemaphore", 0)),
            }
        assert c["indeterminate"] == 0 and c["kernels"] == c["programs"], c
        return {
            ObjectKind.CONTEXT: exact(c["contexts"]),
            ObjectKind.BUFFER: exact(c["buffers"]),
            ObjectKind.PROGRAM: exact(c["programs"]),
            ObjectKind.QUEUE: exact(c["command_queues"] - c["contexts"]),  # each context has its own queue too
            # A submission behind a held gate has no kernel event yet (it is enqueued when the gate opens).
            ObjectKind.EVENT: (c["kernel_events"], 1 << 30),
        }

    def close(self, inner: Any) -> None:
        close = getattr(inner, "close", None)
        if callable(close):
            close()


# ----------------------------------------------------------------------------- the machine


@dataclass(eq=False)
class Job:
    """The buffers of one kernel case in one context (kept out of the ``buffers`` bundle: only runs write them)."""

    kernel: Kernel
    context: int
    case: KernelCase
    buffers: dict[int, int]
    event: int | None = None
    """The event of the run whose result is still to be checked."""


@dataclass
class Tally:
    """Per engine kind, objects a fault made the engine give up on without the provider releasing them."""

    leaked: Counter[ObjectKind] = field(default_factory=Counter)
    seen: int = 0

    def update(self, faults: FaultAccelerator) -> None:
        for fault in faults.fired[self.seen :]:
            if fault.call in RELEASE_CALLS and (
                fault.kind is FaultKind.DEVICE_LOST
                or (fault.kind is FaultKind.INDETERMINATE_RELEASE and not fault.performed)
            ):
                self.leaked[KIND_OF_RELEASE[fault.call]] += 1
        self.seen = len(faults.fired)


class EngineMachine(RuleBasedStateMachine):
    contexts = Bundle("contexts")
    buffers = Bundle("buffers")
    programs = Bundle("programs")
    queues = Bundle("queues")
    events = Bundle("events")
    jobs = Bundle("jobs")

    backend: Backend = Backend()

    def __init__(self) -> None:
        super().__init__()
        self.inner = self.backend.new()
        self.faults = FaultAccelerator(self.inner)
        self.tally = Tally()
        self.engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(self.faults, self.backend.policy)
        self.domains = [d for d in MemoryDomain if self.engine.info.capabilities.supports_memory_domain(d)]
        self.dead: set[int] = set()
        self.kernel_of: dict[int, Kernel] = {}
        self.resident: dict[int, int] = {}
        self.runs: dict[int, Job] = {}
        self.holding = False
        self.closed: list[Any] = []
        context = self.engine.create_context()
        desc = BufferDesc(64, 16, self.domains[0], USAGE)
        programs = [self._load(context, kernel, self.backend.residents[0]) for kernel in self.backend.kernels]
        self.base = (
            context,
            self.engine.allocate_buffer(context, desc),
            self.engine.allocate_buffer(context, desc),
            programs,
            self.engine.create_queue(context),
            [self._job(context, kernel, 64, 0, [self.domains[-1]] * 4) for kernel in self.backend.kernels],
        )

    def teardown(self) -> None:
        try:
            self.backend.release_all(self.inner)
            self.engine.reset()
        finally:
            self.backend.close(self.inner)

    # -- helpers -------------------------------------------------------------------------------

    def _load(self, context: int, kernel: Kernel, resident: int) -> int:
        program: int = self.engine.load_program(context, self.backend.artifact(kernel, resident))
        self.kernel_of[program] = kernel
        self.resident[program] = resident
        return program

    def _job(self, context: int, kernel: Kernel, elements: int, seed: int, domains: list[MemoryDomain]) -> Job:
        case = kernel.case(elements, seed)
        job = Job(kernel, context, case, {})
        for (slot, access), domain in zip(kernel.slots.items(), domains, strict=False):
            data = case.initial[slot]
            desc = BufferDesc(
                data.nbytes, 16, domain, U.for_access(access) | U.TRANSFER_SOURCE | U.TRANSFER_DESTINATION
            )
            job.buffers[slot] = self.engine.allocate_buffer(context, desc)
        return job

    def call(self, action: Any, *args: Any, fault: Arm | None = None) -> Any:
        """Run one engine call with ``fault`` armed (disarmed after the call); check the outcome's
        shape against what the fault wrapper did."""
        if fault is not None:
            for armed in fault.faults():
                self.faults.inject(armed)
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
            self.tally.update(self.faults)

    def released(self, object_id: int | None, action: Any, fault: Arm | None) -> None:
        if object_id is None:
            return
        self.call(action, object_id, fault=fault)
        if not self.engine.exists(object_id):
            self.dead.add(object_id)
            job = self.runs.pop(object_id, None)
            if job is not None:
                job.event = None

    def observed(self, event: int, state: EventState | None) -> None:
        """A run seen COMPLETE holds its numpy reference; one seen otherwise terminal is not checked."""
        if state is None or not state.is_terminal or event not in self.runs:
            return
        job = self.runs.pop(event)
        job.event = None
        if state != EventState.COMPLETE:
            return
        for slot in job.case.expected:
            got = self.call(self.engine.read_buffer, job.buffers[slot], 0, job.case.expected[slot].nbytes)
            if got is not None:  # a read refused (device lost, discarding) checks nothing
                problem = compare(job.case, slot, bytes(got))
                assert problem is None, f"{job.kernel.name} on {self.backend.name}: {problem}"

    # -- a ready set-up, so that most sequences reach submissions quickly ---------------------

    @initialize(target=contexts)
    def first_context(self) -> int:
        return self.base[0]

    @initialize(target=buffers)
    def first_buffers(self) -> Any:
        return multiple(self.base[1], self.base[2])

    @initialize(target=programs)
    def first_programs(self) -> Any:
        return multiple(*self.base[3])

    @initialize(target=queues)
    def first_queue(self) -> int:
        return self.base[4]

    @initialize(target=jobs)
    def first_jobs(self) -> Any:
        return multiple(*self.base[5])

    # -- rules ---------------------------------------------------------------------------------

    @rule(target=contexts, fault=FAULT)
    def create_context(self, fault: Arm | None) -> int | None:
        result: int | None = self.call(self.engine.create_context, fault=fault)
        return result

    @rule(target=buffers, context=contexts, size=st.integers(1, 3000), domain=st.integers(0, 3), fault=FAULT)
    def allocate(self, context: int | None, size: int, domain: int, fault: Arm | None) -> int | None:
        if context is None:
            return None
        desc = BufferDesc(size, 16, self.domains[domain % len(self.domains)], USAGE)
        result: int | None = self.call(self.engine.allocate_buffer, context, desc, fault=fault)
        return result

    @rule(buffer=buffers, data=st.binary(min_size=1, max_size=64), fault=FAULT)
    def write_read(self, buffer: int | None, data: bytes, fault: Arm | None) -> None:
        if buffer is None:
            return
        if self.call(lambda: self.engine.write_buffer(buffer, 0, data) or True, fault=fault):
            got = self.call(self.engine.read_buffer, buffer, 0, len(data))
            if got is not None:
                assert bytes(got) == data

    @rule(target=programs, context=contexts, kernel=st.integers(0, 1), resident=st.integers(0, 2), fault=FAULT)
    def load(self, context: int | None, kernel: int, resident: int, fault: Arm | None) -> int | None:
        if context is None:
            return None
        chosen = self.backend.kernels[kernel]
        artifact = self.backend.artifact(chosen, self.backend.residents[resident % len(self.backend.residents)])
        result: int | None = self.call(self.engine.load_program, context, artifact, fault=fault)
        if result is not None:
            self.kernel_of[result] = chosen
            self.resident[result] = artifact.resident_bytes
        return result

    @rule(target=queues, context=contexts, fault=FAULT)
    def create_queue(self, context: int | None, fault: Arm | None) -> int | None:
        if context is None:
            return None
        result: int | None = self.call(self.engine.create_queue, context, fault=fault)
        return result

    @rule(
        target=jobs,
        context=contexts,
        kernel=st.integers(0, 1),
        elements=st.sampled_from([1, 63, 256, 1000]),
        seed=st.integers(0, 3),
        domains=st.lists(st.integers(0, 3), min_size=4, max_size=4),
    )
    def start_job(self, context: int | None, kernel: int, elements: int, seed: int, domains: list[int]) -> Job | None:
        if context is None:
            return None
        picked = [self.domains[d % len(self.domains)] for d in domains]
        job = self.call(self._job, context, self.backend.kernels[kernel], elements, seed, picked)
        return job

    @rule(target=events, job=jobs, pick=st.integers(0, 7), fault=FAULT, wait=st.booleans(), hold=st.booleans())
    def run_job(self, job: Job | None, pick: int, fault: Arm | None, wait: bool, hold: bool) -> int | None:
        """Write the case's inputs and submit on a queue and a program of the job's kernel in its context
        (every slot with its own access mode); the result is checked once the event is seen COMPLETE.
        ``hold``: submissions stay pending from now until ``release_held`` (or a reset)."""
        if job is None or job.event is not None:
            return None
        if not self.engine.exists(job.context) or not all(self.engine.exists(b) for b in job.buffers.values()):
            # Its objects went (a reset, a freed buffer): the same case again in a live context.
            contexts = [i for i, kind, _ in self.engine.objects() if kind is ObjectKind.CONTEXT]
            context = contexts[pick % len(contexts)] if contexts else self.call(self.engine.create_context)
            if context is None:
                return None
            domains = [self.domains[(pick + slot) % len(self.domains)] for slot in job.kernel.slots]
            fresh = self.call(self._job, context, job.kernel, job.case.elements, pick, domains)
            if fresh is None:
                return None
            job.context, job.case, job.buffers = fresh.context, fresh.case, fresh.buffers
        objects = self.engine.objects()
        queues = [i for i, kind, ctx in objects if kind is ObjectKind.QUEUE and ctx == job.context]
        programs = [
            i
            for i, kind, ctx in objects
            if kind is ObjectKind.PROGRAM and ctx == job.context and self.kernel_of.get(i) is job.kernel
        ]
        if not queues:
            queues = [q for q in [self.call(self.engine.create_queue, job.context)] if q is not None]
        if not programs:
            resident = self.backend.residents[0]
            programs = [p for p in [self.call(self._load, job.context, job.kernel, resident)] if p is not None]
        if not queues or not programs:
            return None
        queue, program = queues[pick % len(queues)], programs[pick // 2 % len(programs)]
        for slot, buffer in job.buffers.items():
            data = job.case.initial_bytes(slot)
            if self.call(lambda b=buffer, d=data: self.engine.write_buffer(b, 0, d) or True) is None:
                return None
        if hold:
            self.backend.hold(self.inner)
            self.holding = True
        bindings = [(slot, job.buffers[slot], None, access) for slot, access in job.kernel.slots.items()]
        event: int | None = self.call(self.engine.submit, queue, program, bindings, fault=fault)
        if event is None:
            return None
        job.event = event
        self.runs[event] = job
        if wait and not self.holding:
            self.observed(event, self.call(self.engine.wait, event, 30))
        return event

    @rule(target=events, job=jobs, pick=st.integers(0, 7))
    def run_job_to_completion(self, job: Job | None, pick: int) -> int | None:
        """A plain run (no fault, no hold) waited for and checked: most runs should reach a result."""
        holding, self.holding = self.holding, False
        if holding:
            self.backend.release_all(self.inner)
        return self.run_job(job, pick, None, True, False)

    @rule(target=events, queue=queues, program=programs, buffer=buffers, fault=FAULT)
    def submit(self, queue: int | None, program: int | None, buffer: int | None, fault: Arm | None) -> int | None:
        """Any buffer on slot 0 (READ_WRITE) of any program: only where the backend allows arbitrary bindings."""
        if None in (queue, program, buffer) or not self.backend.arbitrary_bindings:
            return None
        result: int | None = self.call(
            self.engine.submit, queue, program, [(0, buffer, None, AccessMode.READ_WRITE)], fault=fault
        )
        return result

    @rule(event=events, fault=FAULT)
    def poll(self, event: int | None, fault: Arm | None) -> None:
        if event is not None:
            self.observed(event, self.call(self.engine.poll, event, fault=fault))

    @rule(event=events)
    def wait(self, event: int | None) -> None:
        if event is not None and not self.holding:
            self.observed(event, self.call(self.engine.wait, event, 30))

    @rule(event=events, fault=FAULT)
    def cancel(self, event: int | None, fault: Arm | None) -> None:
        if event is not None:
            self.call(self.engine.cancel, event, fault=fault)

    @rule()
    def release_held(self) -> None:
        self.backend.release_all(self.inner)
        self.holding = False

    @rule(event=consumes(events), fault=FAULT)
    def destroy_event(self, event: int | None, fault: Arm | None) -> None:
        self.released(event, self.engine.destroy_event, fault)

    @rule(queue=consumes(queues), fault=FAULT)
    def destroy_queue(self, queue: int | None, fault: Arm | None) -> None:
        self.released(queue, self.engine.destroy_queue, fault)

    @rule(program=consumes(programs), fault=FAULT)
    def unload(self, program: int | None, fault: Arm | None) -> None:
        self.released(program, self.engine.unload_program, fault)

    @rule(buffer=consumes(buffers), fault=FAULT)
    def free(self, buffer: int | None, fault: Arm | None) -> None:
        self.released(buffer, self.engine.free_buffer, fault)

    @rule(job=consumes(jobs), fault=FAULT)
    def free_job(self, job: Job | None, fault: Arm | None) -> None:
        if job is None:
            return
        for buffer in job.buffers.values():
            self.released(buffer, self.engine.free_buffer, fault)

    @rule(context=consumes(contexts), fault=FAULT)
    def destroy_context(self, context: int | None, fault: Arm | None) -> None:
        self.released(context, self.engine.destroy_context, fault)

    @rule(fault=FAULT, fresh=st.booleans())
    def reset(self, fault: Arm | None, fresh: bool) -> None:
        """Reset with a fault armed for its teardown; with ``fresh``, onto a new provider instance."""
        self.dead.update(object_id for object_id, _, _ in self.engine.objects())
        for job in self.runs.values():
            job.event = None
        self.runs.clear()
        if fault is not None:
            for armed in fault.faults():
                self.faults.inject(armed)
        old_inner, old_faults = self.inner, self.faults
        try:
            if fresh:
                self.backend.release_all(old_inner)
                self.inner = self.backend.new()
                self.faults = FaultAccelerator(self.inner)
                discarded = len(self.engine.discarded)
                quarantine = self.engine.reset(self.faults)
                assert quarantine == [] and self.engine.quarantine == []
                assert (self.engine.usage.allocation_bytes, self.engine.usage.resident_bytes) == (0, 0)
                assert self.engine.provider is self.faults
            else:
                quarantine = self.engine.reset()
                assert quarantine == self.engine.quarantine
        finally:
            old_faults.clear()
            self.tally.update(old_faults)
        if fault is None or fresh:
            assert self.engine.state is EngineState.READY
        else:
            # A DEVICE_LOST or an indeterminate release during the teardown leaves the same instance
            # discarded (docs/engine.md: any DEVICE_LOST -> NEEDS_DISCARD); a fresh instance is the way out.
            assert self.engine.state in (EngineState.READY, EngineState.NEEDS_DISCARD)
            if self.engine.state is EngineState.NEEDS_DISCARD:
                assert self.engine.state_reason.startswith("reset: ")
        assert self.engine.objects() == [] and self.engine.live_objects() == dict.fromkeys(
            (k.label for k in ObjectKind), 0
        )
        self.holding = False
        self.backend.release_all(self.inner)
        if fresh:
            # The old instance: what it still holds natively is exactly what moved to ``discarded``
            # with a live handle, plus what faults made the engine give up on; then it is closed.
            moved = self.engine.discarded[discarded:]
            self.check_native(old_inner, old_faults, moved, self.tally, live={})
            self.backend.close(old_inner)
            self.tally = Tally()
        else:
            self.check_native(self.inner, self.faults, self.engine.quarantine, self.tally, live=None)
        self.dead_ids_never_resolve()

    @rule(data=st.data())
    def dead_id_calls(self, data: st.DataObject) -> None:
        """Every engine method given a dead, never-issued or wrong-kind ID: the documented error, no provider call."""
        dead = sorted(self.dead)
        live = self.engine.objects()
        # Every draw has the same shape whatever the device did (which IDs died, which are live
        # depends on its timing); otherwise a replay under load is FlakyStrategyDefinition.
        source = data.draw(st.sampled_from(["random", "dead", "live"]))
        pick = data.draw(st.integers(0, 1 << 16))
        object_id = data.draw(
            st.integers(1, (1 << 64) - 1)
            | st.builds(lambda kind, slot: kind << 60 | slot, st.integers(1, 5), st.integers(1 << 20, (1 << 32) - 1))
        )
        if source == "dead" and dead:
            object_id = dead[pick % len(dead)]
        elif source == "live" and live:
            object_id = live[pick % len(live)][0]
        resolves = {kind for object_id_, kind, _ in live if object_id_ == object_id}
        by_kind: dict[ObjectKind, list[tuple[int, int | None]]] = {}
        for i, kind, ctx in live:
            by_kind.setdefault(kind, []).append((i, ctx))
        queue = by_kind.get(ObjectKind.QUEUE, [(0, None)])[0]
        program = next((p for p, c in by_kind.get(ObjectKind.PROGRAM, []) if c == queue[1]), 0)
        buffer = next((b for b, c in by_kind.get(ObjectKind.BUFFER, []) if c == queue[1]), 0)
        calls: list[tuple[str, ObjectKind, Any]] = [
            ("destroy_context", ObjectKind.CONTEXT, lambda i: self.engine.destroy_context(i)),
            (
                "allocate_buffer",
                ObjectKind.CONTEXT,
                lambda i: self.engine.allocate_buffer(i, BufferDesc(16, 16, self.domains[0], USAGE)),
            ),
            (
                "load_program",
                ObjectKind.CONTEXT,
                lambda i: self.engine.load_program(
                    i, self.backend.artifact(self.backend.kernels[0], self.backend.residents[0])
                ),
            ),
            ("create_queue", ObjectKind.CONTEXT, lambda i: self.engine.create_queue(i)),
            ("buffer_info", ObjectKind.BUFFER, lambda i: self.engine.buffer_info(i)),
            ("write_buffer", ObjectKind.BUFFER, lambda i: self.engine.write_buffer(i, 0, b"\1\2\3\4")),
            ("read_buffer", ObjectKind.BUFFER, lambda i: self.engine.read_buffer(i, 0, 4)),
            ("read_buffer_into", ObjectKind.BUFFER, lambda i: self.engine.read_buffer_into(i, 0, bytearray(4))),
            ("free_buffer", ObjectKind.BUFFER, lambda i: self.engine.free_buffer(i)),
            ("unload_program", ObjectKind.PROGRAM, lambda i: self.engine.unload_program(i)),
            ("destroy_queue", ObjectKind.QUEUE, lambda i: self.engine.destroy_queue(i)),
            ("submit", ObjectKind.QUEUE, lambda i: self.engine.submit(i, program, [(0, buffer, None, R)])),
            ("submit", ObjectKind.PROGRAM, lambda i: self.engine.submit(queue[0], i, [(0, buffer, None, R)])),
            ("submit", ObjectKind.BUFFER, lambda i: self.engine.submit(queue[0], program, [(0, i, None, R)])),
            ("poll", ObjectKind.EVENT, lambda i: self.engine.poll(i)),
            ("wait", ObjectKind.EVENT, lambda i: self.engine.wait(i, 1)),
            ("cancel", ObjectKind.EVENT, lambda i: self.engine.cancel(i)),
            ("destroy_event", ObjectKind.EVENT, lambda i: self.engine.destroy_event(i)),
        ]
        for name, kind, action in calls:
            if kind in resolves:
                continue  # a live ID of the kind the call takes is not a dead one
            if name == "submit" and kind is not ObjectKind.QUEUE and queue[0] == 0:
                continue
            state, before = self.engine.state, self.snapshot()
            calls_before = Counter(self.faults.calls)
            with pytest.raises(BackendError) as info:
                action(object_id)
            if name == "buffer_info":
                expected = ErrorKind.STALE_OBJECT  # a pure lookup, no provider call
            elif state is EngineState.NEEDS_DISCARD:
                expected = ErrorKind.DEVICE_LOST
            elif state is EngineState.ADMISSION_STOPPED and name in ADMITTING:
                expected = ErrorKind.RESOURCE_LIMIT
            else:
                expected = ErrorKind.STALE_OBJECT
            where = f"{name}({object_id:#x}) as a {kind.label} in {state.value}"
            assert info.value.kind is expected, f"{where}: {info.value}"
            assert self.faults.calls == calls_before, f"{where} called the provider: {self.faults.calls - calls_before}"
            assert (self.engine.state, self.snapshot()) == (state, before), where

    def snapshot(self) -> Any:
        usage = (self.engine.usage.allocation_bytes, self.engine.usage.resident_bytes)
        return sorted(self.engine.objects()), [(q.object_id, id(q.handle)) for q in self.engine.quarantine], usage

    # -- invariants ----------------------------------------------------------------------------

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
        counts = self.engine.live_objects()
        for kind in ObjectKind:
            engine_count = sum(1 for _, k, _ in objects if k is kind)
            assert counts[kind.label] == engine_count, (counts, objects)
            held = sum(1 for q in quarantine if q.kind is kind and q.handle is not None)
            assert live[kind.label] == engine_count + held, (kind, live, objects, quarantine)
        assert gone == sum(1 for q in quarantine if q.handle is None)

    @invariant()
    def provider_accounting_matches(self) -> None:
        self.check_native(self.inner, self.faults, self.engine.quarantine, self.tally, live=None)

    def check_native(self, inner: Any, faults: FaultAccelerator, quarantine: Any, tally: Tally, live: Any) -> None:
        """The provider's own live counts = engine objects (``live``; None: the engine's now) + live
        quarantined handles + what faults made the engine give up on without a release."""
        tally.update(faults)
        counts = self.engine.live_objects() if live is None else live
        for kind, (low, high) in self.backend.native(inner).items():
            held = sum(1 for q in quarantine if q.kind is kind and q.handle is not None)
            expected = counts.get(kind.label, 0) + held + tally.leaked[kind]
            assert low <= expected <= high, (self.backend.name, kind, (low, high), expected, tally.leaked, quarantine)

    @invariant()
    def policy_charge_is_exact(self) -> None:
        quarantine = self.engine.quarantine
        ids = self.engine.objects()
        buffers = [object_id for object_id, kind, _ in ids if kind is ObjectKind.BUFFER]
        programs = [object_id for object_id, kind, _ in ids if kind is ObjectKind.PROGRAM]
        live = sum(self.engine.buffer_info(b).allocation_bytes for b in buffers)
        assert self.engine.usage.allocation_bytes == live + sum(q.allocation_bytes for q in quarantine)
        resident = sum(self.resident[p] for p in programs)
        assert self.engine.usage.resident_bytes == resident + sum(q.resident_bytes for q in quarantine)


EngineMachine.TestCase.settings = settings(
    max_examples=80,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_engine_state_machine = EngineMachine.TestCase


REAL_EXAMPLES = int(os.environ.get("ACCEL_STATEFUL_EXAMPLES", "150"))
"""Examples per real device (each up to 30 steps; each example opens and closes one provider instance)."""


@pytest.mark.slow
@pytest.mark.parametrize(("family", "entry"), real_devices())
def test_engine_state_machine_on_a_real_device(family: Any, entry: Any) -> None:
    backend = RealBackend(family, entry)

    class RealMachine(EngineMachine):
        pass

    RealMachine.backend = backend
    run_state_machine_as_test(
        RealMachine,
        settings=settings(
            max_examples=REAL_EXAMPLES,
            stateful_step_count=30,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
