"""Vulkan-specific conformance cases (filled in below)."""

from __future__ import annotations

from typing import Any


def extra_cases(factory: Any) -> list[Any]:
    return []
