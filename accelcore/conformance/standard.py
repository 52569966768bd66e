"""The standard conformance cases of SPEC.md, under their stable ids and exact expected kinds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..contract.buffers import BufferDesc, BufferInfo, BufferRange
from ..contract.device import ContextDesc, DeviceInfo, QueueDesc
from ..contract.errors import BackendError, ErrorKind, ReleaseRejected, SubmitIndeterminate, SubmitRejected
from ..contract.flags import AccessMode, BufferUsage, Capabilities, ContextFlags, MemoryDomain, QueueFlags
from ..contract.ports import MemorySink, MemorySource, PatternSource
from ..contract.program import ArtifactRef
from ..contract.submission import BindingRef, EventState, EventStatus, Timeout
from .case import CaseContext, CaseFailed, ConformanceCase, FixtureBuffer, Session, describe_exception

__all__ = ["ACCOUNTING_CASE", "STABILITY_POLLS", "STANDARD_CASES"]

STABILITY_POLLS = 5
"""How many extra polls prove a terminal state is stable."""

_DOMAIN_ORDER = (MemoryDomain.HOST, MemoryDomain.SHARED, MemoryDomain.DEVICE)


def _rw_usage() -> BufferUsage:
    return BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION


def _domains(info: DeviceInfo) -> list[MemoryDomain]:
    return [d for d in _DOMAIN_ORDER if info.capabilities & d.capability]


def _pattern(size: int, seed: int) -> bytes:
    return bytes((seed + 7 * i) & 0xFF for i in range(size))


def _live_total(session: Session) -> int | None:
    counts = session.live_resources()
    return None if counts is None else sum(counts.values())


def _check_stable(ctx: CaseContext, session: Session, event: Any, state: EventState, what: str) -> None:
    for index in range(STABILITY_POLLS):
        again = session.poll(event)
        ctx.check(
            again == state,
            f"{what}: the terminal state {state} changed to {again} on poll {index + 2} "
            "(a terminal state must never change once observed)",
        )
        time.sleep(0.001)


# --------------------------------------------------------------------------- metadata / intent


def metadata_stable_valid(ctx: CaseContext) -> None:
    session = ctx.open()
    first = session.info
    ctx.check(isinstance(first, DeviceInfo), f"device_info() returned {type(first).__name__}, not DeviceInfo")
    try:
        first.validate()
    except Exception as exc:
        ctx.fail(f"device_info() does not validate: {describe_exception(exc)}")
    for attempt in range(3):
        again = session.provider.device_info()
        if again != first:
            ctx.fail(f"device_info() call {attempt + 2} returned different metadata: {_info_diff(first, again)}")


def _info_diff(first: DeviceInfo, again: object) -> str:
    if not isinstance(again, DeviceInfo):
        return f"a {type(again).__name__} instead of DeviceInfo"
    diffs = []
    for name in ("uuid", "class_", "vendor_id", "device_id"):
        a, b = getattr(first.identity, name), getattr(again.identity, name)
        if a != b:
            diffs.append(f"identity.{name} {a!r} -> {b!r}")
    if first.capabilities != again.capabilities:
        diffs.append(f"capabilities {int(first.capabilities):#x} -> {int(again.capabilities):#x}")
    for name, value in first.limits.as_dict().items():
        if getattr(again.limits, name) != value:
            diffs.append(f"limits.{name} {value} -> {getattr(again.limits, name)}")
    return "; ".join(diffs) or "(unequal but no field differs)"


def intent_reserved_flags(ctx: CaseContext) -> None:
    session = ctx.open()
    before = _live_total(session)
    ctx.expect_error(
        ErrorKind.UNSUPPORTED,
        "create_context with ContextFlags.SECURE",
        session.create_context,
        ContextDesc(ContextFlags.SECURE),
    )
    context = session.create_context()
    middle = _live_total(session)
    ctx.expect_error(
        ErrorKind.UNSUPPORTED,
        "create_queue with QueueFlags.IN_ORDER",
        session.create_queue,
        context,
        QueueDesc(QueueFlags.IN_ORDER),
    )
    after = _live_total(session)
    ctx.check(middle == after, f"the rejected IN_ORDER queue retained resources (live {middle} -> {after})")
    session.destroy_context(context)
    final = _live_total(session)
    ctx.check(before == final, f"the rejected SECURE context retained resources (live {before} -> {final})")


# --------------------------------------------------------------------------- memory


def _memory_case(domain: MemoryDomain) -> Callable[[CaseContext], None]:
    def body(ctx: CaseContext) -> None:
        session = ctx.open()
        context = session.create_context()
        requests = [
            BufferDesc(4096, 64, domain, _rw_usage()),
            BufferDesc(1000, 16, domain, _rw_usage() | BufferUsage.PROGRAM_INPUT | BufferUsage.PROGRAM_OUTPUT),
        ]
        for desc in requests:
            try:
                allocated = session.allocate_buffer(context, desc)
            except BackendError as exc:
                ctx.fail(f"allocating {desc} in the advertised {domain.name} domain failed: {describe_exception(exc)}")
            info = allocated.info
            ctx.check(isinstance(info, BufferInfo), f"allocate_buffer returned {type(info).__name__}, not BufferInfo")
            try:
                # Re-run the BufferInfo invariants (a provider could have bypassed the constructor) ...
                BufferInfo(info.desc, info.allocation_bytes, info.alignment, info.properties)
                # ... and the device-level check: the reported desc is exactly the requested one.
                session.info.validate_buffer_info(desc, info)
            except BackendError as exc:
                ctx.fail(f"dishonest BufferInfo for {desc}: {exc.kind.name}: {exc.message} (reported {info})")
            data = _pattern(desc.bytes, 11)
            session.write(allocated.buffer, data)
            ctx.check(
                session.read(allocated.buffer, desc.bytes) == data,
                f"{domain.name} buffer of {desc.bytes} bytes does not read back what was written",
            )
            try:
                session.free_buffer(allocated.buffer)
            except Exception as exc:
                ctx.fail(f"releasing an idle {domain.name} buffer failed: {describe_exception(exc)}")
        session.destroy_context(context)

    return body


# --------------------------------------------------------------------------- transfers


def buffer_segmented_transfer_bounds(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    size = 256
    for domain in _domains(session.info):
        desc = BufferDesc(size, 16, domain, _rw_usage())
        buffer = session.allocate_buffer(context, desc).buffer
        data = _pattern(size, 3)
        session.provider.write_buffer(buffer, 0, MemorySource(data[:100], data[100:]))
        first, second = bytearray(37), bytearray(size - 37)
        session.provider.read_buffer(buffer, 0, MemorySink(first, second))
        got = bytes(first + second)
        if got != data:
            index = next(i for i in range(size) if got[i] != data[i])
            ctx.fail(
                f"{domain.name}: a 2-segment write (100+156) read back through a 2-segment sink (37+219) "
                f"differs at byte {index}"
            )
        patch = _pattern(40, 200)
        session.provider.write_buffer(buffer, 50, MemorySource(patch[:9], patch[9:]))
        middle = bytearray(60)
        view = memoryview(middle)
        session.provider.read_buffer(buffer, 45, MemorySink(view[:30], view[30:]))
        expected = data[45:50] + patch + data[90:105]
        ctx.check(
            bytes(middle) == expected, f"{domain.name}: a segmented write/read at an offset moved the wrong bytes"
        )
        ctx.expect_error(
            ErrorKind.OUT_OF_BOUNDS,
            f"{domain.name}: write of 1 byte at offset = size {size}",
            session.provider.write_buffer,
            buffer,
            size,
            MemorySource(b"\x01"),
        )
        ctx.expect_error(
            ErrorKind.OUT_OF_BOUNDS,
            f"{domain.name}: read of 1 byte at offset = size {size}",
            session.provider.read_buffer,
            buffer,
            size,
            MemorySink(bytearray(1)),
        )
        ctx.expect_error(
            ErrorKind.OUT_OF_BOUNDS,
            f"{domain.name}: write of 2 bytes at offset {size - 1}",
            session.provider.write_buffer,
            buffer,
            size - 1,
            MemorySource(b"\x01", b"\x02"),
        )
        ctx.expect_error(
            ErrorKind.OUT_OF_BOUNDS,
            f"{domain.name}: read of 2 bytes at offset {size - 1}",
            session.provider.read_buffer,
            buffer,
            size - 1,
            MemorySink(bytearray(1), bytearray(1)),
        )
        session.free_buffer(buffer)
    session.destroy_context(context)


def buffer_transfer_permissions(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    domain = _domains(session.info)[0]
    source_only = session.allocate_buffer(context, BufferDesc(64, 16, domain, BufferUsage.TRANSFER_SOURCE)).buffer
    dest_only = session.allocate_buffer(context, BufferDesc(64, 16, domain, BufferUsage.TRANSFER_DESTINATION)).buffer
    ctx.expect_error(
        ErrorKind.PERMISSION_DENIED,
        "write_buffer to a TRANSFER_SOURCE-only buffer",
        session.provider.write_buffer,
        source_only,
        0,
        MemorySource(bytes(64)),
    )
    ctx.expect_error(
        ErrorKind.PERMISSION_DENIED,
        "read_buffer from a TRANSFER_DESTINATION-only buffer",
        session.provider.read_buffer,
        dest_only,
        0,
        MemorySink(bytearray(64)),
    )
    try:
        session.write(dest_only, _pattern(64, 5))
        session.read(source_only, 64)
    except BackendError as exc:
        ctx.fail(f"an allowed transfer (write to destination / read from source) failed: {describe_exception(exc)}")
    session.free_buffer(source_only)
    session.free_buffer(dest_only)
    session.destroy_context(context)


# --------------------------------------------------------------------------- programs


def program_segmented_artifact_bounds(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    ctx.check(len(ctx.target.artifact) >= 2, "the target's artifact is shorter than 2 bytes and cannot be segmented")
    try:
        program = session.load_program(context, session.artifact(segments=2))
    except BackendError as exc:
        ctx.fail(f"loading the target artifact split in two segments failed: {describe_exception(exc)}")
    session.unload_program(program)
    limit = session.info.limits.max_artifact_bytes
    oversized = ArtifactRef(ctx.target.format, ctx.target.target, PatternSource(limit + 1), ctx.target.resident_bytes)
    ctx.expect_error(
        ErrorKind.RESOURCE_LIMIT,
        f"load_program of an artifact of max_artifact_bytes+1 = {limit + 1} bytes",
        session.load_program,
        context,
        oversized,
    )
    session.destroy_context(context)


# --------------------------------------------------------------------------- submission


class _Rig:
    """A context with the target's fixtures, program and queue on one session."""

    def __init__(self, ctx: CaseContext, session: Session) -> None:
        self.session = session
        self.context = session.create_context()
        self.fixtures: list[FixtureBuffer] = session.fixtures(self.context)
        try:
            self.program = session.load_program(self.context)
        except BackendError as exc:
            raise CaseFailed(f"loading the target artifact failed: {describe_exception(exc)}") from exc
        self.queue = session.create_queue(self.context)
        ctx.check(bool(self.fixtures), "the conformance target has no binding fixtures")

    def bindings(self) -> list[BindingRef[Any]]:
        return self.session.bindings(self.fixtures)

    def submit(self, ctx: CaseContext, timeout: Timeout = Timeout.INFINITE, *, what: str) -> Any:
        try:
            return self.session.submit(self.queue, self.program, self.bindings(), timeout)
        except SubmitRejected as exc:
            raise CaseFailed(f"{what}: a valid submission was rejected: {describe_exception(exc)}") from exc


