"""The one error vocabulary of the contract.

Ordinary failures are :class:`BackendError` with an :class:`ErrorKind`. Release
and submission failures are *not* ordinary errors: they are
:class:`ReleaseFailure` / :class:`SubmitFailure`, which carry the returned
handle (rejected release) or the event (indeterminate submission), so that an
indeterminate outcome can never be caught and treated as a plain error.
"""

from __future__ import annotations

import enum
import errno
import os
from typing import Any, ClassVar, Generic, TypeVar

__all__ = [
    "BackendError",
    "DeviceInfoError",
    "DeviceInfoErrorKind",
    "ErrorKind",
    "MissingFileError",
    "ReleaseFailure",
    "ReleaseIndeterminate",
    "ReleaseRejected",
    "SubmitFailure",
    "SubmitIndeterminate",
    "SubmitRejected",
]

T = TypeVar("T")
E = TypeVar("E")

U32_MAX = 2**32 - 1
I64_MIN = -(2**63)
I64_MAX = 2**63 - 1


class ErrorKind(enum.IntEnum):
    """Error kinds with their protocol status numbers (SPEC.md, "Errors")."""

    UNSUPPORTED = 1
    INCOMPATIBLE = 2
    INVALID_ARGUMENT = 3
    OUT_OF_BOUNDS = 4
    BUSY = 5
    OUT_OF_MEMORY = 6
    RESOURCE_LIMIT = 7
    DEADLINE_EXPIRED = 8
    DEVICE_LOST = 9
    PERMISSION_DENIED = 10
    STALE_OBJECT = 11
    """Added by the command engine: unknown, zero, stale or wrong-kind IDs."""
    EXTERNAL = 65535
    """Provider-owned error with ``domain`` and ``code``; INTERNAL_ERROR on the wire."""


class BackendError(Exception):
    """A failure of one contract call, with its :class:`ErrorKind`.

    ``native_call`` and ``native_code`` keep the native API call and status
    (a CL status code, a ``VkResult``) when a provider translated one.
    EXTERNAL errors also carry ``domain`` (u32) and ``code`` (i64).
    """

    kind: ErrorKind
    message: str
    domain: int | None
    code: int | None
    native_call: str | None
    native_code: int | None

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        domain: int | None = None,
        code: int | None = None,
        native_call: str | None = None,
        native_code: int | None = None,
    ) -> None:
        kind = ErrorKind(kind)
        if kind is ErrorKind.EXTERNAL:
            if domain is None or code is None:
                raise ValueError("an EXTERNAL BackendError needs both domain and code")
            if not 0 <= domain <= U32_MAX:
                raise ValueError(f"EXTERNAL domain {domain} is not a u32 (0..{U32_MAX})")
            if not I64_MIN <= code <= I64_MAX:
                raise ValueError(f"EXTERNAL code {code} is not an i64")
        elif domain is not None or code is not None:
            raise ValueError(f"only EXTERNAL errors carry domain/code, not {kind.name}")
        super().__init__(kind, message)
        self.kind = kind
        self.message = message
        self.domain = domain
        self.code = code
        self.native_call = native_call
        self.native_code = native_code

    @classmethod
    def external(cls, domain: int, code: int, message: str) -> BackendError:
        """A provider-owned error outside the standard kinds."""
        return cls(ErrorKind.EXTERNAL, message, domain=domain, code=code)

    @property
    def status(self) -> int:
        """The protocol status number of this error."""
        return int(self.kind)

    def __str__(self) -> str:
        text = f"{self.kind.name}: {self.message}"
        if self.kind is ErrorKind.EXTERNAL:
            text += f" (domain {self.domain}, code {self.code})"
        if self.native_call is not None:
            text += f" [{self.native_call}"
            if self.native_code is not None:
                text += f" -> {self.native_code}"
            text += "]"
        return text

    def __repr__(self) -> str:
        return f"BackendError({self.kind.name}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_backend_error,
            (int(self.kind), self.message, self.domain, self.code, self.native_call, self.native_code),
        )


