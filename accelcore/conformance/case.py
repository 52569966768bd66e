"""The case API: a conformance case, the context it runs with, and a tracking provider session.

A case is ``ConformanceCase(id, run, requires=None, mandatory=True)``; ``run``
receives a :class:`CaseContext`. Inside, ``ctx.open()`` gives a
:class:`Session` over a *fresh* provider instance from the factory. The
session mirrors the ``Accelerator`` calls, tracks every handle it created and,
when the case ends (passed or not), releases what is left child-before-parent
and checks the provider's resource accounting. A case fails by raising
:class:`CaseFailed` (``ctx.fail``/``ctx.check``/``ctx.expect_error``) and skips
by raising :class:`CaseSkipped` — which a mandatory case may not do.

Progress: every wait is a poll loop with a sleeping back-off and an overall
limit (``ctx.wait_limit_s``); a pending event never hangs the suite, it fails
the case.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from ..contract.buffers import AllocatedBuffer, BufferDesc, BufferRange
from ..contract.device import ContextDesc, DeviceInfo, QueueDesc
from ..contract.errors import (
    BackendError,
    ErrorKind,
    ReleaseFailure,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitFailure,
    SubmitIndeterminate,
    SubmitRejected,
)
from ..contract.flags import AccessMode, BufferUsage, Capabilities, MemoryDomain
from ..contract.ports import ByteSource, MemorySink, MemorySource
from ..contract.program import ArtifactRef
from ..contract.submission import BindingRef, EventState, Timeout
from ..contract.waiting import poll_until_terminal
from .target import BindingFixture, ConformanceHooks, ConformanceTarget

__all__ = [
    "CaseContext",
    "CaseFailed",
    "CaseSkipped",
    "ConformanceCase",
    "FixtureBuffer",
    "Session",
    "describe_exception",
]

T = TypeVar("T")

_RELEASE_ORDER = ("event", "queue", "program", "buffer", "context")


class CaseSkipped(Exception):
    """Raised by a case to skip with ``reason`` (a mandatory case that skips is recorded as failed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CaseFailed(Exception):
    """Raised by a case when the provider broke the contract; the message says what was wrong."""


@dataclass(frozen=True, slots=True)
class ConformanceCase:
    """One conformance case.

    ``id``: stable dotted name (``area.what``). ``run(ctx)``: the body; returns
    on pass. ``requires``: capability bits; when the device lacks any of them
    the suite records a skip naming them and does not call ``run``.
    ``mandatory``: the case may not skip itself.
    """

    id: str
    run: Callable[[CaseContext], None]
    requires: Capabilities | None = None
    mandatory: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        if not self.id or any(ch.isspace() for ch in self.id):
            raise ValueError(f"case id {self.id!r} must be a non-empty string without whitespace")


def describe_exception(exc: BaseException) -> str:
    """A one-line description naming the exception's shape and kind."""
    if isinstance(exc, BackendError):
        return f"BackendError {exc}"
    if isinstance(exc, ReleaseRejected):
        return f"ReleaseRejected({exc.error.kind.name}: {exc.error.message})"
    if isinstance(exc, ReleaseIndeterminate):
        return f"ReleaseIndeterminate({exc.error.kind.name}: {exc.error.message})"
    if isinstance(exc, SubmitRejected):
        return f"SubmitRejected({exc.error.kind.name}: {exc.error.message})"
    if isinstance(exc, SubmitIndeterminate):
        return f"SubmitIndeterminate({exc.error.kind.name}: {exc.error.message})"
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True, slots=True)
class FixtureBuffer:
    """A buffer made for one target fixture: its handle, the request and the reported info."""

    fixture: BindingFixture
    allocated: AllocatedBuffer[Any]
    desc: BufferDesc

    @property
    def buffer(self) -> Any:
        return self.allocated.buffer

    @property
    def size(self) -> int:
        return self.desc.bytes

    def binding(self) -> BindingRef[Any]:
        """The fixture's whole-buffer binding with its declared access."""
        return BindingRef(self.fixture.slot, self.buffer, BufferRange(0, self.size), self.fixture.access)


@dataclass(slots=True)
class _Tracked:
    kind: str
    handle: Any


