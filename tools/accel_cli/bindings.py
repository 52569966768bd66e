"""Matching ``--bind``/``--out`` against a package's binding table, and loading the .npy arrays.

Promise: every check that does not need the device happens here, before the
device is opened: each slot the kernel declares is bound exactly once, no
unknown slot is bound, a requested access is within what the kernel
declares, each --out names a writable bound slot, and every array loads
(a regular file starting with the ``\\x93NUMPY`` magic whose header the file
holds, ``allow_pickle=False``, so never a pickle: :mod:`accel_cli.npyfile`)
and is non-empty. Failure: :class:`BindError` with the
argument (``--bind``/``--out``) and the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from accelcore.contract.flags import AccessMode, access_allows
from accelcore.kernels.package import Coverage, DescriptorType, DispatchKind, KernelPackage

from .artifacts import SlotSpec
from .bindspec import BindSpec, OutSpec
from .npyfile import ArrayFileError, load_array

__all__ = ["BindError", "BoundSlot", "length_warnings", "plan_bindings"]

_ACCESS_TEXT = {AccessMode.READ: "r", AccessMode.WRITE: "w", AccessMode.READ_WRITE: "rw"}


class BindError(ValueError):
    """A --bind/--out problem: ``argument`` is the option, ``input_file`` True when a file was refused."""

    def __init__(self, argument: str, message: str, *, input_file: bool = False) -> None:
        super().__init__(message)
        self.argument = argument
        self.input_file = input_file


@dataclass(frozen=True)
class BoundSlot:
    """One slot to bind: the host array (C-contiguous), the access to bind it with, and where to save it;
    ``name``: the kernel's name for the slot (a buffer parameter, a descriptor), when it has one."""

    slot: int
    path: Path
    array: npt.NDArray[np.generic]
    access: AccessMode
    declared: AccessMode
    out: Path | None = None
    name: str | None = None

    @property
    def label(self) -> str:
        """How the CLI names the slot: ``y (slot 2)``, or ``slot 2`` when the kernel names nothing."""
        return f"{self.name} (slot {self.slot})" if self.name else f"slot {self.slot}"

    @property
    def nbytes(self) -> int:
        return int(self.array.nbytes)


def _load_npy(path: Path, option: str) -> npt.NDArray[np.generic]:
    # A regular .npy file only, its header checked against the file before numpy allocates (npyfile).
    try:
        array = load_array(path, option)
    except ArrayFileError as exc:
        raise BindError(option, str(exc), input_file=True) from None
    if array.nbytes == 0:
        raise BindError(option, f"{path}: the array is empty; a buffer needs at least one byte", input_file=True)
    return np.ascontiguousarray(array)


def plan_bindings(
    slots: Sequence[SlotSpec],
    binds: Sequence[BindSpec],
    outs: Sequence[OutSpec],
    names: Mapping[int, str] | None = None,
) -> list[BoundSlot]:
    """The checked slot list, in slot order (see the module docstring). ``names``: the kernel's name for each
    slot that has one (what ``--bind NAME=`` takes), used in the messages and kept on each :class:`BoundSlot`."""
    names = names or {}
    declared = {row.slot: row for row in slots}
    table = ", ".join(f"{row.slot}:{_ACCESS_TEXT[row.access]}" for row in sorted(slots, key=lambda r: r.slot))
    seen: dict[int, BindSpec] = {}
    for spec in binds:
        if spec.slot in seen:
            raise BindError("--bind", f"slot {spec.slot} is bound twice ({seen[spec.slot].path} and {spec.path})")
        if spec.slot not in declared:
            raise BindError("--bind", f"slot {spec.slot} is not declared by the kernel (its slots: {table})")
        row = declared[spec.slot]
        if spec.access is not None and not access_allows(row.access, spec.access):
            raise BindError(
                "--bind",
                f"slot {spec.slot}: access {_ACCESS_TEXT[spec.access]} is more than the kernel declares "
                f"({_ACCESS_TEXT[row.access]})",
            )
        seen[spec.slot] = spec
    missing = [slot for slot in sorted(declared) if slot not in seen]
    if missing:
        wanted = " ".join(f"--bind {names.get(s, s)}=FILE.npy:{_ACCESS_TEXT[declared[s].access]}" for s in missing)
        named = [names[s] for s in missing if s in names]
        also = f" ({', '.join(named)})" if named else ""
        raise BindError("--bind", f"slot(s) {missing}{also} declared by the kernel are not bound; add {wanted}")
    out_paths: dict[int, Path] = {}
    for out in outs:
        if out.slot not in seen:
            raise BindError("--out", f"slot {out.slot} has no --bind (an --out needs the bound buffer it saves)")
        if out.slot in out_paths:
            raise BindError("--out", f"slot {out.slot} is saved twice")
        access = seen[out.slot].access or declared[out.slot].access
        if not int(access) & int(AccessMode.WRITE):
            raise BindError("--out", f"slot {out.slot} is bound read-only ({_ACCESS_TEXT[access]}); nothing to save")
        out_paths[out.slot] = out.path
    planned = []
    for slot in sorted(seen):
        spec = seen[slot]
        row = declared[slot]
        array = _load_npy(spec.path, "--bind")
        if array.nbytes % row.element_size:
            raise BindError(
                "--bind",
                f"slot {slot}: {spec.path} holds {array.nbytes} bytes, not a whole number of the kernel's "
                f"{row.element_size}-byte elements",
                input_file=True,
            )
        planned.append(
            BoundSlot(
                slot, spec.path, array, spec.access or row.access, row.access, out_paths.get(slot), names.get(slot)
            )
        )
    return planned


def length_warnings(package: KernelPackage | None, slots: Sequence[BoundSlot]) -> list[str]:
    """Warnings for bound slots shorter than the element count the kernel is dispatched with.

    A FROM_BINDING package passes the dispatch slot's element count to the kernel; a slot holding fewer
    elements may be read or written past its end (what happens then is the driver's) or give a partial
    result. A slot of unknown coverage is not refused: a shorter slot can be right (a coefficient or
    lookup table). A slot whose coverage the package states (``--coverage``) gets no warning: the
    engine compares it at submit and refuses a short one (INVALID_ARGUMENT, exit 3). Reference
    programs (no package) work on the shortest slot, so any difference in element counts is reported.
    """
    elements = {s.slot: s.nbytes // max(1, _element_size(package, s)) for s in slots}
    listing = ", ".join(f"slot {slot}: {count}" for slot, count in sorted(elements.items()))
    if package is None:
        if len(set(elements.values())) > 1:
            return [f"the bound slots differ in length ({listing} elements); the program works on the shortest"]
        return []
    rule = package.dispatch
    if rule.kind is not DispatchKind.FROM_BINDING or rule.slot not in elements:
        return []
    count = elements[rule.slot]
    # Stated coverage is the engine's to check; a uniform buffer is a parameter block, small by design.
    known = {
        row.slot
        for row in package.bindings
        if row.coverage is not Coverage.UNKNOWN or row.descriptor_type is DescriptorType.UNIFORM_BUFFER
    }
    short = [slot for slot, n in sorted(elements.items()) if n < count and slot not in known]
    return [
        f"slot {slot} holds {elements[slot]} elements, fewer than the {count} the dispatch count takes from "
        f"slot {rule.slot} ({listing}); the kernel may access it past its end or give a partial result"
        for slot in short
    ]


def _element_size(package: KernelPackage | None, slot: BoundSlot) -> int:
    if package is not None:
        for row in package.bindings:
            if row.slot == slot.slot:
                return row.element_size
    return slot.array.itemsize
