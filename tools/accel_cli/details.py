"""The driver's own facts at clinfo / vulkaninfo depth for ``accel info``: read through the provider family, shown
in sections.

Promise: :func:`read_details` never raises for a provider's or a driver's fault. A family that offers no
``device_details(entry)`` (the reference provider, a third-party family) or one that fails gives no
details and the reason; a single query the driver refuses is the family's business (a fact with no
value and its reason, :class:`accelcore.devices.native_facts.Fact`). :func:`details_json` is the ``details``
object of ``accel info --json``; :func:`details_lines` the text: one section after the other
(clinfo's order), a title line and indented rows; a fact not reported reads ``not reported: why``;
byte counts also in KiB/MiB/GiB; lists one item a line where the provider asks for it (extensions,
memory heaps and types, queue families).
"""

from __future__ import annotations

from typing import Any

from accelcore.devices.native_facts import DeviceDetails, Fact
from accelcore.devices.registry import DeviceEntry

__all__ = ["details_json", "details_lines", "human_bytes", "read_details"]


def read_details(family: Any, entry: DeviceEntry) -> tuple[DeviceDetails | None, str]:
    """(the family's :class:`DeviceDetails` of ``entry``, read now, or None, and why there are none)."""
    reader = getattr(family, "device_details", None)
    if not callable(reader):
        return None, f"the {entry.provider} provider family reads no driver details (it has no device_details())"
    try:
        details = reader(entry)
    except Exception as exc:  # a provider's or driver's failure: shown, not raised (the rest of info stands)
        return None, f"device_details() raised {type(exc).__name__}: {exc}"
    if not isinstance(details, DeviceDetails):
        return None, f"device_details() returned {type(details).__name__}, not DeviceDetails"
    return details, ""


def details_json(details: DeviceDetails | None, reason: str) -> dict[str, Any]:
    """``{"reported": true, "reason": null, "source", "sections", "not_reported", "units", "queries"}``, or
    ``reported: false`` with the reason and empty mappings."""
    if details is None:
        empty: dict[str, Any] = {"source": None, "sections": {}, "not_reported": {}, "units": {}, "queries": {}}
        return {"reported": False, "reason": reason, **empty}
    return {"reported": True, "reason": None, **details.as_dict()}


_BINARY = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def human_bytes(value: int) -> str:
    """``2,097,152 bytes (2 MiB)``; under 1 KiB just ``512 bytes``."""
    for size, name in _BINARY:
        if value >= size:
            amount = value / size
            shown = f"{amount:.0f}" if amount == int(amount) else f"{amount:.2f}"
            return f"{value:,} bytes ({shown} {name})"
    return f"{value:,} bytes"


def _scalar(key: str, value: Any, unit: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        if unit == "bytes":
            return human_bytes(value)
        if key.endswith("_id"):
            return f"{value:#x}"
        return f"{value:,} {unit}".rstrip()
    if isinstance(value, float):
        return f"{value:g} {unit}".rstrip()
    if isinstance(value, str):
        return value or "(empty)"
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')} {_item(k, v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_item(key, v) for v in value) or "(none)"
    return str(value)


def _item(key: str, value: Any) -> str:
    """A value inside a list or mapping: ``size_bytes`` as bytes, a list of flags joined by `` | ``."""
    if isinstance(value, list):
        return " | ".join(str(v) for v in value) or "(none)"
    if key.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
        return human_bytes(value)
    return _scalar(key, value, "")


def _value_lines(fact: Fact) -> list[str]:
    value = fact.value
    if value is None:
        return [f"not reported: {fact.reason}"]
    if isinstance(value, list) and fact.layout == "axes":
        return [" x ".join(f"{v:,}" for v in value) + (f" {fact.unit}" if fact.unit else "")]
    if isinstance(value, list) and fact.layout == "lines":
        if not value:
            return ["(none)"]
        return [
            ", ".join(f"{k.removesuffix('_bytes').replace('_', ' ')} {_item(k, v)}" for k, v in item.items())
            if isinstance(item, dict)
            else str(item)
            for item in value
        ]
    return [_scalar(fact.key, value, fact.unit)]


def details_lines(details: DeviceDetails | None, reason: str, provider: str) -> list[str]:
    """The text of the details: a title line per section and its rows, indented two spaces."""
    if details is None:
        return [f"driver details ({provider})", f"  not reported: {reason}"]
    lines: list[str] = []
    for section in details.sections:
        if len(section.facts) == 1 and section.facts[0].layout == "lines" and isinstance(section.facts[0].value, list):
            items = section.facts[0].value  # a section of one list (Extensions): its items under the title
            lines.append(f"{section.title} ({len(items)})")
            lines.extend(f"  {item}" for item in items)
            continue
        width = max((len(fact.label) for fact in section.facts), default=0)
        lines.append(section.title)
        for fact in section.facts:
            first, *rest = _value_lines(fact)
            lines.append(f"  {fact.label:<{width}}  {first}".rstrip())
            lines.extend(f"  {'':<{width}}  {more}".rstrip() for more in rest)
    return lines
