"""``--bind SLOT=FILE.npy[:r|w|rw]`` and ``--out SLOT=FILE.npy`` values (pure parsing, no I/O).

SLOT is a slot number or a name (a kernel parameter, a descriptor's instance or block name), which
:func:`resolve_names` turns into the slot the package gives that name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from accelcore.contract.flags import AccessMode

__all__ = ["ACCESS_SUFFIXES", "BindSpec", "OutSpec", "parse_bind", "parse_out", "resolve_names"]

ACCESS_SUFFIXES = {"r": AccessMode.READ, "w": AccessMode.WRITE, "rw": AccessMode.READ_WRITE}
U32_MAX = 2**32 - 1


@dataclass(frozen=True, slots=True)
class BindSpec:
    """Slot ``slot`` gets a buffer holding ``path``'s array; ``access`` None means: as the kernel declares."""

    slot: int
    path: Path
    access: AccessMode | None
    name: str | None = None
    """The name it was given by, until :func:`resolve_names` sets ``slot``."""


@dataclass(frozen=True, slots=True)
class OutSpec:
    """After the run, slot ``slot``'s buffer is written to ``path`` as .npy (dtype/shape of its --bind array)."""

    slot: int
    path: Path
    name: str | None = None


Spec = TypeVar("Spec", BindSpec, OutSpec)


def resolve_names(option: str, specs: Sequence[Spec], names: Mapping[str, int]) -> list[Spec]:
    """Named specs with their slot set from ``names`` (name → slot); an unknown name → ValueError."""
    out = []
    for spec in specs:
        if spec.name is not None:
            if spec.name not in names:
                known = ", ".join(f"{n} (slot {s})" for n, s in sorted(names.items(), key=lambda i: i[1])) or "none"
                raise ValueError(f"{option} {spec.name}=...: the kernel has no buffer called {spec.name!r} ({known})")
            spec = dataclasses.replace(spec, slot=names[spec.name])
        out.append(spec)
    return out


def _slot_and_rest(option: str, text: str, form: str) -> tuple[int, str | None, str]:
    slot_text, sep, rest = text.partition("=")
    if not sep or not rest:
        raise ValueError(f"{option} {text!r} is not of the form {form}")
    slot_text = slot_text.strip()
    if re.fullmatch(r"[A-Za-z_]\w*", slot_text):
        return 0, slot_text, rest
    if not slot_text.isdecimal():
        raise ValueError(f"{option} {text!r}: slot {slot_text!r} is not a slot number or a name (form {form})")
    slot = int(slot_text)
    if slot > U32_MAX:
        raise ValueError(f"{option} {text!r}: slot {slot} is larger than a u32")
    return slot, None, rest


def parse_bind(text: str) -> BindSpec:
    """Parse one ``--bind`` value; ValueError says what is wrong and the accepted form."""
    form = "SLOT|NAME=FILE.npy[:r|w|rw]"
    slot, name, rest = _slot_and_rest("--bind", text, form)
    path_text, sep, suffix = rest.rpartition(":")
    access: AccessMode | None = None
    if sep and suffix.lower() in ACCESS_SUFFIXES:
        access = ACCESS_SUFFIXES[suffix.lower()]
    elif sep and "/" not in suffix and "." not in suffix:
        raise ValueError(f"--bind {text!r}: access {suffix!r} is not one of r, w, rw")
    else:
        path_text = rest
    if not path_text:
        raise ValueError(f"--bind {text!r} names no file (form {form})")
    return BindSpec(slot, Path(path_text), access, name)


def parse_out(text: str) -> OutSpec:
    """Parse one ``--out`` value."""
    slot, name, rest = _slot_and_rest("--out", text, "SLOT|NAME=FILE.npy")
    return OutSpec(slot, Path(rest), name)
