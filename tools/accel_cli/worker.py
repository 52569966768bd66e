"""One device's conformance run, in its own process: ``python -m accel_cli.worker``.

``accel conformance`` starts one worker per device so that a driver crash
(a segfault, an abort) ends only that worker. The worker streams JSON lines
to ``--events FILE`` and flushes after each, so the parent sees progress and
keeps every case result reported before a crash:

    {"event": "start", "device": {...}, "cases": [...ids to run...], "available": [...every id...],
     "order": [...selected ids before --plan's shard/skips/only...], "skipped": [[id, reason], ...]}
    {"event": "case-start", "id": ...}           (just before a case runs)
    {"event": "case", "result": {"id": ..., "status": ..., "reason": ..., ...}}
    {"event": "done", "report": {...accelcore conformance report...}}
    {"event": "error", "message": "..."}        (the suite could not start)

Exit status: 0 when the suite ran (its verdicts are in the events), 3 when
the device could not be found or set up (an ``error`` event says why).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import IO, Any

from accelcore.support.child import die_with_parent

from .environment import apply_defaults

__all__ = ["main"]

SETUP_FAILED = 3


def _emit(stream: IO[str], event: dict[str, Any]) -> None:
    stream.write(json.dumps(event) + "\n")
    stream.flush()


def _device_json(entry: Any) -> dict[str, Any]:
    return {
        "id": entry.device_id,
        "provider": entry.provider,
        "index": entry.index,
        "name": entry.name,
        "uuid": entry.uuid.hex(),
        "native": {str(k): str(v) for k, v in entry.native.items()},
    }


SUITES = ("all", "contract", "numerics")
"""``all``: the contract cases and the numerics suite; ``contract``: without the numerics suite;
``numerics``: only the numerics suite (docs/numerics.md)."""


def run_worker(
    device_id: str,
    uuid_hex: str | None,
    events: IO[str],
    select: Sequence[str] | None,
    suite_name: str = "all",
    quick: bool = False,
    plan: Mapping[str, Any] | None = None,
) -> int:
    from accelcore.conformance import suite
    from accelcore.conformance.numerics import is_quick

    from .inventory import discover

    provider, _, _ = device_id.partition(":")
    try:
        inventory = discover([provider])
        entry = inventory.select_one(device_id)
        if uuid_hex and entry.uuid.hex() != uuid_hex.replace("-", "").lower():
            raise RuntimeError(
                f"{device_id} is now {entry.name} (uuid {entry.uuid.hex()}), not uuid {uuid_hex}: "
                "the device list changed"
            )
        setup = inventory.family_of(entry).conformance(entry)
    except Exception as exc:
        _emit(events, {"event": "error", "message": f"{type(exc).__name__}: {exc}"})
        return SETUP_FAILED
    offered = list(getattr(setup, "numerics_cases", ()))
    numerics = [case for case in offered if is_quick(case.id)] if quick else offered
    extra = list(setup.extra_cases) + ([] if suite_name == "contract" else numerics)
    planned = [*suite.standard_case_ids()[:-1], *(case.id for case in extra), suite.standard_case_ids()[-1]]
    available = [*planned[:-1], *(c.id for c in offered if c.id not in planned), planned[-1]]
    if suite_name == "numerics":
        planned = [case.id for case in numerics]
    plan = plan or {}
    select = [*(select or ()), *(str(s) for s in plan.get("select", ()))]
    if select:  # an id, or a prefix ending in '.'; a set and a tuple, so a million of them take no time
        exact, prefixes = set(select), tuple({s for s in select if s.endswith(".")})
        planned = [c for c in planned if c in exact or c.startswith(prefixes)]
    order, skipped = list(planned), []
    if plan.get("shard"):
        from .shard import Shard, device_key

        shard = Shard.from_json(plan["shard"])
        key = device_key(entry.uuid.hex(), entry.device_id)
        planned = [c for c in planned if shard.keeps(key, c)]
    for pattern, why in plan.get("skip", []):
        hit = [c for c in planned if _skip_matches(c, str(pattern))]
        skipped += [[c, str(why)] for c in hit]
        planned = [c for c in planned if c not in hit]
    if plan.get("only") is not None:
        planned = [c for c in planned if c in set(plan["only"])]
    _emit(
        events,
        {
            "event": "start",
            "device": _device_json(entry),
            "cases": planned,
            "available": available,
            "order": order,
            "skipped": skipped,
        },
    )
    if not planned:
        _emit(events, {"event": "done", "report": {"cases": []}})
        return 0
    report = suite.run(
        setup.factory,
        setup.target,
        setup.hooks,
        extra,
        progress=lambda result: _emit(events, {"event": "case", "result": result.to_dict()}),
        select=planned,
        on_start=lambda case_id: _emit(events, {"event": "case-start", "id": case_id}),
        device={"device_id": entry.device_id, "name": entry.name, "provider": entry.provider},
    )
    _emit(events, {"event": "done", "report": report.to_dict()})
    return 0


def _skip_matches(case_id: str, pattern: str) -> bool:
    """A --skip pattern: an id, a prefix ending in '.', or an fnmatch glob."""
    return (
        case_id == pattern
        or (pattern.endswith(".") and case_id.startswith(pattern))
        or (fnmatch.fnmatchcase(case_id, pattern))
    )


def main(argv: Sequence[str] | None = None) -> int:
    die_with_parent()  # a parent killed (-9) or gone takes its worker with it
    apply_defaults()
    parser = argparse.ArgumentParser(prog="python -m accel_cli.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--device", required=True, help="PROVIDER:INDEX of the device")
    parser.add_argument("--uuid", help="the device's uuid, checked against what discovery finds now")
    parser.add_argument("--events", required=True, help="file to append JSON-line events to")
    parser.add_argument("--select", action="append", help="run only this case id (or id prefix ending in '.')")
    parser.add_argument("--suite", choices=SUITES, default="all", help="which cases (default: all)")
    parser.add_argument("--quick", action="store_true", help="only the quick subset of the numerics suite")
    parser.add_argument(
        "--plan", help="JSON file: selected ids, shard, skip patterns, exact ids to run (accel conformance)"
    )
    args = parser.parse_args(argv)
    plan = None
    if args.plan:
        with open(args.plan, encoding="utf-8") as handle:
            plan = json.load(handle)
    with open(args.events, "a", encoding="utf-8") as events:
        try:
            return run_worker(args.device, args.uuid, events, args.select, args.suite, args.quick, plan)
        except Exception as exc:
            _emit(events, {"event": "error", "message": f"worker failed: {type(exc).__name__}: {exc}"})
            traceback.print_exc(file=sys.stderr)
            return SETUP_FAILED


if __name__ == "__main__":
    sys.exit(main())
