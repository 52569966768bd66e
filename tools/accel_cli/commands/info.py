"""``accel info DEVICE``: identity, capabilities, limits, memory domains, artifact formats, native facts, and the
driver's facts at clinfo / vulkaninfo depth (:mod:`accel_cli.details`)."""

from __future__ import annotations

from typing import Any

import click

from accelcore.contract.device import DeviceInfo
from accelcore.contract.errors import BackendError, DeviceInfoError
from accelcore.contract.flags import Capabilities, MemoryDomain
from accelcore.contract.program import ArtifactFormat
from accelcore.devices.native_facts import DeviceDetails
from accelcore.devices.registry import DeviceEntry
from accelcore.kernels.package import module_kind_of_format

from ..details import details_json, details_lines, read_details
from ..exitcodes import ExitCode
from ..inventory import discover
from ..render import emit_json, error_boundary, hexuuid, set_json_mode
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
    entry: DeviceEntry,
    info: DeviceInfo,
    formats: list[dict[str, str]] | None,
    problem: str,
    details: DeviceDetails | None = None,
    details_reason: str = "not read",
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
        "native_facts": entry.facts.as_dict() if entry.facts is not None else None,
        "details": details_json(details, details_reason),
        "valid": not problem,
        "problem": problem or None,
    }


_FACT_ROWS = (
    ("device_type", "device type", "{}"),
    ("api", "API", "{}"),
    ("driver_version", "driver version", "{}"),
    ("compute_units", "compute units", "{:,}"),
    ("global_memory_bytes", "global memory bytes", "{:,}"),
    ("local_memory_bytes", "local memory bytes", "{:,}"),
    ("max_work_group_size", "max work-group size", "{:,}"),
    ("max_push_constant_bytes", "max push-constant bytes", "{:,}"),
)


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def _fact_rows(facts: dict[str, Any], listed_below: bool) -> list[tuple[str, str]]:
    """The rows of "native limits and features": only what this provider's driver reports; the extensions one
    a line, or (``listed_below``) only their count when the Extensions section of the details lists them."""
    rows = [(label, fmt.format(facts[key])) for key, label, fmt in _FACT_ROWS if facts[key] is not None]
    if facts["uuid_derived"]:
        rows.append(("uuid", f"derived: {facts['uuid_source']} (the driver reports none)"))
    rows.append(("fp16 / fp64 / int64", " / ".join(_yes_no(facts[k]) for k in ("fp16", "fp64", "int64"))))
    rows.extend((f"{name} version", version) for name, version in facts["versions"].items())
    extensions = facts["extensions"]
    if listed_below:
        rows.append((f"extensions ({len(extensions)})", "listed under Extensions below"))
    else:
        rows.extend((f"extensions ({len(extensions)})" if i == 0 else "", e) for i, e in enumerate(extensions))
        if not extensions:
            rows.append(("extensions (0)", "(none)"))
    return rows


def _table(rows: list[tuple[str, str]]) -> list[str]:
    width = max((len(name) for name, _ in rows), default=0)
    return [f"{name:<{width}}  {value}".rstrip() for name, value in rows]


def _print(document: dict[str, Any], details: DeviceDetails | None, details_reason: str) -> None:
    device = document["device"]
    lines = [f"{device['id']}  {device['name']}"]
    identity = document["identity"]
    caps = document["capabilities"]
    formats = document["artifact_formats"]
    rows = [
        ("uuid", identity["uuid"]),
        ("class", f"{identity['class']} ({identity['class_value']})"),
        ("vendor_id", f"{identity['vendor_id']:#x}"),
        ("device_id", f"{identity['device_id']:#x}"),
        ("capabilities", f"{caps['value']:#x} " + (" | ".join(caps["names"]) or "(none)")),
        ("memory domains", ", ".join(document["memory_domains"]) or "(none)"),
        (
            "artifact formats",
            "(not declared by the provider)"
            if formats is None
            else ", ".join(f"{f['format']} {f['module_kind']}" for f in formats) or "(none)",
        ),
    ]
    rows.extend((name, "not reported" if value is None else f"{value:,}") for name, value in document["limits"].items())
    rows.extend((f"native.{name}", value) for name, value in document["native"].items())
    if document["problem"]:
        rows.append(("INVALID", document["problem"]))
    lines.extend(_table(rows))
    facts = document["native_facts"]
    listed_below = details is not None and any(s.key == "extensions" for s in details.sections)
    if facts is not None:
        lines.append(f"native limits and features ({device['provider']}, from the driver)")
        lines.extend("  " + line for line in _table(_fact_rows(facts, listed_below)))
    lines.extend(details_lines(details, details_reason, device["provider"]))
    click.echo("\n".join(lines))


@click.command()
@device_argument
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON (schema accel-info/1).")
@error_boundary
def info(device: str | None, as_json: bool) -> None:
    """Show one device: identity, capabilities, limits, memory domains, artifact formats, native facts, and
    the driver's own answers at clinfo / vulkaninfo depth in sections (Device, Compute, Memory, Images,
    Floating point, Subgroups, Extensions one a line, Platform / ICD or Loader / ICD).

    DEVICE is a selector (opencl:0, vulkan:*llvmpipe*, ...); default $ACCEL_DEVICE.
    Exit status 4 when the device cannot be opened or its metadata is invalid
    (the facts are still printed, with the problem).
    """
    set_json_mode(as_json)
    inventory = discover()
    entry = inventory.select_one(require_device(device))
    family = inventory.family_of(entry)
    details, details_reason = read_details(family, entry)
    provider = family.open(entry)
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
    document = info_json(entry, device_info, formats, problem, details, details_reason)
    if as_json:
        emit_json(document)
    else:
        _print(document, details, details_reason)
    if problem:
        click.echo(f"Error: {entry.device_id} reports invalid metadata: {problem}", err=True)
        click.get_current_context().exit(int(ExitCode.DEVICE_ERROR))
