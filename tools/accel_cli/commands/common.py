"""Pieces shared by the commands: the DEVICE argument (default $ACCEL_DEVICE) and provider cleanup."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..environment import DEVICE_ENV
from ..failures import UsageProblem

__all__ = ["close_provider", "device_argument", "require_device"]

F = TypeVar("F", bound=Callable[..., Any])


def device_argument(func: F) -> F:
    """A ``DEVICE`` argument that defaults to $ACCEL_DEVICE."""
    return click.argument("device", required=False, envvar=DEVICE_ENV, metavar="DEVICE")(func)


def require_device(device: str | None) -> str:
    """The selector, or UsageProblem when neither DEVICE nor $ACCEL_DEVICE gives one."""
    if device is None or not device.strip():
        raise UsageProblem(
            f"no DEVICE given and {DEVICE_ENV} is not set; name one (e.g. opencl:0) - `accel devices` lists them",
            argument="DEVICE",
        )
    return device


def close_provider(provider: Any) -> None:
    """Call the provider instance's ``close()`` when it has one (providers own native handles)."""
    close = getattr(provider, "close", None)
    if callable(close):
        close()
