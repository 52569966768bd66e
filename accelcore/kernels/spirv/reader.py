"""Pure-Python SPIR-V inspection: what a module is and what it binds.

Promise: :func:`inspect_spirv` walks the module once, word by word, with a
bounds check on the header and on every instruction's word count, so it ends
in time linear in the input on any bytes. Every later walk is linear too: the
type graph is built once per type id (memoized, iteratively, so a DAG of
structs that share member types costs its number of edges, not its number of
paths; a type that contains itself is INVALID_ARGUMENT) under a bound of
``max_type_steps`` (RESOURCE_LIMIT naming it), and the call graph is searched
for recursion once (Tarjan, iterative). It reports the flavour (Vulkan or
OpenCL), version, id bound, capabilities, entry points with their execution
model, ``LocalSize`` (and which spec constants set it) and (for kernels)
parameters with names and types, for Vulkan modules every descriptor variable
with its set, binding, storage class, the access its decorations allow and its
type, the push-constant block with its members, every specialization constant
with a SpecId and its default value, and the functions on a call cycle.
Malformed input raises :class:`BackendError` INVALID_ARGUMENT naming the
offending word; nothing else escapes but that RESOURCE_LIMIT. It checks
structure, not semantics: run ``spirv-val`` for full validation.

Types are described neutrally by :class:`SpirvType` (one shared object per
type id within a module; equality and hashing are structural and cost O(1);
``repr`` is shallow), so walking them is the caller's job: recurse with a memo
keyed by ``id``, never by expanding the tree. Sizes and offsets follow the
explicit layout decorations in Vulkan modules and the OpenCL C ABI
(``sizeof``/``offsetof``) in OpenCL modules.

Capability helpers (:func:`check_capabilities`, :func:`vulkan_supported_capabilities`,
:func:`opencl_supported_capabilities`) let a provider refuse a module that
names a capability its device lacks (UNSUPPORTED, naming the capability).
"""

from __future__ import annotations

import enum
import hashlib
import struct
import sys
from array import array
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ...contract.errors import BackendError, ErrorKind
from ...contract.flags import AccessMode

__all__ = [
    "SPIRV_MAGIC",
    "TYPE_STEP_LIMIT",
    "Descriptor",
    "EntryPoint",
    "Flavour",
    "KernelParameter",
    "PushConstantBlock",
    "SpecConstant",
    "SpirvModule",
    "SpirvType",
    "StructMember",
    "capability_name",
    "check_capabilities",
    "inspect_spirv",
    "instructions",
    "is_spirv",
    "missing_capabilities",
    "opencl_supported_capabilities",
    "required_capabilities",
    "specialize",
    "vulkan_supported_capabilities",
]

SPIRV_MAGIC = 0x07230203
_SWAPPED_MAGIC = 0x03022307
_MAX_TYPE_DEPTH = 32
TYPE_STEP_LIMIT = 1 << 20
"""Default ``max_type_steps`` of :func:`inspect_spirv`: type-graph steps (one per type built plus one per
member/element edge) one inspection may take. Memoized, a module needs at most one step per type-operand
word, so only modules of megabytes of type declarations come near it."""
_MAX_SIZE = 1 << 64  # a layout size past this is reported as None (not computable), which also bounds the ints

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

# Opcodes used here.
_OP_NAME = 5
_OP_MEMBER_NAME = 6
_OP_EXTENSION = 10
_OP_MEMORY_MODEL = 14
_OP_ENTRY_POINT = 15
_OP_EXECUTION_MODE = 16
_OP_CAPABILITY = 17
_OP_TYPE_BOOL = 20
_OP_TYPE_INT = 21
_OP_TYPE_FLOAT = 22
_OP_TYPE_VECTOR = 23
_OP_TYPE_MATRIX = 24
_OP_TYPE_IMAGE = 25
_OP_TYPE_SAMPLER = 26
_OP_TYPE_SAMPLED_IMAGE = 27
_OP_TYPE_ARRAY = 28
_OP_TYPE_RUNTIME_ARRAY = 29
_OP_TYPE_STRUCT = 30
_OP_TYPE_POINTER = 32
_OP_CONSTANT = 43
_OP_CONSTANT_COMPOSITE = 44
_OP_SPEC_CONSTANT_TRUE = 48
_OP_SPEC_CONSTANT_FALSE = 49
_OP_SPEC_CONSTANT = 50
_OP_SPEC_CONSTANT_COMPOSITE = 51
_OP_FUNCTION = 54
_OP_FUNCTION_PARAMETER = 55
_OP_FUNCTION_END = 56
_OP_FUNCTION_CALL = 57
_OP_VARIABLE = 59
_OP_DECORATE = 71
_OP_MEMBER_DECORATE = 72
_OP_EXECUTION_MODE_ID = 331
_OP_TYPE_ACCELERATION_STRUCTURE = 5341

