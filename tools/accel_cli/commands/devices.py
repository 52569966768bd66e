"""``accel devices``: every device of every installed provider, and why a provider offers none."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from ..exitcodes import ExitCode
from ..inventory import Inventory, discover
from ..render import console, emit_json, error_boundary, hexuuid, set_json_mode

__all__ = ["devices", "inventory_json"]


def inventory_json(inventory: Inventory) -> dict[str, Any]:
    """The ``accel devices --json`` document (schema: accel_cli/schemas/devices.schema.json)."""
    return {
        "schema": "accel-devices/1",
        "devices": [
            {
                "id": entry.device_id,
                "provider": entry.provider,
                "index": entry.index,
                "name": entry.name,
                "uuid": hexuuid(entry.uuid),
                "native": {str(k): str(v) for k, v in entry.native.items()},
                "native_facts": entry.facts.as_dict() if entry.facts is not None else None,
            }
            for entry in inventory.devices
        ],
        "providers": [
            {"name": p.name, "available": p.available, "reason": p.reason or None, "devices": p.device_count}
            for p in inventory.providers
        ],
    }


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON (schema accel-devices/1).")
@click.option("-v", "--verbose", is_flag=True, help="Also show each device's native facts.")
@error_boundary
def devices(as_json: bool, verbose: bool) -> None:
    """List every device of every installed provider.

    The ID column (PROVIDER:INDEX) is accepted by every command that takes a
    DEVICE, as are PROVIDER:UUID, a name glob PROVIDER:'*pocl*' (also over the
    provider's tag and aliases: 'vulkan:*lavapipe*') and a bare glob across
    providers. The Platform column names an OpenCL device's platform (and a
    Vulkan device's driver by its common name). A provider whose driver stack
    is missing or broken is listed with the reason instead of its devices.
    """
    set_json_mode(as_json)
    inventory = discover()
    if as_json:
        emit_json(inventory_json(inventory))
        if not inventory.devices:
            _no_device(inventory)
        return
    out = console()
    table = Table(title="Devices", title_justify="left")
    table.add_column("ID", style="bold cyan", no_wrap=True)
    table.add_column("Type", no_wrap=True)
    # Where a device comes from: an OpenCL device's platform (Intel's CPU runtime names its device after the
    # CPU), else the driver's common name (Vulkan's aliases, e.g. lavapipe); shown when some device has one.
    platforms = any(_platform(entry) != "-" for entry in inventory.devices)
    if platforms:
        table.add_column("Platform")
    table.add_column("Name")
    table.add_column("API")
    table.add_column("Driver")
    table.add_column("UUID", no_wrap=True)
    if verbose:
        table.add_column("Native facts")
    for entry in inventory.devices:
        facts = entry.facts
        uuid = hexuuid(entry.uuid) + (" (derived)" if facts is not None and facts.uuid_derived else "")
        row = [
            entry.device_id,
            facts.device_type if facts is not None else "-",
            *([_platform(entry)] if platforms else []),
            entry.name,
            facts.api if facts is not None else "-",
            facts.driver_version if facts is not None else "-",
            uuid,
        ]
        if verbose:
            row.append("\n".join(f"{k}: {v}" for k, v in entry.native.items()))
        table.add_row(*row)
    out.print(table)
    providers = Table(title="Providers", title_justify="left")
    providers.add_column("Provider", style="bold")
    providers.add_column("Status")
    providers.add_column("Devices", justify="right")
    providers.add_column("Reason")
    for status in inventory.providers:
        state = "[green]available[/green]" if status.available else "[red]unavailable[/red]"
        providers.add_row(status.name, state, str(status.device_count), status.reason)
    out.print(providers)
    if not inventory.devices:
        _no_device(inventory)


def _platform(entry: Any) -> str:
    """The Platform cell: ``native["platform"]`` (OpenCL), else ``native["aliases"]`` (Vulkan), else ``-``."""
    return str(entry.native.get("platform") or entry.native.get("aliases") or "-")


def _no_device(inventory: Inventory) -> None:
    """Exit 4 with every provider's reason: nothing to run on is a failure, not an empty success."""
    reasons = "; ".join(f"{p.name}: {p.reason}" for p in inventory.providers if not p.available)
    click.echo(
        f"Error: no device found ({reasons or 'no provider installed'}); docs/cli.md lists the driver packages",
        err=True,
    )
    click.get_current_context().exit(int(ExitCode.DEVICE_ERROR))
