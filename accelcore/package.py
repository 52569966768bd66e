"""Kernel packages: the project's own artifact formats (data model).

``submit`` carries no entry point, dispatch size or argument layout, so a
program artifact carries them. A kernel package wraps exactly one module
(Vulkan SPIR-V, OpenCL SPIR-V, OpenCL C source or an OpenCL device binary)
with its entry point, binding table and dispatch rule. The binary layout,
parser and writer live in :mod:`accelcore.package_codec`; this module is the
typed model shared by both providers.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field

from .errors import BackendError, ErrorKind
from .flags import AccessMode
from .program import ArtifactFormat, TargetIdentity

__all__ = [
    "NO_COUNT_ARGUMENT",
    "Dispatch",
    "DispatchKind",
    "KernelPackage",
    "ModuleKind",
    "PackageBinding",
    "access_allows",
    "format_for",
    "module_kind_of_format",
    "opencl_target_identity",
    "target_accepts",
]

NO_COUNT_ARGUMENT = 0xFFFFFFFF
"""``Dispatch.count_argument`` value meaning: the kernel takes no element count."""


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


def access_allows(declared: AccessMode, requested: AccessMode) -> bool:
    """Whether a kernel that declares ``declared`` accepts a binding with ``requested``.

    Access modes are bit sets (READ=1, WRITE=2, READ_WRITE=3): requested ⊆ declared.
    """
    return int(requested) & ~int(declared) == 0


@dataclass(frozen=True, slots=True)
class PackageBinding:
    """One row of the binding table.

    ``slot`` is the contract's slot number; ``native_index`` the descriptor
    binding (Vulkan, set 0) or kernel argument index (OpenCL); ``access`` the
    most the kernel does with it; ``element_size`` bytes per element.
    """

    slot: int
    native_index: int
    access: AccessMode
    element_size: int = 4


class DispatchKind(enum.IntEnum):
    FIXED = 1
    """``groups`` workgroups, whatever the bindings."""
    FROM_BINDING = 2
    """elements = ceil(range bytes of ``slot`` / its element size); groups = ceil(elements / local_size[0])."""


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

    def elements_and_groups(
        self, local_size: tuple[int, int, int], range_bytes: int, element_size: int
    ) -> tuple[int, tuple[int, int, int]]:
        """(element count, workgroup grid) for a bound range of ``range_bytes``."""
        if self.kind is DispatchKind.FIXED:
            x, y, z = self.groups
            return x * y * z * local_size[0] * local_size[1] * local_size[2], self.groups
        elements = -(-range_bytes // element_size)
        return elements, (-(-elements // local_size[0]), 1, 1)


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

    @property
    def format(self) -> ArtifactFormat:
        return format_for(self.module_kind)

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


def target_accepts(recorded: TargetIdentity, device: TargetIdentity) -> bool:
    """Whether a package that records ``recorded`` may be loaded on ``device``.

    All-zero ``recorded`` means "any target"; otherwise every word must match.
    """
    return not any(recorded.words) or recorded.words == device.words
