"""A hung item ends as that item's error, not as a hung benchmark run (runner._guard's watchdog)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from accel_bench import runner


def _spin(limit_s: float) -> str:
    """A busy loop like a poll whose event never finishes (bounded, so a broken watchdog fails the test)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        pass
    return "finished"


def test_an_item_past_its_limit_is_recorded_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(runner.ITEM_LIMIT_ENV, "0.2")
    device: dict[str, Any] = {}
    lines: list[str] = []
    assert runner._guard(device, "round trip", lines.append, lambda: _spin(10.0)) is None
    assert len(device["errors"]) == 1
    assert device["errors"][0].startswith("round trip: ItemTimeout: round trip ran past 0.2 s")
    # The next item within its limit runs to its end, and no timer is left behind to fire later.
    assert runner._guard(device, "sustained", lines.append, lambda: _spin(0.05)) == "finished"
    assert _spin(0.4) == "finished"
    assert len(device["errors"]) == 1


def test_a_limit_of_zero_disables_the_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(runner.ITEM_LIMIT_ENV, "0")
    device: dict[str, Any] = {}
    assert runner._guard(device, "spin", lambda _: None, lambda: _spin(0.3)) == "finished"
    assert "errors" not in device
