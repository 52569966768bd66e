"""``accel bench``: what our layer costs over the raw APIs and wgpu-py (docs/benchmarks.md)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click
from accel_bench.items import ITEMS

from ..inventory import discover
from ..render import error_boundary


@click.command()
@click.argument("devices", nargs=-1, metavar="[DEVICE...]")
@click.option(
    "--json",
    "json_path",
    default=None,
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write the results JSON (with machine and driver facts) to FILE; - prints it on stdout (the summary then "
    "goes to stderr).",
)
@click.option(
    "--plot",
    "plot_dir",
    default=None,
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Write results.md and the PNG plots to DIR [default with --json FILE: the JSON's folder; none with --json -].",
)
@click.option("--quick", is_flag=True, help="Small sizes and few repeats (a smoke run, not a measurement).")
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="ITEM",
    type=click.Choice(ITEMS),
    help="Measure only ITEM (repeatable); the table is then named after the JSON, never results.md.",
)
@error_boundary
def bench(
    devices: tuple[str, ...], json_path: str | None, plot_dir: str | None, quick: bool, only: tuple[str, ...]
) -> None:
    """Benchmark DEVICE... (default: every OpenCL and Vulkan device) against the raw APIs,
    wgpu-py and memcpy: transfers, dispatch round trip, engine overhead, program load,
    re-load with changed arguments, copy-freedom and the Python layer's call against
    PyOpenCL / wgpu-py (highlevel). Medians and min-max over repeated runs; exit 1 if any item failed.

    Nothing is written unless --json FILE or --plot DIR is given (make bench passes both); --json - prints the
    document on stdout, as `accel conformance --json -` does."""
    import accel_bench

    to_stdout = json_path == "-"
    inventory = discover()
    entries = inventory.select_many(list(devices)) if devices else None
    with tempfile.TemporaryDirectory(prefix="accel-bench-") as scratch:
        # --plot alone (or with --json -): the plots are made from a JSON document, kept only as long as the run.
        scratch_json = str(Path(scratch) / "results.json") if plot_dir else None
        target = scratch_json if json_path is None or to_stdout else json_path
        document = accel_bench.run(
            entries, target, plot_dir, quick=quick, families=inventory.families, items=list(only) or None
        )
    errors = sum(len(device["errors"]) for device in document["devices"])
    written = [f"wrote {p}" for p in (None if to_stdout else json_path, plot_dir) if p is not None]
    summary = f"{len(document['devices'])} devices, {errors} failed items"
    if to_stdout:
        click.echo(json.dumps(document, indent=1, sort_keys=False))
        click.echo(f"{', '.join(written) or 'printed the JSON on stdout'}: {summary}", err=True)
    elif written:
        click.echo(f"{', '.join(written)}: {summary}")
    else:
        click.echo(f"{summary}; nothing written (pass --json FILE and/or --plot DIR to keep the results)")
    if errors:
        raise SystemExit(1)
