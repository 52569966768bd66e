"""What a provider hands the conformance suite: a target and hooks."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..contract.flags import AccessMode, BufferUsage, MemoryDomain
from ..contract.program import ArtifactFormat, TargetIdentity

__all__ = [
    "COPY_PATH_LIMIT",
    "BindingFixture",
    "ConformanceHooks",
    "ConformanceTarget",
    "CopyPathLog",
    "CopyPathRecord",
    "SelfCountingHooks",
]


@dataclass(frozen=True, slots=True)
class BindingFixture:
    """One binding of the standard target: the buffer to make and what it must hold after a run.

    ``expected`` None means "not checked". ``usage`` None means: derived from
    ``access`` plus TRANSFER_SOURCE | TRANSFER_DESTINATION.
    """

    slot: int
    access: AccessMode
    domain: MemoryDomain
    alignment: int
    initial: bytes
    expected: bytes | None
    usage: BufferUsage | None = None

    def buffer_usage(self) -> BufferUsage:
        if self.usage is not None:
            return self.usage
        return BufferUsage.for_access(self.access) | BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION


@dataclass(frozen=True, slots=True)
class ConformanceTarget:
    """An artifact plus binding fixtures: running the artifact turns every
    fixture's ``initial`` bytes into its ``expected`` bytes."""

    name: str
    format: ArtifactFormat
    target: TargetIdentity
    artifact: bytes
    resident_bytes: int
    fixtures: tuple[BindingFixture, ...]

    def problems(self) -> list[str]:
        """What makes this target unusable (empty when it is fine); the suite checks it before any case runs.

        Each fixture needs a non-negative slot of its own, a power-of-two alignment, initial bytes, and
        expected bytes (when given) of the same length; a read-only (``READ``) input's expected bytes, when
        given, must be its initial bytes (the suite checks it is left untouched, byte for byte); some
        fixture must have expected bytes, or a run proves nothing.
        """
        found: list[str] = []
        if not self.artifact:
            found.append("the artifact is empty")
        if self.resident_bytes < 0:
            found.append(f"resident_bytes is negative ({self.resident_bytes})")
        if not self.fixtures:
            found.append("there are no binding fixtures")
        slots = [f.slot for f in self.fixtures]
        for slot in sorted({s for s in slots if slots.count(s) > 1}):
            found.append(f"slot {slot} has {slots.count(slot)} fixtures")
        for f in self.fixtures:
            where = f"fixture for slot {f.slot}"
            if f.slot < 0:
                found.append(f"{where}: the slot is negative")
            if f.alignment < 1 or f.alignment & (f.alignment - 1):
                found.append(f"{where}: alignment {f.alignment} is not a power of two")
            if not f.initial:
                found.append(f"{where}: no initial bytes")
            if f.expected is not None and len(f.expected) != len(f.initial):
                found.append(f"{where}: {len(f.expected)} expected bytes for {len(f.initial)} initial bytes")
            elif f.access is AccessMode.READ and f.expected is not None and f.expected != f.initial:
                found.append(f"{where}: a read-only input whose expected bytes differ from its initial bytes")
        if self.fixtures and all(f.expected is None for f in self.fixtures):
            found.append("no fixture has expected bytes, so a run proves nothing")
        return found


class ConformanceHooks(Protocol):
    """Test controls a provider offers the suite.

    ``hold_submissions(provider)``: from now on, submissions on this instance
    stay pending (gated) until released. ``complete_held(provider, event)``:
    release one held event so it runs to completion (may return before it is
    terminal; the suite polls). ``live_resources(provider)``: live plus
    indeterminate native resources per kind, or None when not tracked.

    Optional (looked up with ``getattr``; ``submission.copy-path-diagnostics`` skips without it):
    ``copy_paths(provider)``: one mapping per accepted submission on this instance, in order, with
    ``direct`` (bindings the program uses in place in device-local memory), ``shared`` (in place in
    host or shared memory that is not device-local), ``staged`` (bindings the program does not use
    in place: copied through a bounce buffer), ``staged_bytes`` (the bytes of those bound ranges)
    and ``transfer_bytes`` (bytes the provider's explicit ``write_buffer``/``read_buffer`` calls
    moved since the previous record, or since recording began), and optionally ``seq`` (the record's
    number since recording began: a bounded log that drops its oldest records still tells the case
    which ones are new). A provider may record only from its first ``copy_paths`` call on
    (:class:`CopyPathLog`): that call then answers ``[]``. None: not tracked.
    """

    def hold_submissions(self, provider: Any) -> None: ...

    def complete_held(self, provider: Any, event: Any) -> None: ...

    def live_resources(self, provider: Any) -> Mapping[str, int] | None: ...


