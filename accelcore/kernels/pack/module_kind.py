"""Which kind a raw module is (:func:`detect_module_kind`): SPIR-V of either flavour, an OpenCL device
binary (PoCL, ELF or rusticl) or OpenCL C source; anything else is INVALID_ARGUMENT asking for ``kind=``."""

from __future__ import annotations

from ..package import ModuleKind
from ..spirv import Flavour, inspect_spirv, is_spirv
from .options import _invalid

POCL_BINARY_PREFIX = b"poclbin"
ELF_MAGIC = b"\x7fELF"
"""Intel's OpenCL CPU runtime (and other LLVM-based stacks) write program binaries as ELF containers."""


def _is_rusticl_binary(data: bytes) -> bool:
    """Observed layout of Mesa rusticl (22.3.6) program binaries: a 12-byte header (u32 1, u32 byte count
    after the header, u32 binary type) followed by SPIR-V. Mesa-internal, so only a detection hint."""
    if len(data) < 32:
        return False
    version, length = int.from_bytes(data[0:4], "little"), int.from_bytes(data[4:8], "little")
    return version == 1 and length == len(data) - 12 and is_spirv(data[12:16])


def detect_module_kind(data: bytes) -> ModuleKind:
    """SPIR-V magic → the SPIR-V kind of its flavour; a PoCL (``poclbin``), ELF (Intel) or rusticl binary →
    OPENCL_BINARY;
    UTF-8 text → OPENCL_SOURCE; anything else → INVALID_ARGUMENT asking for ``kind=``."""
    if is_spirv(data):
        module = inspect_spirv(data)
        return ModuleKind.SPIRV_VULKAN if module.flavour is Flavour.VULKAN else ModuleKind.SPIRV_OPENCL
    if data.startswith(POCL_BINARY_PREFIX) or data.startswith(ELF_MAGIC) or _is_rusticl_binary(data):
        return ModuleKind.OPENCL_BINARY
    if data and b"\0" not in data:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return ModuleKind.OPENCL_SOURCE
    raise _invalid(
        "cannot tell what this module is (not SPIR-V, not a PoCL, ELF or rusticl binary, not UTF-8 OpenCL C); "
        "pass kind=ModuleKind.OPENCL_BINARY for another driver's binary"
    )
