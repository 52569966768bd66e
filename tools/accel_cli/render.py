"""Output helpers: a rich console on the current stdout, JSON for machines, and the error boundary.

Promise: with ``--json`` a command prints exactly one JSON document on stdout
(its result, or ``{"error": ...}``) and people-facing text goes to stderr.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from accelcore.contract.errors import BackendError
from accelcore.devices.registry import ProviderUnavailable
from accelcore.devices.selector import SelectorError

from .failures import CliFailure, DeviceFailure, Interrupted, UsageProblem, from_backend_error, interrupted_message

__all__ = ["JSON_META", "console", "emit_json", "error_boundary", "hexuuid", "json_mode", "set_json_mode"]

JSON_META = "accel.json"
F = TypeVar("F", bound=Callable[..., Any])


def console(*, stderr: bool = False) -> Console:
    """A rich console on the current (possibly captured) stdout/stderr; wide when not a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    width: int | None = None
    if not stream.isatty():
        width = int(os.environ.get("COLUMNS", "0") or 0) or 160
    return Console(file=stream, width=width, highlight=False, soft_wrap=True)


def set_json_mode(enabled: bool) -> None:
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().meta[JSON_META] = enabled


def json_mode() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().meta.get(JSON_META))


def emit_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=False))


def hexuuid(uuid: bytes) -> str:
    h = uuid.hex()
    if len(h) != 32:
        return h
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _as_failure(exc: BaseException) -> CliFailure | None:
    if isinstance(exc, CliFailure):
        return exc
    if isinstance(exc, SelectorError):
        ctx = click.get_current_context(silent=True)
        source = ctx.get_parameter_source("device") if ctx is not None else None
        if source is click.core.ParameterSource.ENVIRONMENT:
            env = "ACCEL_DEVICE"
            first, *rest = str(exc).split("\n")
            note = f" (the selector came from {env}={os.environ.get(env, '')!r}; unset it or pass DEVICE)"
            return UsageProblem("\n".join([first + note, *rest]), argument=env)
        return UsageProblem(str(exc), argument="DEVICE")
    if isinstance(exc, ProviderUnavailable):
        return DeviceFailure(f"provider {exc.provider} is unavailable: {exc.reason}")
    if isinstance(exc, BackendError):
        return from_backend_error(exc)
    return None


def error_boundary(func: F) -> F:
    """Turn selector, provider and backend errors into CliFailure (with exit status), and Ctrl-C
    (``KeyboardInterrupt``) into :class:`~accel_cli.failures.Interrupted` (exit 130); under --json also
    print the error object on stdout."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt as exc:
            # Ctrl-C: exit 130 saying what stopped (click would print "Aborted!" and exit 1, the status of
            # "failures found"); workers were ended where the command ran some.
            ctx = click.get_current_context(silent=True)
            interrupted = Interrupted(interrupted_message(exc, f"accel {ctx.info_name if ctx else ''}".strip()))
            if json_mode():
                emit_json(interrupted.to_json())
            raise interrupted from None
        except Exception as exc:
            failure = _as_failure(exc)
            if failure is None:
                raise
            if json_mode():
                emit_json(failure.to_json())
            raise failure from exc

    return wrapper  # type: ignore[return-value]