class Session:
    """One fresh provider instance used by one case, with every created handle tracked.

    The methods mirror the ``Accelerator`` calls and raise exactly what the
    provider raises. Releases untrack on success, re-track the returned handle
    on a rejected release and mark the instance discarded on an indeterminate
    one (then nothing more is released or counted on it). An indeterminate
    submission taints the instance: it is cleaned up but not used again.
    """

    def __init__(self, ctx: CaseContext, provider: Any, label: str) -> None:
        self.ctx = ctx
        self.provider = provider
        self.label = label
        self._tracked: list[_Tracked] = []
        self._held = False
        self.discarded: str | None = None
        self.tainted: str | None = None
        try:
            self.info: DeviceInfo = provider.device_info()
        except Exception as exc:
            raise CaseFailed(f"device_info() on a fresh instance failed: {describe_exception(exc)}") from exc
        self.before = self.live_resources()
        if self.before is not None and any(self.before.values()):
            ctx.accounting_problems.append(f"{label}: a fresh instance reports live resources {dict(self.before)}")

    # -- tracking ----------------------------------------------------------------------------

    def _track(self, kind: str, handle: T) -> T:
        self._tracked.append(_Tracked(kind, handle))
        return handle

    def _find(self, kind: str, handle: Any) -> _Tracked | None:
        for entry in reversed(self._tracked):
            if entry.kind == kind and entry.handle is handle:
                return entry
        for entry in reversed(self._tracked):
            if entry.kind == kind and _safe_eq(entry.handle, handle):
                return entry
        return None

    def _usable(self, what: str) -> None:
        if self.discarded is not None or self.tainted is not None:
            raise CaseFailed(
                f"internal: {what} on an instance that must not be reused ({self.discarded or self.tainted})"
            )

    def tracked(self, kind: str) -> list[Any]:
        """Live handles of ``kind`` this session still owns."""
        return [entry.handle for entry in self._tracked if entry.kind == kind]

    # -- creation ----------------------------------------------------------------------------

    def create_context(self, desc: ContextDesc | None = None) -> Any:
        self._usable("create_context")
        return self._track("context", self.provider.create_context(desc if desc is not None else ContextDesc()))

    def allocate_buffer(self, context: Any, desc: BufferDesc) -> AllocatedBuffer[Any]:
        self._usable("allocate_buffer")
        allocated: AllocatedBuffer[Any] = self.provider.allocate_buffer(context, desc)
        self._track("buffer", allocated.buffer)
        return allocated

    def load_program(self, context: Any, artifact: ArtifactRef | None = None) -> Any:
        self._usable("load_program")
        return self._track("program", self.provider.load_program(context, artifact or self.artifact()))

    def create_queue(self, context: Any, desc: QueueDesc | None = None) -> Any:
        self._usable("create_queue")
        return self._track("queue", self.provider.create_queue(context, desc if desc is not None else QueueDesc()))

    def submit(
        self, queue: Any, program: Any, bindings: Sequence[BindingRef[Any]], timeout: Timeout = Timeout.INFINITE
    ) -> Any:
        """Submit; the returned (or indeterminate) event is tracked."""
        self._usable("submit")
        try:
            event = self.provider.submit(queue, program, bindings, timeout)
        except SubmitIndeterminate as exc:
            self._track("event", exc.event)
            self.tainted = f"indeterminate submission ({exc.error.kind.name})"
            raise
        return self._track("event", event)

    # -- release -----------------------------------------------------------------------------

    def _release(self, kind: str, call: Callable[[Any], None], handle: Any) -> None:
        entry = self._find(kind, handle)
        try:
            call(handle)
        except ReleaseRejected as exc:
            if entry is not None:
                entry.handle = exc.resource
            raise
        except ReleaseIndeterminate as exc:
            if entry is not None:
                self._tracked.remove(entry)
            self.discarded = f"indeterminate release of a {kind} ({exc.error.kind.name})"
            raise
        if entry is not None:
            self._tracked.remove(entry)

    def destroy_context(self, context: Any) -> None:
        self._release("context", self.provider.destroy_context, context)

    def free_buffer(self, buffer: Any) -> None:
        self._release("buffer", self.provider.free_buffer, buffer)

    def unload_program(self, program: Any) -> None:
        self._release("program", self.provider.unload_program, program)

    def destroy_queue(self, queue: Any) -> None:
        self._release("queue", self.provider.destroy_queue, queue)

    def destroy_event(self, event: Any) -> None:
        self._release("event", self.provider.destroy_event, event)

    # -- events ------------------------------------------------------------------------------

    def poll(self, event: Any) -> EventState:
        state = self.provider.poll_event(event)
        if not isinstance(state, EventState):
            raise CaseFailed(f"poll_event returned {type(state).__name__} {state!r}, not an EventState")
        return state

    def wait_terminal(self, event: Any, limit_s: float | None = None, *, what: str = "event") -> EventState:
        """Poll (never blocking inside poll) with a sleeping back-off until terminal.

        Still pending after ``limit_s`` (default ``ctx.wait_limit_s``) → CaseFailed.
        """
        limit = self.ctx.wait_limit_s if limit_s is None else limit_s
        try:
            state = poll_until_terminal(lambda: self.poll(event), limit, first_sleep_s=0.0002, max_sleep_s=0.01)
        except BackendError as exc:
            raise CaseFailed(f"poll_event on the {what} raised {describe_exception(exc)}") from exc
        if state is None:
            raise CaseFailed(f"the {what} is still Pending after {limit:g} s")
        return state

    def hold(self) -> None:
        """Ask the hooks to hold this instance's submissions pending."""
        self.ctx.hooks.hold_submissions(self.provider)
        self._held = True

    def complete_held(self, event: Any) -> None:
        """Ask the hooks to release one held event (it may still be pending when this returns)."""
        self.ctx.hooks.complete_held(self.provider, event)

    # -- bytes -------------------------------------------------------------------------------

    def artifact(self, payload: ByteSource | None = None, *, segments: int = 1) -> ArtifactRef:
        """The target's artifact, as ``segments`` roughly equal segments unless ``payload`` is given."""
        target = self.ctx.target
        if payload is None:
            data = target.artifact
            if segments <= 1 or len(data) < segments:
                payload = MemorySource(data)
            else:
                step = len(data) // segments
                cuts = [i * step for i in range(segments)] + [len(data)]
                payload = MemorySource(*(data[cuts[i] : cuts[i + 1]] for i in range(segments)))
        return ArtifactRef(target.format, target.target, payload, target.resident_bytes)

    def write(self, buffer: Any, data: bytes, offset: int = 0) -> None:
        self.provider.write_buffer(buffer, offset, MemorySource(data))

    def read(self, buffer: Any, size: int, offset: int = 0) -> bytes:
        out = bytearray(size)
        self.provider.read_buffer(buffer, offset, MemorySink(out))
        return bytes(out)

    def fixture_desc(self, fixture: BindingFixture) -> BufferDesc:
        return BufferDesc(len(fixture.initial), fixture.alignment, fixture.domain, fixture.buffer_usage())

    def fixtures(self, context: Any, *, fill: bool = True) -> list[FixtureBuffer]:
        """Allocate one buffer per target fixture and (``fill``) write its initial bytes."""
        made: list[FixtureBuffer] = []
        for fixture in self.ctx.target.fixtures:
            desc = self.fixture_desc(fixture)
            try:
                allocated = self.allocate_buffer(context, desc)
            except BackendError as exc:
                raise CaseFailed(
                    f"allocating the fixture buffer for slot {fixture.slot} ({desc}) failed: {describe_exception(exc)}"
                ) from exc
            made.append(FixtureBuffer(fixture, allocated, desc))
        if fill:
            self.refill(made)
        return made

    def refill(self, fixture_buffers: Sequence[FixtureBuffer]) -> None:
        """Write every fixture's initial bytes again."""
        for fb in fixture_buffers:
            try:
                self.write(fb.buffer, fb.fixture.initial)
            except BackendError as exc:
                raise CaseFailed(
                    f"writing the initial bytes of slot {fb.fixture.slot} failed: {describe_exception(exc)}"
                ) from exc

    def bindings(self, fixture_buffers: Sequence[FixtureBuffer]) -> list[BindingRef[Any]]:
        return [fb.binding() for fb in fixture_buffers]

    def check_contents(self, fixture_buffers: Sequence[FixtureBuffer], *, expect: str, what: str) -> None:
        """``expect`` "expected": every fixture with expected bytes holds them, and a read-only (``READ``) input
        without them still holds its initial bytes; "initial": every buffer is untouched."""
        for fb in fixture_buffers:
            wanted = fb.fixture.expected if expect == "expected" else fb.fixture.initial
            if wanted is None and fb.fixture.access is AccessMode.READ:
                wanted = fb.fixture.initial
            if wanted is None:
                continue
            try:
                got = self.read(fb.buffer, fb.size)
            except BackendError as exc:
                raise CaseFailed(f"{what}: reading slot {fb.fixture.slot} failed: {describe_exception(exc)}") from exc
            if got != wanted:
                index = next(i for i, (a, b) in enumerate(zip(got, wanted, strict=True)) if a != b)
                label = "expected output" if expect == "expected" else "its initial bytes (untouched)"
                raise CaseFailed(
                    f"{what}: slot {fb.fixture.slot} does not hold {label}: first difference at byte {index} "
                    f"(got {got[index]:#04x}, wanted {wanted[index]:#04x})"
                )

    def run_once(
        self,
        context: Any,
        queue: Any,
        program: Any,
        slots: Mapping[int, tuple[bytes, AccessMode]],
        domain: MemoryDomain,
        *,
        what: str = "event",
    ) -> tuple[EventState, dict[int, bytes]]:
        """Run ``program`` once on a fresh buffer per slot (``slots``: slot → initial bytes and access; usage: that
        access and both transfers; 16-byte aligned, in ``domain``): the terminal state and, when it is COMPLETE,
        every slot's bytes afterwards (else nothing). The event and the buffers are released; the program stays."""
        buffers: dict[int, Any] = {}
        bindings = []
        for slot, (data, access) in slots.items():
            usage = BufferUsage.for_access(access) | BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
            buffer = self.allocate_buffer(context, BufferDesc(len(data), 16, domain, usage)).buffer
            self.write(buffer, data)
            buffers[slot] = buffer
            bindings.append(BindingRef(slot, buffer, BufferRange(0, len(data)), access))
        event = self.submit(queue, program, bindings)
        state = self.wait_terminal(event, what=what)
        contents: dict[int, bytes] = {}
        if state == EventState.COMPLETE:
            contents = {slot: self.read(buffer, len(slots[slot][0])) for slot, buffer in buffers.items()}
        self.destroy_event(event)
        for buffer in buffers.values():
            self.free_buffer(buffer)
        return state, contents

    # -- accounting and cleanup ---------------------------------------------------------------

    def live_resources(self) -> Mapping[str, int] | None:
        counts = self.ctx.hooks.live_resources(self.provider)
        return None if counts is None else dict(counts)

    def close(self) -> list[str]:
        """Release everything still tracked, child before parent; return the problems seen."""
        problems: list[str] = []
        if self.discarded is None:
            for kind in _RELEASE_ORDER:
                for entry in list(reversed([e for e in self._tracked if e.kind == kind])):
                    problem = self._cleanup_one(entry)
                    if problem is not None:
                        problems.append(f"{self.label}: cleanup of a {kind}: {problem}")
                    if self.discarded is not None:
                        break
                if self.discarded is not None:
                    break
        if self.discarded is None:
            after = self.live_resources()
            if after is not None and any(after.values()):
                live = {k: v for k, v in after.items() if v}
                self.ctx.accounting_problems.append(f"{self.label}: live resources after release: {live}")
        close = getattr(self.provider, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:
                problems.append(f"{self.label}: close() raised {describe_exception(exc)}")
        return problems

    def _cleanup_one(self, entry: _Tracked) -> str | None:
        release = {
            "event": self.destroy_event,
            "queue": self.destroy_queue,
            "program": self.unload_program,
            "buffer": self.free_buffer,
            "context": self.destroy_context,
        }[entry.kind]
        if entry.kind == "event":
            problem = self._settle_event(entry.handle)
            if problem is not None:
                self.discarded = problem
                return problem
        for attempt in range(2):
            try:
                release(entry.handle)
                return None
            except ReleaseRejected as exc:
                if attempt == 1:
                    return f"release rejected twice ({exc.error.kind.name}: {exc.error.message})"
                time.sleep(0.001)
            except ReleaseFailure as exc:
                return f"release indeterminate ({exc.error.kind.name}: {exc.error.message})"
            except Exception as exc:
                if entry in self._tracked:
                    self._tracked.remove(entry)
                return f"release raised {describe_exception(exc)} instead of succeeding or ReleaseFailure"
        return None

    def _settle_event(self, event: Any) -> str | None:
        """Bring a leftover event to a terminal state (releasing a hold if one was set)."""
        try:
            state = self.poll(event)
            if state.is_terminal:
                return None
            if self._held:
                self.complete_held(event)
            self.wait_terminal(event, what="leftover event")
        except CaseFailed as exc:
            return str(exc)
        except Exception as exc:
            return f"settling a leftover event raised {describe_exception(exc)}"
        return None


def _safe_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


class CaseContext:
    """What a case body gets: the target, the hooks, the probed device info and helpers.

    ``open()`` builds a fresh provider instance (a :class:`Session`); every
    session is cleaned up and accounted when the case ends.
    """

    def __init__(
        self,
        case_id: str,
        factory: Callable[[], Any],
        target: ConformanceTarget,
        hooks: ConformanceHooks,
        info: DeviceInfo,
        wait_limit_s: float,
    ) -> None:
        self.case_id = case_id
        self.factory = factory
        self.target = target
        self.hooks = hooks
        self.info = info
        self.wait_limit_s = wait_limit_s
        self.notes: list[str] = []
        self.metrics: dict[str, Any] = {}
        self.accounting_problems: list[str] = []
        self.prior_accounting: list[str] = []
        self._sessions: list[Session] = []

    def open(self, label: str | None = None) -> Session:
        """A session over a fresh instance from the factory."""
        name = label or f"instance {len(self._sessions) + 1}"
        try:
            provider = self.factory()
        except Exception as exc:
            raise CaseFailed(f"the factory failed to build a fresh instance: {describe_exception(exc)}") from exc
        session = Session(self, provider, name)
        self._sessions.append(session)
        return session

    def close_all(self) -> list[str]:
        problems: list[str] = []
        for session in reversed(self._sessions):
            problems.extend(session.close())
        self._sessions.clear()
        return problems

    # -- verdicts ----------------------------------------------------------------------------

    def fail(self, message: str) -> NoReturn:
        raise CaseFailed(message)

    def check(self, condition: bool, message: str) -> None:
        if not condition:
            raise CaseFailed(message)

    def skip(self, reason: str) -> NoReturn:
        raise CaseSkipped(reason)

    def note(self, message: str) -> None:
        """Record a remark that ends up in the case's ``reason`` even when it passes."""
        self.notes.append(message)

    def record(self, metrics: Mapping[str, Any]) -> None:
        """Record measured numbers (JSON-ready values) for the case's result, passed or failed."""
        self.metrics.update(metrics)

    def expect_error(
        self, kind: ErrorKind, what: str, call: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> BackendError:
        """Call and demand a :class:`BackendError` of ``kind``; anything else fails the case naming what happened."""
        try:
            call(*args, **kwargs)
        except BackendError as exc:
            if exc.kind is not kind:
                raise CaseFailed(f"{what}: expected {kind.name}, got {exc.kind.name} ({exc.message})") from exc
            return exc
        except Exception as exc:
            raise CaseFailed(f"{what}: expected BackendError {kind.name}, got {describe_exception(exc)}") from exc
        raise CaseFailed(f"{what}: expected {kind.name}, but the call succeeded")

    def expect_submit_rejected(
        self,
        kind: ErrorKind,
        what: str,
        session: Session,
        queue: Any,
        program: Any,
        bindings: Sequence[BindingRef[Any]],
        timeout: Timeout = Timeout.INFINITE,
    ) -> BackendError:
        """Submit and demand ``SubmitRejected`` with ``kind``. An accepted event is tracked (and cleaned up)."""
        try:
            session.submit(queue, program, bindings, timeout)
        except SubmitRejected as exc:
            if exc.error.kind is not kind:
                raise CaseFailed(
                    f"{what}: expected SubmitRejected({kind.name}), got SubmitRejected({exc.error.kind.name}: "
                    f"{exc.error.message})"
                ) from exc
            return exc.error
        except SubmitFailure as exc:
            raise CaseFailed(f"{what}: expected SubmitRejected({kind.name}), got {describe_exception(exc)}") from exc
        except BackendError as exc:
            raise CaseFailed(
                f"{what}: expected SubmitRejected({kind.name}), but submit raised a plain {describe_exception(exc)}; "
                "submission failures must be SubmitFailure"
            ) from exc
        except Exception as exc:
            raise CaseFailed(f"{what}: expected SubmitRejected({kind.name}), got {describe_exception(exc)}") from exc
        raise CaseFailed(f"{what}: expected SubmitRejected({kind.name}), but the submission was accepted")
