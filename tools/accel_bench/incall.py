"""Item 3, measured inside each call: engine time minus the provider time of the same call.

An engine runs over :class:`TimedProvider`, a pass-through that adds up the
nanoseconds spent inside the provider's ``submit`` and ``poll_event``. For a
batch of engine calls, (engine wall time - time inside the provider) / calls is
the engine's own validation and bookkeeping, independent of how long the
provider takes on this busy machine. The proxy's own cost (one extra Python
call and two clock reads, calibrated on a no-op and reported) counts against
the engine, so the figure errs high, never low.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from .config import Config
from .contract_side import ContractSession
from .engine_side import EngineApi
from .stats import Stat

__all__ = ["TimedProvider", "in_call_overhead"]

POLLS_PER_RUN = 1000


class TimedProvider:
    """Delegates everything to ``provider``; accumulates ns spent in ``submit`` and ``poll_event``."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self.inside_ns = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return self._provider.submit(*args, **kwargs)
        finally:
            self.inside_ns += time.perf_counter_ns() - start

    def poll_event(self, event: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return self._provider.poll_event(event)
        finally:
            self.inside_ns += time.perf_counter_ns() - start


def _proxy_cost_ns() -> float:
    """ns one TimedProvider layer adds around a no-op call (median of 5 runs of 20,000)."""

    class _Noop:
        def poll_event(self, event: Any) -> Any:
            return event

    proxy, plain = TimedProvider(_Noop()), _Noop()
    runs = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(20_000):
            proxy.poll_event(None)
        through = time.perf_counter_ns() - start
        start = time.perf_counter_ns()
        for _ in range(20_000):
            plain.poll_event(None)
        direct = time.perf_counter_ns() - start
        runs.append((through - direct) / 20_000)
    runs.sort()
    return runs[len(runs) // 2]


def _own_time(session: ContractSession, proxy: TimedProvider, calls: int, body: Callable[[], None]) -> float:
    """Seconds per call of engine time outside the provider, for one run of ``body``."""
    gc.disable()
    try:
        proxy.inside_ns = 0
        start = time.perf_counter_ns()
        body()
        total = time.perf_counter_ns() - start
        inside = proxy.inside_ns
    finally:
        gc.enable()
    return (total - inside) / 1e9 / calls


def in_call_overhead(config: Config, family: Any, entry: Any, kind: Any, hooks: Any) -> dict[str, Any]:
    """Engine-own µs per submit, per poll of a pending (held) event, per poll of a terminal event."""
    proxy = TimedProvider(family.open(entry))
    session = ContractSession(EngineApi.over(proxy), "ours-timed", kind)
    try:
        repeats, warmup = config.overhead_repeats, config.warmup
        batch = max(1, min(config.overhead_batch, session.max_events - 1))
        submit_runs: list[float] = []
        for index in range(warmup + repeats):
            events: list[Any] = []
            seconds = _own_time(
                session, proxy, batch, lambda events=events: events.extend(session.submit() for _ in range(batch))
            )
            for event in events:
                session.finish(event)
            if index >= warmup:
                submit_runs.append(seconds)
        poll = session.api.poll_event
        done = session.submit()
        while not poll(done).is_terminal:
            pass
        terminal_runs = []
        for index in range(warmup + repeats):
            seconds = _own_time(
                session, proxy, POLLS_PER_RUN, lambda: [poll(done) for _ in range(POLLS_PER_RUN)] and None
            )
            if index >= warmup:
                terminal_runs.append(seconds)
        session.api.destroy_event(done)
        hooks.hold_submissions(proxy._provider)
        held = session.submit()
        pending_runs = []
        for index in range(warmup + repeats):
            seconds = _own_time(
                session, proxy, POLLS_PER_RUN, lambda: [poll(held) for _ in range(POLLS_PER_RUN)] and None
            )
            if index >= warmup:
                pending_runs.append(seconds)
        pending_throughout = not poll(held).is_terminal
        native = session.api.engine._events.get(held).handle  # the hook needs the provider's handle
        hooks.complete_held(proxy._provider, native)
        session.finish(held)
    finally:
        session.close()
    stats = {
        "submit": Stat.from_runs(submit_runs, warmup=warmup, inner=batch),
        "poll_pending": Stat.from_runs(pending_runs, warmup=warmup, inner=POLLS_PER_RUN),
        "poll_terminal": Stat.from_runs(terminal_runs, warmup=warmup, inner=POLLS_PER_RUN),
    }
    return {
        **{f"in_call_{name}": stat.as_dict() for name, stat in stats.items()},
        "submit_us": stats["submit"].median * 1e6,
        "poll_us": stats["poll_pending"].median * 1e6,
        "poll_terminal_us": stats["poll_terminal"].median * 1e6,
        "pending_throughout": pending_throughout,
        "proxy_cost_us": _proxy_cost_ns() / 1e3,
        "method": "in-call: engine time minus time inside the provider's submit/poll_event (TimedProvider)",
    }
