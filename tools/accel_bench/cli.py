"""Command line: ``tools/bench.py [DEVICE ...] [--json FILE] [--plot DIR] [--quick] [--only ITEM] [--render-only]``."""

from __future__ import annotations

import argparse

from accelcore.devices.environment import apply_defaults

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__)
    parser.add_argument("devices", nargs="*", help="provider, provider:index or a name glob (default: every device)")
    parser.add_argument("--json", default="docs/benchmarks/results.json", help="result file to write")
    parser.add_argument("--plot", default=None, help="folder for results.md and PNGs (default: the JSON's folder)")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats (for tests)")
    parser.add_argument("--note", action="append", default=[], help="a line recorded with the results (repeatable)")
    parser.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="ITEM",
        help="measure only this item (repeatable; one of: transfers, round_trip, sustained, overhead, program_load, "
        "reload_arguments, copy_freedom, highlevel); the table is then <json stem>.md",
    )
    parser.add_argument("--render-only", action="store_true", help="only regenerate table and plots from --json")
    args = parser.parse_args(argv)
    apply_defaults()  # before the first enumeration: RUSTICL_ENABLE, XDG_RUNTIME_DIR, the checkout's OCL_ICD_VENDORS
    if args.render_only:
        from .report import regenerate

        for path in regenerate(args.json, args.plot):
            print(path)
        return 0
    from .runner import run

    document = run(args.devices or None, args.json, args.plot, quick=args.quick, notes=args.note, items=args.only)
    errors = sum(len(d.get("errors", [])) for d in document["devices"])
    print(f"wrote {args.json}; {len(document['devices'])} devices, {errors} errors")
    return 1 if errors else 0
