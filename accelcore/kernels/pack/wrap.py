"""Wrap a raw module (``.spv``, ``.cl`` or an OpenCL device binary) into a kernel package.

Promise: :func:`pack_module` fills what the module itself says — kind,
entry point, local size, binding table, argument names and types — and
checks what the caller gives against it: by-value and ``__local`` OpenCL
arguments, push-constant members and specialization constants are matched by
name or index and typed from their declarations (:mod:`accelcore.kernels.arguments`);
a mismatch, an unknown name or a declared argument left without a value is
INVALID_ARGUMENT naming it (specialization constants may keep the module's
default). What the module cannot say (the dispatch rule; everything for a
device binary) must be passed; a missing option raises INVALID_ARGUMENT
naming the keyword. A by-value OpenCL struct/union is recorded as its raw bytes in the
OpenCL C layout the source declares (:func:`accelcore.kernels.arguments.encode_aggregate`: bytes of
the exact size, a numpy structured scalar with matching fields and offsets, or a dict of
members); one whose layout the source does not let us compute is INVALID_ARGUMENT. Modules
using what a package cannot express (images, samplers) raise UNSUPPORTED. The returned
package has passed :func:`accelcore.kernels.package_codec.validate_package`.
The module bytes are copied once into the package.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...contract.errors import BackendError, ErrorKind
from ...contract.flags import AccessMode, access_allows
from ...contract.program import TargetIdentity
from ..arguments import (
    ArgumentKey,
    TypedValue,
    describe,
    encode_aggregate,
    encode_for,
    lookup,
    spirv_value_type,
    struct_bytes,
)
from ..opencl_signature import AggregateMember, OpenCLKernel, OpenCLParameter, opencl_kernels
from ..package import (
    ANY_LOCAL_SIZE,
    MAX_AGGREGATE_BYTES,
    NO_COUNT_ARGUMENT,
    ArgumentKind,
    ArgumentName,
    Coverage,
    DescriptorType,
    Dispatch,
    DispatchKind,
    KernelArgument,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    SpecConstant,
)
from ..package_codec import validate_package
from ..spirv import EntryPoint, Flavour, SpirvModule, inspect_spirv, is_spirv
from ..values import ScalarType, ValueType

__all__ = [
    "OpenCLKernel",
    "OpenCLParameter",
    "TypedValue",
    "argument_names",
    "binding_names",
    "build_package",
    "detect_module_kind",
    "opencl_kernels",
    "pack_module",
]

POCL_BINARY_PREFIX = b"poclbin"
ELF_MAGIC = b"\x7fELF"
"""Intel's OpenCL CPU runtime (and other LLVM-based stacks) write program binaries as ELF containers."""


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"pack: {message}")


def _unsupported(message: str) -> BackendError:
    return BackendError(ErrorKind.UNSUPPORTED, f"pack: {message}")


def _is_rusticl_binary(data: bytes) -> bool:
    """Observed layout of Mesa rusticl (22.3.6) program binaries: a 12-byte header (u32 1, u32 byte count
    after the header, u32 binary type) followed by SPIR-V. Mesa-internal, so only a detection hint."""
    if len(data) < 32:
        return False
    version, length = int.from_bytes(data[0:4], "little"), int.from_bytes(data[4:8], "little")
    return version == 1 and length == len(data) - 12 and is_spirv(data[12:16])


def detect_module_kind(data: bytes) -> ModuleKind:
    """SPIR-V magic → the SPIR-V kind of its flavour; a PoCL (``poclbin``), ELF (Intel) or rusticl binary →
    OPENCL_BINARY;
    UTF-8 text → OPENCL_SOURCE; anything else → INVALID_ARGUMENT asking for ``kind=``."""
    if is_spirv(data):
        module = inspect_spirv(data)
        return ModuleKind.SPIRV_VULKAN if module.flavour is Flavour.VULKAN else ModuleKind.SPIRV_OPENCL
    if data.startswith(POCL_BINARY_PREFIX) or data.startswith(ELF_MAGIC) or _is_rusticl_binary(data):
        return ModuleKind.OPENCL_BINARY
    if data and b"\0" not in data:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return ModuleKind.OPENCL_SOURCE
    raise _invalid(
        "cannot tell what this module is (not SPIR-V, not a PoCL, ELF or rusticl binary, not UTF-8 OpenCL C); "
        "pass kind=ModuleKind.OPENCL_BINARY for another driver's binary"
    )


