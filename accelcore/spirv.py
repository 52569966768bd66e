"""Pure-Python SPIR-V inspection: what a module is and what it binds.

Promise: :func:`inspect_spirv` walks the module once, word by word, with a
bounds check on the header and on every instruction's word count, so it ends
in time linear in the input on any bytes. It reports the flavour (Vulkan or
OpenCL), version, id bound, capabilities, entry points with their execution
model, ``LocalSize`` and (for kernels) parameters, and for Vulkan modules
every descriptor variable with its set, binding, storage class and the access
its decorations allow. Malformed input raises :class:`BackendError`
INVALID_ARGUMENT naming the offending word; nothing else escapes. It checks
structure, not semantics: run ``spirv-val`` for full validation.

Capability helpers (:func:`check_capabilities`, :func:`vulkan_supported_capabilities`,
:func:`opencl_supported_capabilities`) let a provider refuse a module that
names a capability its device lacks (UNSUPPORTED, naming the capability).
"""

from __future__ import annotations

import enum
import sys
from array import array
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .errors import BackendError, ErrorKind
from .flags import AccessMode

__all__ = [
    "SPIRV_MAGIC",
    "Descriptor",
    "EntryPoint",
    "Flavour",
    "KernelParameter",
    "SpirvModule",
    "capability_name",
    "check_capabilities",
    "inspect_spirv",
    "is_spirv",
    "missing_capabilities",
    "opencl_supported_capabilities",
    "required_capabilities",
    "vulkan_supported_capabilities",
]

SPIRV_MAGIC = 0x07230203
_SWAPPED_MAGIC = 0x03022307
_MAX_TYPE_DEPTH = 32

# Opcodes used here.
_OP_NAME = 5
_OP_EXTENSION = 10
_OP_MEMORY_MODEL = 14
_OP_ENTRY_POINT = 15
_OP_EXECUTION_MODE = 16
_OP_CAPABILITY = 17
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
_DEC_BLOCK = 2
_DEC_BUFFER_BLOCK = 3
_DEC_ARRAY_STRIDE = 6
_DEC_MATRIX_STRIDE = 7
_DEC_BUILTIN = 11
_DEC_NON_WRITABLE = 24
_DEC_NON_READABLE = 25
_DEC_BINDING = 33
_DEC_DESCRIPTOR_SET = 34
_DEC_OFFSET = 35
_DEC_FUNC_PARAM_ATTR = 38
_FUNC_PARAM_NO_WRITE = 6
_BUILTIN_WORKGROUP_SIZE = 25

# Execution modes.
_MODE_LOCAL_SIZE = 17
_MODE_LOCAL_SIZE_ID = 38

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


@dataclass(frozen=True, slots=True)
class KernelParameter:
    """One parameter of an OpenCL kernel entry point.

    ``storage_class`` is the pointer's storage class (5 CrossWorkgroup =
    ``__global``, 4 Workgroup = ``__local``, 0 UniformConstant = ``__constant``)
    or None for a by-value argument; ``value_bytes`` the size of the pointee
    (pointers) or the value (by-value), None when not computable;
    ``no_write`` is FuncParamAttr NoWrite.
    """

    index: int
    id: int
    storage_class: int | None
    value_bytes: int | None
    no_write: bool

    @property
    def is_global_buffer(self) -> bool:
        return self.storage_class in (_SC_CROSS_WORKGROUP, _SC_UNIFORM_CONSTANT)


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """One OpEntryPoint. ``local_size`` is None when the module fixes none."""

    execution_model: int
    name: str
    id: int
    local_size: tuple[int, int, int] | None
    interface: tuple[int, ...]
    parameters: tuple[KernelParameter, ...] = ()

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
    runtime-sized array).
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
        self.names: dict[int, str] = {}
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
    elif opcode == _OP_NAME:
        _need(ops, 2, opcode, offset)
        module.names[ops[0]] = _string(ops, 1, f"OpName at word {offset}")[0]
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
        module.constants[module.check_id(ops[1], "constant")] = ops[2]
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
    elif opcode == _OP_FUNCTION_PARAMETER:
        _need(ops, 2, opcode, offset)
        if function is None:
            raise _bad(f"OpFunctionParameter at word {offset} outside a function")
        module.functions[function].append((ops[0], module.check_id(ops[1], "parameter")))


