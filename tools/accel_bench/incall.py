"""Item 3, measured inside each call: engine time minus the provider time of the same call.

An engine runs over :class:`TimedProvider`, a pass-through that adds up the
time spent inside the provider's ``submit`` and ``poll_event``. For a batch of
engine calls, (engine time - time inside the provider) / calls is the engine's
own validation and bookkeeping, independent of how long the provider takes.

Two clocks: the calling thread's CPU time (``thread_time_ns``, the headline:
the engine's own work, blind to other processes and to GIL waits behind a
provider's callback thread) and wall time (what a caller feels, including
those). The proxy's own cost (one extra Python call and two reads of each
clock, calibrated on a no-op and reported) counts against the engine, so the
figures err high, never low.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any, cast

from accelcore import Accelerator
from accelcore.conformance.target import ConformanceHooks
from accelcore.devices.registry import DeviceEntry, ProviderFamily
from accelcore.kernels.package import ModuleKind

from .config import Config
from .contract_side import ContractSession, Handle
from .engine_side import EngineApi
from .stats import Stat

__all__ = ["TimedProvider", "in_call_overhead"]

POLLS_PER_RUN = 1000


class TimedProvider:
    """Delegates everything to ``provider``; accumulates ns spent in ``submit`` and ``poll_event``."""

    def __init__(self, provider: Accelerator[Any, Any, Any, Any, Any]) -> None:
        self._provider = provider
        self.inside_ns = 0
        self.inside_cpu_ns = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        try:
            return self._provider.submit(*args, **kwargs)
        finally:
            self.inside_ns += time.perf_counter_ns() - wall
            self.inside_cpu_ns += time.thread_time_ns() - cpu

    def poll_event(self, event: Any) -> Any:
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        try:
            return self._provider.poll_event(event)
        finally:
            self.inside_ns += time.perf_counter_ns() - wall
            self.inside_cpu_ns += time.thread_time_ns() - cpu


def _proxy_cost_ns() -> tuple[float, float]:
    """(CPU, wall) ns one TimedProvider layer adds around a no-op call (median of 5 runs of 20,000)."""

    class _Noop:
        def poll_event(self, event: Any) -> Any:
            return event

    # Only poll_event is ever called on the calibration proxy.
    proxy, plain = TimedProvider(cast("Accelerator[Any, Any, Any, Any, Any]", _Noop())), _Noop()
    cpu_runs, wall_runs = [], []
    for _ in range(5):
        costs = []
        for target in (proxy, plain):
            cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(20_000):
                target.poll_event(None)
            costs.append((time.thread_time_ns() - cpu, time.perf_counter_ns() - wall))
        cpu_runs.append((costs[0][0] - costs[1][0]) / 20_000)
        wall_runs.append((costs[0][1] - costs[1][1]) / 20_000)
    return sorted(cpu_runs)[2], sorted(wall_runs)[2]


def _own_time(proxy: TimedProvider, calls: int, body: Callable[[], None]) -> tuple[float, float]:
    """(CPU, wall) seconds per call of engine time outside the provider, for one run of ``body``."""
    gc.disable()
    try:
        proxy.inside_ns = proxy.inside_cpu_ns = 0
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        body()
        wall = time.perf_counter_ns() - wall
        cpu = time.thread_time_ns() - cpu
        inside, inside_cpu = proxy.inside_ns, proxy.inside_cpu_ns
    finally:
        gc.enable()
    return (cpu - inside_cpu) / 1e9 / calls, (wall - inside) / 1e9 / calls


def in_call_overhead(
    config: Config, family: ProviderFamily, entry: DeviceEntry, kind: ModuleKind, hooks: ConformanceHooks
) -> dict[str, Any]:
    """Engine-own µs per submit, per poll of a pending (held) event, per poll of a terminal event."""
    proxy = TimedProvider(family.open(entry))
    # TimedProvider forwards every other call through __getattr__, which a Protocol check cannot see.
    api = EngineApi.over(cast("Accelerator[Any, Any, Any, Any, Any]", proxy))
    session = ContractSession(api, "ours-timed", kind)
    repeats, warmup = config.overhead_repeats, config.warmup
    runs: dict[str, tuple[list[float], list[float]]] = {
        name: ([], []) for name in ("submit", "poll_pending", "poll_terminal")
    }

    def record(name: str, index: int, result: tuple[float, float]) -> None:
        if index >= warmup:
            runs[name][0].append(result[0])
            runs[name][1].append(result[1])

    try:
        batch = max(1, min(config.overhead_batch, session.max_events - 1))
        for index in range(warmup + repeats):
            events: list[Handle] = []

            def submits(events: list[Handle] = events) -> None:
                return events.extend(session.submit() for _ in range(batch))

            record("submit", index, _own_time(proxy, batch, submits))
            for event in events:
                session.finish(event)
        poll = session.api.poll_event

        def polls(event: Handle) -> Callable[[], None]:
            def body() -> None:
                for _ in range(POLLS_PER_RUN):
                    poll(event)

            return body

        done = session.submit()
        while not poll(done).is_terminal:
            pass
        for index in range(warmup + repeats):
            record("poll_terminal", index, _own_time(proxy, POLLS_PER_RUN, polls(done)))
        session.api.destroy_event(done)
        hooks.hold_submissions(proxy._provider)
        held = session.submit()
        for index in range(warmup + repeats):
            record("poll_pending", index, _own_time(proxy, POLLS_PER_RUN, polls(held)))
        pending_throughout = not poll(held).is_terminal
        native = api.engine._events.get(held)  # the hook needs the provider's handle
        assert native is not None, "the engine lost the held event"
        hooks.complete_held(proxy._provider, native.handle)
        session.finish(held)
    finally:
        session.close()
    inner = {"submit": batch, "poll_pending": POLLS_PER_RUN, "poll_terminal": POLLS_PER_RUN}
    out: dict[str, Any] = {}
    for name, (cpu_runs, wall_runs) in runs.items():
        cpu = Stat.from_runs(cpu_runs, warmup=warmup, inner=inner[name])
        wall = Stat.from_runs(wall_runs, warmup=warmup, inner=inner[name])
        out[f"in_call_{name}_cpu"] = cpu.as_dict()
        out[f"in_call_{name}_wall"] = wall.as_dict()
        key = {"submit": "submit", "poll_pending": "poll", "poll_terminal": "poll_terminal"}[name]
        out[f"{key}_us"] = cpu.median * 1e6
        out[f"{key}_wall_us"] = wall.median * 1e6
    proxy_cpu, proxy_wall = _proxy_cost_ns()
    out.update(
        {
            "pending_throughout": pending_throughout,
            "proxy_cost_us": proxy_cpu / 1e3,
            "proxy_cost_wall_us": proxy_wall / 1e3,
            "method": "in-call: engine time minus time inside the provider's submit/poll_event "
            "(TimedProvider); *_us = calling thread's CPU time, *_wall_us = wall time",
        }
    )
    return out