# Decorations.
_DEC_SPEC_ID = 1
_DEC_BLOCK = 2
_DEC_BUFFER_BLOCK = 3
_DEC_ARRAY_STRIDE = 6
_DEC_MATRIX_STRIDE = 7
_DEC_ROW_MAJOR = 4
_DEC_CPACKED = 10
_DEC_BUILTIN = 11
_DEC_NON_WRITABLE = 24
_DEC_NON_READABLE = 25
_DEC_BINDING = 33
_DEC_DESCRIPTOR_SET = 34
_DEC_OFFSET = 35
_DEC_FUNC_PARAM_ATTR = 38
_FUNC_PARAM_BYVAL = 2
_FUNC_PARAM_NO_WRITE = 6
_BUILTIN_WORKGROUP_SIZE = 25

# Execution modes.
_MODE_LOCAL_SIZE = 17
_MODE_LOCAL_SIZE_ID = 38
FLOAT_CONTROL_MODES: Mapping[int, str] = {
    4459: "DenormPreserve",
    4460: "DenormFlushToZero",
    4461: "SignedZeroInfNanPreserve",
    4462: "RoundingModeRTE",
    4463: "RoundingModeRTZ",
}
"""SPV_KHR_float_controls execution modes (each takes a float bit width), by number."""

# Storage classes.
_SC_UNIFORM_CONSTANT = 0
_SC_UNIFORM = 2
_SC_WORKGROUP = 4
_SC_CROSS_WORKGROUP = 5
_SC_PUSH_CONSTANT = 9
_SC_STORAGE_BUFFER = 12

STORAGE_CLASS_NAMES = {
    0: "UniformConstant",
    1: "Input",
    2: "Uniform",
    3: "Output",
    4: "Workgroup",
    5: "CrossWorkgroup",
    6: "Private",
    7: "Function",
    8: "Generic",
    9: "PushConstant",
    10: "AtomicCounter",
    11: "Image",
    12: "StorageBuffer",
    5349: "PhysicalStorageBuffer",
}

EXECUTION_MODEL_NAMES = {
    0: "Vertex",
    1: "TessellationControl",
    2: "TessellationEvaluation",
    3: "Geometry",
    4: "Fragment",
    5: "GLCompute",
    6: "Kernel",
    5267: "TaskNV",
    5268: "MeshNV",
    5313: "RayGenerationKHR",
    5314: "IntersectionKHR",
    5315: "AnyHitKHR",
    5316: "ClosestHitKHR",
    5317: "MissKHR",
    5318: "CallableKHR",
    5364: "TaskEXT",
    5365: "MeshEXT",
}
GL_COMPUTE = 5
KERNEL = 6

