"""Exit statuses of every ``accel`` command (documented in docs/cli.md)."""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    OK = 0
    """The command did what was asked (conformance: no unexpected failure)."""
    FAILED = 1
    """Conformance found an unexpected failure (or, with --strict, an unexpected pass); run: the kernel failed."""
    USAGE = 2
    """A bad option or argument: malformed --bind, unknown option, a selector matching no or several devices."""
    INVALID_INPUT = 3
    """An input file was refused: malformed artifact, .npy, expectations or report file (the message says why)."""
    DEVICE_ERROR = 4
    """The device or its provider failed: provider unavailable, a BackendError from a call, a submission timeout."""
    INTERRUPTED = 130
    """Stopped by SIGINT (Ctrl-C): 128 + SIGINT, as shells report it; the message says what was interrupted.
    SIGTERM and SIGHUP stop a command the same way, with 128 + their number (143, 129)."""
