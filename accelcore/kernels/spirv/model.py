""":class:`SpirvModule`, what :func:`~accelcore.kernels.spirv.inspect_spirv` reports, and its parts.

Every result type is immutable. :class:`SpirvType` is one shared object per type id within a module, with
structural O(1) equality and hashing and a shallow ``repr`` (the package docstring says how to walk one);
the ``KIND_*`` constants are its kinds.
"""

from __future__ import annotations

import enum
import hashlib
import struct
from dataclasses import dataclass

from ...contract.errors import BackendError, ErrorKind
from ...contract.flags import AccessMode
from .words import (
    _SC_CROSS_WORKGROUP,
    _SC_UNIFORM_CONSTANT,
    EXECUTION_MODEL_NAMES,
    GL_COMPUTE,
    KERNEL,
    STORAGE_CLASS_NAMES,
    capability_name,
)

# Type kinds (SpirvType.kind).
KIND_BOOL = "bool"
KIND_INT = "int"
KIND_FLOAT = "float"
KIND_VECTOR = "vector"
KIND_MATRIX = "matrix"
KIND_ARRAY = "array"
KIND_RUNTIME_ARRAY = "runtime_array"
KIND_STRUCT = "struct"
KIND_POINTER = "pointer"
KIND_OTHER = "other"


class Flavour(enum.Enum):
    """Which API a module targets: Shader/GLCompute → VULKAN; Kernel/Addresses → OPENCL."""

    VULKAN = "vulkan"
    OPENCL = "opencl"


class SpirvType:
    """A SPIR-V type, described without SPIR-V opcodes (immutable; one shared object per type id).

    ``kind`` is one of ``bool``, ``int``, ``float``, ``vector``, ``matrix``,
    ``array``, ``runtime_array``, ``struct``, ``pointer`` or ``other`` (void,
    images, samplers, functions, ids that name no type...). ``width`` is the
    bit width of an int or float (0 otherwise); ``signed`` the int's
    signedness (False for everything else). ``component`` is the element of a vector, matrix (its column
    vector), array or runtime array; ``count`` the vector lanes, matrix
    columns or array length (None when the length is not a plain or spec
    constant, and for runtime arrays). ``stride`` is the ``ArrayStride``
    decoration of an array type (None when undecorated; ``MatrixStride`` is a
    member decoration, see :class:`StructMember`). ``members`` are a
    struct's members. ``size`` is the byte size: in Vulkan modules under the
    explicit layout (``Offset``/``ArrayStride``/``MatrixStride``): scalars
    width/8, vectors lanes * component, arrays length * (stride or element
    size), structs the end of their last-ending member; in OpenCL modules
    (where ``Offset`` needs Shader and never appears) under the OpenCL C ABI:
    scalars and vectors aligned to their size, 3-lane vectors sized and
    aligned as 4 lanes, arrays length * element size, structs with naturally
    aligned members rounded up to their widest member (``CPacked``: no
    padding), i.e. ``sizeof`` of the OpenCL C type. None when any of that is
    missing, for bools, runtime arrays and ``other``, and past 2**64.
    Pointers have ``storage_class`` and the id of their pointee in
    ``pointee_id`` (never followed, so pointer cycles are fine), and size 8
    (4 under the Physical32 addressing model). ``id`` is the type's
    result id.

    Equality and hashing are structural (every field, members recursively,
    ids included) through a digest computed once at construction, so comparing
    two inspections of the same module costs O(1) per type; ``repr`` names
    member types by id instead of expanding them. ``copy``/``deepcopy`` return
    the object itself, so ``dataclasses.asdict`` of a result stays linear.
    """

    __slots__ = (
        "_key",
        "component",
        "count",
        "id",
        "kind",
        "members",
        "pointee_id",
        "signed",
        "size",
        "storage_class",
        "stride",
        "width",
    )
    kind: str
    id: int
    width: int
    signed: bool
    component: SpirvType | None
    count: int | None
    stride: int | None
    members: tuple[StructMember, ...]
    size: int | None
    storage_class: int | None
    pointee_id: int | None
    _key: bytes

    def __init__(
        self,
        kind: str,
        id: int,
        *,
        width: int = 0,
        signed: bool = False,
        component: SpirvType | None = None,
        count: int | None = None,
        stride: int | None = None,
        members: tuple[StructMember, ...] = (),
        size: int | None = None,
        storage_class: int | None = None,
        pointee_id: int | None = None,
    ) -> None:
        init = object.__setattr__
        init(self, "kind", kind)
        init(self, "id", id)
        init(self, "width", width)
        init(self, "signed", signed)
        init(self, "component", component)
        init(self, "count", count)
        init(self, "stride", stride)
        init(self, "members", tuple(members))
        init(self, "size", size)
        init(self, "storage_class", storage_class)
        init(self, "pointee_id", pointee_id)
        fields = (
            kind,
            id,
            width,
            signed,
            None if component is None else component._key,
            count,
            stride,
            tuple((m.name, m.offset, m.matrix_stride, m.row_major, m.type._key) for m in self.members),
            size,
            storage_class,
            pointee_id,
        )
        init(self, "_key", hashlib.blake2b(repr(fields).encode(), digest_size=16).digest())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SpirvType is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"SpirvType is immutable (cannot delete {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SpirvType):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __copy__(self) -> SpirvType:
        return self

    def __deepcopy__(self, memo: object) -> SpirvType:
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_type,
            (
                self.kind,
                self.id,
                self.width,
                self.signed,
                self.component,
                self.count,
                self.stride,
                self.members,
                self.size,
                self.storage_class,
                self.pointee_id,
            ),
        )

    def __repr__(self) -> str:
        parts = [f"{self.kind} id={self.id}"]
        if self.kind in (KIND_INT, KIND_FLOAT):
            parts.append(f"{'i' if self.signed else 'u' if self.kind == KIND_INT else 'f'}{self.width}")
        if self.component is not None:
            parts.append(f"of id={self.component.id}")
        if self.count is not None:
            parts.append(f"count={self.count}")
        if self.stride is not None:
            parts.append(f"stride={self.stride}")
        if self.members:
            listed = ", ".join(f"{m.name or '?'}@{m.offset}:id={m.type.id}" for m in self.members[:8])
            parts.append(f"members=[{listed}{', ...' if len(self.members) > 8 else ''}]")
        if self.storage_class is not None:
            parts.append(f"storage_class={self.storage_class} pointee_id={self.pointee_id}")
        parts.append(f"size={self.size}")
        return f"SpirvType({' '.join(parts)})"


