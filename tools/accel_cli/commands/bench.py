"""``accel bench``: what our layer costs over the raw APIs and wgpu-py (docs/benchmarks.md)."""

from __future__ import annotations

import click

from ..inventory import discover
from ..render import error_boundary


@click.command()
@click.argument("devices", nargs=-1)
@click.option(
    "--json",
    "json_path",
    default="docs/benchmarks/results.json",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Where the results JSON (with machine and driver facts) is written.",
)
@click.option(
    "--plot",
    "plot_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Folder for results.md and the PNG plots [default: the JSON's folder].",
)
@click.option("--quick", is_flag=True, help="Small sizes and few repeats (a smoke run, not a measurement).")
@error_boundary
def bench(devices: tuple[str, ...], json_path: str, plot_dir: str | None, quick: bool) -> None:
    """Benchmark DEVICE... (default: every OpenCL and Vulkan device) against the raw APIs,
    wgpu-py and memcpy: transfers, dispatch round trip, engine overhead, program load and
    copy-freedom. Medians and min-max over repeated runs; exit 1 if any item failed."""
    import accel_bench

    inventory = discover()
    entries = inventory.select_many(list(devices)) if devices else None
    document = accel_bench.run(entries, json_path, plot_dir, quick=quick, families=inventory.families)
    errors = sum(len(device["errors"]) for device in document["devices"])
    click.echo(f"wrote {json_path}: {len(document['devices'])} devices, {errors} failed items")
    if errors:
        raise SystemExit(1)
