"""Bit-exact integer and conversion cases of the numerics suite (``numerics.<op>.<type>``): integer
``mul_hi rotate clz popcount add_sat``, float->int conversions, 32-bit atomics under contention and
workgroup barriers with local/shared memory. (Being written: issue 18 item 2.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..case import ConformanceCase

__all__ = ["integer_cases"]


def integer_cases(api: str, claims: Mapping[str, Any]) -> tuple[ConformanceCase, ...]:
    """The integer, conversion, atomic and barrier cases for ``api``."""
    return ()
