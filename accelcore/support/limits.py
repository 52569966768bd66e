"""The one reader of a numeric limit from the environment (:func:`env_number`): time limits, memory caps and
other bounds that a variable may override (docs/cli.md, "Environment")."""

from __future__ import annotations

import os

from ..contract.errors import BackendError, ErrorKind

__all__ = ["env_number"]


def env_number(name: str, default: float, low: float, high: float) -> float:
    """The number in environment variable ``name`` (``default`` when unset or blank); INVALID_ARGUMENT naming the
    variable, its text and the valid range when it is not a number from ``low`` to ``high``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT, f"{name}={text!r} is not a number from {low:g} to {high:g} (unset: {default:g})"
        )
    return value
