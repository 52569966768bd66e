"""Packing options shared by ``accel pack`` and ``accel run``, and the bridge to :mod:`accelcore.kernels.pack`.

Options: ``--kind``, ``--entry``, ``--local-size X[,Y,Z]``, ``--slot
SLOT=NATIVE:r|w|rw[:ELEMENT_BYTES]`` (repeatable: the binding table),
``--grid-from SLOT``, ``--groups X,Y,Z`` or ``--global X[,Y,Z]`` (the
dispatch rule), ``--count-arg NAME|N``, ``--build-options``, and the kernel
arguments: ``--arg NAME=VALUE`` (OpenCL by-value), ``--local-mem NAME=BYTES``
(OpenCL ``__local``), ``--push MEMBER=VALUE`` (Vulkan push constants),
``--spec ID|NAME=VALUE`` (Vulkan specialization constants), ``--coverage
SLOT=item|N``. Values are typed from the declaration or written ``TYPE:VALUE``
(``f32:2.5``, ``u32:7``, ``f32x4:1,2,3,4``). What is not given is inferred by
the packer from the module (flavour, entry point, local size, descriptors,
argument names and types).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from accelcore.contract.errors import BackendError
from accelcore.contract.flags import AccessMode
from accelcore.contract.program import TargetIdentity
from accelcore.kernels.package import (
    MAX_AGGREGATE_BYTES,
    Coverage,
    Dispatch,
    DispatchKind,
    KernelPackage,
    ModuleKind,
    PackageBinding,
)
from accelcore.support.files import read_regular_file

from .bindspec import ACCESS_SUFFIXES
from .failures import UsageProblem

__all__ = [
    "KIND_NAMES",
    "PackOptions",
    "cli_words",
    "device_words",
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


@dataclass(frozen=True)
class PackOptions:
    """Packing flags shared by ``accel pack`` and ``accel run`` (None: infer from the module)."""

    kind: ModuleKind | None = None
    entry_point: str | None = None
    local_size: tuple[int, int, int] | None = None
    bindings: tuple[tuple[int, int, AccessMode, int], ...] = ()
    """(slot, native index, access, element size) rows; empty: from inspection."""
    grid_from: int | None = None
    groups: tuple[int, int, int] | None = None
    global_size: tuple[int, ...] | None = None
    count_argument: str | None = None
    """An argument name or index (Vulkan: the push-constant member at offset 0)."""
    build_options: str = ""
    target: TargetIdentity | None = None
    arguments: tuple[tuple[str, str], ...] = ()
    """``--arg NAME=VALUE``: OpenCL by-value arguments (value text typed from the declaration or TYPE:VALUE)."""
    local_memory: tuple[tuple[str, int], ...] = ()
    """``--local-mem NAME=BYTES``: OpenCL ``__local`` arguments."""
    push_constants: tuple[tuple[str, str], ...] = ()
    """``--push MEMBER=VALUE``: Vulkan push-constant members."""
    spec_constants: tuple[tuple[str, str], ...] = ()
    """``--spec ID|NAME=VALUE``: Vulkan specialization constants."""
    coverage: tuple[tuple[int, str], ...] = ()
    """``--coverage SLOT=item|N``: how many elements a dispatch touches."""
    extra: dict[str, Any] = field(default_factory=dict)


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
        click.option(
            "--entry",
            "pack_entry",
            metavar="NAME",
            help="Entry point (default: the module's only one; GLSL source: the function compiled as it, else main).",
        ),
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
        click.option(
            "--global",
            "pack_global",
            metavar="X[,Y,Z]",
            help="Global size in work-items instead (OpenCL: as given; Vulkan: ceil(global/local) groups).",
        ),
        click.option(
            "--count-arg",
            "pack_count_arg",
            metavar="NAME|N",
            help="Kernel argument (a 32-bit int/uint) taking the element count; Vulkan: push member at offset 0.",
        ),
        click.option(
            "--build-options",
            "pack_build_options",
            default="",
            help="OpenCL build options; GLSL source takes -D NAME[=VALUE], -U NAME, -I DIR (others are refused).",
        ),
        click.option(
            "--arg",
            "pack_args",
            multiple=True,
            metavar="NAME=VALUE",
            help="OpenCL by-value argument (name or index); value typed from the kernel or TYPE:VALUE (f32:2.5); "
            "a by-value struct member-wise (NAME.MEMBER=VALUE) or as raw bytes (NAME=@FILE).",
        ),
        click.option(
            "--local-mem", "pack_local_mem", multiple=True, metavar="NAME=BYTES", help="OpenCL __local argument size."
        ),
        click.option(
            "--push",
            "pack_push",
            multiple=True,
            metavar="MEMBER=VALUE",
            help="Vulkan push-constant member (name or index); vectors/arrays as a comma list.",
        ),
        click.option(
            "--spec",
            "pack_spec",
            multiple=True,
            metavar="ID|NAME=VALUE",
            help="Vulkan specialization constant (SpecId or name); unset ones keep the module's default.",
        ),
        click.option(
            "--coverage",
            "pack_coverage",
            multiple=True,
            metavar="SLOT=item|N|unknown",
            help="Elements a dispatch touches in SLOT: one per work-item, or exactly N (checked before submit); "
            "unknown: not checked (a slot not named gets one per work-item where inspection proves it).",
        ),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def parse_assignment(option: str, text: str, form: str = "NAME=VALUE") -> tuple[str, str]:
    """``NAME=VALUE`` → (name, value text); both non-empty."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise click.BadParameter(f"{text!r} is not {form}", param_hint=option)
    return name.strip(), value.strip()