class MissingFileError(BackendError, FileNotFoundError):
    """A file the caller named (a kernel's source, SPIR-V or package) does not exist.

    Both kinds of caller catch it: it is a ``BackendError`` of kind ``INVALID_ARGUMENT`` (``str()``:
    ``INVALID_ARGUMENT: no such file: PATH``), as every refusal of a call is, and a ``FileNotFoundError``
    (``errno`` ENOENT, ``filename`` the path as given), as Python's own file functions raise.
    """

    def __init__(self, filename: str) -> None:
        BackendError.__init__(self, ErrorKind.INVALID_ARGUMENT, f"no such file: {filename}")
        self.errno = errno.ENOENT
        self.strerror = os.strerror(errno.ENOENT)
        self.filename = filename

    def __repr__(self) -> str:
        return f"MissingFileError({self.filename!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (MissingFileError, (self.filename,))


def _rebuild_backend_error(
    kind: int,
    message: str,
    domain: int | None,
    code: int | None,
    native_call: str | None,
    native_code: int | None,
) -> BackendError:
    return BackendError(
        ErrorKind(kind),
        message,
        domain=domain,
        code=code,
        native_call=native_call,
        native_code=native_code,
    )


class _OutcomeFailure(Exception):
    """What a release and a submission failure share: the BackendError saying why (``error``, its ``kind``)
    and whether the outcome is unknown (``indeterminate``: the Indeterminate shape of either)."""

    error: BackendError
    indeterminate: ClassVar[bool] = False

    def __init__(self, error: BackendError) -> None:
        super().__init__(error)
        self.error = error

    @property
    def kind(self) -> ErrorKind:
        return self.error.kind


class ReleaseFailure(_OutcomeFailure, Generic[T]):
    """Failure to release a provider handle (``destroy_*``, ``free_buffer``, ``unload_program``).

    Two shapes: :class:`ReleaseRejected` returns the live handle in
    ``resource`` and allows a retry; :class:`ReleaseIndeterminate` means the
    handle is gone, nothing may be assumed, and the provider instance must be
    discarded. Neither is a :class:`BackendError`.
    """

    # Aliases that mirror the seed's enum variants: ReleaseFailure.Rejected / .Indeterminate.
    Rejected: type[ReleaseRejected[Any]]
    Indeterminate: type[ReleaseIndeterminate[Any]]


class ReleaseRejected(ReleaseFailure[T]):
    """Release provably did not happen; ``resource`` is the still-live handle."""

    resource: T

    def __init__(self, error: BackendError, resource: T) -> None:
        super().__init__(error)
        self.resource = resource

    def __str__(self) -> str:
        return f"release rejected: {self.error}"


class ReleaseIndeterminate(ReleaseFailure[T]):
    """Release outcome unknown: the handle is invalid and the instance must be discarded."""

    indeterminate = True

    def __str__(self) -> str:
        return f"release indeterminate (discard the provider instance): {self.error}"


ReleaseFailure.Rejected = ReleaseRejected
ReleaseFailure.Indeterminate = ReleaseIndeterminate


class SubmitFailure(_OutcomeFailure, Generic[E]):
    """Submission failure with an explicit acceptance boundary.

    :class:`SubmitRejected`: provably not accepted, nothing retained, retry
    allowed. :class:`SubmitIndeterminate`: acceptance unknown; ``event`` owns
    the invocation's resources until it is terminal and destroyed.
    """

    Rejected: type[SubmitRejected[Any]]
    Indeterminate: type[SubmitIndeterminate[Any]]


class SubmitRejected(SubmitFailure[E]):
    """The submission was provably not accepted; nothing was retained."""

    def __str__(self) -> str:
        return f"submission rejected: {self.error}"


class SubmitIndeterminate(SubmitFailure[E]):
    """Acceptance is unknown; ``event`` must be polled to a terminal state and destroyed."""

    indeterminate = True

    event: E

    def __init__(self, error: BackendError, event: E) -> None:
        super().__init__(error)
        self.event = event

    def __str__(self) -> str:
        return f"submission indeterminate (event returned): {self.error}"


SubmitFailure.Rejected = SubmitRejected
SubmitFailure.Indeterminate = SubmitIndeterminate


class DeviceInfoErrorKind(enum.Enum):
    """Why provider metadata is invalid."""

    RESERVED_CAPABILITIES = "ReservedCapabilities"
    MISSING_MEMORY_DOMAIN = "MissingMemoryDomain"
    ZERO_LIMIT = "ZeroLimit"


class DeviceInfoError(Exception):
    """Invalid provider metadata discovered before any resource operation is invoked."""

    reason: DeviceInfoErrorKind
    field: str | None

    def __init__(self, reason: DeviceInfoErrorKind, message: str, *, field: str | None = None) -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason
        self.field = field