# Capability names, checked against spirv-dis (SPIRV-Tools v2023.1) number by number.
CAPABILITY_NAMES: Mapping[int, str] = {
    0: "Matrix", 1: "Shader", 2: "Geometry", 3: "Tessellation", 4: "Addresses", 5: "Linkage", 6: "Kernel",
    7: "Vector16", 8: "Float16Buffer", 9: "Float16", 10: "Float64", 11: "Int64", 12: "Int64Atomics",
    13: "ImageBasic", 14: "ImageReadWrite", 15: "ImageMipmap", 17: "Pipes", 18: "Groups", 19: "DeviceEnqueue",
    20: "LiteralSampler", 21: "AtomicStorage", 22: "Int16", 23: "TessellationPointSize", 24: "GeometryPointSize",
    25: "ImageGatherExtended", 27: "StorageImageMultisample", 28: "UniformBufferArrayDynamicIndexing",
    29: "SampledImageArrayDynamicIndexing", 30: "StorageBufferArrayDynamicIndexing",
    31: "StorageImageArrayDynamicIndexing", 32: "ClipDistance", 33: "CullDistance", 34: "ImageCubeArray",
    35: "SampleRateShading", 36: "ImageRect", 37: "SampledRect", 38: "GenericPointer", 39: "Int8",
    40: "InputAttachment", 41: "SparseResidency", 42: "MinLod", 43: "Sampled1D", 44: "Image1D",
    45: "SampledCubeArray", 46: "SampledBuffer", 47: "ImageBuffer", 48: "ImageMSArray",
    49: "StorageImageExtendedFormats", 50: "ImageQuery", 51: "DerivativeControl", 52: "InterpolationFunction",
    53: "TransformFeedback", 54: "GeometryStreams", 55: "StorageImageReadWithoutFormat",
    56: "StorageImageWriteWithoutFormat", 57: "MultiViewport", 58: "SubgroupDispatch", 59: "NamedBarrier",
    60: "PipeStorage", 61: "GroupNonUniform", 62: "GroupNonUniformVote", 63: "GroupNonUniformArithmetic",
    64: "GroupNonUniformBallot", 65: "GroupNonUniformShuffle", 66: "GroupNonUniformShuffleRelative",
    67: "GroupNonUniformClustered", 68: "GroupNonUniformQuad", 69: "ShaderLayer", 70: "ShaderViewportIndex",
    71: "UniformDecoration", 4422: "FragmentShadingRateKHR", 4423: "SubgroupBallotKHR", 4427: "DrawParameters",
    4428: "WorkgroupMemoryExplicitLayoutKHR", 4429: "WorkgroupMemoryExplicitLayout8BitAccessKHR",
    4430: "WorkgroupMemoryExplicitLayout16BitAccessKHR", 4431: "SubgroupVoteKHR",
    4433: "StorageBuffer16BitAccess", 4434: "UniformAndStorageBuffer16BitAccess", 4435: "StoragePushConstant16",
    4436: "StorageInputOutput16", 4437: "DeviceGroup", 4439: "MultiView", 4441: "VariablePointersStorageBuffer",
    4442: "VariablePointers", 4445: "AtomicStorageOps", 4447: "SampleMaskPostDepthCoverage",
    4448: "StorageBuffer8BitAccess", 4449: "UniformAndStorageBuffer8BitAccess", 4450: "StoragePushConstant8",
    4464: "DenormPreserve", 4465: "DenormFlushToZero", 4466: "SignedZeroInfNanPreserve", 4467: "RoundingModeRTE",
    4468: "RoundingModeRTZ", 4471: "RayQueryProvisionalKHR", 4472: "RayQueryKHR",
    4478: "RayTraversalPrimitiveCullingKHR", 4479: "RayTracingKHR", 5008: "Float16ImageAMD",
    5009: "ImageGatherBiasLodAMD", 5010: "FragmentMaskAMD", 5013: "StencilExportEXT", 5015: "ImageReadWriteLodAMD",
    5016: "Int64ImageEXT", 5055: "ShaderClockKHR", 5249: "SampleMaskOverrideCoverageNV",
    5251: "GeometryShaderPassthroughNV", 5254: "ShaderViewportIndexLayerEXT", 5255: "ShaderViewportMaskNV",
    5259: "ShaderStereoViewNV", 5260: "PerViewAttributesNV", 5265: "FragmentFullyCoveredEXT",
    5266: "MeshShadingNV", 5282: "ImageFootprintNV", 5284: "FragmentBarycentricKHR",
    5288: "ComputeDerivativeGroupQuadsNV", 5297: "GroupNonUniformPartitionedNV", 5301: "ShaderNonUniform",
    5302: "RuntimeDescriptorArray", 5303: "InputAttachmentArrayDynamicIndexing",
    5304: "UniformTexelBufferArrayDynamicIndexing", 5305: "StorageTexelBufferArrayDynamicIndexing",
    5306: "UniformBufferArrayNonUniformIndexing", 5307: "SampledImageArrayNonUniformIndexing",
    5308: "StorageBufferArrayNonUniformIndexing", 5309: "StorageImageArrayNonUniformIndexing",
    5310: "InputAttachmentArrayNonUniformIndexing", 5311: "UniformTexelBufferArrayNonUniformIndexing",
    5312: "StorageTexelBufferArrayNonUniformIndexing", 5340: "RayTracingNV", 5345: "VulkanMemoryModel",
    5346: "VulkanMemoryModelDeviceScope", 5347: "PhysicalStorageBufferAddresses",
    5350: "ComputeDerivativeGroupLinearNV", 5357: "CooperativeMatrixNV", 5363: "FragmentShaderSampleInterlockEXT",
    5372: "FragmentShaderShadingRateInterlockEXT", 5373: "ShaderSMBuiltinsNV",
    5378: "FragmentShaderPixelInterlockEXT", 5379: "DemoteToHelperInvocation",
    5381: "RayTracingOpacityMicromapEXT", 5383: "ShaderInvocationReorderNV", 5390: "BindlessTextureNV",
    5568: "SubgroupShuffleINTEL", 5569: "SubgroupBufferBlockIOINTEL", 5570: "SubgroupImageBlockIOINTEL",
    5579: "SubgroupImageMediaBlockIOINTEL", 5582: "RoundToInfinityINTEL", 5583: "FloatingPointModeINTEL",
    5584: "IntegerFunctions2INTEL", 5603: "FunctionPointersINTEL", 5612: "AtomicFloat32MinMaxEXT",
    6016: "DotProductInputAll", 6017: "DotProductInput4x8Bit", 6018: "DotProductInput4x8BitPacked",
    6019: "DotProduct", 6025: "BitInstructions", 6033: "AtomicFloat32AddEXT", 6034: "AtomicFloat64AddEXT",
    6095: "AtomicFloat16AddEXT", 6400: "GroupUniformArithmeticKHR",
}  # fmt: skip


