"""The options every module kind shares, checked: ``entry_point=`` (``_pick``), ``local_size=``
(``_local``), ``dispatch=`` or ``global_size=`` (``_dispatch_rule``) and ``coverage=`` (``_apply_coverage``);
and the ``pack:`` wording of every packing error (``_invalid``, ``_unsupported``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ...contract.errors import BackendError, ErrorKind
from ..package import Coverage, Dispatch, PackageBinding


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"pack: {message}")


def _unsupported(message: str) -> BackendError:
    return BackendError(ErrorKind.UNSUPPORTED, f"pack: {message}")


def _pick(names: Sequence[str], entry_point: str | None, what: str) -> str:
    if entry_point is not None:
        if entry_point not in names:
            raise _invalid(f"entry_point={entry_point!r} is not a {what} in the module ({', '.join(names) or 'none'})")
        return entry_point
    if len(names) == 1:
        return names[0]
    if not names:
        raise _invalid(f"the module has no {what}")
    raise _invalid(f"the module has {len(names)} {what}s ({', '.join(names)}); pass entry_point=")


def _local(found: tuple[int, int, int] | None, given: tuple[int, int, int] | None) -> tuple[int, int, int]:
    if found is not None:
        if given is not None and tuple(given) != found:
            raise _invalid(f"local_size={tuple(given)} contradicts the module's fixed work-group size {found}")
        return found
    if given is None:
        raise _invalid("local_size= is required: the module fixes no work-group size")
    return (given[0], given[1], given[2])


def _dispatch_rule(
    dispatch: Dispatch | None, global_size: int | Sequence[int] | None, count_index: int | None
) -> Dispatch:
    """The dispatch from ``dispatch=`` or ``global_size=`` (one of them), with the count argument applied."""
    if dispatch is not None and global_size is not None:
        raise _invalid("give dispatch= or global_size=, not both")
    if global_size is not None:
        sizes = (global_size,) if isinstance(global_size, int) else tuple(global_size)
        rule = Dispatch.global_items(*sizes)
    elif dispatch is not None:
        rule = dispatch
    else:
        raise _invalid(
            "dispatch= is required: a module does not say how many workgroups to launch "
            "(e.g. Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=2), or global_size=)"
        )
    if count_index is not None:
        rule = dataclasses.replace(rule, count_argument=count_index)
    return rule


def _apply_coverage(
    rows: tuple[PackageBinding, ...], coverage: Mapping[int, Coverage | int] | None
) -> tuple[PackageBinding, ...]:
    """``coverage``: slot → Coverage.PER_WORK_ITEM / Coverage.UNKNOWN, or an element count (EXACT)."""
    if not coverage:
        return rows
    slots = {row.slot for row in rows}
    for slot in coverage:
        if slot not in slots:
            raise _invalid(f"coverage= names slot {slot!r}, which is not in the binding table ({sorted(slots)})")
    out = []
    for row in rows:
        if row.slot not in coverage:
            out.append(row)
            continue
        said = coverage[row.slot]
        if isinstance(said, Coverage):
            if said is Coverage.EXACT:
                raise _invalid(f"coverage= for slot {row.slot}: give the element count for an exact coverage")
            out.append(dataclasses.replace(row, coverage=said, coverage_elements=0))
        elif isinstance(said, int) and not isinstance(said, bool) and said >= 1:
            out.append(dataclasses.replace(row, coverage=Coverage.EXACT, coverage_elements=said))
        else:
            raise _invalid(f"coverage= for slot {row.slot} is {said!r}; give Coverage.PER_WORK_ITEM or a count >= 1")
    return tuple(out)
