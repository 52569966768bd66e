"""Integer range checks shared by the value types (internal)."""

from __future__ import annotations

from .errors import BackendError, ErrorKind

U16_MAX = 2**16 - 1
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1


def check_uint(name: str, value: object, maximum: int) -> int:
    """Return ``value`` if it is an int in ``0..maximum``; else INVALID_ARGUMENT naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"{name} must be an integer, got {type(value).__name__} {value!r}",
        )
    if not 0 <= value <= maximum:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"{name} = {value} is outside 0..{maximum}",
        )
    return value


def check_u32(name: str, value: object) -> int:
    return check_uint(name, value, U32_MAX)


def check_u64(name: str, value: object) -> int:
    return check_uint(name, value, U64_MAX)


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0
