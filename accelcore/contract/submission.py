"""Submission values: timeouts, bindings and their validators, event states."""

from __future__ import annotations

import enum
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from ._checks import check_u32, check_u64
from .buffers import BufferDesc, BufferRange
from .errors import BackendError, ErrorKind
from .flags import AccessMode, access_allows

__all__ = [
    "BindingRef",
    "EventState",
    "EventStatus",
    "Timeout",
    "timeout_seconds",
    "validate_binding_ranges",
    "validate_bindings",
    "validate_program_bindings",
]

B = TypeVar("B")


@dataclass(frozen=True, slots=True)
class Timeout:
    """Relative timeout from admission: ``Timeout.INFINITE`` or ``Timeout.after_ns(n)`` (n > 0).

    On the wire 0 means infinite.
    """

    ns: int | None = None

    INFINITE: ClassVar[Timeout]

    def __post_init__(self) -> None:
        if self.ns is not None:
            check_u64("Timeout nanoseconds", self.ns)
            if self.ns == 0:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT, "Timeout.after_ns needs a nonzero duration; use Timeout.INFINITE"
                )

    @classmethod
    def after_ns(cls, ns: int) -> Timeout:
        return cls(ns)

    @property
    def is_infinite(self) -> bool:
        return self.ns is None

    def to_wire(self) -> int:
        return 0 if self.ns is None else self.ns

    @classmethod
    def from_wire(cls, value: int) -> Timeout:
        check_u64("Timeout wire value", value)
        return cls.INFINITE if value == 0 else cls(value)


Timeout.INFINITE = Timeout(None)

MAX_TIMEOUT_S = 1e10
"""The longest ``timeout=`` in seconds (~317 years; a :class:`Timeout` counts u64 nanoseconds)."""


def timeout_seconds(value: object) -> float:
    """``value`` given as ``timeout=`` (seconds) as a float: a real number (numpy's too), not a bool, finite
    and at most :data:`MAX_TIMEOUT_S`; anything else (text, nan, inf, 1e300, an int beyond every float) is
    ``BackendError(INVALID_ARGUMENT)`` naming ``timeout=`` (None, not inf, is "no limit"). Whether a value
    at or below zero is an error is the caller's rule."""
    seconds = math.nan
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except (OverflowError, ValueError):
            pass
    if not -MAX_TIMEOUT_S <= seconds <= MAX_TIMEOUT_S:  # nan fails every comparison
        try:
            shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:30]}..."
        except ValueError:  # an int past Python's digit limit
            shown = "(an integer too large to print)"
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"timeout={shown} is not a number of seconds up to {MAX_TIMEOUT_S:g} (timeout=None waits without limit)",
        )
    return seconds


@dataclass(frozen=True, slots=True)
class BindingRef(Generic[B]):
    """One borrowed program binding: ``slot`` names the program argument; ``range`` of ``buffer``."""

    slot: int
    buffer: B
    range: BufferRange
    access: AccessMode

    def __post_init__(self) -> None:
        check_u32("BindingRef.slot", self.slot)
        object.__setattr__(self, "access", AccessMode.from_number(int(self.access)))

    @classmethod
    def _trusted(cls, slot: int, buffer: B, range: BufferRange, access: AccessMode) -> BindingRef[B]:
        """Internal: build without checks from values the caller has already validated
        (``slot`` a u32 int, ``access`` an ``AccessMode``, ``range`` a ``BufferRange``).
        Equal to ``BindingRef(slot, buffer, range, access)``; the public constructor stays checking."""
        ref: BindingRef[B] = _new_object(cls)
        _set_slot(ref, slot)
        _set_buffer(ref, buffer)
        _set_range(ref, range)
        _set_access(ref, access)
        return ref

    @staticmethod
    def validate_for_submit(
        bindings: Sequence[BindingRef[B]],
        descs: Sequence[BufferDesc],
        max_bindings: int,
    ) -> None:
        """Host-side check before ``submit``: :func:`validate_bindings`, then a
        ``descs`` length mismatch → INVALID_ARGUMENT, then an access the buffer's
        usage does not allow → PERMISSION_DENIED."""
        validate_bindings(bindings, max_bindings)
        if len(descs) != len(bindings):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"{len(bindings)} bindings but {len(descs)} buffer descriptions",
            )
        for binding, desc in zip(bindings, descs, strict=True):
            if not desc.allows_access(binding.access):
                raise BackendError(
                    ErrorKind.PERMISSION_DENIED,
                    f"slot {binding.slot}: access {binding.access.name} is not allowed by buffer usage {desc.usage!r}",
                )


