"""The one pass over a module's words: each instruction checked and recorded (internal).

:func:`_walk` checks the header and every instruction's word count and operand count, and records what the
module declares (capabilities, entry points, execution modes, names, decorations, types, constants,
module-scope variables, functions and calls) in a :class:`_Module`, which the type graph and
:func:`~accelcore.kernels.spirv.inspect_spirv` read.
"""

from __future__ import annotations

from array import array

from .words import (
    _MODE_LOCAL_SIZE,
    _MODE_LOCAL_SIZE_ID,
    _OP_CAPABILITY,
    _OP_CONSTANT,
    _OP_CONSTANT_COMPOSITE,
    _OP_DECORATE,
    _OP_ENTRY_POINT,
    _OP_EXECUTION_MODE,
    _OP_EXECUTION_MODE_ID,
    _OP_EXTENSION,
    _OP_FUNCTION,
    _OP_FUNCTION_CALL,
    _OP_FUNCTION_END,
    _OP_FUNCTION_PARAMETER,
    _OP_MEMBER_DECORATE,
    _OP_MEMBER_NAME,
    _OP_MEMORY_MODEL,
    _OP_NAME,
    _OP_SPEC_CONSTANT,
    _OP_SPEC_CONSTANT_COMPOSITE,
    _OP_SPEC_CONSTANT_FALSE,
    _OP_SPEC_CONSTANT_TRUE,
    _OP_TYPE_ACCELERATION_STRUCTURE,
    _OP_VARIABLE,
    FLOAT_CONTROL_MODES,
    _bad,
    _string,
)