def _wait_complete(ctx: CaseContext, rig: _Rig, event: Any, what: str) -> EventState:
    state = rig.session.wait_terminal(event, what=what)
    ctx.check(state == EventState.COMPLETE, f"{what}: ended {state}, expected Complete")
    return state


def submission_binding_validation(ctx: CaseContext) -> None:
    session = ctx.open()
    rig = _Rig(ctx, session)
    undeclared = _undeclared_access(ctx, rig)
    before = _live_total(session)
    ctx.expect_submit_rejected(
        ErrorKind.RESOURCE_LIMIT, "submit with an empty binding list", session, rig.queue, rig.program, []
    )
    bindings = rig.bindings()
    if len(bindings) < session.info.limits.max_bindings_per_submission:
        duplicate = [*bindings, bindings[0]]  # every slot bound, slot of binding 0 twice
    else:
        second = bindings[1] if len(bindings) >= 2 else bindings[0]
        duplicate = [*bindings]
        duplicate[-1] = BindingRef(bindings[0].slot, second.buffer, second.range, second.access)
    ctx.expect_submit_rejected(
        ErrorKind.INVALID_ARGUMENT,
        f"submit binding slot {bindings[0].slot} twice",
        session,
        rig.queue,
        rig.program,
        duplicate,
    )
    first = rig.fixtures[0]
    past_end = [*bindings]
    past_end[0] = BindingRef(first.fixture.slot, first.buffer, BufferRange(1, first.size), first.fixture.access)
    ctx.expect_submit_rejected(
        ErrorKind.OUT_OF_BOUNDS,
        f"submit with slot {first.fixture.slot} range 1..{first.size + 1} past the end",
        session,
        rig.queue,
        rig.program,
        past_end,
    )
    if undeclared is not None:
        what, wrong = undeclared
        ctx.expect_submit_rejected(ErrorKind.INCOMPATIBLE, what, session, rig.queue, rig.program, wrong)
    after = _live_total(session)
    ctx.check(before == after, f"rejected submissions retained resources (live {before} -> {after})")
    event = rig.submit(ctx, what="the valid submission")
    _wait_complete(ctx, rig, event, "the valid submission")
    session.check_contents(rig.fixtures, expect="expected", what="after the valid submission")
    session.destroy_event(event)


