"""``accel info DEVICE``: identity, capabilities, limits, memory domains, artifact formats, native facts."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from accelcore.device import DeviceInfo
from accelcore.errors import BackendError, DeviceInfoError
from accelcore.flags import Capabilities, MemoryDomain
from accelcore.package import module_kind_of_format
from accelcore.program import ArtifactFormat
from accelcore.registry import DeviceEntry

from ..exitcodes import ExitCode
from ..inventory import discover
from ..render import console, emit_json, error_boundary, hexuuid, set_json_mode
from .common import close_provider, device_argument, require_device

__all__ = ["declared_formats", "info", "info_json"]


def declared_formats(provider: Any) -> list[dict[str, str]] | None:
    """The artifact formats the provider instance says it loads, or None when it does not say.

    A provider declares them with ``artifact_formats`` (a sequence of ArtifactFormat, or a method
    returning one); kernel-package formats are named by their module kind.
    """
    declared = getattr(provider, "artifact_formats", None)
    if callable(declared):
        declared = declared()
    if declared is None:
        return None
    formats = []
    for item in declared:
        number = int(item)
        try:
            name = module_kind_of_format(ArtifactFormat(number)).name
        except BackendError:
            name = "provider-specific"
        formats.append({"format": f"{number:#010x}", "module_kind": name})
    return formats


def _capability_names(capabilities: Capabilities) -> list[str]:
    names = [bit.name for bit in Capabilities if bit.name and capabilities & bit]
    unknown = int(capabilities) & ~sum(int(bit) for bit in Capabilities)
    if unknown:
        names.append(f"UNKNOWN({unknown:#x})")
    return names


def _domains(info: DeviceInfo) -> list[str]:
    return [domain.name for domain in MemoryDomain if info.capabilities & domain.capability]


def info_json(
    entry: DeviceEntry, info: DeviceInfo, formats: list[dict[str, str]] | None, problem: str
) -> dict[str, Any]:
    """The ``accel info --json`` document (schema accel_cli/schemas/info.schema.json)."""
    identity = info.identity
    return {
        "schema": "accel-info/1",
        "device": {
            "id": entry.device_id,
            "provider": entry.provider,
            "index": entry.index,
            "name": entry.name,
            "uuid": hexuuid(entry.uuid),
        },
        "identity": {
            "uuid": identity.uuid_hex,
            "class": identity.class_.name,
            "class_value": int(identity.class_),
            "vendor_id": identity.vendor_id,
            "device_id": identity.device_id,
        },
        "capabilities": {"value": int(info.capabilities), "names": _capability_names(info.capabilities)},
        "limits": info.limits.as_dict(),
        "memory_domains": _domains(info),
        "artifact_formats": formats,
        "native": {str(k): str(v) for k, v in entry.native.items()},
        "valid": not problem,
        "problem": problem or None,
    }


def _print(document: dict[str, Any]) -> None:
    out = console()
    device = document["device"]
    out.print(f"[bold]{device['id']}[/bold]  {device['name']}")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    identity = document["identity"]
    table.add_row("uuid", identity["uuid"])
    table.add_row("class", f"{identity['class']} ({identity['class_value']})")
    table.add_row("vendor_id", f"{identity['vendor_id']:#x}")
    table.add_row("device_id", f"{identity['device_id']:#x}")
    caps = document["capabilities"]
    table.add_row("capabilities", f"{caps['value']:#x} " + (" | ".join(caps["names"]) or "(none)"))
    table.add_row("memory domains", ", ".join(document["memory_domains"]) or "(none)")
    formats = document["artifact_formats"]
    table.add_row(
        "artifact formats",
        "(not declared by the provider)"
        if formats is None
        else ", ".join(f"{f['format']} {f['module_kind']}" for f in formats) or "(none)",
    )
    for name, value in document["limits"].items():
        table.add_row(name, f"{value:,}")
    for name, value in document["native"].items():
        table.add_row(f"native.{name}", value)
    if document["problem"]:
        table.add_row("[red]INVALID[/red]", document["problem"])
    out.print(table)


@click.command()
@device_argument
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON (schema accel-info/1).")
@error_boundary
def info(device: str | None, as_json: bool) -> None:
    """Show one device: identity, capabilities, limits, memory domains, artifact formats and native facts.

    DEVICE is a selector (opencl:0, vulkan:*llvmpipe*, ...); default $ACCEL_DEVICE.
    Exit status 4 when the device cannot be opened or its metadata is invalid
    (the facts are still printed, with the problem).
    """
    set_json_mode(as_json)
    inventory = discover()
    entry = inventory.select_one(require_device(device))
    provider = inventory.family_of(entry).open(entry)
    try:
        device_info = provider.device_info()
        problem = ""
        try:
            device_info.validate()
        except DeviceInfoError as exc:
            problem = str(exc)
        formats = declared_formats(provider)
    finally:
        close_provider(provider)
    document = info_json(entry, device_info, formats, problem)
    if as_json:
        emit_json(document)
    else:
        _print(document)
    if problem:
        click.echo(f"Error: {entry.device_id} reports invalid metadata: {problem}", err=True)
        click.get_current_context().exit(int(ExitCode.DEVICE_ERROR))
