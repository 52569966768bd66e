"""Item 3, cross-check: the engine against a second provider instance called directly.

The same calls are timed through the engine (``ours``) and on a second
instance of the provider called directly (``provider-direct``); the
difference of the medians is reported next to the in-call figure of
:mod:`accel_bench.incall` (the headline), which does not depend on two
instances behaving alike. Engine and direct repeats alternate, so a
drift in machine load hits both alike. Submits are timed in batches
(``batch`` submissions back to back, then drained untimed).

Polls are timed on a *pending* event (held by the provider's conformance
hook), where the engine must ask the provider — the overhead there is pure
engine bookkeeping. Polls of a terminal event are reported too: the engine
answers those from its cache without calling the provider at all.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from accelcore.conformance.target import ConformanceHooks

from .config import Config
from .contract_side import ContractSession, Handle, ProviderApi
from .engine_side import EngineApi
from .stats import Stat

__all__ = ["engine_overhead", "pending_poll_overhead"]

POLLS_PER_RUN = 1000


def _batch_size(session: ContractSession, wanted: int) -> int:
    return max(1, min(wanted, session.max_events - 1 if session.max_events > 1 else 1))


def _submit_run(session: ContractSession, batch: int) -> float:
    """Seconds per submit over one batch (drained afterwards, untimed)."""
    submit = session.submit
    gc.disable()
    try:
        start = time.perf_counter_ns()
        events = [submit() for _ in range(batch)]
        elapsed = time.perf_counter_ns() - start
    finally:
        gc.enable()
    for event in events:
        session.finish(event)
    session.count += batch
    return elapsed / 1e9 / batch


def _completed_event(session: ContractSession) -> Handle:
    event = session.submit()
    state = session.api.poll_event(event)
    while not state.is_terminal:
        state = session.api.poll_event(event)
    session.count += 1
    return event


def _poll_run(session: ContractSession, event: Handle) -> float:
    poll = session.api.poll_event
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(POLLS_PER_RUN):
            poll(event)
        elapsed = time.perf_counter_ns() - start
    finally:
        gc.enable()
    return elapsed / 1e9 / POLLS_PER_RUN


def engine_overhead(config: Config, ours: ContractSession, direct: ContractSession) -> dict[str, Any]:
    """Median per-call times of both and their differences in microseconds."""
    repeats, warmup = config.overhead_repeats, config.warmup
    batch = min(_batch_size(ours, config.overhead_batch), _batch_size(direct, config.overhead_batch))
    sessions = {"engine": ours, "provider": direct}
    submit_runs: dict[str, list[float]] = {"engine": [], "provider": []}
    for index in range(warmup + repeats):
        for key, session in sessions.items():
            seconds = _submit_run(session, batch)
            if index >= warmup:
                submit_runs[key].append(seconds)
    events = {key: _completed_event(session) for key, session in sessions.items()}
    poll_runs: dict[str, list[float]] = {"engine": [], "provider": []}
    for index in range(warmup + repeats):
        for key, session in sessions.items():
            seconds = _poll_run(session, events[key])
            if index >= warmup:
                poll_runs[key].append(seconds)
    for key, session in sessions.items():
        session.api.destroy_event(events[key])
    stats = {
        f"{key}_{call}": Stat.from_runs(runs[key], warmup=warmup, inner=inner)
        for call, runs, inner in (("submit", submit_runs, batch), ("poll_terminal", poll_runs, POLLS_PER_RUN))
        for key in sessions
    }
    return {
        **{name: stat.as_dict() for name, stat in stats.items()},
        "submit_vs_direct_us": (stats["engine_submit"].median - stats["provider_submit"].median) * 1e6,
        "poll_terminal_vs_direct_us": (stats["engine_poll_terminal"].median - stats["provider_poll_terminal"].median)
        * 1e6,
        "submit_batch": batch,
    }


def _provider_of(session: ContractSession) -> object:
    api = session.api
    if isinstance(api, EngineApi):
        return api.engine.provider
    if isinstance(api, ProviderApi):
        return api.provider
    raise TypeError(f"{session.name}: no provider behind {type(api).__name__}")


def _native_event(session: ContractSession, event: Handle) -> Handle:
    api = session.api
    if not isinstance(api, EngineApi):
        return event
    # The hook needs the provider's handle; the engine keeps it in its (private) event table.
    entry = api.engine._events.get(event)
    if entry is None:
        raise LookupError(f"{session.name}: the engine has no event {event!r}")
    return entry.handle


def pending_poll_overhead(
    config: Config, ours: ContractSession, direct: ContractSession, hooks: ConformanceHooks
) -> dict[str, Any]:
    """Per-poll cost on a held (pending) event, engine vs provider direct.

    Puts both provider instances in hold mode for good: call this last.
    """
    repeats, warmup = config.overhead_repeats, config.warmup
    sessions = {"engine": ours, "provider": direct}
    events: dict[str, Handle] = {}
    for key, session in sessions.items():
        hooks.hold_submissions(_provider_of(session))
        events[key] = session.submit()
        if session.api.poll_event(events[key]).is_terminal:
            raise RuntimeError(f"{session.name}: a held submission is already terminal; hold mode did not hold")
    runs: dict[str, list[float]] = {"engine": [], "provider": []}
    for index in range(warmup + repeats):
        for key, session in sessions.items():
            seconds = _poll_run(session, events[key])
            if index >= warmup:
                runs[key].append(seconds)
    still_pending = {key: not s.api.poll_event(events[key]).is_terminal for key, s in sessions.items()}
    for key, session in sessions.items():
        hooks.complete_held(_provider_of(session), _native_event(session, events[key]))
        session.finish(events[key])
        session.count += 1
    engine = Stat.from_runs(runs["engine"], warmup=warmup, inner=POLLS_PER_RUN)
    provider = Stat.from_runs(runs["provider"], warmup=warmup, inner=POLLS_PER_RUN)
    return {
        "engine_poll": engine.as_dict(),
        "provider_poll": provider.as_dict(),
        "poll_vs_direct_us": (engine.median - provider.median) * 1e6,
        "pending_throughout_vs_direct": all(still_pending.values()),
    }
