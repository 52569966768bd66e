"""What a provider hands the conformance suite: a target and hooks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..flags import AccessMode, BufferUsage, MemoryDomain
from ..program import ArtifactFormat, TargetIdentity

__all__ = ["BindingFixture", "ConformanceHooks", "ConformanceTarget"]


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


class ConformanceHooks(Protocol):
    """Test controls a provider offers the suite.

    ``hold_submissions(provider)``: from now on, submissions on this instance
    stay pending (gated) until released. ``complete_held(provider, event)``:
    release one held event so it runs to completion (may return before it is
    terminal; the suite polls). ``live_resources(provider)``: live plus
    indeterminate native resources per kind, or None when not tracked.
    """

    def hold_submissions(self, provider: Any) -> None: ...

    def complete_held(self, provider: Any, event: Any) -> None: ...

    def live_resources(self, provider: Any) -> Mapping[str, int] | None: ...