def _rebuild_type(
    kind: str,
    id: int,
    width: int,
    signed: bool,
    component: SpirvType | None,
    count: int | None,
    stride: int | None,
    members: tuple[StructMember, ...],
    size: int | None,
    storage_class: int | None,
    pointee_id: int | None,
) -> SpirvType:
    return SpirvType(
        kind,
        id,
        width=width,
        signed=signed,
        component=component,
        count=count,
        stride=stride,
        members=members,
        size=size,
        storage_class=storage_class,
        pointee_id=pointee_id,
    )


@dataclass(frozen=True, slots=True)
class StructMember:
    """One member of a struct :class:`SpirvType`.

    ``name`` from OpMemberName, ``offset`` from the ``Offset`` member
    decoration (None when undecorated) in Vulkan modules, the OpenCL C ABI
    offset (``offsetof``) in OpenCL modules (None when not computable),
    ``matrix_stride`` / ``row_major`` from ``MatrixStride`` / ``RowMajor`` (they describe a matrix member, or the
    matrices inside an array member). A matrix member with a ``MatrixStride``
    takes stride * columns bytes (* rows when row-major) in the struct's size.
    """

    name: str | None
    offset: int | None
    type: SpirvType
    matrix_stride: int | None = None
    row_major: bool = False


@dataclass(frozen=True, slots=True)
class PushConstantBlock:
    """The module's push-constant variable (Vulkan): the first module-scope ``PushConstant`` variable.

    ``type_name`` is the OpName of the block's struct type (GLSL's block
    name), ``variable_name`` the OpName of the variable (GLSL's instance
    name); ``size`` and ``members`` are ``type.size`` and ``type.members``
    (empty when the pointee is not a struct).
    """

    variable_id: int
    variable_name: str | None
    type_name: str | None
    type: SpirvType
    size: int | None
    members: tuple[StructMember, ...]


