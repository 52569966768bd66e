"""Packages and cases of the argument kernels for chosen values: checked, packed, and their numpy references.

:func:`argument_values` checks values against a kernel's knobs; :func:`argument_package` packs one
for any values (the committed package is the one for :attr:`ArgumentKernelSpec.defaults`) and
:func:`argument_case` builds the matching inputs and numpy expectation. Argument values a kernel
does not take → INVALID_ARGUMENT naming the known ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...contract.errors import BackendError, ErrorKind
from ...kernels.package import KernelPackage, ModuleKind
from .argument_kernels import ArgumentValue, _f32
from .files import _shipped_for, load_module
from .kernel_case import KernelCase
from .table import argument_spec


def argument_values(kernel: str, values: Mapping[str, ArgumentValue] | None = None) -> dict[str, ArgumentValue]:
    """The spec's defaults overridden by ``values``, checked: every name a knob of the kernel, integers
    within their range, floats finite in f32 (returned as the f32 value the package carries)."""
    spec = argument_spec(kernel)
    knobs = {k.name: k for k in spec._knobs}
    merged: dict[str, ArgumentValue] = dict(spec.defaults)
    for name, value in (values or {}).items():
        knob = knobs.get(name)
        if knob is None:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"{kernel} has no value {name!r}; it takes: {', '.join(knobs)}"
            )
        if knob.kind is int:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{kernel}: {name} = {value!r} must be an integer")
            if not knob.low <= int(value) <= knob.high:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT,
                    f"{kernel}: {name} = {value} is outside {knob.low}..{knob.high} ({knob.meaning})",
                )
            merged[name] = int(value)
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{kernel}: {name} = {value!r} must be a number")
            with np.errstate(over="ignore"):
                as_f32 = np.float32(value)
            if not np.isfinite(as_f32):
                raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{kernel}: {name} = {value!r} is not a finite f32")
            merged[name] = _f32(value)
    for name in spec.optional:
        if name == "global_size" and name in merged and int(merged[name]) < int(merged["n"]):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"{kernel}: global_size = {merged[name]} covers fewer work-items than n = {merged['n']}",
            )
    return merged


def argument_package(
    kernel: str,
    kind: ModuleKind | None = None,
    values: Mapping[str, ArgumentValue] | None = None,
    *,
    module: bytes | None = None,
) -> KernelPackage:
    """The package of argument kernel ``kernel`` for ``values`` (defaults where not given), packed
    with :func:`accelcore.kernels.pack.pack_module` from the committed module (or ``module``).

    ``kind`` defaults to the kernel's only kind. ``write_package(argument_package(k))`` is the
    committed package of ``k``; conformance cases re-pack with other values and check the result
    against :func:`argument_case` for the same values.
    """
    spec = argument_spec(kernel)
    chosen = spec.kinds[0] if kind is None else ModuleKind(kind)
    if module is None:
        module = load_module(kernel, chosen)
    else:
        _shipped_for(kernel, chosen)
    return spec._pack(module, chosen, argument_values(kernel, values))


def argument_case(kernel: str, values: Mapping[str, ArgumentValue] | None = None, seed: int = 0) -> KernelCase:
    """Deterministic inputs and numpy expectation for argument kernel ``kernel`` run with
    :func:`argument_package` of the same ``values``.

    ``initial`` has every slot of that package's binding table (outputs start as
    :data:`SENTINEL` words); ``expected`` lists what must hold afterwards, inputs
    that must come back unchanged included; ``elements`` is the dispatch's work-item count
    the kernel acts on (n, count, ni·nj, width·height). ``ulp_tolerance`` follows
    :attr:`ArgumentKernelSpec.tolerance` for these values.
    """
    spec = argument_spec(kernel)
    chosen = argument_values(kernel, values)
    rng = np.random.default_rng(seed)
    initial, expected, ulps = spec._case(chosen, rng)
    elements = math.prod(int(chosen[s]) for s in spec.size_knobs)
    return KernelCase(spec.name, elements, initial, expected, ulps)