def _undeclared_access(ctx: CaseContext, rig: _Rig) -> tuple[str, list[BindingRef[Any]]] | None:
    """A binding list whose only fault is an access (or slot) the program does not declare."""
    session = rig.session
    bindings = rig.bindings()
    for index, fb in enumerate(rig.fixtures):
        if fb.fixture.access is AccessMode.READ_WRITE:
            continue
        desc = BufferDesc(fb.size, fb.fixture.alignment, fb.fixture.domain, _rw_usage() | BufferUsage.MUTABLE_STATE)
        mutable = session.allocate_buffer(rig.context, desc).buffer
        wrong = [*bindings]
        wrong[index] = BindingRef(fb.fixture.slot, mutable, BufferRange(0, fb.size), AccessMode.READ_WRITE)
        return f"submit slot {fb.fixture.slot} (declared {fb.fixture.access.name}) as READ_WRITE", wrong
    if len(bindings) < session.info.limits.max_bindings_per_submission:
        fb = rig.fixtures[0]
        extra_slot = max(b.slot for b in bindings) + 1
        extra = BindingRef(extra_slot, fb.buffer, BufferRange(0, fb.size), AccessMode.READ)
        return f"submit with an extra slot {extra_slot} the program does not declare", [*bindings, extra]
    ctx.note("no undeclared access could be formed (every slot READ_WRITE and bindings at the limit)")
    return None


