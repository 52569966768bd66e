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

The package, a module per part (import the public names from the package; an underscore name is internal
to it):

* ``words``: the binary format: the magic number, the opcode, decoration, execution-mode and
  storage-class numbers and their name tables (:func:`capability_name`), :func:`is_spirv`,
  :func:`instructions` and :func:`specialize`.
* ``model``: what inspection reports: :class:`SpirvModule`, :class:`SpirvType`, :class:`StructMember`,
  :class:`EntryPoint`, :class:`KernelParameter`, :class:`Descriptor`, :class:`PushConstantBlock`,
  :class:`SpecConstant`, :class:`Flavour` and the ``KIND_*`` type kinds.
* ``walk``: the one bounded pass over the words, recording what the module declares.
* ``type_graph``: the memoized, step-bounded type graph and the layouts (Vulkan's explicit one, the
  OpenCL C ABI).
* ``reader``: :func:`inspect_spirv`, assembling the result from the walk and the type graph.
* ``capabilities``: what a module needs, what a Vulkan or OpenCL device supports, and the check.

Each imports only the ones listed before it (``capabilities`` only ``model``).
"""

from __future__ import annotations

from .capabilities import (
    VULKAN_CORE_CAPABILITIES,
    VULKAN_FEATURE_CAPABILITIES,
    VULKAN_SUBGROUP_CAPABILITIES,
    check_capabilities,
    float_mode_property,
    missing_capabilities,
    opencl_supported_capabilities,
    required_capabilities,
    vulkan_supported_capabilities,
)
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
    Descriptor,
    EntryPoint,
    Flavour,
    KernelParameter,
    PushConstantBlock,
    SpecConstant,
    SpirvModule,
    SpirvType,
    StructMember,
)
from .reader import (
    TYPE_STEP_LIMIT,
    inspect_spirv,
)
from .words import (
    CAPABILITY_NAMES,
    EXECUTION_MODEL_NAMES,
    FLOAT_CONTROL_MODES,
    GL_COMPUTE,
    KERNEL,
    SPIRV_MAGIC,
    STORAGE_CLASS_NAMES,
    capability_name,
    instructions,
    is_spirv,
    specialize,
)

__all__ = [
    "CAPABILITY_NAMES",
    "EXECUTION_MODEL_NAMES",
    "FLOAT_CONTROL_MODES",
    "GL_COMPUTE",
    "KERNEL",
    "KIND_ARRAY",
    "KIND_BOOL",
    "KIND_FLOAT",
    "KIND_INT",
    "KIND_MATRIX",
    "KIND_OTHER",
    "KIND_POINTER",
    "KIND_RUNTIME_ARRAY",
    "KIND_STRUCT",
    "KIND_VECTOR",
    "SPIRV_MAGIC",
    "STORAGE_CLASS_NAMES",
    "TYPE_STEP_LIMIT",
    "VULKAN_CORE_CAPABILITIES",
    "VULKAN_FEATURE_CAPABILITIES",
    "VULKAN_SUBGROUP_CAPABILITIES",
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
    "float_mode_property",
    "inspect_spirv",
    "instructions",
    "is_spirv",
    "missing_capabilities",
    "opencl_supported_capabilities",
    "required_capabilities",
    "specialize",
    "vulkan_supported_capabilities",
]
