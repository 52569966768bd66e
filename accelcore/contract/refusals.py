"""The wording of refusals every provider raises for the same contract condition.

STYLE habit 3: the same condition gives the same kind and the same message on every provider.
Checks that need no device live in the validators (``validate_transfer``,
``validate_program_bindings`` ...); the conditions below are detected from a provider's own
bookkeeping (counts, states), so providers detect them and word them here. Each function only
builds the error (call it on the refusal path; nothing is allocated on the success path).
"""

from __future__ import annotations

from .errors import BackendError, ErrorKind

__all__ = [
    "cancellation_lost",
    "context_not_empty",
    "event_still_pending",
    "foreign_handle",
    "limit_reached",
    "other_context",
    "released_handle",
    "still_referenced",
    "wrong_handle",
]


def wrong_handle(what: str, expected: str, got: object) -> BackendError:
    """INVALID_ARGUMENT: ``what`` is not a handle of the expected type (named)."""
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"{what} must be a {expected}, got {type(got).__name__}")


def released_handle(what: str) -> BackendError:
    """INVALID_ARGUMENT: ``what`` was already released (or consumed by a destructive call)."""
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"{what} was already released")


def foreign_handle(what: str) -> BackendError:
    """INVALID_ARGUMENT: ``what`` was created by another provider instance."""
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"{what} belongs to another provider instance")


def limit_reached(limit: str, value: int) -> BackendError:
    """RESOURCE_LIMIT: creating one more would exceed the DeviceLimits field ``limit`` (= ``value``)."""
    return BackendError(ErrorKind.RESOURCE_LIMIT, f"{limit} {value} reached; release one first")


def still_referenced(what: str, events: int) -> BackendError:
    """BUSY: ``what`` (buffer, program, queue) is referenced by ``events`` live events."""
    return BackendError(
        ErrorKind.BUSY, f"{what} is referenced by {events} live event(s); destroy them (once terminal) first"
    )


def context_not_empty(buffers: int, programs: int, queues: int, events: int) -> BackendError:
    """BUSY: a context with live children cannot be destroyed."""
    return BackendError(
        ErrorKind.BUSY,
        f"context still has {buffers} buffer(s), {programs} program(s), {queues} queue(s) and {events} event(s); "
        "release them first",
    )


def event_still_pending() -> BackendError:
    """BUSY: a pending event cannot be destroyed (the release is rejected with the event returned)."""
    return BackendError(ErrorKind.BUSY, "the event is still pending; poll it to a terminal state first")


def cancellation_lost() -> BackendError:
    """BUSY: completion won the race (the submission was already committed to the device, or had ended)."""
    return BackendError(
        ErrorKind.BUSY,
        "cancellation lost: the submission was already committed to the device or had ended; "
        "poll it for its final state",
    )


def other_context(what: str) -> BackendError:
    """INVALID_ARGUMENT: ``what`` (the program, or "slot N: the buffer") belongs to another context than the queue."""
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"{what} belongs to another context than the queue")
