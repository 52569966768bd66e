"""Item 3: engine overhead per submit and per poll, the provider's own cost subtracted.

The same calls are timed through the engine (``ours``) and on a second
instance of the provider called directly (``provider-direct``); the overhead
is the difference of the medians. Engine and direct repeats alternate, so a
drift in machine load hits both alike. Submits are timed in batches
(``batch`` submissions back to back, then drained untimed); polls are timed
on an event that is already Complete, so a poll is bookkeeping plus one status read.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from .config import Config
from .contract_side import ContractSession
from .stats import Stat

__all__ = ["engine_overhead"]

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


def _completed_event(session: ContractSession) -> Any:
    event = session.submit()
    state = session.api.poll_event(event)
    while not state.is_terminal:
        state = session.api.poll_event(event)
    session.count += 1
    return event


def _poll_run(session: ContractSession, event: Any) -> float:
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
        for call, runs, inner in (("submit", submit_runs, batch), ("poll", poll_runs, POLLS_PER_RUN))
        for key in sessions
    }
    return {
        **{name: stat.as_dict() for name, stat in stats.items()},
        "submit_us": (stats["engine_submit"].median - stats["provider_submit"].median) * 1e6,
        "poll_us": (stats["engine_poll"].median - stats["provider_poll"].median) * 1e6,
        "submit_batch": batch,
    }
