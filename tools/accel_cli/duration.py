"""``--timeout DURATION`` values: ``250ms``, ``2s``, ``1.5s``, ``100us``, ``5000ns``, ``1m``, a bare number of
seconds, or ``inf`` / ``none`` for no deadline."""

from __future__ import annotations

import re

from accelcore.contract.submission import Timeout

__all__ = ["parse_duration"]

_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m)?\s*$")
U64_MAX = 2**64 - 1


def parse_duration(text: str) -> Timeout:
    """A :class:`~accelcore.Timeout`; raises ValueError naming the value and the accepted forms."""
    lowered = text.strip().lower()
    if lowered in ("inf", "infinite", "none"):
        return Timeout.INFINITE
    match = _PATTERN.match(lowered)
    if match is None:
        raise ValueError(f"{text!r} is not a duration; use e.g. 250ms, 2s, 1.5s, 100us, 1m or inf")
    number, unit = match.group(1), match.group(2) or "s"
    ns = round(float(number) * _UNITS_NS[unit])
    if ns <= 0:
        raise ValueError(f"{text!r} is zero; a finite timeout must be positive (use inf for none)")
    if ns > U64_MAX:
        raise ValueError(f"{text!r} is longer than the contract's u64 nanoseconds allow")
    return Timeout.after_ns(ns)