def submission_context_isolation(ctx: CaseContext) -> None:
    session = ctx.open()
    rig = _Rig(ctx, session)
    other = session.create_context()
    fb = rig.fixtures[0]
    foreign = session.allocate_buffer(other, fb.desc).buffer
    session.write(foreign, fb.fixture.initial)
    bindings = rig.bindings()
    bindings[0] = BindingRef(fb.fixture.slot, foreign, BufferRange(0, fb.size), fb.fixture.access)
    ctx.expect_submit_rejected(
        ErrorKind.INVALID_ARGUMENT,
        f"submit with slot {fb.fixture.slot} bound to a buffer of another context",
        session,
        rig.queue,
        rig.program,
        bindings,
    )


# --------------------------------------------------------------------------- events


def event_pending_release_terminal_stability(ctx: CaseContext) -> None:
    session = ctx.open()
    rig = _Rig(ctx, session)
    session.hold()
    event = rig.submit(ctx, what="the held submission")
    state = session.poll(event)
    ctx.check(state == EventState.PENDING, f"a held submission polled {state}, expected Pending (hooks did not hold)")
    try:
        session.destroy_event(event)
    except ReleaseRejected as exc:
        ctx.check(
            exc.error.kind is ErrorKind.BUSY,
            f"destroying a pending event was rejected with {exc.error.kind.name}, expected BUSY",
        )
        ctx.check(exc.resource is event or exc.resource == event, "the rejected destroy did not return the event")
        event = exc.resource
    except Exception as exc:
        ctx.fail(f"destroying a pending event: expected ReleaseRejected(BUSY), got {describe_exception(exc)}")
    else:
        ctx.fail("destroying a pending event succeeded; it must be ReleaseRejected(BUSY) with the event returned")
    session.complete_held(event)
    state = session.wait_terminal(event, what="the released held event")
    ctx.check(state == EventState.COMPLETE, f"the released held event ended {state}, expected Complete")
    _check_stable(ctx, session, event, state, "after completion")
    session.check_contents(rig.fixtures, expect="expected", what="after the held event completed")
    try:
        session.destroy_event(event)
    except Exception as exc:
        ctx.fail(f"retrying the release of the completed event failed: {describe_exception(exc)}")


