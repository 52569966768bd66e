"""Feature cases of the numerics suite: the per-operation denormal report (``numerics.denormals.f32``)
and subgroups (size, basic reductions) where supported. (Being written: issue 18 item 2.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..case import ConformanceCase

__all__ = ["feature_cases"]


def feature_cases(api: str, claims: Mapping[str, Any]) -> tuple[ConformanceCase, ...]:
    """The denormal and subgroup cases for ``api``."""
    return ()