def _sizes(option: str, text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",")]
    if not 1 <= len(parts) <= 3 or not all(p.isdecimal() and int(p) > 0 for p in parts):
        raise click.BadParameter(f"{text!r} is not X[,Y[,Z]] of positive integers", param_hint=option)
    return tuple(int(p) for p in parts)


def _local_memory(text: str) -> tuple[str, int]:
    name, value = parse_assignment("--local-mem", text, "NAME=BYTES")
    if not value.isdecimal() or int(value) == 0:
        raise click.BadParameter(f"{text!r}: BYTES must be a positive integer", param_hint="--local-mem")
    return name, int(value)


def _coverage(text: str) -> tuple[int, str]:
    slot, value = parse_assignment("--coverage", text, "SLOT=item|N")
    if not slot.isdecimal():
        raise click.BadParameter(f"{text!r}: SLOT must be a slot number", param_hint="--coverage")
    if value.lower() not in ("item", "unknown") and not (value.isdecimal() and int(value) > 0):
        raise click.BadParameter(f"{text!r}: give item, unknown or an element count >= 1", param_hint="--coverage")
    return int(slot), value.lower()


def pack_options_from(values: Mapping[str, Any]) -> PackOptions:
    """PackOptions from the ``**packing`` keyword arguments of a command."""
    local = values.get("pack_local_size")
    groups = values.get("pack_groups")
    global_text = values.get("pack_global")
    given = [
        flag
        for flag, v in (("--grid-from", values.get("pack_grid_from")), ("--groups", groups), ("--global", global_text))
        if v is not None and v != ""
    ]
    if len(given) > 1:
        raise click.BadParameter(
            f"give one of --grid-from, --groups, --global (got {', '.join(given)})", param_hint=given[-1]
        )
    kind_name = values.get("pack_kind")
    return PackOptions(
        kind=KIND_NAMES[kind_name] if kind_name else None,
        entry_point=values.get("pack_entry"),
        local_size=parse_triple("--local-size", local) if local else None,
        bindings=tuple(parse_slot_row(row) for row in values.get("pack_slots", ())),
        grid_from=values.get("pack_grid_from"),
        groups=parse_triple("--groups", groups) if groups else None,
        global_size=_sizes("--global", global_text) if global_text else None,
        count_argument=values.get("pack_count_arg"),
        build_options=values.get("pack_build_options") or "",
        arguments=tuple(parse_assignment("--arg", t) for t in values.get("pack_args", ())),
        local_memory=tuple(_local_memory(t) for t in values.get("pack_local_mem", ())),
        push_constants=tuple(parse_assignment("--push", t, "MEMBER=VALUE") for t in values.get("pack_push", ())),
        spec_constants=tuple(parse_assignment("--spec", t, "ID|NAME=VALUE") for t in values.get("pack_spec", ())),
        coverage=tuple(_coverage(t) for t in values.get("pack_coverage", ())),
    )