# --------------------------------------------------------------------------- types


def _type_bytes(module: _Module, type_id: int, depth: int = 0) -> int | None:
    """Byte size of a type under its explicit layout decorations; None when unknown."""
    if depth > _MAX_TYPE_DEPTH or type_id not in module.types:
        return None
    opcode, ops = module.types[type_id]
    if opcode in (_OP_TYPE_INT, _OP_TYPE_FLOAT) and ops:
        return ops[0] // 8 if ops[0] % 8 == 0 else None
    if opcode == _OP_TYPE_VECTOR and len(ops) >= 2:
        component = _type_bytes(module, ops[0], depth + 1)
        return None if component is None else component * ops[1]
    if opcode == _OP_TYPE_MATRIX and len(ops) >= 2:
        column = _type_bytes(module, ops[0], depth + 1)
        return None if column is None else column * ops[1]
    if opcode == _OP_TYPE_ARRAY and len(ops) >= 2:
        length = module.constants.get(ops[1])
        stride = module.value(type_id, _DEC_ARRAY_STRIDE) or _type_bytes(module, ops[0], depth + 1)
        return None if length is None or stride is None else length * stride
    if opcode == _OP_TYPE_STRUCT:
        end = 0
        for member, member_type in enumerate(ops):
            size = _type_bytes(module, member_type, depth + 1)
            start = module.member_value(type_id, member, _DEC_OFFSET)
            if size is None or start is None:
                return None
            end = max(end, start + size)
        return end
    if opcode == _OP_TYPE_POINTER:
        return 8
    return None


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


def _descriptor(module: _Module, pointer_type: int, variable: int, storage: int) -> Descriptor:
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


def _workgroup_size_builtin(module: _Module) -> tuple[int, int, int] | None:
    """The default value of the WorkgroupSize built-in constant, which overrides LocalSize."""
    for target, constituents in module.composites.items():
        if module.value(target, _DEC_BUILTIN) == _BUILTIN_WORKGROUP_SIZE:
            return _size_from_constants(module, constituents, f"WorkgroupSize constant {target}")
    return None


def _parameters(module: _Module, function: int) -> tuple[KernelParameter, ...]:
    params = []
    for index, (type_id, param_id) in enumerate(module.functions.get(function, ())):
        entry = module.types.get(type_id)
        storage: int | None = None
        if entry is not None and entry[0] == _OP_TYPE_POINTER and len(entry[1]) >= 2:
            storage = entry[1][0]
            size = _type_bytes(module, entry[1][1])
        else:
            size = _type_bytes(module, type_id)
        no_write = any(
            d == _DEC_FUNC_PARAM_ATTR and lits and lits[0] == _FUNC_PARAM_NO_WRITE
            for d, lits in module.decorations.get(param_id, ())
        )
        params.append(KernelParameter(index, param_id, storage, size, no_write))
    return tuple(params)


def inspect_spirv(data: bytes) -> SpirvModule:
    """Inspect one SPIR-V module (see the module docstring for the promise)."""
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
    builtin_size = _workgroup_size_builtin(module)
    entries = []
    for model, target, name, interface in module.entries:
        size = builtin_size or module.local_sizes.get(target)
        if size is None and target in module.local_size_ids:
            size = _size_from_constants(module, module.local_size_ids[target], f"LocalSizeId of {name!r}")
        params = _parameters(module, target) if model == KERNEL else ()
        entries.append(EntryPoint(model, name, target, size, interface, params))
    descriptors: list[Descriptor] = []
    push_bytes: int | None = 0
    for pointer_type, variable, storage in module.variables:
        if storage == _SC_PUSH_CONSTANT:
            pointer = module.types.get(pointer_type)
            push_bytes = _type_bytes(module, pointer[1][1]) if pointer and len(pointer[1]) >= 2 else None
        elif flavour is Flavour.VULKAN and storage in (_SC_UNIFORM_CONSTANT, _SC_UNIFORM, _SC_STORAGE_BUFFER):
            descriptors.append(_descriptor(module, pointer_type, variable, storage))
    descriptors.sort(key=lambda d: (d.set, d.binding, d.variable_id))
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
        push_constant_bytes=push_bytes,
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
