"""The f16 and f64 cases of the numerics suite: ``numerics.support.<type>`` (does the device claim the
type, and does a kernel using it build and run) and the float functions on the type where the device
has it. (Being written: issue 18 item 2.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..case import ConformanceCase

__all__ = ["wide_cases"]


def wide_cases(api: str, claims: Mapping[str, Any]) -> tuple[ConformanceCase, ...]:
    """The f16 and f64 cases for ``api``."""
    return ()