# --------------------------------------------------------------------------- shared


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


# --------------------------------------------------------------------------- OpenCL


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


# --------------------------------------------------------------------------- Vulkan


def _vulkan_rows(module: SpirvModule, bindings: Sequence[PackageBinding] | None) -> tuple[PackageBinding, ...]:
    types = {"storage_buffer": DescriptorType.STORAGE_BUFFER, "uniform_buffer": DescriptorType.UNIFORM_BUFFER}
    for descriptor in module.descriptors:
        if descriptor.descriptor_type not in types:
            raise _unsupported(
                f"set {descriptor.set} binding {descriptor.binding} ({descriptor.name or descriptor.variable_id}) is a "
                f"{descriptor.descriptor_type}; kernel packages bind storage and uniform buffers only"
            )
    if bindings is None:
        unique = len({d.binding for d in module.descriptors}) == len(module.descriptors)
        rows = []
        for number, d in enumerate(module.descriptors):
            slot = d.binding if unique else number
            rows.append(PackageBinding(slot, d.binding, d.access, d.array_stride or 4, d.set, types[d.descriptor_type]))
        return tuple(rows)
    rows = []
    bound = set()
    for row in bindings:
        named = module.descriptor(row.native_index, row.set)
        if named is None:
            have = [(d.set, d.binding) for d in module.descriptors]
            raise _invalid(
                f"slot {row.slot} names set {row.set} binding {row.native_index}, which the module lacks "
                f"(set, binding: {have})"
            )
        if not access_allows(AccessMode(row.access), named.access):
            raise _invalid(
                f"slot {row.slot} declares {AccessMode(row.access).name} but set {row.set} binding "
                f"{row.native_index} is {named.access.name} in the module"
            )
        wanted = types[named.descriptor_type]
        if row.descriptor_type is not wanted:
            if row.descriptor_type is not DescriptorType.STORAGE_BUFFER:
                raise _invalid(
                    f"slot {row.slot} says {row.descriptor_type.name} but set {row.set} binding {row.native_index} "
                    f"is a {named.descriptor_type} in the module"
                )
            row = dataclasses.replace(row, descriptor_type=wanted)  # the default row type: take the module's
        if wanted is DescriptorType.UNIFORM_BUFFER and row.access is not AccessMode.READ:
            row = dataclasses.replace(row, access=AccessMode.READ)
        rows.append(row)
        bound.add((row.set, row.native_index))
    unbound = [(d.set, d.binding) for d in module.descriptors if (d.set, d.binding) not in bound]
    if unbound:
        raise _invalid(f"the module uses set {unbound[0][0]} binding {unbound[0][1]}, which no slot in bindings= binds")
    return tuple(rows)


def _push_requirement(module: SpirvModule, has_count: bool) -> str:
    """What to pass for a push-constant block given no values: every member by name, or the count when the
    block is just one 32-bit integer at offset 0 (the whole fix in one message)."""
    block = module.push_constant_block
    if block is None or block.size is None:
        return ""
    members_named = ", ".join(f"{m.name or n} ({describe(m.type)} at {m.offset})" for n, m in enumerate(block.members))
    names = [m.name or str(n) for n, m in enumerate(block.members) if not (has_count and m.offset == 0)]
    each = " ".join(f"push_constants[{name}]=VALUE" for name in names)
    text = f"the module reads a push-constant block of {block.size} bytes ({members_named}); pass {each}"
    only = block.members[0] if len(block.members) == 1 else None
    if not has_count and only is not None and only.offset == 0:
        if spirv_value_type(only.type) in (ValueType(ScalarType.U32), ValueType(ScalarType.I32)):
            text += f", or set dispatch.count_argument={only.name or 0} (the block is just the element count)"
    return text


