"""Which devices to benchmark, and how to reach each one by hand (raw API) and through us.

Devices come from the installed provider families (``accelcore.devices.registry``);
for each one the raw OpenCL device or Vulkan physical device is located by
the facts the entry carries (platform/device names, deviceUUID). When a family
cannot be loaded, its API's devices are still benchmarked raw (found by
enumerating the API directly) and "ours" records why it was not measured.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from accelcore.devices.registry import DeviceEntry, ProviderFamily, ProviderUnavailable, load_families

__all__ = ["Target", "find_targets"]

RAW_APIS = {"opencl": "opencl", "vulkan": "vulkan"}
"""Provider name → the raw API it wraps (providers not listed get no raw side)."""


@dataclass
class Target:
    """One device to benchmark."""

    device_id: str
    provider: str
    name: str
    api: str | None
    entry: DeviceEntry | None = None
    family: ProviderFamily | None = None
    ours_missing: str = ""
    native: Mapping[str, str] = field(default_factory=dict)
    uuid: bytes = b""


def _raw_only(api: str, reason: str) -> list[Target]:
    found: list[Target] = []
    try:
        if api == "opencl":
            from . import raw_opencl

            for index, (platform, name, _) in enumerate(raw_opencl.list_devices()):
                found.append(
                    Target(
                        f"opencl:{index}", "opencl", name, "opencl", ours_missing=reason, native={"platform": platform}
                    )
                )
        elif api == "vulkan":
            from . import raw_vulkan

            for index, (name, uuid) in enumerate(raw_vulkan.list_devices()):
                found.append(Target(f"vulkan:{index}", "vulkan", name, "vulkan", ours_missing=reason, uuid=uuid))
    except Exception as exc:  # the raw API itself is missing or broken
        return [Target(f"{api}:?", api, f"(no {api} devices: {type(exc).__name__}: {exc})", None, ours_missing=reason)]
    return found


def _load_all() -> dict[str, ProviderFamily | ProviderUnavailable]:
    """Every registered family, one at a time: a family whose import fails in any way becomes ProviderUnavailable."""
    from importlib import metadata

    from accelcore.devices.registry import ENTRY_POINT_GROUP

    loaded: dict[str, ProviderFamily | ProviderUnavailable] = {}
    for name in sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}):
        try:
            loaded.update(load_families([name]))
        except Exception as exc:
            loaded[name] = ProviderUnavailable(name, f"loading the family raised {type(exc).__name__}: {exc}")
    return loaded


def _matches(target: Target, selectors: Sequence[str]) -> bool:
    for text in selectors:
        lowered = text.lower()
        if lowered in (target.device_id.lower(), target.provider.lower()):
            return True
        if fnmatch.fnmatchcase(target.name.lower(), lowered) or fnmatch.fnmatchcase(target.device_id.lower(), lowered):
            return True
    return False


def find_targets(
    devices: Sequence[str | DeviceEntry] | None = None,
    families: Mapping[str, ProviderFamily | ProviderUnavailable] | None = None,
) -> list[Target]:
    """Benchmark targets for ``devices`` (entries, or selectors: ``provider``, ``provider:index``, name glob).

    None means every device of the opencl and vulkan families (the reference
    provider is benchmarked only when named).
    """
    loaded = dict(families) if families is not None else _load_all()
    entries = [d for d in devices or () if isinstance(d, DeviceEntry)]
    selectors = [d for d in devices or () if isinstance(d, str)]
    targets: list[Target] = []
    names = (
        set(RAW_APIS) | ({e.provider for e in entries} if entries else set()) | (set(loaded) if selectors else set())
    )
    for provider in sorted(names):
        family = loaded.get(provider)
        found: list[Target] = []
        if family is None or isinstance(family, ProviderUnavailable):
            reason = (
                family.reason
                if isinstance(family, ProviderUnavailable)
                else f"no provider family {provider!r} installed"
            )
            if provider in RAW_APIS:
                found = _raw_only(RAW_APIS[provider], reason)
        else:
            try:
                discovered = list(family.discover())
            except Exception as exc:
                reason = f"{provider} discover() failed: {type(exc).__name__}: {exc}"
                found = _raw_only(RAW_APIS[provider], reason) if provider in RAW_APIS else []
            else:
                for entry in discovered:
                    found.append(
                        Target(
                            entry.device_id,
                            provider,
                            entry.name,
                            RAW_APIS.get(provider),
                            entry=entry,
                            family=family,
                            native=dict(entry.native),
                            uuid=entry.uuid,
                        )
                    )
        targets.extend(found)
    if entries:
        wanted = {(e.provider, e.index) for e in entries}
        targets = [t for t in targets if t.entry is not None and (t.entry.provider, t.entry.index) in wanted]
    elif selectors:
        targets = [t for t in targets if _matches(t, selectors)]
    else:
        targets = [t for t in targets if t.provider in RAW_APIS]
    return targets