def event_cancellation_races(ctx: CaseContext) -> None:
    session = ctx.open()
    rig = _Rig(ctx, session)
    session.hold()
    # Cancel first.
    event = rig.submit(ctx, what="cancel-first submission")
    try:
        session.provider.cancel_event(event)
    except BackendError as exc:
        ctx.fail(f"cancel-first: cancelling a held pending event raised {describe_exception(exc)}, expected success")
    state = session.poll(event)
    ctx.check(state == EventState.CANCELLED, f"cancel-first: after a successful cancel the event polls {state}")
    _check_stable(ctx, session, event, state, "cancel-first")
    session.check_contents(rig.fixtures, expect="initial", what="cancel-first")
    session.destroy_event(event)
    # Complete first.
    event = rig.submit(ctx, what="complete-first submission")
    session.complete_held(event)
    state = session.wait_terminal(event, what="complete-first event")
    ctx.check(state == EventState.COMPLETE, f"complete-first: the released event ended {state}, expected Complete")
    ctx.expect_error(ErrorKind.BUSY, "complete-first: cancel after completion", session.provider.cancel_event, event)
    _check_stable(ctx, session, event, state, "complete-first (after the refused cancel)")
    session.check_contents(rig.fixtures, expect="expected", what="complete-first")
    session.destroy_event(event)


# --------------------------------------------------------------------------- timeouts


def timeout_finite_admission(ctx: CaseContext) -> None:
    shapes = []
    for ns in (1, 10_000_000_000):
        session = ctx.open(f"timeout {ns} ns")
        rig = _Rig(ctx, session)
        shapes.append(f"{ns} ns: {_one_timeout(ctx, rig, ns)}")
    ctx.note("; ".join(shapes))


def _one_timeout(ctx: CaseContext, rig: _Rig, ns: int) -> str:
    session = rig.session
    what = f"submission with Timeout.after_ns({ns})"
    indeterminate = False
    try:
        event = session.submit(rig.queue, rig.program, rig.bindings(), Timeout.after_ns(ns))
    except SubmitRejected as exc:
        ctx.check(
            exc.error.kind in (ErrorKind.DEADLINE_EXPIRED, ErrorKind.UNSUPPORTED),
            f"{what}: rejected with {exc.error.kind.name}; a finite timeout may only be rejected with "
            "DEADLINE_EXPIRED (or UNSUPPORTED when finite timeouts are not offered)",
        )
        session.check_contents(rig.fixtures, expect="initial", what=f"{what} (rejected)")
        return f"rejected ({exc.error.kind.name})"
    except SubmitIndeterminate as exc:
        event, indeterminate = exc.event, True
    state = session.wait_terminal(event, what=what)
    if state.status is EventStatus.FAILED:
        assert state.error is not None
        ctx.check(
            state.error.kind is ErrorKind.DEADLINE_EXPIRED,
            f"{what}: ended Failed({state.error.kind.name}); a timed-out submission may only fail DEADLINE_EXPIRED",
        )
    else:
        ctx.check(state == EventState.COMPLETE, f"{what}: ended {state}; expected Complete or Failed(DeadlineExpired)")
    _check_stable(ctx, session, event, state, what)
    shape = ("indeterminate" if indeterminate else "accepted") + f" then {state}"
    if state == EventState.COMPLETE and not indeterminate:
        session.check_contents(rig.fixtures, expect="expected", what=what)
    session.destroy_event(event)
    return shape


# --------------------------------------------------------------------------- accounting


def accounting_resource_lifecycle(ctx: CaseContext) -> None:
    session = ctx.open("lifecycle")
    if session.before is None:
        ctx.skip("hooks.live_resources() returns None: the provider does not report native resource counts")
    rig = _Rig(ctx, session)
    event = rig.submit(ctx, what="lifecycle submission")
    live = _live_total(session) or 0
    minimum = 4 + len(rig.fixtures)
    ctx.check(
        live >= minimum,
        f"with a context, {len(rig.fixtures)} buffers, a program, a queue and an event alive the provider reports "
        f"only {live} live resources (at least {minimum} expected)",
    )
    _wait_complete(ctx, rig, event, "lifecycle submission")
    session.destroy_event(event)
    session.destroy_queue(rig.queue)
    session.unload_program(rig.program)
    for fb in rig.fixtures:
        session.free_buffer(fb.buffer)
    session.destroy_context(rig.context)
    counts = session.live_resources() or {}
    leaked = {k: v for k, v in counts.items() if v}
    problems = list(ctx.prior_accounting)
    if leaked:
        problems.append(f"{ctx.case_id}: after releasing everything the provider still reports {leaked}")
    problems.extend(f"{ctx.case_id}: {p}" for p in ctx.accounting_problems)
    if problems:
        ctx.fail("live or indeterminate native resources were not zero: " + "; ".join(problems))