def _push_block(
    module: SpirvModule,
    rule: Dispatch,
    push_constants: Mapping[ArgumentKey, object] | bytes | None,
) -> bytes:
    block = module.push_constant_block
    has_count = rule.count_argument != NO_COUNT_ARGUMENT
    if block is None:
        if has_count:
            raise _invalid("dispatch.count_argument is set but the module declares no push-constant block")
        if push_constants:
            raise _invalid("push_constants= is given but the module declares no push-constant block")
        return b""
    size = block.size
    if size is None:
        raise _unsupported("the module's push-constant block has no computable size (members without Offset)")
    padded = size + (-size % 4)
    at_zero = [n for n, m in enumerate(block.members) if m.offset == 0]
    if has_count:
        counted = block.members[at_zero[0]] if at_zero else None
        declared = spirv_value_type(counted.type) if counted is not None else None
        if declared not in (ValueType(ScalarType.U32), ValueType(ScalarType.I32)):
            shown = f"{counted.name or 'member 0'} ({describe(counted.type)})" if counted is not None else "nothing"
            raise _invalid(
                f"dispatch.count_argument writes a 32-bit count at push-constant offset 0, where the module has "
                f"{shown}; the count must be a uint or int"
            )
    if isinstance(push_constants, (bytes, bytearray, memoryview)):
        raw = bytes(push_constants)
        if len(raw) != padded:
            raise _invalid(f"push_constants= is {len(raw)} bytes; the module's block is {size} bytes ({padded} padded)")
        return raw
    if not push_constants:
        if has_count and padded == 4:
            return b""  # version 1: the count is the whole block
        raise _invalid(_push_requirement(module, has_count))
    preset = {n: "count" for n in at_zero} if has_count else {}
    return struct_bytes(block.members, size, push_constants, "push constant", preset=preset)


def _specializations(
    module: SpirvModule,
    entry: EntryPoint,
    spec_constants: Mapping[ArgumentKey, object] | None,
    local_size: tuple[int, int, int] | None,
) -> tuple[tuple[SpecConstant, ...], tuple[int, int, int]]:
    """The package's spec constants and the local size the pipeline will really have."""
    declared = {s.spec_id: module.spec_constant(s.spec_id) or s for s in module.spec_constants}
    names = {spec_id: s.name or "" for spec_id, s in declared.items()}
    chosen: dict[int, SpecConstant] = {}
    for key, value in (spec_constants or {}).items():
        spec_id = lookup(key, names, "specialization constant", index_word="SpecId")
        spec = declared[spec_id]
        vtype = spirv_value_type(spec.type)
        what = f"specialization constant {spec.name or spec_id} (SpecId {spec_id})"
        vtype, data = encode_for(vtype, value, what, declaration=describe(spec.type))
        if vtype.scalar is ScalarType.BOOL:
            data = data + bytes(3)  # VkBool32
        if spec_id in chosen:
            raise _invalid(f"{what} is given twice")
        chosen[spec_id] = SpecConstant(spec_id, vtype, data)
    default = entry.local_size
    ids = entry.local_size_spec_ids
    if default is None:
        if local_size is None:
            raise _invalid("local_size= is required: the module fixes no work-group size")
        return tuple(chosen[i] for i in sorted(chosen)), (local_size[0], local_size[1], local_size[2])
    effective = list(default)
    for axis, axis_id in enumerate(ids):
        if axis_id is None:
            continue
        if axis_id in chosen:
            effective[axis] = int.from_bytes(chosen[axis_id].data, "little")
        elif local_size is not None and local_size[axis] != default[axis]:
            # --local-size on a local_size_x_id shader sets its spec constant.
            axis_spec = declared.get(axis_id)
            axis_type = spirv_value_type(axis_spec.type) if axis_spec is not None else ValueType(ScalarType.U32)
            axis_type, data = encode_for(axis_type, local_size[axis], f"local size {'xyz'[axis]} (SpecId {axis_id})")
            chosen[axis_id] = SpecConstant(axis_id, axis_type, data)
            effective[axis] = local_size[axis]
    size = (effective[0], effective[1], effective[2])
    if 0 in size:
        raise _invalid(f"the specialised work-group size {size} has a 0")
    if local_size is not None and tuple(local_size) != size:
        raise _invalid(f"local_size={tuple(local_size)} contradicts the module's work-group size {size}")
    return tuple(chosen[i] for i in sorted(chosen)), size


