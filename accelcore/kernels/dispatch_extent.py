"""How far a dispatch may reach into each buffer whose coverage is unknown.

Promise: :func:`unknown_extents` gives, per slot of a kernel package whose coverage is UNKNOWN (a
storage buffer with a positive element size; uniform blocks are parameter blocks, not indexed per
work-item), the bytes the common ``p[get_global_id(0)]`` pattern (or ``p[y * w + x]`` over the
whole grid) reaches: work-items times the row's element size, counted two ways —

- ``launched_bytes``: the work-items the device runs, whole work-groups included (Vulkan rounds a
  global size up to whole groups; a FROM_BINDING count rounds up to the local size). The
  numpy-first layer sizes a host array's temporary buffer to at least this, filled with the guard
  pattern past the array (docs/python.md, "Short arrays").
- ``requested_bytes``: the work-items the call asks for (the global size, groups times the local size, or
  the dispatch slot's element count), before rounding up to whole groups. A device array shorter
  than this is refused by default (the rounding is the kernel's to guard, as every Vulkan
  ``if (i >= n) return;`` does).

Slots whose coverage is stated or inferred are left out: the engine's check
(:mod:`accelcore.engine.coverage`) refuses a short range for them before anything runs. A kernel
that indexes past its work-item (``p[2 * i]``, a gather) can still reach further; nothing here
claims otherwise.

May import: :mod:`accelcore.kernels.package` only. Cost: one lookup per call; a package's rows, and its
extents where the dispatch does not depend on the bound ranges (all but FROM_BINDING), are worked out
once (kept by identity, at most ``_PACKAGES_KEPT``; cleared when full).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .package import ANY_LOCAL_SIZE, Coverage, DescriptorType, DispatchKind, KernelPackage

__all__ = ["Extent", "unknown_extents", "work_items"]

_PACKAGES_KEPT = 64


@dataclass(frozen=True, slots=True)
class Extent:
    """What a dispatch may reach in one buffer of unknown coverage (see the module docstring)."""

    element_size: int
    launched_bytes: int
    requested_bytes: int


_rows_of: dict[int, tuple[KernelPackage, tuple[tuple[int, int], ...], int, dict[int, Extent] | None]] = {}
"""Per package (by identity, the package kept so its id cannot be reused): its (slot, element size) rows
of unknown coverage, the element size of its dispatch slot, and its extents where they do not depend on
the bound ranges (every dispatch but FROM_BINDING)."""


def _rows(package: KernelPackage) -> tuple[tuple[tuple[int, int], ...], int, dict[int, Extent] | None]:
    known = _rows_of.get(id(package))
    if known is not None and known[0] is package:
        return known[1], known[2], known[3]
    rows = tuple(
        (row.slot, row.element_size)
        for row in package.bindings
        if row.coverage is Coverage.UNKNOWN
        and row.element_size > 0
        and row.descriptor_type is DescriptorType.STORAGE_BUFFER
    )
    dispatch_slot = package.dispatch.slot
    dispatch_size = next((r.element_size for r in package.bindings if r.slot == dispatch_slot), 0)
    fixed = None
    if package.dispatch.kind is not DispatchKind.FROM_BINDING:
        fixed = _extents(rows, _work_items(package, 0, 0)) if rows else {}
    if len(_rows_of) >= _PACKAGES_KEPT:
        _rows_of.clear()
    _rows_of[id(package)] = (package, rows, dispatch_size, fixed)
    return rows, dispatch_size, fixed


def _work_items(package: KernelPackage, bound: int, element_size: int) -> tuple[int, int]:
    dispatch = package.dispatch
    local = package.local_size
    if dispatch.kind is DispatchKind.FIXED and local == ANY_LOCAL_SIZE:
        items = math.prod(dispatch.groups)  # the driver picks the local size: groups are work-items
        return items, items
    requested, grid = dispatch.elements_and_groups(local, bound, element_size)
    if local == ANY_LOCAL_SIZE:
        return requested, requested
    launched = grid[0] * local[0] * grid[1] * local[1] * grid[2] * local[2]
    return requested, max(requested, launched)


def _extents(rows: tuple[tuple[int, int], ...], counted: tuple[int, int]) -> dict[int, Extent]:
    requested, launched = counted
    return {slot: Extent(size, launched * size, requested * size) for slot, size in rows}


def work_items(package: KernelPackage, range_bytes: Callable[[int], int | None]) -> tuple[int, int] | None:
    """(work-items requested, work-items launched) of ``package``'s dispatch, ``range_bytes(slot)`` giving a
    slot's bound range bytes (asked only for a FROM_BINDING dispatch); None for a FROM_BINDING dispatch
    whose slot is not bound (the provider refuses it)."""
    if package.dispatch.kind is not DispatchKind.FROM_BINDING:
        return _work_items(package, 0, 0)
    _, element_size, _ = _rows(package)
    bound = range_bytes(package.dispatch.slot)
    if bound is None or element_size <= 0:
        return None
    return _work_items(package, bound, element_size)


def unknown_extents(package: KernelPackage, range_bytes: Callable[[int], int | None]) -> Mapping[int, Extent]:
    """Per slot of unknown coverage, what the dispatch may reach (see the module docstring; read-only, shared
    between calls); empty when every buffer's coverage is known or the dispatch cannot be counted.
    ``range_bytes`` as for :func:`work_items`."""
    rows, _, fixed = _rows(package)
    if fixed is not None:
        return fixed
    counted = work_items(package, range_bytes) if rows else None
    return _extents(rows, counted) if counted is not None else {}
