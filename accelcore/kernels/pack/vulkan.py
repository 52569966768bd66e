"""Vulkan modules: the binding table from the descriptors (``_vulkan_rows``), the push-constant block's
bytes with the count at offset 0 (``_push_block``; ``_push_requirement`` says what to pass), and the
specialization constants with the work-group size they give (``_specializations``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ...contract.flags import AccessMode, access_allows
from ..arguments import ArgumentKey, describe, encode_for, lookup, struct_bytes
from ..layouts import spirv_value_type
from ..package import NO_COUNT_ARGUMENT, DescriptorType, Dispatch, PackageBinding, SpecConstant
from ..spirv import EntryPoint, SpirvModule
from ..values import ScalarType, ValueType
from .options import _invalid, _unsupported


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


def _is_offset_zero_member(module: SpirvModule, key: ArgumentKey) -> bool:
    block = module.push_constant_block
    if block is None:
        return False
    text = str(key).strip()
    return any(m.offset == 0 and (m.name == text or text == str(n)) for n, m in enumerate(block.members))