# --------------------------------------------------------------------------- packing


def pack_module(
    data: bytes,
    *,
    kind: ModuleKind | None = None,
    entry_point: str | None = None,
    bindings: Sequence[PackageBinding] | None = None,
    dispatch: Dispatch | None = None,
    local_size: tuple[int, int, int] | None = None,
    build_options: str = "",
    target: TargetIdentity | None = None,
    arguments: Mapping[ArgumentKey, object] | None = None,
    local_memory: Mapping[ArgumentKey, int] | None = None,
    push_constants: Mapping[ArgumentKey, object] | bytes | None = None,
    spec_constants: Mapping[ArgumentKey, object] | None = None,
    global_size: int | Sequence[int] | None = None,
    count_argument: ArgumentKey | None = None,
    coverage: Mapping[int, Coverage | int] | None = None,
    infer_coverage: bool = True,
) -> KernelPackage:
    """Wrap ``data`` into a :class:`KernelPackage` (see the module docstring).

    ``arguments``: OpenCL by-value arguments by name or index → value (typed from the declaration;
    text such as ``"2.5"`` or ``"f32:2.5"``, a number, a sequence for a vector, a numpy scalar of the
    declared dtype, or :class:`TypedValue`). ``local_memory``: ``__local`` arguments → bytes.
    ``push_constants``: Vulkan push-constant members by name or index → value, or the whole block
    as bytes. ``spec_constants``: SpecId or name → value (unset ones keep the module's default; a
    ``local_size=`` on a ``local_size_x_id`` shader sets its constant). ``global_size``: a GLOBAL
    dispatch of that many work-items (instead of ``dispatch=``). ``count_argument``: the argument
    (name or index) that receives the element count. ``coverage``: slot → ``Coverage.PER_WORK_ITEM``,
    ``Coverage.UNKNOWN`` or an exact element count. ``infer_coverage``: a slot ``coverage`` does not
    name gets ``PER_WORK_ITEM`` where :func:`accelcore.kernels.coverage_inference.infer_coverage` proves the
    kernel touches exactly its element at the global id, unconditionally (False: no inference).
    """
    module = bytes(data)
    found_kind = detect_module_kind(module) if kind is None else ModuleKind(kind)
    spirv: SpirvModule | None = None
    kernel: OpenCLKernel | None = None
    push = b""
    specs: tuple[SpecConstant, ...] = ()
    records: tuple[KernelArgument, ...] = ()
    vulkan_only = {"push_constants=": push_constants, "spec_constants=": spec_constants}
    opencl_only = {"arguments=": arguments, "local_memory=": local_memory}
    wrong = vulkan_only if found_kind is not ModuleKind.SPIRV_VULKAN else opencl_only
    for option, value in wrong.items():
        if value:
            api = "OpenCL" if option in opencl_only else "Vulkan"
            raise _invalid(f"{option} is for {api} modules; this one is {found_kind.name}")
    if found_kind is ModuleKind.SPIRV_VULKAN or found_kind is ModuleKind.SPIRV_OPENCL:
        spirv = inspect_spirv(module)
        flavour = Flavour.VULKAN if found_kind is ModuleKind.SPIRV_VULKAN else Flavour.OPENCL
        if spirv.flavour is not flavour:
            raise _invalid(f"kind={found_kind.name} but the module is {spirv.flavour.value}-flavoured SPIR-V")
        if found_kind is ModuleKind.SPIRV_VULKAN:
            entries = [e for e in spirv.entry_points if e.execution_model_name == "GLCompute"]
            name = _pick([e.name for e in entries], entry_point, "GLCompute entry point")
            entry = next(e for e in entries if e.name == name)
            specs, size = _specializations(spirv, entry, spec_constants, local_size)
            rows = _vulkan_rows(spirv, bindings)
            # Vulkan: any count argument means "a u32 at push offset 0" (version 1); an index is kept as given,
            # a name must be the member at offset 0.
            count_index: int | None = None
            if count_argument is not None:
                text = str(count_argument).strip()
                if text.isdecimal():
                    count_index = int(text)
                elif _is_offset_zero_member(spirv, count_argument):
                    count_index = 0
                else:
                    raise _invalid(
                        f"count_argument={count_argument!r}: on Vulkan the count is the push-constant member at "
                        "offset 0; name that member or give an index"
                    )
            try:
                rule = _dispatch_rule(dispatch, global_size, count_index)
            except BackendError as exc:
                needs = "" if push_constants else _push_requirement(spirv, count_index is not None)
                if not needs or (count_index is not None and "=VALUE" not in needs):
                    raise
                raise _invalid(f"{exc.message.removeprefix('pack: ')}; also, {needs}") from None
            push = _push_block(spirv, rule, push_constants)
        else:
            kernels = [e for e in spirv.entry_points if e.execution_model_name == "Kernel"]
            name = _pick([e.name for e in kernels], entry_point, "Kernel entry point")
            entry = next(e for e in kernels if e.name == name)
            if entry.local_size is not None:
                size = _local(entry.local_size, local_size)
            else:
                size = (local_size[0], local_size[1], local_size[2]) if local_size is not None else ANY_LOCAL_SIZE
            fallback = {p.index: p.value_bytes for p in entry.parameters}
            rows, rule, records = _opencl(
                _spirv_params(entry), fallback, bindings, dispatch, global_size, count_argument, arguments, local_memory
            )
    elif found_kind is ModuleKind.OPENCL_SOURCE:
        try:
            source = module.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid("kind=OPENCL_SOURCE but the module is not UTF-8 text") from None
        kernels_cl = opencl_kernels(source, build_options)
        name = _pick([k.name for k in kernels_cl], entry_point, "__kernel function")
        kernel = next(k for k in kernels_cl if k.name == name)
        if kernel.required_local_size is not None:
            size = _local(kernel.required_local_size, local_size)
        else:
            size = (local_size[0], local_size[1], local_size[2]) if local_size is not None else ANY_LOCAL_SIZE
        rows, rule, records = _opencl(
            _source_params(kernel),
            {p.index: p.element_bytes for p in kernel.parameters},
            bindings,
            dispatch,
            global_size,
            count_argument,
            arguments,
            local_memory,
        )
        _check_local_id_scratch(kernel, size, records)
    else:
        missing = [
            option
            for option, value in (
                ("entry_point=", entry_point),
                ("bindings=", bindings),
                ("dispatch= or global_size=", dispatch if global_size is None else global_size),
            )
            if value is None
        ]
        if missing:
            raise _invalid(f"an OpenCL device binary says nothing about itself; pass {', '.join(missing)}")
        assert entry_point is not None and bindings is not None
        count_index = None if count_argument is None else _plain_index(count_argument, "count_argument=")
        name, rows = entry_point, tuple(bindings)
        rule = _dispatch_rule(dispatch, global_size, count_index)
        size = (local_size[0], local_size[1], local_size[2]) if local_size is not None else ANY_LOCAL_SIZE
        records = _opencl_binary_arguments(arguments, local_memory)
    if size == ANY_LOCAL_SIZE and rule.kind is DispatchKind.FIXED:
        raise _invalid("local_size= is required: a fixed dispatch counts workgroups and the module fixes no size")
    package = KernelPackage(
        module_kind=found_kind,
        entry_point=name,
        local_size=size,
        bindings=_apply_coverage(rows, coverage),
        dispatch=rule,
        module=module,
        build_options=build_options,
        target=target if target is not None else TargetIdentity.any(),
        arguments=records,
        push_constants=push,
        spec_constants=specs,
    )
    if infer_coverage:
        package = _with_inferred_coverage(package, set(coverage or ()), spirv, kernel)
    validate_package(package)
    return package


