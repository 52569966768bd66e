"""The one device-selector grammar of accelcore and the ``accel`` tool (pure: no driver, no I/O).

Grammar (case-insensitive everywhere)::

    PROVIDER            vulkan              every device of that provider
    PROVIDER:INDEX      opencl:1            the device's stable index within its provider
    PROVIDER:UUID       vulkan:6c1b...e2    32 hex digits, dashes optional
    PROVIDER:GLOB       opencl:*pocl*       fnmatch glob over the device name, the provider's
                                            short tag for it (pocl, rusticl, intel) or one of
                                            its aliases (``native["aliases"]``, comma-separated:
                                            lavapipe for Mesa's llvmpipe Vulkan device)
    GLOB                *llvmpipe*          the same glob across every provider
    UUID                6c1b...e2           a UUID across every provider

A selector that needs to name one device and matches none or several raises
:class:`SelectorError`, whose message lists the candidates. Matching works on
anything with ``provider``, ``index``, ``name`` and ``uuid`` (a live
``DeviceEntry`` or a device record read back from a report), so expectation
files and merged reports use the same grammar.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

__all__ = [
    "DeviceLike",
    "Selector",
    "SelectorError",
    "describe",
    "parse_selector",
    "select_many",
    "select_one",
]

_PROVIDER = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_UUID = re.compile(r"^[0-9a-fA-F]{32}$")
_GLOB_CHARS = set("*?[")


class DeviceLike(Protocol):
    """What selection needs to know about a device."""

    @property
    def provider(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def uuid(self) -> bytes: ...


D = TypeVar("D", bound=DeviceLike)


class SelectorError(ValueError):
    """A selector is malformed, matches nothing, or matches several devices where one is needed.

    ``candidates`` are the ``provider:index  name`` lines offered to the user.
    """

    def __init__(self, message: str, candidates: Sequence[str] = ()) -> None:
        self.candidates = tuple(candidates)
        text = message
        if self.candidates:
            text += "\ncandidates:\n" + "\n".join(f"  {line}" for line in self.candidates)
        super().__init__(text)
        self.message = message


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed selector: ``provider`` None means every provider."""

    text: str
    provider: str | None
    kind: Literal["index", "uuid", "glob"]
    index: int = -1
    uuid: bytes = b""
    pattern: str = ""

    def matches(self, device: DeviceLike) -> bool:
        if self.provider is not None and device.provider.lower() != self.provider:
            return False
        if self.kind == "index":
            return device.index == self.index
        if self.kind == "uuid":
            return device.uuid == self.uuid
        if fnmatch.fnmatchcase(device.name.lower(), self.pattern):
            return True
        native = getattr(device, "native", None)
        if not isinstance(native, Mapping):
            return False
        names = [str(native.get("tag") or ""), *str(native.get("aliases") or "").split(",")]
        return any(name and fnmatch.fnmatchcase(name.strip().lower(), self.pattern) for name in names)


def parse_selector(text: str) -> Selector:
    """Parse one selector; an empty or unusable one raises :class:`SelectorError` saying what is valid."""
    raw = text.strip()
    if not raw:
        raise SelectorError("empty device selector; use PROVIDER, PROVIDER:INDEX, PROVIDER:UUID, PROVIDER:GLOB or GLOB")
    provider: str | None = None
    rest = raw
    head, sep, tail = raw.partition(":")
    if sep and _PROVIDER.match(head) and not _is_glob(head):
        provider, rest = head.lower(), tail
        if not rest:
            raise SelectorError(
                f"device selector {text!r} has nothing after {head}:; "
                f"use {head}:INDEX, {head}:UUID or {head}:GLOB (e.g. {head}:0 or '{head}:*')"
            )
    compact = rest.replace("-", "")
    if rest.isdecimal():
        if provider is None:
            raise SelectorError(f"device selector {text!r}: a bare index needs its provider, e.g. opencl:{rest}")
        return Selector(raw, provider, "index", index=int(rest))
    if _UUID.match(compact) and not _is_glob(rest):
        return Selector(raw, provider, "uuid", uuid=bytes.fromhex(compact))
    return Selector(raw, provider, "glob", pattern=rest.lower())


def _is_glob(text: str) -> bool:
    return any(ch in _GLOB_CHARS for ch in text)


def describe(device: DeviceLike) -> str:
    """``provider:index  name`` — how a device is offered as a candidate."""
    return f"{device.provider}:{device.index}  {device.name}"


def _check_provider(
    selector: Selector,
    devices: Sequence[DeviceLike],
    unavailable: Mapping[str, str],
    known: Iterable[str],
) -> None:
    if selector.provider is None:
        return
    if selector.provider in unavailable:
        raise SelectorError(
            f"device selector {selector.text!r}: provider {selector.provider!r} is unavailable: "
            f"{unavailable[selector.provider]}"
        )
    providers = {d.provider.lower() for d in devices} | {p.lower() for p in known}
    if selector.provider not in providers:
        names = ", ".join(sorted(providers)) or "none installed"
        raise SelectorError(
            f"device selector {selector.text!r}: unknown provider {selector.provider!r} (known: {names})"
        )


def select_many(
    texts: Sequence[str],
    devices: Sequence[D],
    *,
    unavailable: Mapping[str, str] | None = None,
    known_providers: Iterable[str] = (),
) -> list[D]:
    """Every device matched by any of ``texts`` (in device order, no repeats).

    Each selector must match at least one device, else :class:`SelectorError`
    listing the candidates. ``unavailable`` maps provider name → reason, so a
    selector naming a broken provider says why it cannot match.
    """
    unavailable = {k.lower(): v for k, v in (unavailable or {}).items()}
    known = list(known_providers)
    chosen: set[int] = set()
    providers = {d.provider.lower() for d in devices} | {p.lower() for p in known} | set(unavailable)
    for text in texts:
        word = text.strip().lower()
        if word in providers:
            selector = Selector(text.strip(), word, "glob", pattern="*")
        else:
            selector = parse_selector(text)
        _check_provider(selector, devices, unavailable, known)
        hits = [i for i, d in enumerate(devices) if selector.matches(d)]
        if not hits:
            pool = [d for d in devices if selector.provider is None or d.provider.lower() == selector.provider]
            raise SelectorError(f"device selector {text!r} matches no device", [describe(d) for d in pool or devices])
        chosen.update(hits)
    return [d for i, d in enumerate(devices) if i in chosen]


def select_one(
    text: str,
    devices: Sequence[D],
    *,
    unavailable: Mapping[str, str] | None = None,
    known_providers: Iterable[str] = (),
) -> D:
    """The single device ``text`` names; none or several → :class:`SelectorError` listing candidates."""
    hits = select_many([text], devices, unavailable=unavailable, known_providers=known_providers)
    if len(hits) > 1:
        raise SelectorError(
            f"device selector {text!r} matches {len(hits)} devices; name one (e.g. {hits[0].provider}:{hits[0].index})",
            [describe(d) for d in hits],
        )
    return hits[0]
