"""Packing options shared by ``accel pack`` and ``accel run``, and the bridge to :mod:`accelcore.pack`.

Options: ``--kind``, ``--entry``, ``--local-size X[,Y,Z]``, ``--slot
SLOT=NATIVE:r|w|rw[:ELEMENT_BYTES]`` (repeatable: the binding table),
``--grid-from SLOT`` or ``--groups X,Y,Z`` (the dispatch rule),
``--count-arg N`` and ``--build-options``. What is not given is inferred by
the packer from the module (SPIR-V inspection: flavour, entry point, local
size, descriptors).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from accelcore.errors import BackendError
from accelcore.package import NO_COUNT_ARGUMENT, Dispatch, DispatchKind, KernelPackage, ModuleKind, PackageBinding

from .artifacts import FileKind, PackOptions
from .bindspec import ACCESS_SUFFIXES

__all__ = [
    "KIND_NAMES",
    "cli_words",
    "dispatch_from",
    "pack_module",
    "pack_options",
    "pack_options_from",
    "parse_slot_row",
    "parse_triple",
]

F = TypeVar("F", bound=Callable[..., Any])

KIND_NAMES = {
    "vulkan-spirv": ModuleKind.SPIRV_VULKAN,
    "opencl-spirv": ModuleKind.SPIRV_OPENCL,
    "opencl-source": ModuleKind.OPENCL_SOURCE,
    "opencl-binary": ModuleKind.OPENCL_BINARY,
}


def parse_triple(option: str, text: str, *, fill: int = 1) -> tuple[int, int, int]:
    """``X[,Y[,Z]]`` of positive integers (missing ones are ``fill``)."""
    parts = [p.strip() for p in text.split(",")]
    if not 1 <= len(parts) <= 3 or not all(p.isdecimal() and int(p) > 0 for p in parts):
        raise click.BadParameter(f"{text!r} is not X[,Y[,Z]] of positive integers", param_hint=option)
    values = [int(p) for p in parts] + [fill] * (3 - len(parts))
    return values[0], values[1], values[2]


def parse_slot_row(text: str) -> tuple[int, int, Any, int]:
    """``SLOT=NATIVE:ACCESS[:ELEMENT_BYTES]`` → (slot, native index, AccessMode, element size)."""
    form = "SLOT=NATIVE:r|w|rw[:ELEMENT_BYTES]"
    slot, sep, rest = text.partition("=")
    pieces = rest.split(":")
    if not sep or len(pieces) not in (2, 3):
        raise click.BadParameter(f"{text!r} is not {form}", param_hint="--slot")
    numbers = [slot.strip(), pieces[0].strip(), *(p.strip() for p in pieces[2:])]
    if not all(n.isdecimal() for n in numbers):
        raise click.BadParameter(
            f"{text!r}: SLOT, NATIVE and ELEMENT_BYTES must be integers ({form})", param_hint="--slot"
        )
    access = ACCESS_SUFFIXES.get(pieces[1].strip().lower())
    if access is None:
        raise click.BadParameter(f"{text!r}: access {pieces[1]!r} is not r, w or rw", param_hint="--slot")
    element = int(pieces[2]) if len(pieces) == 3 else 4
    if element == 0:
        raise click.BadParameter(f"{text!r}: element size must be at least 1 byte", param_hint="--slot")
    return int(slot), int(pieces[0]), access, element


def pack_options(func: F) -> F:
    """Add the packing options to a command (collected into ``**packing``)."""
    decorators = [
        click.option(
            "--kind",
            "pack_kind",
            type=click.Choice(sorted(KIND_NAMES)),
            help="Module kind of a raw file (default: from its content; SPIR-V flavour from its capabilities).",
        ),
        click.option("--entry", "pack_entry", metavar="NAME", help="Entry point (default: the module's only one)."),
        click.option("--local-size", "pack_local_size", metavar="X[,Y,Z]", help="Workgroup size (SPIR-V: from it)."),
        click.option(
            "--slot",
            "pack_slots",
            multiple=True,
            metavar="SLOT=NATIVE:r|w|rw[:BYTES]",
            help="A binding-table row (default: Vulkan descriptors of set 0 / OpenCL buffer arguments in order).",
        ),
        click.option("--grid-from", "pack_grid_from", type=int, metavar="SLOT", help="Grid from this slot's length."),
        click.option("--groups", "pack_groups", metavar="X[,Y,Z]", help="A fixed grid of workgroups instead."),
        click.option("--count-arg", "pack_count_arg", type=int, metavar="N", help="Kernel argument taking the count."),
        click.option("--build-options", "pack_build_options", default="", help="OpenCL build options."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def pack_options_from(values: Mapping[str, Any]) -> PackOptions:
    """PackOptions from the ``**packing`` keyword arguments of a command."""
    local = values.get("pack_local_size")
    groups = values.get("pack_groups")
    if values.get("pack_grid_from") is not None and groups:
        raise click.BadParameter("give --grid-from or --groups, not both", param_hint="--groups")
    kind_name = values.get("pack_kind")
    return PackOptions(
        kind=KIND_NAMES[kind_name] if kind_name else None,
        entry_point=values.get("pack_entry"),
        local_size=parse_triple("--local-size", local) if local else None,
        bindings=tuple(parse_slot_row(row) for row in values.get("pack_slots", ())),
        grid_from=values.get("pack_grid_from"),
        groups=parse_triple("--groups", groups) if groups else None,
        count_argument=values.get("pack_count_arg"),
        build_options=values.get("pack_build_options") or "",
    )


def dispatch_from(options: PackOptions) -> Dispatch | None:
    """The dispatch rule the options name (None: not given; the packer then says it is required)."""
    count = NO_COUNT_ARGUMENT if options.count_argument is None else options.count_argument
    if options.grid_from is not None:
        return Dispatch(DispatchKind.FROM_BINDING, slot=options.grid_from, count_argument=count)
    if options.groups is not None:
        return Dispatch(DispatchKind.FIXED, groups=options.groups, count_argument=count)
    if options.count_argument is not None:
        raise click.BadParameter("--count-arg needs --grid-from or --groups", param_hint="--count-arg")
    return None


_DISPATCH_FLAGS = "--grid-from SLOT or --groups X,Y,Z"
_KIND_FLAGS = {kind.name: name for name, kind in KIND_NAMES.items()}
_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r" \(e\.g\. Dispatch\(.*?\)\)"), ""),
    (re.compile(r"\bdispatch= is required"), f"{_DISPATCH_FLAGS} is required"),
    (re.compile(r"\bdispatch\.count_argument=?"), "--count-arg "),
    (re.compile(r"\bdispatch="), _DISPATCH_FLAGS),
    (re.compile(r"\bkind=(?:ModuleKind\.)?([A-Z_]+)"), "--kind {kind}"),
    (re.compile(r"\bentry_point="), "--entry "),
    (re.compile(r"\blocal_size="), "--local-size "),
    (re.compile(r"\bbindings="), "--slot SLOT=NATIVE:r|w|rw[:BYTES] "),
)


def cli_words(message: str) -> str:
    """An :mod:`accelcore.pack` message with its Python keyword names (``local_size=``, ``dispatch=``, ...)
    replaced by the CLI options that set them (``--local-size``, ``--grid-from SLOT or --groups X,Y,Z``)."""
    for pattern, replacement in _WORDS:
        if "{kind}" in replacement:
            message = pattern.sub(lambda m: f"--kind {_KIND_FLAGS.get(m.group(1), m.group(1).lower())}", message)
        else:
            message = pattern.sub(replacement, message)
    return re.sub(r" +([,;:)]|$)", r"\1", re.sub(r"  +", " ", message))


def pack_module(data: bytes, kind: FileKind, options: PackOptions) -> KernelPackage:
    """Wrap a raw module into a KernelPackage through :func:`accelcore.pack.pack_module` (BackendError on refusal,
    its message naming the CLI options, see :func:`cli_words`).

    An unrecognised binary is packed as OPENCL_BINARY; ``--kind`` overrides what the content says.
    """
    from accelcore.pack import pack_module as core_pack_module

    module_kind = options.kind
    if module_kind is None and kind is FileKind.OPENCL_BINARY:
        module_kind = ModuleKind.OPENCL_BINARY
    rows = [PackageBinding(slot, native, access, element) for slot, native, access, element in options.bindings]
    try:
        return core_pack_module(
            data,
            kind=module_kind,
            entry_point=options.entry_point,
            bindings=rows or None,
            dispatch=dispatch_from(options),
            local_size=options.local_size,
            build_options=options.build_options,
            target=options.target,
        )
    except BackendError as exc:
        if exc.domain is not None:
            raise
        raise BackendError(
            exc.kind, cli_words(exc.message), native_call=exc.native_call, native_code=exc.native_code
        ) from None