def _with_inferred_coverage(
    package: KernelPackage, stated: set[int], spirv: SpirvModule | None, kernel: OpenCLKernel | None
) -> KernelPackage:
    """``package`` with PER_WORK_ITEM on the rows inference proves, except the slots the caller stated."""
    from ..coverage_inference import infer_coverage

    open_rows = [b for b in package.bindings if b.slot not in stated and b.coverage is Coverage.UNKNOWN]
    if not open_rows:
        return package
    proven = infer_coverage(package, spirv=spirv, kernel=kernel).per_work_item
    if not proven & {b.slot for b in open_rows}:
        return package
    rows = tuple(
        dataclasses.replace(b, coverage=Coverage.PER_WORK_ITEM)
        if b.slot in proven and b.slot not in stated and b.coverage is Coverage.UNKNOWN
        else b
        for b in package.bindings
    )
    return dataclasses.replace(package, bindings=rows)


def _is_offset_zero_member(module: SpirvModule, key: ArgumentKey) -> bool:
    block = module.push_constant_block
    if block is None:
        return False
    text = str(key).strip()
    return any(m.offset == 0 and (m.name == text or text == str(n)) for n, m in enumerate(block.members))


def build_package(
    data: bytes,
    *,
    entry_point: str | None = None,
    local_size: tuple[int, int, int] | None = None,
    build_options: str = "",
) -> KernelPackage | None:
    """A package of the OpenCL C source ``data`` made to be loaded once, only to build the program (so a
    compile error shows before any call, with the driver's build log); never run it.

    Where the kernel (``entry_point``, else the first) and its parameters can be read, every by-value
    argument is zero of its declared type (a struct: its bytes, all zero), every ``__local`` pointer 1 byte,
    and the dispatch one work-group of work-items (``local_size``, else the kernel's
    ``reqd_work_group_size``, else one): it loads. Otherwise (no such kernel, a type the source does not say,
    often because the source does not compile) it is the source with one made-up buffer row and no values:
    its load builds the program, then fails the provider's argument checks. None when ``data`` is not UTF-8.
    """
    try:
        source = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        kernels: tuple[OpenCLKernel, ...] = tuple(opencl_kernels(source, build_options))
    except BackendError:
        kernels = ()
    name = entry_point if entry_point is not None else (kernels[0].name if kernels else "")
    kernel = next((k for k in kernels if k.name == name), None)
    loadable = _placeholder_package(data, kernel, local_size, build_options) if kernel is not None else None
    if loadable is not None:
        return loadable
    try:
        return KernelPackage(
            module_kind=ModuleKind.OPENCL_SOURCE,
            entry_point=name or "_",
            local_size=local_size or ANY_LOCAL_SIZE,
            bindings=(PackageBinding(0, 0, AccessMode.READ_WRITE, 1),),
            dispatch=Dispatch.global_items(*(local_size or (1,))),
            module=bytes(data),
            build_options=build_options,
        )
    except BackendError:
        return None


