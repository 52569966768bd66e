"""OpenCL kernel arguments, declared by the source (Clang's reading) or by OpenCL SPIR-V, or by nothing
(a device binary).

``_opencl`` matches the caller's options against the declared parameters: the binding table of the buffer
arguments, the dispatch with its count argument, and the records of the by-value (scalars, vectors, structs
as their bytes) and ``__local`` arguments. ``_check_local_id_scratch`` refuses a ``__local`` scratch too
small for the ``get_local_id`` subscript the kernel uses; ``_opencl_binary_arguments`` records a device
binary's arguments by index."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...contract.errors import BackendError
from ...contract.flags import AccessMode, access_allows
from ..arguments import ArgumentKey, TypedValue, describe, encode_aggregate, encode_for, lookup
from ..layouts import spirv_value_type
from ..opencl_signature import AggregateMember, OpenCLKernel
from ..package import (
    ANY_LOCAL_SIZE,
    MAX_AGGREGATE_BYTES,
    NO_COUNT_ARGUMENT,
    ArgumentKind,
    Dispatch,
    KernelArgument,
    PackageBinding,
)
from ..spirv import EntryPoint
from ..values import ScalarType, ValueType
from .options import _dispatch_rule, _invalid, _unsupported


@dataclass(frozen=True, slots=True)
class _Param:
    """An OpenCL kernel parameter, from source or from OpenCL SPIR-V."""

    index: int
    name: str
    space: str | None  # global, constant, local, private; None by value
    read_only: bool
    value_type: ValueType | None
    label: str
    sign_agnostic: bool = False
    """OpenCL SPIR-V integers carry no signedness: ``int`` and ``uint`` of one width look the same."""
    aggregate: bool = False
    """A struct or union (by the source's words), passed by value as its bytes (:func:`encode_aggregate`)."""
    aggregate_bytes: int | None = None
    aggregate_members: tuple[AggregateMember, ...] = ()
    type_text: str = ""
    unknown: str = ""
    """Why the type is unknown (Clang's error), '' when it is known."""


_SIGN_TWIN = {
    ScalarType.U8: ScalarType.I8,
    ScalarType.U16: ScalarType.I16,
    ScalarType.U32: ScalarType.I32,
    ScalarType.U64: ScalarType.I64,
}


_OPAQUE = re.compile(r"\b(?:image[123]d\w*_t|sampler_t|queue_t|clk_event_t|event_t|reserve_id_t|pipe)\b")


def _encode_param(param: _Param, given: object, what: str, declaration: str) -> tuple[ValueType, bytes]:
    """``encode_for`` with the declaration; a sign-agnostic integer takes either signedness of its width."""
    declared = param.value_type
    if param.sign_agnostic and declared is not None and declared.scalar in _SIGN_TWIN:
        signed = ValueType(_SIGN_TWIN[declared.scalar], declared.lanes)
        explicit = given.value_type if isinstance(given, TypedValue) else None
        if isinstance(given, str):
            from ..values import parse_typed_text

            explicit = parse_typed_text(given)[0]
        if explicit == signed:
            declared = signed
        elif explicit is None:
            try:
                return encode_for(declared, given, what, declaration=declaration)
            except BackendError:
                return encode_for(signed, given, what, declaration=declaration)
    return encode_for(declared, given, what, declaration=declaration)


def _source_params(kernel: OpenCLKernel) -> list[_Param]:
    return [
        _Param(
            p.index,
            p.name,
            p.address_space,
            p.is_const or p.address_space == "constant",
            p.value_type,
            p.label,
            aggregate=p.aggregate,
            aggregate_bytes=p.aggregate_bytes,
            aggregate_members=p.aggregate_members,
            type_text=p.type_text,
            unknown=p.unknown,
        )
        for p in kernel.parameters
    ]


def _spirv_params(entry: EntryPoint) -> list[_Param]:
    spaces = {5: "global", 0: "constant", 4: "local"}
    params = []
    for p in entry.parameters:
        space = spaces.get(p.storage_class, "private") if p.storage_class is not None else None
        vtype = spirv_value_type(p.type) if p.type is not None else None
        shown = describe(p.type) if p.type is not None else "?"
        label = f"argument {p.index} ({p.name or '%' + str(p.id)}: {space + ' ' if space else ''}{shown})"
        read_only = p.no_write or p.storage_class == 0
        params.append(_Param(p.index, p.name or "", space, read_only, vtype, label, sign_agnostic=True))
    return params


def _element_bytes(param: _Param, fallback: int | None) -> int | None:
    return param.value_type.size if param.value_type is not None else fallback


def _opencl(
    params: list[_Param],
    element_fallback: Mapping[int, int | None],
    bindings: Sequence[PackageBinding] | None,
    dispatch: Dispatch | None,
    global_size: int | Sequence[int] | None,
    count_argument: ArgumentKey | None,
    arguments: Mapping[ArgumentKey, object] | None,
    local_memory: Mapping[ArgumentKey, int] | None,
) -> tuple[tuple[PackageBinding, ...], Dispatch, tuple[KernelArgument, ...]]:
    by_index = {p.index: p for p in params}
    names = {p.index: p.name for p in params}
    count_index = None if count_argument is None else lookup(count_argument, names, "kernel argument")
    rule = _dispatch_rule(dispatch, global_size, count_index)
    count = rule.count_argument
    if count != NO_COUNT_ARGUMENT:
        if count not in by_index:
            raise _invalid(f"dispatch.count_argument={count} is not an argument of the kernel (it has {len(params)})")
        counted = by_index[count]
        if counted.space is not None:
            raise _invalid(
                f"dispatch.count_argument={count} is {counted.label}, a pointer; the count is passed by value"
            )
        if counted.value_type is not None and counted.value_type not in (  # OpenCL SPIR-V: both look like u32
            ValueType(ScalarType.U32),
            ValueType(ScalarType.I32),
        ):
            raise _invalid(
                f"dispatch.count_argument={count} is {counted.label}, declared {counted.value_type}; "
                "the element count is a 32-bit integer (int or uint)"
            )
    values: dict[int, object] = {}
    for key, value in (arguments or {}).items():
        index = lookup(key, names, "kernel argument")
        param = by_index[index]
        if param.space is not None:
            kind = (
                "__local pointer (give its size with local_memory=)" if param.space == "local" else "buffer (bind it)"
            )
            raise _invalid(f"arguments= names {param.label}, which is a {kind}")
        if index == count:
            raise _invalid(f"arguments= names {param.label}, the count argument; the dispatch sets its value")
        if index in values:
            raise _invalid(f"{param.label} is given twice")
        values[index] = value
    sizes: dict[int, int] = {}
    for key, size in (local_memory or {}).items():
        index = lookup(key, names, "kernel argument")
        param = by_index[index]
        if param.space != "local":
            raise _invalid(f"local_memory= names {param.label}, which is not a __local pointer")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise _invalid(f"local_memory= for {param.label} is {size!r}; give its size in bytes (>= 1)")
        sizes[index] = size
    records: list[KernelArgument] = []
    for param in params:
        if param.space == "local":
            if param.index not in sizes:
                raise _invalid(f"{param.label} is a __local pointer without a size; pass local_memory={{...: BYTES}}")
            records.append(KernelArgument.local(param.index, sizes[param.index]))
        elif param.space == "private":
            raise _unsupported(f"{param.label} is a __private pointer, which a host cannot pass")
        elif param.space is None and param.value_type is None and _OPAQUE.search(param.label):
            raise _unsupported(
                f"{param.label} is an image, sampler, pipe or event, which accelcore does not bind "
                "(kernel arguments are buffers, __local memory and scalar/vector values)"
            )
        elif param.space is None and param.index != count:
            if param.index not in values:
                hint = ""
                if param.value_type in (ValueType(ScalarType.U32), ValueType(ScalarType.I32)) and count == (
                    NO_COUNT_ARGUMENT
                ):
                    hint = f" (or count_argument={param.name or param.index} if it takes the element count)"
                raise _invalid(f"{param.label} is by value and has no value; pass arguments={{...: VALUE}}{hint}")
            what = f"argument {param.name or param.index}"
            declaration = param.label.split("(", 1)[1].rstrip(")") if "(" in param.label else ""
            if param.value_type is None and param.aggregate:
                data = encode_aggregate(
                    values[param.index],
                    what,
                    declaration=declaration,
                    struct_name=param.type_text,
                    size=param.aggregate_bytes,
                    members=param.aggregate_members,
                )
                if len(data) > MAX_AGGREGATE_BYTES:
                    raise _unsupported(
                        f"{param.label} is a {len(data)}-byte struct; packages carry by-value structs of at most "
                        f"{MAX_AGGREGATE_BYTES} bytes (OpenCL devices take at least 1024 bytes of arguments in all)"
                    )
                records.append(KernelArgument.aggregate(param.index, data))
                continue
            vtype, data = _encode_param(param, values[param.index], what, declaration)
            records.append(KernelArgument.value(param.index, vtype, data))
    buffers = [p for p in params if p.space in ("global", "constant")]
    if bindings is None:
        rows = []
        for p in buffers:
            element = _element_bytes(p, element_fallback.get(p.index))
            if element is None:
                why = f" ({p.unknown})" if p.unknown else ""
                raise _invalid(
                    f"cannot tell the element size of {p.label}{why}; give the slot's element size "
                    "(accel run/pack --slot, or bindings= of accelcore.kernels.pack.pack_module)"
                )
            access = AccessMode.READ if p.read_only else AccessMode.READ_WRITE
            rows.append(PackageBinding(p.index, p.index, access, element))
        return tuple(rows), rule, tuple(records)
    given = list(bindings)
    covered = {row.native_index for row in given}
    for row in given:
        if row.native_index not in by_index or by_index[row.native_index].space not in ("global", "constant"):
            raise _invalid(f"slot {row.slot} names argument {row.native_index}, which is not a buffer argument")
        if by_index[row.native_index].read_only and not access_allows(AccessMode.READ, AccessMode(row.access)):
            raise _invalid(
                f"slot {row.slot} declares {AccessMode(row.access).name} but argument "
                f"{row.native_index} is const (read-only)"
            )
    for p in buffers:
        if p.index not in covered:
            raise _invalid(f"buffer argument {p.index} is not bound by any slot in bindings=")
    return tuple(given), rule, tuple(records)


def _check_local_id_scratch(
    kernel: OpenCLKernel, size: tuple[int, int, int], records: Sequence[KernelArgument]
) -> None:
    """A ``__local`` argument the kernel subscripts with exactly ``get_local_id(D)`` needs as many elements as the
    work-group has on axis D: a smaller size is refused (Intel's runtime and rusticl crashed the process writing
    past a 4-byte one). Unchecked when the driver chooses the work-group size (``ANY_LOCAL_SIZE``)."""
    if size == ANY_LOCAL_SIZE:
        return
    given = {r.index: r.local_bytes for r in records if r.kind is ArgumentKind.LOCAL}
    for param in kernel.parameters:
        element = param.element_bytes
        if not param.local_id_axes or element is None or param.index not in given:
            continue
        axis = max(param.local_id_axes, key=lambda a: size[a])
        if given[param.index] < size[axis] * element:
            raise _invalid(
                f"{param.label} is indexed by get_local_id({axis}) in the kernel, so a work-group of {tuple(size)} "
                f"needs at least {size[axis] * element} bytes of it ({size[axis]} x {element}); "
                f"it was given {given[param.index]} bytes"
            )


def _opencl_binary_arguments(
    arguments: Mapping[ArgumentKey, object] | None, local_memory: Mapping[ArgumentKey, int] | None
) -> tuple[KernelArgument, ...]:
    """A device binary declares nothing: arguments by index, each value with its type written out."""
    records: dict[int, KernelArgument] = {}
    for key, value in (arguments or {}).items():
        index = _plain_index(key, "arguments=")
        vtype, data = encode_for(None, value, f"argument {index}", declaration="of a device binary")
        records[index] = KernelArgument.value(index, vtype, data)
    for key, size in (local_memory or {}).items():
        index = _plain_index(key, "local_memory=")
        if index in records:
            raise _invalid(f"argument {index} is given both a value and a __local size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise _invalid(f"local_memory= for argument {index} is {size!r}; give its size in bytes (>= 1)")
        records[index] = KernelArgument.local(index, size)
    return tuple(records[i] for i in sorted(records))


def _plain_index(key: ArgumentKey, option: str) -> int:
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        return key
    if isinstance(key, str) and key.strip().isdecimal():
        return int(key)
    raise _invalid(f"{option} key {key!r}: a device binary has no argument names; use the argument index")