def submission_copy_path_diagnostics(ctx: CaseContext) -> None:
    report = getattr(ctx.hooks, "copy_paths", None)
    if not callable(report):
        ctx.skip("the hooks do not report copy paths (ConformanceHooks.copy_paths)")
    session = ctx.open()
    before = report(session.provider)  # before the fixtures are written: their bytes belong to the run's record
    if before is None:
        ctx.skip("the provider does not track copy paths (copy_paths returned None)")
    before = list(before)
    rig = _Rig(ctx, session)
    written = sum(len(fb.fixture.initial) for fb in rig.fixtures)
    event = rig.submit(ctx, what="the target run")
    _wait_complete(ctx, rig, event, "the target run")
    session.destroy_event(event)
    session.check_contents(rig.fixtures, expect="expected", what="after the target run")
    after = list(report(session.provider) or [])
    if all("seq" in r for r in before + after):
        # Numbered records: the new ones are those past the last one seen, also when a bounded log
        # dropped its oldest (a full log has as many records before as after).
        seen = max((int(r["seq"]) for r in before), default=-1)
        new = [r for r in after if int(r["seq"]) > seen]
    else:
        new = after[len(before) :]
    ctx.check(len(new) == 1, f"one submission was made but the provider reported {len(new)} copy-path records")
    keys = ("direct", "shared", "staged", "staged_bytes", "transfer_bytes")
    record = {key: int(new[0].get(key, 0)) for key in keys}
    bound = len(rig.fixtures)
    counted = record["direct"] + record["shared"] + record["staged"]
    ctx.record({"copy_path": record})
    ctx.check(counted == bound, f"{bound} bindings were submitted but the copy paths count {counted}: {record}")
    ctx.check(
        record["staged"] == 0,
        f"{record['staged']} of {bound} bindings were staged (copied through a bounce buffer, "
        f"{record['staged_bytes']} bound bytes): a bound buffer must be used in place",
    )
    ctx.check(record["direct"] > 0, f"no binding was direct (device memory used in place): {record}")
    ctx.check(
        record["transfer_bytes"] == written,
        f"the case wrote {written} bytes into the fixtures before the run (explicit transfers) but the "
        f"record counts {record['transfer_bytes']} transfer bytes: {record}",
    )
    ctx.note(
        f"direct {record['direct']}, shared {record['shared']}, staged 0, {record['transfer_bytes']} transfer bytes"
    )


# --------------------------------------------------------------------------- the table


STANDARD_CASES: tuple[ConformanceCase, ...] = (
    ConformanceCase("metadata.stable-valid", metadata_stable_valid),
    ConformanceCase("intent.reserved-flags", intent_reserved_flags),
    ConformanceCase("memory.host", _memory_case(MemoryDomain.HOST), requires=Capabilities.HOST_VISIBLE_MEMORY),
    ConformanceCase("memory.device", _memory_case(MemoryDomain.DEVICE), requires=Capabilities.DEVICE_LOCAL_MEMORY),
    ConformanceCase("memory.shared", _memory_case(MemoryDomain.SHARED), requires=Capabilities.SHARED_MEMORY),
    ConformanceCase("buffer.segmented-transfer-bounds", buffer_segmented_transfer_bounds),
    ConformanceCase("buffer.transfer-permissions", buffer_transfer_permissions),
    ConformanceCase("program.segmented-artifact-bounds", program_segmented_artifact_bounds),
    ConformanceCase("submission.binding-validation", submission_binding_validation),
    ConformanceCase("submission.context-isolation", submission_context_isolation),
    ConformanceCase("submission.copy-path-diagnostics", submission_copy_path_diagnostics, mandatory=False),
    ConformanceCase("event.pending-release-terminal-stability", event_pending_release_terminal_stability),
    ConformanceCase("timeout.finite-admission", timeout_finite_admission),
    ConformanceCase("event.cancellation-races", event_cancellation_races, requires=Capabilities.EVENT_CANCELLATION),
)
"""Every standard case except accounting, in run order."""

ACCOUNTING_CASE = ConformanceCase("accounting.resource-lifecycle", accounting_resource_lifecycle, mandatory=False)
"""Runs last: its own lifecycle check plus the before/after accounting of every earlier case."""
