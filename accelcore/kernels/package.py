"""Kernel packages: the project's own artifact formats (data model).

``submit`` carries no entry point, dispatch size or argument layout, so a
program artifact carries them. A kernel package wraps exactly one module
(Vulkan SPIR-V, OpenCL SPIR-V, OpenCL C source or an OpenCL device binary)
with its entry point, binding table and dispatch rule. The binary layout,
parser and writer live in :mod:`accelcore.kernels.package_codec`; this module is the
typed model shared by both providers.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field

from ..contract.errors import BackendError, ErrorKind
from ..contract.flags import AccessMode
from ..contract.program import ArtifactFormat, TargetIdentity
from .values import ScalarType, ValueType

__all__ = [
    "ANY_LOCAL_SIZE",
    "MAX_AGGREGATE_BYTES",
    "NO_COUNT_ARGUMENT",
    "ArgumentKind",
    "ArgumentName",
    "Coverage",
    "DescriptorType",
    "Dispatch",
    "DispatchKind",
    "KernelArgument",
    "KernelPackage",
    "ModuleKind",
    "PackageBinding",
    "SpecConstant",
    "format_for",
    "module_kind_of_format",
    "opencl_target_identity",
    "target_accepts",
    "target_differences",
    "target_from_text",
    "target_text",
]

NO_COUNT_ARGUMENT = 0xFFFFFFFF
"""``Dispatch.count_argument`` value meaning: the kernel takes no element count."""
ANY_LOCAL_SIZE = (0, 0, 0)
MAX_AGGREGATE_BYTES = 4096
"""The largest by-value struct/union a package records (OpenCL guarantees CL_DEVICE_MAX_PARAMETER_SIZE >= 1024
for all arguments together; the device's own limit is checked at load)."""
"""``KernelPackage.local_size`` of an OpenCL package that lets the driver choose (``local_work_size`` NULL)."""


class ModuleKind(enum.IntEnum):
    """The module a package wraps; each kind is its own ``ArtifactFormat``."""

    SPIRV_VULKAN = 1
    SPIRV_OPENCL = 2
    OPENCL_SOURCE = 3
    OPENCL_BINARY = 4


_FORMAT_BASE = 0x4B500000  # "KP" + kind
"""ArtifactFormat numbers: 0x4B50000N for ModuleKind N (documented in docs/artifact-format.md)."""


def format_for(kind: ModuleKind) -> ArtifactFormat:
    """The ``ArtifactFormat`` of packages wrapping a ``kind`` module."""
    return ArtifactFormat(_FORMAT_BASE | int(kind))


def module_kind_of_format(artifact_format: ArtifactFormat) -> ModuleKind:
    """Inverse of :func:`format_for`; a foreign format → UNSUPPORTED."""
    value = int(artifact_format)
    if value & 0xFFFFFF00 == _FORMAT_BASE:
        try:
            return ModuleKind(value & 0xFF)
        except ValueError:
            pass
    known = ", ".join(f"{int(format_for(k)):#010x} ({k.name})" for k in ModuleKind)
    raise BackendError(ErrorKind.UNSUPPORTED, f"artifact format {value:#010x} is not a kernel package format ({known})")


class DescriptorType(enum.IntEnum):
    """What a binding is bound as (Vulkan's descriptor type; OpenCL buffers are STORAGE_BUFFER)."""

    STORAGE_BUFFER = 1
    UNIFORM_BUFFER = 2


class Coverage(enum.IntEnum):
    """How many elements of a binding one dispatch touches (the engine's coverage check)."""

    UNKNOWN = 0
    """Not stated: the bound range is not compared with the dispatch."""
    PER_WORK_ITEM = 1
    """One element per dispatched element: the range needs at least the dispatch's element count."""
    EXACT = 2
    """Exactly ``coverage_elements`` elements: the range needs at least that many."""


@dataclass(frozen=True, slots=True)
class PackageBinding:
    """One row of the binding table.

    ``slot`` is the contract's slot number; ``native_index`` the descriptor
    binding (Vulkan, in descriptor set ``set``) or kernel argument index
    (OpenCL, ``set`` 0); ``access`` the most the kernel does with it;
    ``element_size`` bytes per element; ``descriptor_type`` how it is bound;
    ``coverage`` (with ``coverage_elements`` for EXACT) how many elements a
    dispatch touches.
    """

    slot: int
    native_index: int
    access: AccessMode
    element_size: int = 4
    set: int = 0
    descriptor_type: DescriptorType = DescriptorType.STORAGE_BUFFER
    coverage: Coverage = Coverage.UNKNOWN
    coverage_elements: int = 0

    def required_elements(self, dispatch_elements: int) -> int | None:
        """Elements the bound range must hold for a dispatch of ``dispatch_elements``; None when unknown."""
        if self.coverage is Coverage.PER_WORK_ITEM:
            return dispatch_elements
        if self.coverage is Coverage.EXACT:
            return self.coverage_elements
        return None

    @property
    def is_v1(self) -> bool:
        """Whether version 1 of the format can express this row."""
        return (
            self.set == 0
            and self.descriptor_type is DescriptorType.STORAGE_BUFFER
            and self.coverage is Coverage.UNKNOWN
        )


class ArgumentKind(enum.IntEnum):
    """An OpenCL kernel argument that is not a buffer (the package format's record kinds 1 and 2)."""

    VALUE = 1
    """A by-value argument: typed bytes set once at load (``clSetKernelArg`` with the value)."""
    LOCAL = 2
    """A ``__local`` pointer: ``local_bytes`` of work-group memory (``clSetKernelArg(index, size, NULL)``)."""


@dataclass(frozen=True, slots=True)
class KernelArgument:
    """A by-value or ``__local`` OpenCL kernel argument recorded in the package.

    Build with :meth:`value` (typed, checked), :meth:`aggregate` or :meth:`local`. ``data`` is
    exactly ``value_type.size`` bytes for a typed VALUE, 1..:data:`MAX_AGGREGATE_BYTES` raw bytes
    (``value_type`` None) for a by-value struct/union in its OpenCL C layout, and empty for LOCAL.
    """

    index: int
    kind: ArgumentKind
    value_type: ValueType | None = None
    data: bytes = b""
    local_bytes: int = 0

    @classmethod
    def value(cls, index: int, value_type: ValueType, data: bytes) -> KernelArgument:
        return cls(index, ArgumentKind.VALUE, value_type, bytes(data))

    @classmethod
    def aggregate(cls, index: int, data: bytes) -> KernelArgument:
        """A by-value struct or union: its bytes as the kernel lays them out (members, padding)."""
        return cls(index, ArgumentKind.VALUE, None, bytes(data))

    @property
    def is_aggregate(self) -> bool:
        return self.kind is ArgumentKind.VALUE and self.value_type is None

    @classmethod
    def local(cls, index: int, local_bytes: int) -> KernelArgument:
        return cls(index, ArgumentKind.LOCAL, None, b"", local_bytes)


@dataclass(frozen=True, slots=True)
class ArgumentName:
    """The source's name of OpenCL kernel argument ``index`` and, for a buffer, its declared element type (for
    a by-value argument its type; None when unknown). An OPENCL_BINARY package records them (the format's
    record kind 5; ``accel compile`` writes them from the source it built), because a device binary says
    nothing about its arguments: hosts still bind its buffers by name. Providers ignore them."""

    index: int
    name: str
    element: ValueType | None = None


@dataclass(frozen=True, slots=True)
class SpecConstant:
    """A Vulkan specialization constant: ``SpecId`` → typed scalar bytes.

    ``data`` is the type's width in bytes, except bool: 4 bytes (a VkBool32, 0 or 1).
    """

    spec_id: int
    value_type: ValueType
    data: bytes

    @property
    def expected_bytes(self) -> int:
        return 4 if self.value_type.scalar is ScalarType.BOOL else self.value_type.size


class DispatchKind(enum.IntEnum):
    FIXED = 1
    """``groups`` workgroups, whatever the bindings."""
    FROM_BINDING = 2
    """elements = ceil(range bytes of ``slot`` / its element size); groups = ceil(elements / local_size[0])."""
    GLOBAL = 3
    """``global_size`` work-items (1-, 2- or 3-D); Vulkan launches ceil(global / local) groups per axis."""


@dataclass(frozen=True, slots=True)
class Dispatch:
    """How many workgroups a submission launches.

    ``count_argument``: where the element count is passed to the kernel — the
    OpenCL kernel argument index of a ``uint``, or for Vulkan any value other
    than :data:`NO_COUNT_ARGUMENT` means a 4-byte push constant at offset 0.
    """

    kind: DispatchKind
    groups: tuple[int, int, int] = (1, 1, 1)
    slot: int = 0
    count_argument: int = NO_COUNT_ARGUMENT
    global_size: tuple[int, int, int] = (0, 0, 0)
    """GLOBAL only: work-items per axis (unused axes 1); (0, 0, 0) for the other kinds."""

    @classmethod
    def global_items(cls, *size: int, count_argument: int = NO_COUNT_ARGUMENT) -> Dispatch:
        """A GLOBAL dispatch of ``size`` work-items (1 to 3 axes; missing axes are 1)."""
        if not 1 <= len(size) <= 3:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"a global size has 1 to 3 axes, got {len(size)}")
        full = (*size, 1, 1)[:3]
        return cls(DispatchKind.GLOBAL, count_argument=count_argument, global_size=(full[0], full[1], full[2]))

    def elements_and_groups(
        self, local_size: tuple[int, int, int], range_bytes: int, element_size: int
    ) -> tuple[int, tuple[int, int, int]]:
        """(element count, workgroup grid) for a bound range of ``range_bytes``.

        With ``local_size`` :data:`ANY_LOCAL_SIZE` (OpenCL lets the driver choose) the grid is
        the work-item count per axis (there are no groups to count on the host).
        """
        if self.kind is DispatchKind.FIXED:
            x, y, z = self.groups
            return x * y * z * local_size[0] * local_size[1] * local_size[2], self.groups
        if self.kind is DispatchKind.GLOBAL:
            gx, gy, gz = self.global_size
            if local_size == ANY_LOCAL_SIZE:
                return gx * gy * gz, self.global_size
            return gx * gy * gz, (-(-gx // local_size[0]), -(-gy // local_size[1]), -(-gz // local_size[2]))
        elements = -(-range_bytes // element_size)
        if local_size == ANY_LOCAL_SIZE:
            return elements, (elements, 1, 1)
        return elements, (-(-elements // local_size[0]), 1, 1)

    def work_items(
        self, local_size: tuple[int, int, int], range_bytes: int, element_size: int
    ) -> tuple[int, tuple[int, int, int]]:
        """(element count, global work size in work-items per axis) — what OpenCL enqueues.

        FIXED and FROM_BINDING launch whole groups (FROM_BINDING rounds the element count up to
        a multiple of the local size, or passes it as is when the driver chooses the local size);
        GLOBAL passes ``global_size`` as given.
        """
        elements, grid = self.elements_and_groups(local_size, range_bytes, element_size)
        if self.kind is DispatchKind.GLOBAL or local_size == ANY_LOCAL_SIZE:
            return elements, (self.global_size if self.kind is DispatchKind.GLOBAL else grid)
        return elements, (grid[0] * local_size[0], grid[1] * local_size[1], grid[2] * local_size[2])


@dataclass(frozen=True, slots=True)
class KernelPackage:
    """A whole kernel package (see docs/artifact-format.md)."""

    module_kind: ModuleKind
    entry_point: str
    local_size: tuple[int, int, int]
    bindings: tuple[PackageBinding, ...]
    dispatch: Dispatch
    module: bytes
    build_options: str = ""
    target: TargetIdentity = field(default_factory=TargetIdentity.any)
    arguments: tuple[KernelArgument, ...] = ()
    """OpenCL by-value and ``__local`` arguments, set once at load (format version 2)."""
    push_constants: bytes = b""
    """Vulkan: the whole push-constant block, passed with every dispatch (format version 2)."""
    spec_constants: tuple[SpecConstant, ...] = ()
    """Vulkan: specialization constants applied at pipeline creation (format version 2)."""
    argument_names: tuple[ArgumentName, ...] = ()
    """OPENCL_BINARY: the source's argument names, by increasing index (format version 2, record kind 5)."""

    @property
    def format(self) -> ArtifactFormat:
        return format_for(self.module_kind)

    @property
    def version(self) -> int:
        """The lowest format version that expresses this package (1 unless it uses a version-2 field)."""
        v2 = (
            self.arguments
            or self.push_constants
            or self.spec_constants
            or self.argument_names
            or self.dispatch.kind is DispatchKind.GLOBAL
            or tuple(self.local_size) == ANY_LOCAL_SIZE
            or not all(b.is_v1 for b in self.bindings)
        )
        return 2 if v2 else 1

    def argument(self, index: int) -> KernelArgument | None:
        for argument in self.arguments:
            if argument.index == index:
                return argument
        return None

    def binding_for_slot(self, slot: int) -> PackageBinding | None:
        for binding in self.bindings:
            if binding.slot == slot:
                return binding
        return None


# --------------------------------------------------------------------------- target identity

OPENCL_TARGET_SCHEMA = 1
"""Word 0 of an OpenCL device-binary ``TargetIdentity`` (docs/artifact-format.md)."""


def _text_word(text: str) -> int:
    """First 4 bytes (little-endian) of SHA-256 of the UTF-8 text, forced nonzero."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little") or 1


def opencl_target_identity(
    platform_name: str,
    device_name: str,
    driver_version: str,
    *,
    platform_version: str = "",
    device_version: str = "",
    vendor_id: int = 0,
    address_bits: int = 0,
) -> TargetIdentity:
    """The ``TargetIdentity`` an OPENCL_BINARY package records for the device it was built for.

    Words: 0 schema (1); 1 platform name; 2 device name; 3 driver version;
    4 platform version; 5 device version (each a text hash word, see
    docs/artifact-format.md); 6 CL_DEVICE_VENDOR_ID; 7 CL_DEVICE_ADDRESS_BITS;
    8-11 zero. Strings are compared exactly (no trimming).
    """
    words = (
        OPENCL_TARGET_SCHEMA,
        _text_word(platform_name),
        _text_word(device_name),
        _text_word(driver_version),
        _text_word(platform_version),
        _text_word(device_version),
        vendor_id,
        address_bits,
        0,
        0,
        0,
        0,
    )
    return TargetIdentity(words)


OPENCL_TARGET_FIELDS = (
    "schema",
    "platform name",
    "device name",
    "driver version",
    "platform version",
    "device version",
    "vendor id",
    "address bits",
)
"""What words 0-7 of a schema-1 OpenCL ``TargetIdentity`` record (8-11 are reserved zeros)."""


def target_differences(recorded: TargetIdentity, device: TargetIdentity) -> list[str]:
    """The fields (:data:`OPENCL_TARGET_FIELDS`) in which two OpenCL identities differ, in word order.

    Words are hashes, so this names *which* answers differ, never their values. Identities of another
    schema differ as a whole: ``["schema"]``."""
    if recorded.words[0] != device.words[0] or recorded.words[0] != OPENCL_TARGET_SCHEMA:
        return [] if recorded.words == device.words else ["schema"]
    differ = [i for i, (a, b) in enumerate(zip(recorded.words, device.words, strict=True)) if a != b]
    names = [OPENCL_TARGET_FIELDS[i] for i in differ if i < len(OPENCL_TARGET_FIELDS)]
    return names + (["reserved words"] if any(i >= len(OPENCL_TARGET_FIELDS) for i in differ) else [])


def target_text(identity: TargetIdentity) -> str:
    """The twelve words as text, ``0x00000001 0x…`` (a device record's ``target_identity``)."""
    return " ".join(f"{word:#010x}" for word in identity.words)


def target_from_text(text: str) -> TargetIdentity:
    """Inverse of :func:`target_text` (any integer spelling Python reads); INVALID_ARGUMENT if malformed."""
    try:
        words = tuple(int(word, 0) for word in text.split())
    except ValueError:
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"target identity {text!r} is not twelve u32 words") from None
    return TargetIdentity(words)


def target_accepts(recorded: TargetIdentity, device: TargetIdentity) -> bool:
    """Whether a package that records ``recorded`` may be loaded on ``device``.

    All-zero ``recorded`` means "any target"; otherwise every word must match.
    """
    return not any(recorded.words) or recorded.words == device.words