@dataclass(frozen=True, slots=True)
class SpecConstant:
    """One scalar specialization constant with a ``SpecId`` decoration.

    ``id`` is its result id, ``name`` its OpName, ``type`` a bool, int or float
    :class:`SpirvType`. ``default`` is the default value as the bytes a
    ``VkSpecializationInfo`` / ``clSetProgramSpecializationConstant`` entry
    would carry: little-endian, width/8 bytes for ints and floats (8- and
    16-bit values are the low bytes of their literal word), and 4 bytes 0 or 1
    for bools (VkBool32).
    """

    spec_id: int
    id: int
    name: str | None
    type: SpirvType
    default: bytes

    @property
    def value(self) -> bool | int | float:
        """The default decoded: a bool, a (signed when the type is) int, or a float (16, 32 or 64 bits)."""
        if self.type.kind == KIND_BOOL:
            return self.default != b"\0\0\0\0"
        if self.type.kind == KIND_FLOAT:
            return float(struct.unpack({2: "<e", 4: "<f", 8: "<d"}[len(self.default)], self.default)[0])
        return int.from_bytes(self.default, "little", signed=self.type.signed)


@dataclass(frozen=True, slots=True)
class KernelParameter:
    """One parameter of an OpenCL kernel entry point.

    ``storage_class`` is the pointer's storage class (5 CrossWorkgroup =
    ``__global``, 4 Workgroup = ``__local``, 0 UniformConstant = ``__constant``)
    or None for a by-value argument; ``value_bytes`` the size of the pointee
    (pointers) or the value (by-value), None when not computable;
    ``no_write`` is FuncParamAttr NoWrite. ``name`` is the OpName of the
    OpFunctionParameter (llvm-spirv emits the source names when clang ran
    with ``-cl-kernel-arg-info`` or ``-fno-discard-value-names``; None
    otherwise), ``type`` the :class:`SpirvType` of the pointee (pointers) or
    of the value (by-value). ``byval`` is FuncParamAttr ByVal: a ``Function``
    pointer standing for a struct passed by value (llvm-spirv's form of
    ``kernel void k(S s)``), whose bytes are ``value_bytes``.
    """

    index: int
    id: int
    storage_class: int | None
    value_bytes: int | None
    no_write: bool
    name: str | None = None
    type: SpirvType | None = None
    byval: bool = False

    @property
    def is_global_buffer(self) -> bool:
        return self.storage_class in (_SC_CROSS_WORKGROUP, _SC_UNIFORM_CONSTANT)


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """One OpEntryPoint. ``local_size`` is None when the module fixes none.

    ``local_size`` holds default values: ``local_size_spec_ids`` says, per
    axis, the SpecId of the specialization constant that sets it (from the
    ``WorkgroupSize`` built-in's constituents, which win, as glslang's
    ``local_size_x_id`` emits, or from ``LocalSizeId`` operands), None where the
    axis is a plain constant or literal.
    """

    execution_model: int
    name: str
    id: int
    local_size: tuple[int, int, int] | None
    interface: tuple[int, ...]
    parameters: tuple[KernelParameter, ...] = ()
    local_size_spec_ids: tuple[int | None, int | None, int | None] = (None, None, None)

    @property
    def execution_model_name(self) -> str:
        return EXECUTION_MODEL_NAMES.get(self.execution_model, f"ExecutionModel({self.execution_model})")

    @property
    def is_compute(self) -> bool:
        return self.execution_model in (GL_COMPUTE, KERNEL)