def dispatch_from(options: PackOptions) -> Dispatch | None:
    """The dispatch rule the options name (None: not given, or --global, which the packer takes itself)."""
    if options.grid_from is not None:
        return Dispatch(DispatchKind.FROM_BINDING, slot=options.grid_from)
    if options.groups is not None:
        return Dispatch(DispatchKind.FIXED, groups=options.groups)
    if options.count_argument is not None and options.global_size is None:
        raise click.BadParameter("--count-arg needs --grid-from, --groups or --global", param_hint="--count-arg")
    return None


def _keyed(pairs: tuple[tuple[str, Any], ...], option: str) -> dict[int | str, Any]:
    out: dict[int | str, Any] = {}
    for name, value in pairs:
        if name in out:
            raise click.BadParameter(f"{name!r} is given twice", param_hint=option)
        out[name] = value
    return out


def by_value_arguments(pairs: tuple[tuple[str, str], ...]) -> dict[int | str, Any]:
    """``--arg`` pairs as ``pack_module(arguments=)``: ``NAME=VALUE`` as text; ``NAME.MEMBER=VALUE`` gathered
    into a dict of a by-value struct's members; ``NAME=@PATH`` the raw bytes of a file (a struct in its
    OpenCL C layout, at most 4096 bytes). pack_module types and checks each against the declaration."""
    out: dict[int | str, Any] = {}
    for name, value in pairs:
        base, dot, member = name.partition(".")
        if dot:
            if not base or not member:
                raise click.BadParameter(f"{name!r} is not NAME.MEMBER", param_hint="--arg")
            members = out.setdefault(base, {})
            if not isinstance(members, dict):
                raise click.BadParameter(f"{base!r} is given both whole and member-wise ({name!r})", param_hint="--arg")
            if member in members:
                raise click.BadParameter(f"{name!r} is given twice", param_hint="--arg")
            members[member] = value
            continue
        if name in out:
            raise click.BadParameter(f"{name!r} is given twice (or whole and member-wise)", param_hint="--arg")
        out[name] = _value_file(name, value[1:]) if value.startswith("@") else value
    return out


def _value_file(name: str, path_text: str) -> bytes:
    path = Path(path_text)
    try:  # never a FIFO or device: accelcore.support.files (exit 2, and JSON under --json)
        data = read_regular_file(path, MAX_AGGREGATE_BYTES + 1)
    except OSError as exc:
        raise UsageProblem(f"{name}=@{path_text}: cannot read the file ({exc.strerror})", argument="--arg") from None
    if len(data) > MAX_AGGREGATE_BYTES:
        raise UsageProblem(
            f"{name}=@{path_text}: the file is over {MAX_AGGREGATE_BYTES} bytes; a by-value struct is at most that",
            argument="--arg",
        )
    return data