def capability_name(number: int) -> str:
    """The SPIR-V name of capability ``number`` (``Capability(N)`` when not in the table)."""
    return CAPABILITY_NAMES.get(number, f"Capability({number})")


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


# --------------------------------------------------------------------------- parsing


def _bad(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"SPIR-V: {message}")


def is_spirv(data: bytes) -> bool:
    """Whether ``data`` starts with the SPIR-V magic number in either byte order."""
    return len(data) >= 4 and int.from_bytes(data[:4], "little") in (SPIRV_MAGIC, _SWAPPED_MAGIC)


def instructions(data: bytes) -> Iterator[tuple[int, array[int]]]:
    """Every instruction after the header as ``(opcode, operand words)``, in module order.

    Checks only what walking needs (the header's size and magic, each word count nonzero and inside
    the module), raising INVALID_ARGUMENT as :func:`inspect_spirv` does; linear in the input. For
    analyses over a module :func:`inspect_spirv` has already accepted.
    """
    words, _ = _words(bytes(data))
    offset, total = 5, len(words)
    while offset < total:
        count, opcode = words[offset] >> 16, words[offset] & 0xFFFF
        if count == 0 or offset + count > total:
            raise _bad(f"instruction at word {offset} (opcode {opcode}) has word count {count}, past the end or 0")
        yield opcode, words[offset + 1 : offset + count]
        offset += count


def specialize(data: bytes, values: Mapping[int, bytes]) -> bytes:
    """``data`` with the default of each ``OpSpecConstant`` whose SpecId is in ``values`` replaced by those bytes
    (little-endian, 4 or 8), as a pipeline's specialization sets it; what inspection then reports (array lengths,
    sizes) is what the device gets. Bool constants and ``OpSpecConstantOp`` are left as they are. The result is
    little-endian whatever the input's byte order."""
    words, _ = _words(bytes(data))
    spec_ids: dict[int, int] = {}
    positions: list[tuple[int, int, int]] = []  # (result id, word offset of the literal, literal words)
    offset, total = 5, len(words)
    while offset < total:
        count, opcode = words[offset] >> 16, words[offset] & 0xFFFF
        if count == 0 or offset + count > total:
            raise _bad(f"instruction at word {offset} (opcode {opcode}) has word count {count}, past the end or 0")
        if opcode == _OP_DECORATE and count >= 4 and words[offset + 2] == _DEC_SPEC_ID:
            spec_ids[words[offset + 1]] = words[offset + 3]
        elif opcode == _OP_SPEC_CONSTANT and count >= 4:
            positions.append((words[offset + 2], offset + 3, count - 3))
        offset += count
    patched = array("I", words)
    for result, start, width in positions:
        spec_id = spec_ids.get(result)
        if spec_id is None or spec_id not in values:
            continue
        value = bytes(values[spec_id])[: 4 * width].ljust(4 * width, b"\0")
        for number in range(width):
            patched[start + number] = int.from_bytes(value[4 * number : 4 * number + 4], "little")
    if sys.byteorder != "little":  # pragma: no cover - every supported platform is little-endian
        patched.byteswap()
    return patched.tobytes()