@dataclass(frozen=True, slots=True)
class Descriptor:
    """One Vulkan descriptor variable (module scope, with DescriptorSet/Binding).

    ``descriptor_type``: storage_buffer, uniform_buffer, storage_image,
    sampled_image, combined_image_sampler, sampler, storage_texel_buffer,
    uniform_texel_buffer, acceleration_structure or other. ``readable`` /
    ``writable`` follow NonReadable / NonWritable on the variable, or on every
    member of its block; uniform buffers and sampled images are never
    writable. ``array_stride`` is the ArrayStride of the block's trailing array
    (bytes per element), ``count`` the descriptor array length (None for a
    runtime-sized array). ``type`` is the :class:`SpirvType` of one
    descriptor (the block struct, image, sampler...; descriptor-array levels
    stripped) and ``block_name`` the OpName of that type when it is a struct
    (GLSL's block name; ``name`` is the instance name).
    """

    set: int
    binding: int
    storage_class: int
    descriptor_type: str
    readable: bool
    writable: bool
    variable_id: int
    name: str | None
    array_stride: int | None
    count: int | None
    type: SpirvType | None = None
    block_name: str | None = None

    @property
    def storage_class_name(self) -> str:
        return STORAGE_CLASS_NAMES.get(self.storage_class, f"StorageClass({self.storage_class})")

    @property
    def access(self) -> AccessMode:
        """The most the shader may do: READ if not writable, WRITE if write-only, else READ_WRITE.

        A variable that is neither readable nor writable reports READ.
        """
        if not self.writable:
            return AccessMode.READ
        return AccessMode.READ_WRITE if self.readable else AccessMode.WRITE


@dataclass(frozen=True, slots=True)
class SpirvModule:
    """What :func:`inspect_spirv` found. ``version`` is (major, minor)."""

    flavour: Flavour
    version: tuple[int, int]
    generator: int
    bound: int
    big_endian: bool
    capability_numbers: tuple[int, ...]
    extensions: tuple[str, ...]
    addressing_model: int
    memory_model: int
    entry_points: tuple[EntryPoint, ...]
    descriptors: tuple[Descriptor, ...]
    push_constant_bytes: int | None
    """Size of the push-constant block; 0 when there is none, None when not computable."""
    push_constant_block: PushConstantBlock | None = None
    """The first module-scope PushConstant variable with its members; None when there is none."""
    spec_constants: tuple[SpecConstant, ...] = ()
    """Every OpSpecConstant/OpSpecConstantTrue/OpSpecConstantFalse with a SpecId, by (spec_id, id)."""
    recursive_functions: tuple[int, ...] = ()
    """Ids (ascending) of the functions on a cycle of OpFunctionCall (self-calls included); () when none."""
    type_steps: int = 0
    """Type-graph steps this inspection took (the quantity ``max_type_steps`` bounds)."""
    float_modes: tuple[tuple[str, int], ...] = ()
    """The float-controls execution modes the module declares, as (mode name, bit width), e.g.
    ``("DenormPreserve", 32)`` (:data:`FLOAT_CONTROL_MODES`), in order, without repeats."""
    workgroup_types: tuple[SpirvType, ...] = ()
    """The pointee type of every module-scope ``Workgroup`` variable (GLSL ``shared``, OpenCL ``__local``), with
    array lengths at the specialization constants' defaults (:func:`specialize` sets others)."""

    @property
    def workgroup_bytes(self) -> int | None:
        """Bytes of ``Workgroup`` storage the module declares; None when a size is not computable (a struct
        without offsets, a length computed by ``OpSpecConstantOp``)."""
        total = 0
        for t in self.workgroup_types:
            if t.size is None:
                return None
            total += t.size
        return total

    @property
    def capabilities(self) -> tuple[str, ...]:
        return tuple(capability_name(c) for c in self.capability_numbers)

    def compute_entry_points(self) -> tuple[EntryPoint, ...]:
        """Entry points a compute API can launch: GLCompute (Vulkan) or Kernel (OpenCL)."""
        return tuple(e for e in self.entry_points if e.is_compute)

    def entry_point(self, name: str) -> EntryPoint:
        """The compute entry point called ``name``; none → INVALID_ARGUMENT listing the ones there are."""
        for entry in self.compute_entry_points():
            if entry.name == name:
                return entry
        names = ", ".join(repr(e.name) for e in self.compute_entry_points()) or "none"
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"SPIR-V module has no compute entry point {name!r} ({names})")

    def spec_constant(self, spec_id: int) -> SpecConstant | None:
        """The specialization constant with SpecId ``spec_id`` (the first with a name where several share it:
        glslang adds an unnamed one when ``local_size_x_id`` names a ``constant_id`` too), or None."""
        found = [constant for constant in self.spec_constants if constant.spec_id == spec_id]
        return next((c for c in found if c.name), found[0] if found else None)

    def descriptor(self, binding: int, set: int = 0) -> Descriptor | None:
        for descriptor in self.descriptors:
            if descriptor.set == set and descriptor.binding == binding:
                return descriptor
        return None
