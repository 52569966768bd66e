"""The SPIR-V binary format: the header, the numbers this package reads and their names, and word-level passes.

Owns the magic number, the opcode, decoration, execution-mode and storage-class numbers, the name tables
(execution models, storage classes, capabilities: :func:`capability_name`), the INVALID_ARGUMENT wording of a
malformed module (``_bad``), turning bytes into host-order words (``_words``), literal strings (``_string``),
and the passes that need no inspection: :func:`is_spirv`, :func:`instructions` and :func:`specialize`.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Mapping

from ...contract.errors import BackendError, ErrorKind

SPIRV_MAGIC = 0x07230203
_SWAPPED_MAGIC = 0x03022307


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