def _words(data: bytes) -> tuple[array[int], bool]:
    if len(data) < 20:
        raise _bad(f"{len(data)} bytes is shorter than the 5-word header")
    if len(data) % 4:
        raise _bad(f"{len(data)} bytes is not a whole number of 32-bit words")
    first = int.from_bytes(data[:4], "little")
    if first == SPIRV_MAGIC:
        big = False
    elif first == _SWAPPED_MAGIC:
        big = True
    else:
        raise _bad(f"first word {first:#010x} is not the magic number {SPIRV_MAGIC:#010x} in either byte order")
    words = array("I")
    if words.itemsize != 4:  # pragma: no cover - every supported platform has a 4-byte "I"
        words = array("L")
    words.frombytes(data)
    if big != (sys.byteorder == "big"):
        words.byteswap()
    return words, big


def _string(operands: array[int], start: int, what: str) -> tuple[str, int]:
    """Decode a nul-terminated literal string from ``operands[start:]``; returns (text, next index)."""
    raw = bytearray()
    index = start
    while index < len(operands):
        chunk = operands[index].to_bytes(4, "little")
        index += 1
        nul = chunk.find(0)
        if nul >= 0:
            raw += chunk[:nul]
            try:
                return raw.decode("utf-8"), index
            except UnicodeDecodeError:
                raise _bad(f"{what} is not valid UTF-8") from None
        raw += chunk
    raise _bad(f"{what} has no terminating NUL inside its instruction")


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


