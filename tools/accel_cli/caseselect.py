"""Checking ``accel conformance --case`` values against the case ids the devices offer.

Promise: :func:`unmatched_cases` is pure; :func:`check_case_selection` raises
:class:`~accel_cli.failures.UsageProblem` (exit 2) naming each value (the first ten) that
matches no case id on any device that reported its list, and listing the valid
ids. The ids are known only once a device's worker has started (each provider
family adds its own cases), so the check runs after the workers reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .failures import UsageProblem

__all__ = ["check_case_selection", "matches", "unmatched_cases"]

_SHOWN = 10
"""How many unmatched values a message names."""


def matches(case_id: str, value: str) -> bool:
    """``value`` selects ``case_id``: the exact id, or a prefix ending in '.'."""
    return case_id == value or (value.endswith(".") and case_id.startswith(value))


def unmatched_cases(values: Sequence[str], known: Iterable[str]) -> list[str]:
    """The values of ``values`` that select none of ``known`` (one set lookup each: a caselist may hold a
    million ids)."""
    ids = set(known)
    prefixes = {c[: i + 1] for c in ids for i, ch in enumerate(c) if ch == "."}
    return [v for v in values if v not in ids and not (v.endswith(".") and v in prefixes)]


def check_case_selection(values: Sequence[str], known_per_device: Sequence[Sequence[str]]) -> None:
    """UsageProblem when a --case value selects nothing on every device that reported its case ids.

    Devices whose worker never started report nothing; when none reported, nothing can be judged.
    """
    reported = [list(ids) for ids in known_per_device if ids]
    if not values or not reported:
        return
    known = list(dict.fromkeys(c for ids in reported for c in ids))
    bad = unmatched_cases(values, known)
    if not bad:
        return
    more = f" and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else ""
    bad = bad[:_SHOWN]
    shown = ", ".join(repr(v) for v in bad) + more
    hints = [f"{v}." for v in bad if not v.endswith(".") and any(c.startswith(v + ".") for c in known)]
    hint = f" (did you mean {', '.join(repr(h) for h in hints)}? a prefix must end in '.')" if hints else ""
    prefixes = sorted({c.split(".", 1)[0] + "." for c in known if "." in c})
    raise UsageProblem(
        f"{shown} matches no case on the selected device(s){hint}; give a case id or a prefix ending in '.' "
        f"(prefixes: {', '.join(prefixes)}); case ids: {', '.join(known)}",
        argument="--case",
    )
