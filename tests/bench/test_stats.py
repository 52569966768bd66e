"""measure_interleaved: sides take turns, and a time budget bounds a pathologically slow row."""

from __future__ import annotations

import time

from accel_bench.stats import measure_interleaved


def test_without_a_budget_every_repeat_runs_for_every_side() -> None:
    calls = {"a": 0, "b": 0}

    def op(name: str) -> None:
        calls[name] += 1

    stats = measure_interleaved({"a": lambda: op("a"), "b": lambda: op("b")}, warmup=2, repeats=7, inner=3)
    assert calls == {"a": 2 + 7 * 3, "b": 2 + 7 * 3}
    assert {(s.repeats, s.warmup, s.inner) for s in stats.values()} == {(7, 2, 3)}


def test_a_budget_stops_repeats_and_warmups_and_records_what_ran() -> None:
    calls = {"fast": 0, "slow": 0}

    def fast() -> None:
        calls["fast"] += 1

    def slow() -> None:
        calls["slow"] += 1
        time.sleep(0.05)

    stats = measure_interleaved({"fast": fast, "slow": slow}, warmup=10, repeats=100, budget_s=0.2)
    fast_stat, slow_stat = stats["fast"], stats["slow"]
    assert fast_stat.repeats == slow_stat.repeats  # turns stay paired
    assert 1 <= slow_stat.repeats < 100
    assert 1 <= slow_stat.warmup < 10
    assert calls["slow"] == slow_stat.warmup + slow_stat.repeats
    assert slow_stat.median >= 0.05