# --------------------------------------------------------------------------- types


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
    """Inspect one SPIR-V module (see the module docstring for the promise).

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


# --------------------------------------------------------------------------- capabilities


def required_capabilities(module: SpirvModule) -> frozenset[str]:
    """Every capability the module declares (a device must support all of them)."""
    return frozenset(module.capabilities)


def missing_capabilities(module: SpirvModule, supported: Collection[str]) -> tuple[str, ...]:
    """Declared capabilities not in ``supported``, in declaration order."""
    return tuple(name for name in module.capabilities if name not in supported)


def check_capabilities(module: SpirvModule, supported: Collection[str], *, device: str = "this device") -> None:
    """UNSUPPORTED naming the first capability ``device`` lacks; nothing when all are there."""
    missing = missing_capabilities(module, supported)
    if missing:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"SPIR-V module needs capability {missing[0]}"
            + (f" (and {', '.join(missing[1:])})" if missing[1:] else "")
            + f", which {device} does not support",
        )


VULKAN_CORE_CAPABILITIES = frozenset(
    {
        "Matrix",
        "Shader",
        "InputAttachment",
        "Sampled1D",
        "Image1D",
        "SampledBuffer",
        "ImageBuffer",
        "ImageQuery",
        "DerivativeControl",
    }
)
"""Capabilities every Vulkan 1.0 implementation supports."""

VULKAN_FEATURE_CAPABILITIES: Mapping[str, tuple[str, ...]] = {
    "Geometry": ("geometryShader",),
    "Tessellation": ("tessellationShader",),
    "Float64": ("shaderFloat64",),
    "Int64": ("shaderInt64",),
    "Int16": ("shaderInt16",),
    "Int64Atomics": ("shaderBufferInt64Atomics", "shaderSharedInt64Atomics"),
    "Float16": ("shaderFloat16",),
    "Int8": ("shaderInt8",),
    "ImageGatherExtended": ("shaderImageGatherExtended",),
    "StorageImageMultisample": ("shaderStorageImageMultisample",),
    "UniformBufferArrayDynamicIndexing": ("shaderUniformBufferArrayDynamicIndexing",),
    "SampledImageArrayDynamicIndexing": ("shaderSampledImageArrayDynamicIndexing",),
    "StorageBufferArrayDynamicIndexing": ("shaderStorageBufferArrayDynamicIndexing",),
    "StorageImageArrayDynamicIndexing": ("shaderStorageImageArrayDynamicIndexing",),
    "ClipDistance": ("shaderClipDistance",),
    "CullDistance": ("shaderCullDistance",),
    "ImageCubeArray": ("imageCubeArray",),
    "SampleRateShading": ("sampleRateShading",),
    "SparseResidency": ("shaderResourceResidency",),
    "MinLod": ("shaderResourceMinLod",),
    "SampledCubeArray": ("imageCubeArray",),
    "ImageMSArray": ("shaderStorageImageMultisample",),
    "StorageImageExtendedFormats": ("shaderStorageImageExtendedFormats",),
    "InterpolationFunction": ("sampleRateShading",),
    "StorageImageReadWithoutFormat": ("shaderStorageImageReadWithoutFormat",),
    "StorageImageWriteWithoutFormat": ("shaderStorageImageWriteWithoutFormat",),
    "MultiViewport": ("multiViewport",),
    "DrawParameters": ("shaderDrawParameters",),
    "MultiView": ("multiview",),
    "DeviceGroup": (),
    "StorageBuffer16BitAccess": ("storageBuffer16BitAccess",),
    # SPV_KHR_float_controls (Vulkan 1.2): the capability is usable where the device reports the
    # behaviour for some width (VkPhysicalDeviceFloatControlsProperties); the width a module's
    # execution mode names is checked separately (:func:`float_mode_property`).
    "DenormPreserve": tuple(f"shaderDenormPreserveFloat{w}" for w in (16, 32, 64)),
    "DenormFlushToZero": tuple(f"shaderDenormFlushToZeroFloat{w}" for w in (16, 32, 64)),
    "SignedZeroInfNanPreserve": tuple(f"shaderSignedZeroInfNanPreserveFloat{w}" for w in (16, 32, 64)),
    "RoundingModeRTE": tuple(f"shaderRoundingModeRTEFloat{w}" for w in (16, 32, 64)),
    "RoundingModeRTZ": tuple(f"shaderRoundingModeRTZFloat{w}" for w in (16, 32, 64)),
    "UniformAndStorageBuffer16BitAccess": ("uniformAndStorageBuffer16BitAccess",),
    "StoragePushConstant16": ("storagePushConstant16",),
    "StorageInputOutput16": ("storageInputOutput16",),
    "StorageBuffer8BitAccess": ("storageBuffer8BitAccess",),
    "UniformAndStorageBuffer8BitAccess": ("uniformAndStorageBuffer8BitAccess",),
    "StoragePushConstant8": ("storagePushConstant8",),
    "VariablePointersStorageBuffer": ("variablePointersStorageBuffer",),
    "VariablePointers": ("variablePointers",),
    "VulkanMemoryModel": ("vulkanMemoryModel",),
    "VulkanMemoryModelDeviceScope": ("vulkanMemoryModelDeviceScope",),
    "PhysicalStorageBufferAddresses": ("bufferDeviceAddress",),
    "ShaderNonUniform": ("descriptorIndexing",),
    "RuntimeDescriptorArray": ("runtimeDescriptorArray",),
    "StorageBufferArrayNonUniformIndexing": ("shaderStorageBufferArrayNonUniformIndexing",),
    "UniformBufferArrayNonUniformIndexing": ("shaderUniformBufferArrayNonUniformIndexing",),
    "SampledImageArrayNonUniformIndexing": ("shaderSampledImageArrayNonUniformIndexing",),
    "StorageImageArrayNonUniformIndexing": ("shaderStorageImageArrayNonUniformIndexing",),
    "DemoteToHelperInvocation": ("shaderDemoteToHelperInvocation",),
    "DotProduct": ("shaderIntegerDotProduct",),
    "DotProductInputAll": ("shaderIntegerDotProduct",),
    "DotProductInput4x8Bit": ("shaderIntegerDotProduct",),
    "DotProductInput4x8BitPacked": ("shaderIntegerDotProduct",),
    "ShaderClockKHR": ("shaderSubgroupClock", "shaderDeviceClock"),
    "AtomicFloat32AddEXT": ("shaderBufferFloat32AtomicAdd", "shaderSharedFloat32AtomicAdd"),
    "AtomicFloat64AddEXT": ("shaderBufferFloat64AtomicAdd", "shaderSharedFloat64AtomicAdd"),
}
"""Capability → the Vulkan feature names (any one suffices) that enable it (Vulkan spec, "SPIR-V Environment")."""

VULKAN_SUBGROUP_CAPABILITIES: Mapping[str, int] = {
    "GroupNonUniform": 0x1,
    "GroupNonUniformVote": 0x2,
    "GroupNonUniformArithmetic": 0x4,
    "GroupNonUniformBallot": 0x8,
    "GroupNonUniformShuffle": 0x10,
    "GroupNonUniformShuffleRelative": 0x20,
    "GroupNonUniformClustered": 0x40,
    "GroupNonUniformQuad": 0x80,
}
"""Capability → VkSubgroupFeatureFlagBits bit in VkPhysicalDeviceSubgroupProperties.supportedOperations."""


def float_mode_property(mode: str, width: int) -> str:
    """The VkPhysicalDeviceFloatControlsProperties member that allows execution mode ``mode`` (a
    :data:`FLOAT_CONTROL_MODES` name) for ``width``-bit floats, e.g. ``shaderDenormPreserveFloat32``."""
    return f"shader{mode}Float{width}"


def vulkan_supported_capabilities(features: Mapping[str, bool], subgroup_operations: int = 0) -> frozenset[str]:
    """The SPIR-V capabilities a Vulkan device supports, from its enabled feature booleans.

    ``features`` maps Vulkan feature names (as in VkPhysicalDeviceFeatures and
    the 1.1/1.2/1.3 feature structs) to their values; ``subgroup_operations``
    is VkPhysicalDeviceSubgroupProperties.supportedOperations. Capabilities
    not listed here (e.g. Kernel, Addresses) are never supported by Vulkan.
    """
    supported = set(VULKAN_CORE_CAPABILITIES)
    for capability, names in VULKAN_FEATURE_CAPABILITIES.items():
        if not names or any(features.get(name, False) for name in names):
            supported.add(capability)
    for capability, bit in VULKAN_SUBGROUP_CAPABILITIES.items():
        if subgroup_operations & bit:
            supported.add(capability)
    return frozenset(supported)


def opencl_supported_capabilities(
    extensions: Iterable[str],
    *,
    images: bool = False,
    opencl_c_major: int = 1,
) -> frozenset[str]:
    """The SPIR-V capabilities an OpenCL device supports (OpenCL SPIR-V environment spec).

    Always: Addresses, Linkage, Kernel, Vector16, Int8, Int16, Int64,
    Float16Buffer. ``cl_khr_fp16`` → Float16; ``cl_khr_fp64`` → Float64;
    ``cl_khr_int64_base_atomics`` → Int64Atomics; ``images`` → ImageBasic,
    LiteralSampler, Sampled1D, Image1D, SampledBuffer, ImageBuffer; OpenCL C
    2.x → GenericPointer, Groups, DeviceEnqueue, Pipes.
    """
    names = set(extensions)
    supported = {"Addresses", "Linkage", "Kernel", "Vector16", "Int8", "Int16", "Int64", "Float16Buffer"}
    if "cl_khr_fp16" in names:
        supported.add("Float16")
    if "cl_khr_fp64" in names:
        supported.add("Float64")
    if "cl_khr_int64_base_atomics" in names:
        supported.add("Int64Atomics")
    if images:
        supported |= {"ImageBasic", "LiteralSampler", "Sampled1D", "Image1D", "SampledBuffer", "ImageBuffer"}
    if opencl_c_major >= 2:
        supported |= {"GenericPointer", "Groups", "DeviceEnqueue", "Pipes"}
    return frozenset(supported)