# The slot descriptors of the frozen dataclass: setting through them skips the frozen __setattr__.
_BINDING_FIELDS: Any = BindingRef.__dict__
_new_object: Any = object.__new__
_set_slot = _BINDING_FIELDS["slot"].__set__
_set_buffer = _BINDING_FIELDS["buffer"].__set__
_set_range = _BINDING_FIELDS["range"].__set__
_set_access = _BINDING_FIELDS["access"].__set__


def validate_bindings(bindings: Sequence[BindingRef[B]], max_bindings: int) -> None:
    """Empty or more than ``max_bindings`` → RESOURCE_LIMIT; a repeated slot → INVALID_ARGUMENT.

    Order has no meaning: the slot, not the position, names the argument.
    """
    count = len(bindings)
    if count == 0:
        raise BackendError(ErrorKind.RESOURCE_LIMIT, "a submission needs at least one binding")
    if count > max_bindings:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"{count} bindings exceed max_bindings_per_submission {max_bindings}",
        )
    seen: set[int] = set()
    for binding in bindings:
        if binding.slot in seen:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"slot {binding.slot} is bound more than once")
        seen.add(binding.slot)


def validate_binding_ranges(bindings: Sequence[BindingRef[B]], descs: Sequence[BufferDesc]) -> None:
    """A binding range that ends past its buffer → OUT_OF_BOUNDS."""
    for binding, desc in zip(bindings, descs, strict=True):
        if binding.range.end() > desc.bytes:
            raise BackendError(
                ErrorKind.OUT_OF_BOUNDS,
                f"slot {binding.slot}: range {binding.range.offset}..{binding.range.end()} "
                f"ends past the buffer's {desc.bytes} bytes",
            )


def validate_program_bindings(
    bindings: Sequence[BindingRef[B]], declared: Mapping[int, AccessMode], program: str
) -> None:
    """Bindings against a program's own slot → access table (``program`` names it in messages).

    A slot the program does not declare, an access beyond the declared one, or a declared slot
    left unbound → INCOMPATIBLE. Every provider calls this one check (same kind, same wording).
    """
    for binding in bindings:
        access = declared.get(binding.slot)
        if access is None:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"slot {binding.slot} is not a binding of program {program!r} (its slots: {sorted(declared)})",
            )
        if not access_allows(access, binding.access):
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"slot {binding.slot}: program {program!r} declares {access.name}, "
                f"the binding asks for {binding.access.name}",
            )
    bound = {binding.slot for binding in bindings}
    missing = sorted(slot for slot in declared if slot not in bound)
    if missing:
        raise BackendError(ErrorKind.INCOMPATIBLE, f"program {program!r} needs slots {missing} bound as well")


class EventStatus(enum.Enum):
    PENDING = "pending"
    COMPLETE = "complete"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class EventState:
    """Pending, Complete, Failed(error) or Cancelled. A terminal state never changes once observed.

    Use the shared constants ``EventState.PENDING`` / ``COMPLETE`` / ``CANCELLED``
    and ``EventState.failed(error)`` (providers keep the failed state object, so
    polling allocates nothing).
    """

    status: EventStatus
    error: BackendError | None = None

    PENDING: ClassVar[EventState]
    COMPLETE: ClassVar[EventState]
    CANCELLED: ClassVar[EventState]

    def __post_init__(self) -> None:
        if (self.status is EventStatus.FAILED) != (self.error is not None):
            raise ValueError("EventState carries an error exactly when it is FAILED")

    @classmethod
    def failed(cls, error: BackendError) -> EventState:
        return cls(EventStatus.FAILED, error)

    @property
    def is_terminal(self) -> bool:
        return self.status is not EventStatus.PENDING

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EventState):
            return NotImplemented
        if self.status is not other.status:
            return False
        if self.error is None or other.error is None:
            return self.error is other.error
        return self.error.kind is other.error.kind

    def __hash__(self) -> int:
        return hash((self.status, None if self.error is None else self.error.kind))

    def __str__(self) -> str:
        if self.error is not None:
            return f"Failed({self.error.kind.name})"
        return self.status.name.capitalize()


EventState.PENDING = EventState(EventStatus.PENDING)
EventState.COMPLETE = EventState(EventStatus.COMPLETE)
EventState.CANCELLED = EventState(EventStatus.CANCELLED)