_DISPATCH_FLAGS = "--grid-from SLOT, --groups X,Y,Z or --global X[,Y,Z]"
_KIND_FLAGS = {kind.name: name for name, kind in KIND_NAMES.items()}
_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r", or global_size="), ""),
    (re.compile(r" \(e\.g\. Dispatch\(.*?\)\)"), ""),
    (re.compile(r"\bdispatch= is required"), f"{_DISPATCH_FLAGS} is required"),
    (re.compile(r"\bdispatch= or global_size="), _DISPATCH_FLAGS),
    (re.compile(r"\bdispatch\.count_argument=?"), "--count-arg "),
    (re.compile(r"\bcount_argument="), "--count-arg "),
    (re.compile(r"\bdispatch="), _DISPATCH_FLAGS),
    (re.compile(r"\bglobal_size="), "--global "),
    (re.compile(r"\barguments=\{\.\.\.: VALUE\}"), "--arg NAME=VALUE"),
    (re.compile(r"\barguments="), "--arg "),
    (re.compile(r"\blocal_memory=\{\.\.\.: BYTES\}"), "--local-mem NAME=BYTES"),
    (re.compile(r"\blocal_memory="), "--local-mem "),
    (re.compile(r"\bpush_constants=\{member: value\}"), "--push MEMBER=VALUE"),
    (re.compile(r"\bpush_constants\[(\w+)\]=VALUE"), r"--push \1=VALUE"),
    (re.compile(r"\bpush_constants="), "--push "),
    (re.compile(r"\bspec_constants="), "--spec "),
    (re.compile(r"\bcoverage="), "--coverage "),
    (re.compile(r"\bkind=(?:ModuleKind\.)?([A-Z_]+)"), "--kind {kind}"),
    (re.compile(r"\bentry_point="), "--entry "),
    (re.compile(r"\blocal_size="), "--local-size "),
    (re.compile(r"\bbindings="), "--slot SLOT=NATIVE:r|w|rw[:BYTES] "),
)


def cli_words(message: str) -> str:
    """An :mod:`accelcore.kernels.pack` message with its Python keyword names (``local_size=``, ``dispatch=``, ...)
    replaced by the CLI options that set them (``--local-size``, ``--grid-from SLOT or --groups X,Y,Z``)."""
    for pattern, replacement in _WORDS:
        if "{kind}" in replacement:
            message = pattern.sub(lambda m: f"--kind {_KIND_FLAGS.get(m.group(1), m.group(1).lower())}", message)
        else:
            message = pattern.sub(replacement, message)
    return re.sub(r" +([,;:)]|$)", r"\1", re.sub(r"  +", " ", message))


_DEVICE_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\bor ANY_LOCAL_SIZE \(the driver chooses a local size that divides it\)"),
        "or leave out --local-size (the driver then chooses a local size that divides it)",
    ),
    (
        re.compile(r"\(ANY_LOCAL_SIZE is for GLOBAL and FROM_BINDING dispatches\)"),
        "(leaving out --local-size is for --global and --grid-from dispatches)",
    ),
)


def device_words(message: str) -> str:
    """A provider's refusal at load or submit with the package's internal names (``ANY_LOCAL_SIZE``) replaced
    by what the CLI user types instead (leaving out ``--local-size``)."""
    for pattern, replacement in _DEVICE_WORDS:
        message = pattern.sub(replacement, message)
    return message


def pack_module(data: bytes, module_kind: ModuleKind | None, options: PackOptions) -> KernelPackage:
    """Wrap a raw module of ``module_kind`` (None: from its content) into a KernelPackage through
    :func:`accelcore.kernels.pack.pack_module` (BackendError on refusal, its message naming the CLI options, see
    :func:`cli_words`).
    """
    from accelcore.kernels.pack import pack_module as core_pack_module

    rows = [PackageBinding(slot, native, access, element) for slot, native, access, element in options.bindings]
    coverage: dict[int, Coverage | int] = {
        slot: Coverage.PER_WORK_ITEM if value == "item" else Coverage.UNKNOWN if value == "unknown" else int(value)
        for slot, value in options.coverage
    }
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
            arguments=by_value_arguments(options.arguments) or None,
            local_memory=_keyed(options.local_memory, "--local-mem") or None,
            push_constants=_keyed(options.push_constants, "--push") or None,
            spec_constants=_keyed(options.spec_constants, "--spec") or None,
            global_size=options.global_size,
            count_argument=options.count_argument,
            coverage=coverage or None,
        )
    except BackendError as exc:
        if exc.domain is not None:
            raise
        raise BackendError(
            exc.kind, cli_words(exc.message), native_call=exc.native_call, native_code=exc.native_code
        ) from None