class _Module:
    """Accumulates what the walk finds (internal)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.capabilities: list[int] = []
        self.extensions: list[str] = []
        self.memory_model: tuple[int, int] | None = None
        self.entries: list[tuple[int, int, str, tuple[int, ...]]] = []
        self.local_sizes: dict[int, tuple[int, int, int]] = {}
        self.local_size_ids: dict[int, tuple[int, int, int]] = {}
        self.float_modes: dict[tuple[str, int], None] = {}
        self.names: dict[int, str] = {}
        self.member_names: dict[tuple[int, int], str] = {}
        self.spec_scalars: dict[int, tuple[int, int, array[int]]] = {}
        self.calls: dict[int, set[int]] = {}
        self.types: dict[int, tuple[int, array[int]]] = {}
        self.constants: dict[int, int] = {}
        self.composites: dict[int, tuple[int, ...]] = {}
        self.decorations: dict[int, list[tuple[int, array[int]]]] = {}
        self.member_decorations: dict[tuple[int, int], list[tuple[int, array[int]]]] = {}
        self.variables: list[tuple[int, int, int]] = []
        self.functions: dict[int, list[tuple[int, int]]] = {}
        self.called: set[int] = set()

    def check_id(self, value: int, what: str) -> int:
        if not 0 < value < self.bound:
            raise _bad(f"{what} id {value} is outside 1..{self.bound - 1} (the bound)")
        return value

    def has(self, target: int, decoration: int) -> bool:
        return any(d == decoration for d, _ in self.decorations.get(target, ()))

    def value(self, target: int, decoration: int) -> int | None:
        for d, literals in self.decorations.get(target, ()):
            if d == decoration and literals:
                return literals[0]
        return None

    def member_has(self, struct: int, member: int, decoration: int) -> bool:
        return any(d == decoration for d, _ in self.member_decorations.get((struct, member), ()))

    def member_value(self, struct: int, member: int, decoration: int) -> int | None:
        for d, literals in self.member_decorations.get((struct, member), ()):
            if d == decoration and literals:
                return literals[0]
        return None


def _need(operands: array[int], count: int, opcode: int, offset: int) -> None:
    if len(operands) < count:
        raise _bad(f"instruction at word {offset} (opcode {opcode}) has {len(operands)} operands, needs {count}")


def _walk(words: array[int]) -> _Module:
    version, bound, schema = words[1], words[3], words[4]
    major, minor = (version >> 16) & 0xFF, (version >> 8) & 0xFF
    if version & 0xFF0000FF or major != 1 or minor > 6:
        raise _bad(f"version word {version:#010x} is not SPIR-V 1.0..1.6")
    if bound == 0:
        raise _bad("id bound is 0")
    if schema != 0:
        raise _bad(f"schema word is {schema}, must be 0")
    module = _Module(bound)
    current_function: int | None = None
    offset = 5
    total = len(words)
    while offset < total:
        word = words[offset]
        count, opcode = word >> 16, word & 0xFFFF
        if count == 0:
            raise _bad(f"instruction at word {offset} (opcode {opcode}) has word count 0")
        if offset + count > total:
            raise _bad(
                f"instruction at word {offset} (opcode {opcode}) runs {offset + count - total} words past the end"
            )
        operands = words[offset + 1 : offset + count]
        _record(module, opcode, operands, offset, current_function)
        if opcode == _OP_FUNCTION:
            current_function = operands[1]
            module.functions[current_function] = []
        elif opcode == _OP_FUNCTION_END:
            if current_function is None:
                raise _bad(f"OpFunctionEnd at word {offset} outside a function")
            current_function = None
        offset += count
    if current_function is not None:
        raise _bad(f"module ends inside function {current_function} (no OpFunctionEnd)")
    for _, target, name, _ in module.entries:
        if target not in module.functions:
            raise _bad(f"entry point {name!r} names id {target}, which no OpFunction defines")
    undefined = sorted(module.called - module.functions.keys())
    if undefined:
        raise _bad(f"OpFunctionCall names function id {undefined[0]}, which no OpFunction defines")
    return module


def _record(module: _Module, opcode: int, ops: array[int], offset: int, function: int | None) -> None:
    if opcode == _OP_CAPABILITY:
        _need(ops, 1, opcode, offset)
        module.capabilities.append(ops[0])
    elif opcode == _OP_EXTENSION:
        module.extensions.append(_string(ops, 0, f"OpExtension at word {offset}")[0])
    elif opcode == _OP_MEMORY_MODEL:
        _need(ops, 2, opcode, offset)
        if module.memory_model is not None:
            raise _bad(f"second OpMemoryModel at word {offset}")
        if function is not None:
            raise _bad(f"OpMemoryModel at word {offset} inside a function")
        module.memory_model = (ops[0], ops[1])
    elif opcode == _OP_ENTRY_POINT:
        _need(ops, 3, opcode, offset)
        target = module.check_id(ops[1], "entry point")
        name, after = _string(ops, 2, f"entry point name at word {offset}")
        interface = tuple(module.check_id(i, "interface") for i in ops[after:])
        module.entries.append((ops[0], target, name, interface))
    elif opcode in (_OP_EXECUTION_MODE, _OP_EXECUTION_MODE_ID):
        _need(ops, 2, opcode, offset)
        if ops[1] == _MODE_LOCAL_SIZE:
            _need(ops, 5, opcode, offset)
            size = (ops[2], ops[3], ops[4])
            if 0 in size:
                raise _bad(f"LocalSize {size} at word {offset} has a zero dimension")
            module.local_sizes[ops[0]] = size
        elif ops[1] == _MODE_LOCAL_SIZE_ID:
            _need(ops, 5, opcode, offset)
            module.local_size_ids[ops[0]] = (ops[2], ops[3], ops[4])
        elif ops[1] in FLOAT_CONTROL_MODES:
            _need(ops, 3, opcode, offset)
            module.float_modes[(FLOAT_CONTROL_MODES[ops[1]], ops[2])] = None
    elif opcode == _OP_NAME:
        _need(ops, 2, opcode, offset)
        module.names[ops[0]] = _string(ops, 1, f"OpName at word {offset}")[0]
    elif opcode == _OP_MEMBER_NAME:
        _need(ops, 3, opcode, offset)
        module.member_names[(ops[0], ops[1])] = _string(ops, 2, f"OpMemberName at word {offset}")[0]
    elif opcode == _OP_DECORATE:
        _need(ops, 2, opcode, offset)
        module.decorations.setdefault(ops[0], []).append((ops[1], ops[2:]))
    elif opcode == _OP_MEMBER_DECORATE:
        _need(ops, 3, opcode, offset)
        module.member_decorations.setdefault((ops[0], ops[1]), []).append((ops[2], ops[3:]))
    elif 19 <= opcode <= 38 or opcode == _OP_TYPE_ACCELERATION_STRUCTURE:  # 39, OpTypeForwardPointer, has no result
        _need(ops, 1, opcode, offset)
        result = module.check_id(ops[0], "type")
        if result in module.types:
            raise _bad(f"type id {result} is defined twice (word {offset})")
        module.types[result] = (opcode, ops[1:])
    elif opcode in (_OP_CONSTANT, _OP_SPEC_CONSTANT):
        _need(ops, 3, opcode, offset)
        result = module.check_id(ops[1], "constant")
        module.constants[result] = ops[2] | (ops[3] << 32 if len(ops) > 3 else 0)  # 64-bit: low word first
        if opcode == _OP_SPEC_CONSTANT:
            module.spec_scalars[result] = (opcode, ops[0], ops[2:])
    elif opcode in (_OP_SPEC_CONSTANT_TRUE, _OP_SPEC_CONSTANT_FALSE):
        _need(ops, 2, opcode, offset)
        module.spec_scalars[module.check_id(ops[1], "constant")] = (opcode, ops[0], ops[2:])
    elif opcode in (_OP_CONSTANT_COMPOSITE, _OP_SPEC_CONSTANT_COMPOSITE):
        _need(ops, 2, opcode, offset)
        module.composites[module.check_id(ops[1], "constant")] = tuple(ops[2:])
    elif opcode == _OP_VARIABLE:
        _need(ops, 3, opcode, offset)
        if function is None:
            module.variables.append((ops[0], module.check_id(ops[1], "variable"), ops[2]))
    elif opcode == _OP_FUNCTION:
        _need(ops, 4, opcode, offset)
        if function is not None:
            raise _bad(f"OpFunction at word {offset} inside another function")
        module.check_id(ops[1], "function")
    elif opcode == _OP_FUNCTION_CALL:
        _need(ops, 3, opcode, offset)
        module.called.add(ops[2])
        if function is not None:
            module.calls.setdefault(function, set()).add(ops[2])
    elif opcode == _OP_FUNCTION_PARAMETER:
        _need(ops, 2, opcode, offset)
        if function is None:
            raise _bad(f"OpFunctionParameter at word {offset} outside a function")
        module.functions[function].append((ops[0], module.check_id(ops[1], "parameter")))