def _placeholder_package(
    data: bytes, kernel: OpenCLKernel, local_size: tuple[int, int, int] | None, build_options: str
) -> KernelPackage | None:
    """:func:`build_package`'s package of placeholder values; None where a value cannot be made up."""
    values: dict[ArgumentKey, object] = {}
    local: dict[ArgumentKey, int] = {}
    size = local_size or kernel.required_local_size or (1, 1, 1)
    for param in kernel.parameters:
        if param.address_space == "local":  # enough for a scratch indexed by get_local_id
            local[param.index] = max(1, size[0] * size[1] * size[2] * (param.element_bytes or 1))
        elif param.address_space is not None:
            if param.address_space not in ("global", "constant"):
                return None
        elif param.value_type is not None:
            lanes = param.value_type.lanes
            values[param.index] = 0 if lanes == 1 else [0] * lanes
        elif param.aggregate and param.aggregate_bytes:
            values[param.index] = bytes(param.aggregate_bytes)
        else:
            return None
    try:
        return pack_module(
            data,
            kind=ModuleKind.OPENCL_SOURCE,
            entry_point=kernel.name,
            local_size=local_size,
            build_options=build_options,
            arguments=values or None,
            local_memory=local or None,
            global_size=tuple(size),
            infer_coverage=False,
        )
    except BackendError:
        return None


