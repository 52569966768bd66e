"""The engine's coverage check: a bound range must hold what the dispatch touches.

A kernel package (format version 2) may state per binding how many elements one dispatch
touches (:class:`~accelcore.kernels.package.Coverage`). At ``load_program`` the engine derives a
:class:`CoverageRule` from the package once; ``submit`` then compares each bound range (in
whole elements) with what the dispatch needs and refuses a short one with INVALID_ARGUMENT
before the provider is called. Programs without a stated coverage (every non-package format,
and packages whose rows are all UNKNOWN) get no rule and pay nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..contract.errors import BackendError, ErrorKind
from ..contract.program import ArtifactRef
from ..contract.submission import BindingRef
from ..kernels.package import ANY_LOCAL_SIZE, Coverage, DispatchKind, KernelPackage, module_kind_of_format

__all__ = ["CoverageRule", "coverage_rule"]


class CoverageRule:
    """Per-program, precomputed: the rows with known coverage and how to count the dispatch."""

    __slots__ = ("_dispatch", "_dispatch_element_size", "_dispatch_slot", "_fixed_elements", "_local_size", "rows")

    def __init__(self, package: KernelPackage) -> None:
        self.rows: tuple[tuple[int, int, Coverage, int], ...] = tuple(
            (b.slot, b.element_size, b.coverage, b.coverage_elements)
            for b in package.bindings
            if b.coverage is not Coverage.UNKNOWN and b.element_size > 0
        )
        dispatch = package.dispatch
        self._dispatch = dispatch
        self._local_size = tuple(package.local_size)
        self._dispatch_slot = dispatch.slot
        self._dispatch_element_size = next(
            (b.element_size for b in package.bindings if b.slot == dispatch.slot and b.element_size > 0), 0
        )
        self._fixed_elements: int | None = None
        if dispatch.kind is DispatchKind.FIXED and self._local_size == ANY_LOCAL_SIZE:
            x, y, z = dispatch.groups  # the driver picks the local size: groups are work-items
            self._fixed_elements = x * y * z
        elif dispatch.kind is not DispatchKind.FROM_BINDING:
            ls = (self._local_size[0], self._local_size[1], self._local_size[2])
            self._fixed_elements = dispatch.elements_and_groups(ls, 0, 1)[0]

    def dispatch_elements(self, ranges: dict[int, int]) -> int | None:
        """The dispatch's element count for bound range bytes by slot; None when it cannot be told."""
        if self._fixed_elements is not None:
            return self._fixed_elements
        size = self._dispatch_element_size
        rng = ranges.get(self._dispatch_slot)
        if rng is None or size <= 0:
            return None  # the provider refuses an unbound dispatch slot
        ls = (self._local_size[0], self._local_size[1], self._local_size[2])
        return self._dispatch.elements_and_groups(ls, rng, size)[0]

    def check(self, bindings: Sequence[BindingRef[Any]]) -> None:
        """Raise INVALID_ARGUMENT naming the first slot whose bound range is short."""
        ranges = {ref.slot: ref.range.bytes for ref in bindings}
        elements: int | None = -1
        for slot, element_size, coverage, exact in self.rows:
            bound = ranges.get(slot)
            if bound is None:
                continue  # an unbound slot is the provider's refusal
            if coverage is Coverage.EXACT:
                needed: int | None = exact
                why = f"exact coverage of {exact} elements"
            else:
                if elements == -1:
                    elements = self.dispatch_elements(ranges)
                needed = elements
                why = f"per-work-item coverage, {elements} elements dispatched"
            if needed is None:
                continue
            have = bound // element_size
            if have < needed:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT,
                    f"slot {slot}: the bound range of {bound} bytes holds {have} elements of {element_size} bytes; "
                    f"the dispatch needs {needed} ({why})",
                )


def coverage_rule(artifact: ArtifactRef, max_bytes: int | None = None) -> CoverageRule | None:
    """The rule for a kernel-package artifact with known coverage; None for anything else.

    A payload that does not decode (or cannot be read) gives None: the provider's load decides
    what is wrong with it, with its own error.
    """
    try:
        module_kind_of_format(artifact.format)
    except BackendError:
        return None
    from ..kernels.package_codec import parse_package

    try:
        package = parse_package(artifact.payload, max_bytes=max_bytes)
    except Exception:
        return None
    rule = CoverageRule(package)
    return rule if rule.rows else None
