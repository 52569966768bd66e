"""The OpenCL and Vulkan providers' blocking wait (``wait_event``) through the engine, on every real device.

Released work: the engine's unbounded wait blocks in the driver and the result is the kernel's.
Work held on the host (the conformance hold hook): ``wait_event`` answers False at once even for an
unbounded wait, a limited engine wait ends DEADLINE_EXPIRED with the event still pending, and the
event completes once released.
"""

from __future__ import annotations

from typing import Any

import pytest

from accelcore import ErrorKind, EventState
from accelcore.engine import CommandEngine, ResourcePolicy
from accelcore.testing.pytest_support import raises_kind

from .conftest import load_target, real_devices

LIMIT_S = 0.05


class _Counting:
    """Forwards ``wait_event`` to a real provider and counts what it answered."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.answers: list[bool] = []

    def __call__(self, event: Any, timeout_ns: int | None) -> bool:
        blocked: bool = self.provider.wait_event(event, timeout_ns)
        self.answers.append(blocked)
        return blocked


def _real(family: Any, entry: Any) -> tuple[Any, Any, CommandEngine[Any, Any, Any, Any, Any], list[Any], int, int]:
    setup = family.conformance(entry)
    provider = setup.factory()
    engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(provider, ResourcePolicy())
    _, buffers, program, queue = load_target(engine, setup.target)
    return setup, provider, engine, buffers, program, queue


@pytest.mark.parametrize(("family", "entry"), real_devices())
def test_real_providers_block_for_released_work_and_not_for_held_work(family: Any, entry: Any) -> None:
    setup, provider, engine, buffers, program, queue = _real(family, entry)
    try:
        counting = _Counting(provider)
        engine._waiter = counting  # the provider's own method, counted
        bindings = [(f.slot, b, None, f.access) for f, b in buffers]
        event = engine.submit(queue, program, bindings)
        assert engine.wait(event) == EventState.COMPLETE
        for fixture, buffer in buffers:
            if fixture.expected is not None:
                assert bytes(engine.read_buffer(buffer)) == fixture.expected, f"slot {fixture.slot}"
        engine.destroy_event(event)
        # Held on the host (the conformance hook): nothing to block on, so False at once; a wait with a
        # limit then ends DEADLINE_EXPIRED with the event still pending, and completes once released.
        setup.hooks.hold_submissions(provider)
        held = engine.submit(queue, program, bindings)
        counting.answers.clear()
        with raises_kind(ErrorKind.DEADLINE_EXPIRED):
            engine.wait(held, timeout_s=LIMIT_S)
        assert counting.answers in ([], [False]), counting.answers
        assert engine.poll(held) == EventState.PENDING
        handle = engine._events.lookup(held).handle
        assert provider.wait_event(handle, None) is False  # an unbounded wait on held work never blocks
        setup.hooks.complete_held(provider, handle)
        assert engine.wait(held, timeout_s=30) == EventState.COMPLETE
        engine.destroy_event(held)
    finally:
        engine.reset()
        close = getattr(provider, "close", None)
        if callable(close):
            close()
