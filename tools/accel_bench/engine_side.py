"""Adapter from :class:`accelcore.engine.CommandEngine` to the session call shape.

The engine speaks object IDs; its names differ from the trait's in two places
(``read_buffer_into`` takes a sink, ``poll`` is ``poll_event``). Everything
else passes straight through, so the timed path is exactly the engine's.
"""

from __future__ import annotations

from typing import Any

from accelcore import Accelerator, DeviceInfo
from accelcore.engine import CommandEngine

__all__ = ["EngineApi"]


class EngineApi:
    """The engine over one provider instance, with the session's call names bound once."""

    def __init__(self, engine: CommandEngine[Any, Any, Any, Any, Any]) -> None:
        self.engine = engine
        self.create_context = engine.create_context
        self.destroy_context = engine.destroy_context
        self.allocate_buffer = engine.allocate_buffer
        self.write_buffer = engine.write_buffer
        self.read_buffer = engine.read_buffer_into
        self.free_buffer = engine.free_buffer
        self.load_program = engine.load_program
        self.unload_program = engine.unload_program
        self.create_queue = engine.create_queue
        self.destroy_queue = engine.destroy_queue
        self.submit = engine.submit
        self.poll_event = engine.poll
        self.destroy_event = engine.destroy_event
        self.wait = engine.wait
        """The engine's blocking wait (in the driver where the provider can): the sustained drain uses it."""

    def device_info(self) -> DeviceInfo:
        return self.engine.info

    @classmethod
    def over(cls, provider: Accelerator[Any, Any, Any, Any, Any]) -> EngineApi:
        return cls(CommandEngine(provider))