def argument_names(package: KernelPackage) -> tuple[ArgumentName, ...]:
    """The names of the kernel's arguments in an OpenCL C or OpenCL SPIR-V package's module, with each
    buffer's declared element type (a by-value argument's type; None when unknown): what the OPENCL_BINARY
    package built from it records (``accel compile``), since a device binary names nothing. Arguments
    without a name are left out; () where the module cannot be read."""
    out: list[ArgumentName] = []
    try:
        if package.module_kind is ModuleKind.OPENCL_SOURCE:
            source = package.module.decode("utf-8")
            kernel = next(
                (k for k in opencl_kernels(source, package.build_options) if k.name == package.entry_point), None
            )
            for param in kernel.parameters if kernel is not None else ():
                if param.name:
                    out.append(ArgumentName(param.index, param.name, param.value_type or param.aggregate_scalar))
        elif package.module_kind is ModuleKind.SPIRV_OPENCL:
            entry = inspect_spirv(package.module).entry_point(package.entry_point)
            for kparam in entry.parameters:
                if kparam.name:
                    element = spirv_value_type(kparam.type) if kparam.type is not None else None
                    out.append(ArgumentName(kparam.index, kparam.name, element))
    except (BackendError, UnicodeDecodeError):
        return ()
    return tuple(sorted(out, key=lambda n: n.index))


def binding_names(package: KernelPackage) -> dict[str, int]:
    """Names a caller may use for the package's slots: OpenCL parameter names, Vulkan descriptor instance
    and block names (and the only member of a single-member block, GLSL's ``buffer X { float x[]; }``).

    A name that would denote two slots is left out; a device binary has the names its package records
    (:attr:`~accelcore.kernels.package.KernelPackage.argument_names`, written by ``accel compile``), else none.
    """
    candidates: dict[str, set[int]] = {}

    def add(name: str | None, slot: int) -> None:
        if name:
            candidates.setdefault(name, set()).add(slot)

    by_native = {(row.set, row.native_index): row.slot for row in package.bindings}
    kind = package.module_kind
    try:
        if kind is ModuleKind.OPENCL_BINARY:  # the names the source gave, recorded by accel compile
            for recorded in package.argument_names:
                if (0, recorded.index) in by_native:
                    add(recorded.name, by_native[(0, recorded.index)])
        elif kind is ModuleKind.OPENCL_SOURCE:
            source = package.module.decode("utf-8")
            kernel = next(
                (k for k in opencl_kernels(source, package.build_options) if k.name == package.entry_point), None
            )
            for param in kernel.parameters if kernel is not None else ():
                if (0, param.index) in by_native:
                    add(param.name, by_native[(0, param.index)])
        elif kind in (ModuleKind.SPIRV_OPENCL, ModuleKind.SPIRV_VULKAN):
            spirv = inspect_spirv(package.module)
            if kind is ModuleKind.SPIRV_OPENCL:
                entry = spirv.entry_point(package.entry_point)
                for kparam in entry.parameters:
                    if (0, kparam.index) in by_native:
                        add(kparam.name, by_native[(0, kparam.index)])
            else:
                for d in spirv.descriptors:
                    slot = by_native.get((d.set, d.binding))
                    if slot is None:
                        continue
                    add(d.name, slot)
                    add(d.block_name, slot)
                    members = d.type.members if d.type is not None else ()
                    if len(members) == 1:
                        add(members[0].name, slot)
    except (BackendError, UnicodeDecodeError):
        return {}
    return {name: next(iter(slots)) for name, slots in candidates.items() if len(slots) == 1}
