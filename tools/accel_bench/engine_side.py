"""Adapter from :class:`accelcore.engine.CommandEngine` to the session call shape."""

from __future__ import annotations

from typing import Any

__all__ = ["EngineApi"]


class EngineApi:
    """Placeholder until the engine lands: building one says why ours cannot be measured."""

    @classmethod
    def over(cls, provider: Any) -> Any:
        try:
            from accelcore.engine import CommandEngine  # noqa: F401
        except ImportError as exc:
            raise RuntimeError(f"accelcore.engine.CommandEngine is not available ({exc})") from exc
        raise RuntimeError("engine adapter not written yet")
