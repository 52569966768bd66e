""":func:`inspect_spirv`: what a module is and what it binds (the promise is in the package docstring).

From the walk (:mod:`.walk`) and the type graph (:mod:`.type_graph`) it assembles the flavour, the entry
points with their local size and (kernels) parameters, the descriptors, the push-constant block, the
specialization constants, the workgroup variables and the functions on a call cycle (Tarjan, iterative).
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Mapping, Sequence

from .model import (
    KIND_BOOL,
    KIND_FLOAT,
    KIND_INT,
    KIND_STRUCT,
    Descriptor,
    EntryPoint,
    Flavour,
    KernelParameter,
    PushConstantBlock,
    SpecConstant,
    SpirvModule,
)
from .type_graph import _Types
from .walk import _Module, _walk
from .words import (
    _BUILTIN_WORKGROUP_SIZE,
    _DEC_ARRAY_STRIDE,
    _DEC_BINDING,
    _DEC_BUFFER_BLOCK,
    _DEC_BUILTIN,
    _DEC_DESCRIPTOR_SET,
    _DEC_FUNC_PARAM_ATTR,
    _DEC_NON_READABLE,
    _DEC_NON_WRITABLE,
    _DEC_SPEC_ID,
    _FUNC_PARAM_BYVAL,
    _FUNC_PARAM_NO_WRITE,
    _OP_SPEC_CONSTANT,
    _OP_SPEC_CONSTANT_TRUE,
    _OP_TYPE_ACCELERATION_STRUCTURE,
    _OP_TYPE_ARRAY,
    _OP_TYPE_IMAGE,
    _OP_TYPE_POINTER,
    _OP_TYPE_RUNTIME_ARRAY,
    _OP_TYPE_SAMPLED_IMAGE,
    _OP_TYPE_SAMPLER,
    _OP_TYPE_STRUCT,
    _SC_PUSH_CONSTANT,
    _SC_STORAGE_BUFFER,
    _SC_UNIFORM,
    _SC_UNIFORM_CONSTANT,
    _SC_WORKGROUP,
    KERNEL,
    _bad,
    _words,
)

_MAX_TYPE_DEPTH = 32
TYPE_STEP_LIMIT = 1 << 20
"""Default ``max_type_steps`` of :func:`inspect_spirv`: type-graph steps (one per type built plus one per
member/element edge) one inspection may take. Memoized, a module needs at most one step per type-operand
word, so only modules of megabytes of type declarations come near it."""


def _unwrap_arrays(module: _Module, type_id: int) -> tuple[int, int | None]:
    """Strip descriptor-array levels: (element type, count or None for runtime arrays)."""
    count: int | None = 1
    for _ in range(_MAX_TYPE_DEPTH):
        entry = module.types.get(type_id)
        if entry is None:
            break
        opcode, ops = entry
        if opcode == _OP_TYPE_ARRAY and len(ops) >= 2:
            length = module.constants.get(ops[1])
            count = None if count is None or length is None else count * length
            type_id = ops[0]
        elif opcode == _OP_TYPE_RUNTIME_ARRAY and ops:
            count = None
            type_id = ops[0]
        else:
            break
    return type_id, count


def _block_stride(module: _Module, struct_id: int, members: array[int]) -> int | None:
    if not members:
        return None
    last = module.types.get(members[-1])
    if last is not None and last[0] in (_OP_TYPE_RUNTIME_ARRAY, _OP_TYPE_ARRAY):
        return module.value(members[-1], _DEC_ARRAY_STRIDE)
    return None


def _descriptor(module: _Module, types: _Types, pointer_type: int, variable: int, storage: int) -> Descriptor:
    pointer = module.types.get(pointer_type)
    if pointer is None or pointer[0] != _OP_TYPE_POINTER or len(pointer[1]) < 2:
        raise _bad(f"variable {variable} has result type {pointer_type}, which is not a pointer type")
    inner, count = _unwrap_arrays(module, pointer[1][1])
    set_number = module.value(variable, _DEC_DESCRIPTOR_SET)
    binding = module.value(variable, _DEC_BINDING)
    if set_number is None or binding is None:
        raise _bad(f"descriptor variable {variable} lacks a DescriptorSet or Binding decoration")
    readable = not module.has(variable, _DEC_NON_READABLE)
    writable = not module.has(variable, _DEC_NON_WRITABLE)
    stride: int | None = None
    entry = module.types.get(inner)
    opcode, ops = entry if entry is not None else (0, array("I"))
    if opcode == _OP_TYPE_STRUCT:
        buffer_block = module.has(inner, _DEC_BUFFER_BLOCK)
        if storage == _SC_UNIFORM and not buffer_block:
            kind = "uniform_buffer"
            writable = False
        else:
            kind = "storage_buffer"
        if ops:
            if all(module.member_has(inner, m, _DEC_NON_WRITABLE) for m in range(len(ops))):
                writable = False
            if all(module.member_has(inner, m, _DEC_NON_READABLE) for m in range(len(ops))):
                readable = False
        stride = _block_stride(module, inner, ops)
    elif opcode == _OP_TYPE_IMAGE and len(ops) >= 6:
        buffer_dim = ops[1] == 5
        sampled = ops[5]
        if sampled == 2:
            kind = "storage_texel_buffer" if buffer_dim else "storage_image"
        else:
            kind = "uniform_texel_buffer" if buffer_dim else "sampled_image"
            writable = False
    elif opcode == _OP_TYPE_SAMPLED_IMAGE:
        kind, writable = "combined_image_sampler", False
    elif opcode == _OP_TYPE_SAMPLER:
        kind, writable = "sampler", False
    elif opcode == _OP_TYPE_ACCELERATION_STRUCTURE:
        kind, writable = "acceleration_structure", False
    else:
        kind = "other"
    return Descriptor(
        set=set_number,
        binding=binding,
        storage_class=storage,
        descriptor_type=kind,
        readable=readable,
        writable=writable,
        variable_id=variable,
        name=module.names.get(variable),
        array_stride=stride,
        count=count,
        type=types.get(inner),
        block_name=module.names.get(inner) if opcode == _OP_TYPE_STRUCT else None,
    )


def _size_from_constants(module: _Module, ids: Sequence[int], what: str) -> tuple[int, int, int] | None:
    """Three constant ids → a size; None when one is not a plain (spec) constant; a zero → INVALID_ARGUMENT."""
    values = [module.constants.get(i) for i in ids]
    if len(values) != 3 or any(v is None for v in values):
        return None
    x, y, z = (v or 0 for v in values)
    if 0 in (x, y, z):
        raise _bad(f"{what} ({x}, {y}, {z}) has a zero dimension")
    return (x, y, z)


def _workgroup_size_builtin(module: _Module) -> tuple[tuple[int, int, int] | None, tuple[int, ...] | None]:
    """The default value of the WorkgroupSize built-in constant (which overrides LocalSize) and its constituents."""
    for target, constituents in module.composites.items():
        if module.value(target, _DEC_BUILTIN) == _BUILTIN_WORKGROUP_SIZE:
            return _size_from_constants(module, constituents, f"WorkgroupSize constant {target}"), constituents
    return None, None


def _spec_ids(module: _Module, ids: Sequence[int] | None) -> tuple[int | None, int | None, int | None]:
    """Per axis, the SpecId of the scalar specialization constant ``ids[axis]`` names, else None."""
    found: list[int | None] = [None, None, None]
    for axis, constant in enumerate((ids or ())[:3]):
        if constant in module.spec_scalars:
            found[axis] = module.value(constant, _DEC_SPEC_ID)
    return (found[0], found[1], found[2])


def _parameters(module: _Module, types: _Types, function: int) -> tuple[KernelParameter, ...]:
    params = []
    for index, (type_id, param_id) in enumerate(module.functions.get(function, ())):
        entry = module.types.get(type_id)
        storage: int | None = None
        if entry is not None and entry[0] == _OP_TYPE_POINTER and len(entry[1]) >= 2:
            storage = entry[1][0]
            value_type = types.get(entry[1][1])
        else:
            value_type = types.get(type_id)
        attributes = {lits[0] for d, lits in module.decorations.get(param_id, ()) if d == _DEC_FUNC_PARAM_ATTR and lits}
        params.append(
            KernelParameter(
                index,
                param_id,
                storage,
                value_type.size,
                _FUNC_PARAM_NO_WRITE in attributes,
                module.names.get(param_id),
                value_type,
                _FUNC_PARAM_BYVAL in attributes,
            )
        )
    return tuple(params)


def _spec_constants(module: _Module, types: _Types) -> tuple[SpecConstant, ...]:
    """Every scalar spec constant with a SpecId, by (spec_id, id); a type/literal mismatch → INVALID_ARGUMENT."""
    found = []
    for result, (opcode, type_id, literals) in module.spec_scalars.items():
        spec_id = module.value(result, _DEC_SPEC_ID)
        if spec_id is None:
            continue
        value_type = types.get(type_id)
        what = f"specialization constant {result} (SpecId {spec_id})"
        if opcode != _OP_SPEC_CONSTANT:
            if value_type.kind != KIND_BOOL:
                raise _bad(f"{what} is OpSpecConstantTrue/False of non-bool type {type_id}")
            default = (1 if opcode == _OP_SPEC_CONSTANT_TRUE else 0).to_bytes(4, "little")
        else:
            width = value_type.width
            if value_type.kind not in (KIND_INT, KIND_FLOAT) or width not in (8, 16, 32, 64):
                raise _bad(f"{what} has type {type_id}, not an 8/16/32/64-bit int or float")
            if value_type.kind == KIND_FLOAT and width == 8:
                raise _bad(f"{what} is an 8-bit float")
            needed = 2 if width == 64 else 1
            if len(literals) != needed:
                raise _bad(f"{what} has {len(literals)} literal words; a {width}-bit value needs {needed}")
            value = literals[0] | (literals[1] << 32 if needed == 2 else 0)
            default = (value & ((1 << width) - 1)).to_bytes(width // 8, "little")
        found.append(SpecConstant(spec_id, result, module.names.get(result), value_type, default))
    found.sort(key=lambda c: (c.spec_id, c.id))
    return tuple(found)


def _recursive_functions(calls: Mapping[int, Collection[int]]) -> tuple[int, ...]:
    """Ids of the functions on a call cycle: Tarjan's strongly connected components, iteratively (linear)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    cyclic: set[int] = set()
    for root in calls:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(calls.get(root, ())))]
        while work:
            node, callees = work[-1]
            descended = False
            for callee in callees:
                if callee not in index:
                    index[callee] = low[callee] = len(index)
                    stack.append(callee)
                    on_stack.add(callee)
                    work.append((callee, iter(calls.get(callee, ()))))
                    descended = True
                    break
                if callee in on_stack:
                    low[node] = min(low[node], index[callee])
            if descended:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in calls.get(node, ()):
                    cyclic.update(component)
    return tuple(sorted(cyclic))