class SelfCountingHooks:
    """The part of the hooks a provider that keeps its own accounting answers itself: ``live_resources`` and
    ``copy_paths`` return the provider's ``live_resources()`` and ``copy_paths()``. A provider's hooks
    subclass it and add ``hold_submissions`` and ``complete_held``."""

    def live_resources(self, provider: Any) -> Mapping[str, int] | None:
        counts: Mapping[str, int] = provider.live_resources()
        return counts

    def copy_paths(self, provider: Any) -> list[dict[str, int]]:
        """One record per accepted submission (the provider records from its first ``copy_paths`` call on)."""
        records: list[dict[str, int]] = provider.copy_paths()
        return records


CopyPathRecord = tuple[int, int, int, int, int]
"""(direct, shared, staged, staged_bytes, explicit-transfer bytes so far): one accepted submission."""

COPY_PATH_LIMIT = 4096
"""The most records a :class:`CopyPathLog` keeps: past it the oldest go (``dropped`` counts them), so a
long-running process that turned the diagnostics on holds at most this many small tuples."""


class _Records:
    """The bounded record store of a :class:`CopyPathLog`: ``append`` drops the oldest record past the
    limit and moves the log's ``start`` to that record's running count, so the bytes reported for the
    first kept record are still the bytes since the one before it."""

    __slots__ = ("_items", "_log")

    def __init__(self, log: CopyPathLog) -> None:
        self._items: deque[CopyPathRecord] = deque()
        self._log = log

    def append(self, record: CopyPathRecord) -> None:
        if len(self._items) >= self._log.limit:
            oldest = self._items.popleft()
            self._log.start = oldest[4]
            self._log.dropped += 1
        self._items.append(record)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[CopyPathRecord]:
        return iter(self._items)


class CopyPathLog:
    """The records a provider keeps for ``ConformanceHooks.copy_paths`` once diagnostics are on.

    A provider makes one at the first ``copy_paths`` call (until then its submit path only tests that
    it has none) and appends one :data:`CopyPathRecord` per accepted submission: the binding counts of
    the path that submission really took plus the provider's running count of explicit-transfer bytes
    (``start`` is that count when the log was made). :meth:`report` turns the running count into the
    bytes moved since the previous record. Bounded: at most ``limit`` records (default
    :data:`COPY_PATH_LIMIT`) are kept, the oldest dropped first and counted in ``dropped``, so turning the
    diagnostics on in a long-running process costs a fixed amount of memory.
    """

    __slots__ = ("dropped", "limit", "records", "start")

    def __init__(self, transferred: int = 0, limit: int | None = None) -> None:
        limit = COPY_PATH_LIMIT if limit is None else limit
        if limit < 1:
            raise ValueError(f"a copy-path log keeps at least one record, not {limit}")
        self.limit = limit
        self.dropped = 0
        """Records dropped (oldest first) because the log was full."""
        self.start = transferred
        self.records = _Records(self)

    def report(self) -> list[dict[str, int]]:
        """The kept records, oldest first (after ``dropped`` older ones), with ``transfer_bytes`` per record
        and ``seq``, the record's number since the log was made."""
        out: list[dict[str, int]] = []
        previous = self.start
        for seq, (direct, shared, staged, staged_bytes, transferred) in enumerate(self.records, self.dropped):
            out.append(
                {
                    "direct": direct,
                    "shared": shared,
                    "staged": staged,
                    "staged_bytes": staged_bytes,
                    "transfer_bytes": transferred - previous,
                    "seq": seq,
                }
            )
            previous = transferred
        return out
