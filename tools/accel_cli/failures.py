"""The CLI's own failures: each carries its exit status and, for ``--json``, a machine-readable form.

Commands raise these (never bare exceptions); :func:`accel_cli.app.main` prints
the message to stderr (and a JSON error object to stdout under ``--json``) and
exits with the status.
"""

from __future__ import annotations

import signal
from typing import Any

import click

from accelcore.contract.errors import BackendError

from . import signals
from .exitcodes import ExitCode

__all__ = [
    "CliFailure",
    "DeviceFailure",
    "InputRejected",
    "Interrupted",
    "InterruptedWork",
    "UsageProblem",
    "from_backend_error",
    "interrupted_message",
]


class CliFailure(click.ClickException):
    """Base: ``argument`` names the bad argument or option when there is one."""

    exit_code = int(ExitCode.FAILED)
    kind = "failed"

    def __init__(self, message: str, *, argument: str | None = None, error_kind: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument
        self.error_kind = error_kind

    def to_json(self) -> dict[str, Any]:
        return {
            "error": {
                "kind": self.kind,
                "exit_code": self.exit_code,
                "argument": self.argument,
                "backend_error": self.error_kind,
                "message": self.message,
            }
        }

    def format_message(self) -> str:
        prefix = f"{self.argument}: " if self.argument else ""
        return prefix + self.message


class UsageProblem(CliFailure):
    """A bad option or argument value (exit 2)."""

    exit_code = int(ExitCode.USAGE)
    kind = "usage"


class InputRejected(CliFailure):
    """An input file is malformed or refused (exit 3)."""

    exit_code = int(ExitCode.INVALID_INPUT)
    kind = "invalid-input"


class DeviceFailure(CliFailure):
    """The device or its provider failed (exit 4)."""

    exit_code = int(ExitCode.DEVICE_ERROR)
    kind = "device"


class Interrupted(CliFailure):
    """SIGINT (Ctrl-C), SIGTERM or SIGHUP stopped the command (exit 128 + the signal: 130, 143, 129); the message
    says what it interrupted and what was left."""

    exit_code = int(ExitCode.INTERRUPTED)
    kind = "interrupted"

    def __new__(cls, message: str, **kwargs: Any) -> Interrupted:
        """An :class:`Interrupted` made after SIGTERM or SIGHUP is its subclass with that exit status."""
        stopped_by = {signal.SIGTERM: _Terminated, signal.SIGHUP: _HungUp}.get(signals.received(), cls)
        return super().__new__(stopped_by if cls is Interrupted else cls, message)


class _Terminated(Interrupted):
    exit_code = 128 + int(signal.SIGTERM)


class _HungUp(Interrupted):
    exit_code = 128 + int(signal.SIGHUP)


class InterruptedWork(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` raised again where the CLI knows what it interrupted: ``str()`` says so (the
    device, the phase, what was ended); :func:`accel_cli.render.error_boundary` turns it into :class:`Interrupted`."""


def interrupted_message(exc: KeyboardInterrupt, command: str) -> str:
    """What :class:`Interrupted` says: the :class:`InterruptedWork` message, else that ``command`` was stopped."""
    said = str(exc) if isinstance(exc, InterruptedWork) else ""
    return said or f"interrupted ({signals.words()}): {command} stopped before it finished"


def from_backend_error(error: BackendError, *, argument: str | None = None, during: str = "") -> CliFailure:
    """Map a BackendError: INVALID_ARGUMENT / UNSUPPORTED / INCOMPATIBLE about an input → InputRejected,
    anything else → DeviceFailure. The message keeps the kind and the native call."""
    what = f"{during}: {error}" if during else str(error)
    if argument is not None:
        return InputRejected(what, argument=argument, error_kind=error.kind.name)
    return DeviceFailure(what, error_kind=error.kind.name)