def inspect_spirv(data: bytes, *, max_type_steps: int = TYPE_STEP_LIMIT) -> SpirvModule:
    """Inspect one SPIR-V module (see the package docstring for the promise).

    ``max_type_steps`` bounds the type-graph work (:data:`TYPE_STEP_LIMIT`);
    past it → RESOURCE_LIMIT naming ``max_type_steps``.
    """
    try:
        view = bytes(data)
    except TypeError:
        raise _bad(f"expected bytes, got {type(data).__name__}") from None
    words, big = _words(view)
    module = _walk(words)
    if module.memory_model is None:
        raise _bad("module has no OpMemoryModel")
    caps = set(module.capabilities)
    addressing, memory = module.memory_model
    if 6 in caps and (1 not in caps or addressing in (1, 2)):
        flavour = Flavour.OPENCL
    elif 1 in caps:
        flavour = Flavour.VULKAN
    else:
        raise _bad("module declares neither the Shader nor the Kernel capability")
    if not module.entries and 5 not in caps:
        raise _bad("module has no OpEntryPoint and does not declare the Linkage capability")
    types = _Types(module, max_type_steps, 4 if addressing == 1 else 8, c_layout=flavour is Flavour.OPENCL)
    builtin_size, builtin_ids = _workgroup_size_builtin(module)
    entries = []
    for model, target, name, interface in module.entries:
        size = builtin_size or module.local_sizes.get(target)
        if size is None and target in module.local_size_ids:
            size = _size_from_constants(module, module.local_size_ids[target], f"LocalSizeId of {name!r}")
        spec_ids = _spec_ids(module, builtin_ids if builtin_ids is not None else module.local_size_ids.get(target))
        params = _parameters(module, types, target) if model == KERNEL else ()
        entries.append(EntryPoint(model, name, target, size, interface, params, spec_ids))
    descriptors: list[Descriptor] = []
    push_block: PushConstantBlock | None = None
    for pointer_type, variable, storage in module.variables:
        if storage == _SC_PUSH_CONSTANT:
            if push_block is None:
                push_block = _push_constant_block(module, types, pointer_type, variable)
        elif flavour is Flavour.VULKAN and storage in (_SC_UNIFORM_CONSTANT, _SC_UNIFORM, _SC_STORAGE_BUFFER):
            descriptors.append(_descriptor(module, types, pointer_type, variable, storage))
    descriptors.sort(key=lambda d: (d.set, d.binding, d.variable_id))
    workgroup = []
    for pointer_type, _variable, storage in module.variables:
        pointer = module.types.get(pointer_type)
        if storage == _SC_WORKGROUP and pointer is not None and pointer[0] == _OP_TYPE_POINTER and len(pointer[1]) > 1:
            workgroup.append(types.get(pointer[1][1]))
    spec_constants = _spec_constants(module, types)
    version = words[1]
    return SpirvModule(
        flavour=flavour,
        version=((version >> 16) & 0xFF, (version >> 8) & 0xFF),
        generator=words[2],
        bound=words[3],
        big_endian=big,
        capability_numbers=tuple(dict.fromkeys(module.capabilities)),
        extensions=tuple(module.extensions),
        addressing_model=addressing,
        memory_model=memory,
        entry_points=tuple(entries),
        descriptors=tuple(descriptors),
        push_constant_bytes=0 if push_block is None else push_block.size,
        push_constant_block=push_block,
        spec_constants=spec_constants,
        recursive_functions=_recursive_functions(module.calls),
        type_steps=types.steps,
        float_modes=tuple(module.float_modes),
        workgroup_types=tuple(workgroup),
    )


def _push_constant_block(module: _Module, types: _Types, pointer_type: int, variable: int) -> PushConstantBlock:
    pointer = module.types.get(pointer_type)
    if pointer is None or pointer[0] != _OP_TYPE_POINTER or len(pointer[1]) < 2:
        raise _bad(f"push-constant variable {variable} has result type {pointer_type}, which is not a pointer type")
    block = types.get(pointer[1][1])
    return PushConstantBlock(
        variable_id=variable,
        variable_name=module.names.get(variable),
        type_name=module.names.get(block.id) if block.kind == KIND_STRUCT else None,
        type=block,
        size=block.size,
        members=block.members,
    )
