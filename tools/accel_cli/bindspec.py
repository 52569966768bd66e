"""``--bind SLOT=FILE.npy[:r|w|rw]`` and ``--out SLOT=FILE.npy`` values (pure parsing, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from accelcore.flags import AccessMode

__all__ = ["ACCESS_SUFFIXES", "BindSpec", "OutSpec", "parse_bind", "parse_out"]

ACCESS_SUFFIXES = {"r": AccessMode.READ, "w": AccessMode.WRITE, "rw": AccessMode.READ_WRITE}
U32_MAX = 2**32 - 1


@dataclass(frozen=True, slots=True)
class BindSpec:
    """Slot ``slot`` gets a buffer holding ``path``'s array; ``access`` None means: as the kernel declares."""

    slot: int
    path: Path
    access: AccessMode | None


@dataclass(frozen=True, slots=True)
class OutSpec:
    """After the run, slot ``slot``'s buffer is written to ``path`` as .npy (dtype/shape of its --bind array)."""

    slot: int
    path: Path


def _slot_and_rest(option: str, text: str, form: str) -> tuple[int, str]:
    slot_text, sep, rest = text.partition("=")
    if not sep or not rest:
        raise ValueError(f"{option} {text!r} is not of the form {form}")
    slot_text = slot_text.strip()
    if not slot_text.isdecimal():
        raise ValueError(f"{option} {text!r}: slot {slot_text!r} is not a non-negative integer (form {form})")
    slot = int(slot_text)
    if slot > U32_MAX:
        raise ValueError(f"{option} {text!r}: slot {slot} is larger than a u32")
    return slot, rest


def parse_bind(text: str) -> BindSpec:
    """Parse one ``--bind`` value; ValueError says what is wrong and the accepted form."""
    form = "SLOT=FILE.npy[:r|w|rw]"
    slot, rest = _slot_and_rest("--bind", text, form)
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
    return BindSpec(slot, Path(path_text), access)


def parse_out(text: str) -> OutSpec:
    """Parse one ``--out`` value."""
    slot, rest = _slot_and_rest("--out", text, "SLOT=FILE.npy")
    return OutSpec(slot, Path(rest))
