"""The module's type graph: one :class:`SpirvType` per type id, with its size and member offsets (internal).

Built on demand, memoized and iteratively, under a step bound (RESOURCE_LIMIT past it); a type that contains
itself is INVALID_ARGUMENT. Layouts follow the explicit decorations (``Offset``, ``ArrayStride``,
``MatrixStride``) in Vulkan modules and the OpenCL C ABI in OpenCL modules.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from ...contract.errors import BackendError, ErrorKind
from .model import (
    KIND_ARRAY,
    KIND_BOOL,
    KIND_FLOAT,
    KIND_INT,
    KIND_MATRIX,
    KIND_OTHER,
    KIND_POINTER,
    KIND_RUNTIME_ARRAY,
    KIND_STRUCT,
    KIND_VECTOR,
    SpirvType,
    StructMember,
)
from .walk import _Module
from .words import (
    _DEC_ARRAY_STRIDE,
    _DEC_CPACKED,
    _DEC_MATRIX_STRIDE,
    _DEC_OFFSET,
    _DEC_ROW_MAJOR,
    _OP_TYPE_ARRAY,
    _OP_TYPE_BOOL,
    _OP_TYPE_FLOAT,
    _OP_TYPE_INT,
    _OP_TYPE_MATRIX,
    _OP_TYPE_POINTER,
    _OP_TYPE_RUNTIME_ARRAY,
    _OP_TYPE_STRUCT,
    _OP_TYPE_VECTOR,
    _bad,
)

_MAX_SIZE = 1 << 64  # a layout size past this is reported as None (not computable), which also bounds the ints


_IN_PROGRESS = 1


class _Types:
    """The module's type graph, built on demand: one :class:`SpirvType` per id, memoized (internal).

    :meth:`get` walks iteratively (an explicit stack, no Python recursion), so
    depth costs nothing; each type is expanded once, costing one step plus one
    per operand it depends on, against ``limit`` (RESOURCE_LIMIT past it). A
    type reached again while it is being built contains itself:
    INVALID_ARGUMENT. Pointers are leaves (their pointee is only named), so
    forward-pointer cycles are fine.
    """

    def __init__(self, module: _Module, limit: int, pointer_bytes: int, c_layout: bool = False) -> None:
        self.module = module
        self.limit = limit
        self.pointer_bytes = pointer_bytes
        self.c_layout = c_layout
        self.align: dict[int, int | None] = {}  # OpenCL C alignment per built type id (c_layout only)
        self.steps = 0
        self.done: dict[int, SpirvType] = {}
        self.state: dict[int, int] = {}

    def _children(self, type_id: int) -> Sequence[int]:
        entry = self.module.types.get(type_id)
        if entry is None:
            return ()
        opcode, ops = entry
        if opcode in (_OP_TYPE_VECTOR, _OP_TYPE_MATRIX, _OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY) and ops:
            return ops[:1]
        if opcode == _OP_TYPE_STRUCT:
            return ops
        return ()

    def get(self, root: int) -> SpirvType:
        done = self.done
        found = done.get(root)
        if found is not None:
            return found
        stack = [root]
        while stack:
            type_id = stack[-1]
            if type_id in done:
                stack.pop()
                continue
            if self.state.get(type_id) != _IN_PROGRESS:
                self.state[type_id] = _IN_PROGRESS
                children = self._children(type_id)
                self.steps += 1 + len(children)
                if self.steps > self.limit:
                    raise BackendError(
                        ErrorKind.RESOURCE_LIMIT,
                        f"SPIR-V: the type graph needs more than max_type_steps={self.limit} steps "
                        f"(reached at type {type_id})",
                    )
                pending = False
                for child in children:
                    if child in done:
                        continue
                    if self.state.get(child) == _IN_PROGRESS:
                        raise _bad(f"type {child} contains itself (through type {type_id})")
                    stack.append(child)
                    pending = True
                if pending:
                    continue
            done[type_id] = self._build(type_id)
            stack.pop()
        return done[root]

    def _build(self, type_id: int) -> SpirvType:
        """The SpirvType of ``type_id``, whose children are all in ``done`` (and ``align``)."""
        built = self._build_type(type_id)
        if self.c_layout:
            self.align.setdefault(type_id, None)
        return built

    def _build_type(self, type_id: int) -> SpirvType:
        module, done, c_layout, align = self.module, self.done, self.c_layout, self.align
        entry = module.types.get(type_id)
        if entry is None:
            return SpirvType(KIND_OTHER, type_id)
        opcode, ops = entry
        if opcode == _OP_TYPE_BOOL:
            return SpirvType(KIND_BOOL, type_id)
        if opcode in (_OP_TYPE_INT, _OP_TYPE_FLOAT) and ops:
            width = ops[0]
            size = width // 8 if width and width % 8 == 0 else None
            align[type_id] = size
            if opcode == _OP_TYPE_FLOAT:
                return SpirvType(KIND_FLOAT, type_id, width=width, size=size)
            return SpirvType(KIND_INT, type_id, width=width, signed=len(ops) > 1 and ops[1] == 1, size=size)
        if opcode in (_OP_TYPE_VECTOR, _OP_TYPE_MATRIX) and len(ops) >= 2:
            component = done[ops[0]]
            kind = KIND_VECTOR if opcode == _OP_TYPE_VECTOR else KIND_MATRIX
            lanes = 4 if c_layout and kind == KIND_VECTOR and ops[1] == 3 else ops[1]  # OpenCL: 3-vectors are 4
            size = _capped(None if component.size is None else component.size * lanes)
            if c_layout:
                align[type_id] = size if kind == KIND_VECTOR else align.get(ops[0])
            return SpirvType(kind, type_id, component=component, count=ops[1], size=size)
        if opcode == _OP_TYPE_ARRAY and len(ops) >= 2:
            component = done[ops[0]]
            length = module.constants.get(ops[1])
            stride = module.value(type_id, _DEC_ARRAY_STRIDE)
            step = component.size if c_layout else stride or component.size
            size = _capped(None if length is None or step is None else length * step)
            align[type_id] = align.get(ops[0])
            return SpirvType(KIND_ARRAY, type_id, component=component, count=length, stride=stride, size=size)
        if opcode == _OP_TYPE_RUNTIME_ARRAY and ops:
            stride = module.value(type_id, _DEC_ARRAY_STRIDE)
            return SpirvType(KIND_RUNTIME_ARRAY, type_id, component=done[ops[0]], stride=stride)
        if opcode == _OP_TYPE_STRUCT:
            return self._struct(type_id, ops)
        if opcode == _OP_TYPE_POINTER and len(ops) >= 2:
            align[type_id] = self.pointer_bytes
            return SpirvType(KIND_POINTER, type_id, storage_class=ops[0], pointee_id=ops[1], size=self.pointer_bytes)
        return SpirvType(KIND_OTHER, type_id)

    def _struct(self, type_id: int, ops: array[int]) -> SpirvType:
        """A struct under explicit layout (Offset decorations) or, for OpenCL, the OpenCL C ABI layout."""
        module, done = self.module, self.done
        packed = module.has(type_id, _DEC_CPACKED)
        members = []
        end: int | None = 0
        widest = 1
        for index, member_type in enumerate(ops):
            member_spirv = done[member_type]
            if self.c_layout:
                member_align = 1 if packed else self.align.get(member_type)
                if end is None or not member_align or member_spirv.size is None:  # 0: a 0-lane vector
                    offset, end = None, None
                else:
                    offset = -(-end // member_align) * member_align
                    end = offset + member_spirv.size
                    widest = max(widest, member_align)
            else:
                offset = module.member_value(type_id, index, _DEC_OFFSET)
            member = StructMember(
                name=module.member_names.get((type_id, index)),
                offset=offset,
                type=member_spirv,
                matrix_stride=module.member_value(type_id, index, _DEC_MATRIX_STRIDE),
                row_major=module.member_has(type_id, index, _DEC_ROW_MAJOR),
            )
            members.append(member)
            if not self.c_layout and end is not None:
                size = _member_bytes(member)
                end = None if size is None or offset is None else max(end, offset + size)
        if self.c_layout:
            self.align[type_id] = None if end is None else widest
            end = None if end is None else -(-end // widest) * widest
        return SpirvType(KIND_STRUCT, type_id, members=tuple(members), size=_capped(end))


def _capped(size: int | None) -> int | None:
    return None if size is None or size > _MAX_SIZE else size


def _member_bytes(member: StructMember) -> int | None:
    """A member's bytes inside its struct: a matrix with MatrixStride takes stride * columns (* rows if row-major)."""
    member_type = member.type
    if member_type.kind == KIND_MATRIX and member.matrix_stride is not None:
        column = member_type.component
        vectors = (column.count if column is not None else None) if member.row_major else member_type.count
        return None if vectors is None else _capped(member.matrix_stride * vectors)
    return member_type.size
