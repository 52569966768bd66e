"""What an artifact file is, and turning it into a kernel package (validated before any driver sees it).

Recognised by content, not by name: a kernel package (its magic), SPIR-V (the
magic in either byte order), OpenCL C source (UTF-8 text without NUL), or
anything else as an OpenCL device binary. Raw modules are wrapped into a
package by :mod:`accelcore.kernels.pack` from the options of
:class:`accel_cli.packing.PackOptions` plus what inspection finds (through
:mod:`.packing`, which this module imports; packing knows nothing of artifact files).

Failure: :class:`ArtifactError` names the file and the precise reason (it
wraps the codec's or packer's BackendError kind).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from accelcore.contract.errors import BackendError
from accelcore.contract.flags import AccessMode
from accelcore.contract.program import ArtifactFormat, TargetIdentity
from accelcore.kernels.package import KernelPackage, ModuleKind, format_for
from accelcore.kernels.package_codec import MAGIC, parse_package, write_package
from accelcore.support.files import KERNEL_FILE_BYTES
from accelcore.support.files import read_file as read_regular

from .packing import PackOptions, pack_module

__all__ = [
    "ACCEPTED_FORMATS",
    "Artifact",
    "ArtifactError",
    "FileKind",
    "SlotSpec",
    "classify",
    "load_artifact",
    "read_file",
    "recognise",
]

_SPIRV_LE = (0x07230203).to_bytes(4, "little")
_SPIRV_BE = (0x07230203).to_bytes(4, "big")
_REFERENCE_MAGIC = b"ACRP"
MAX_ARTIFACT_FILE_BYTES = KERNEL_FILE_BYTES


@dataclass(frozen=True, slots=True)
class SlotSpec:
    """One slot a program declares: the most access it allows and its element size in bytes."""

    slot: int
    access: AccessMode
    element_size: int


@dataclass(frozen=True)
class Artifact:
    """Everything ``load_program`` and the binding checks need: format, target, the exact payload
    bytes and the declared slot table; ``package`` is set for kernel packages."""

    kind: FileKind
    format: ArtifactFormat
    target: TargetIdentity
    payload: bytes
    slots: tuple[SlotSpec, ...]
    package: KernelPackage | None = None
    summary: str = ""


class FileKind(enum.Enum):
    PACKAGE = "kernel-package"
    REFERENCE = "reference-program"
    """The pure-Python reference provider's own format (accelcore.testing), for tests and demos."""
    SPIRV = "spirv"
    OPENCL_SOURCE = "opencl-source"
    OPENCL_BINARY = "opencl-binary"


class ArtifactError(ValueError):
    """A file cannot be used as an artifact; ``kind`` is the BackendError kind name when one applies."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind


def compile_if_glsl(path: Path, data: bytes, build_options: str = "", entry: str | None = None) -> bytes:
    """GLSL shader text compiled to Vulkan SPIR-V (:mod:`accelcore.kernels.glsl`) with ``--build-options`` (``-D``,
    ``-U``, ``-I``) and ``--entry`` as its entry point; other bytes as they are.

    A compile error, a build option GLSL does not take or a missing compiler is an ArtifactError (exit 3)
    with the reason (the compiler's messages).
    """
    from accelcore.kernels.glsl import compile_glsl, glsl_with_includes, looks_like_glsl

    if not looks_like_glsl(data):
        return data
    try:
        source = glsl_with_includes(path, data, build_options)
        return compile_glsl(source, name=path.name, build_options=build_options, entry=entry)
    except BackendError as exc:
        raise ArtifactError(f"{path}: {exc}", exc.kind.name) from None


def read_file(path: Path, build_options: str = "", entry: str | None = None) -> bytes:
    """The bytes of an artifact file; GLSL source comes back compiled to SPIR-V (:func:`compile_if_glsl`, with
    ``build_options`` and ``entry``)."""
    try:  # a regular file of at most MAX_ARTIFACT_FILE_BYTES, never a FIFO or device (accelcore.support.files)
        data = read_regular(path, "artifact file", MAX_ARTIFACT_FILE_BYTES)
    except FileNotFoundError:
        raise ArtifactError(f"no such file: {path}") from None
    except BackendError as exc:
        raise ArtifactError(exc.message, exc.kind.name) from None
    return compile_if_glsl(path, data, build_options, entry)


def classify(data: bytes) -> FileKind:
    """What ``data`` is, from its content."""
    if data.startswith(MAGIC[:4]):
        return FileKind.PACKAGE
    if data.startswith(_REFERENCE_MAGIC):
        return FileKind.REFERENCE
    if data[:4] in (_SPIRV_LE, _SPIRV_BE):
        return FileKind.SPIRV
    if data and b"\0" not in data:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return FileKind.OPENCL_BINARY
        return FileKind.OPENCL_SOURCE
    return FileKind.OPENCL_BINARY


ACCEPTED_FORMATS = (
    "a kernel package (.kpkg, '\\x89KPK' header), SPIR-V (magic 0x07230203), OpenCL C source (UTF-8 text with a "
    "__kernel function), a PoCL ('poclbin') or Mesa rusticl device binary, or a reference program ('ACRP')"
)


def recognise(data: bytes) -> FileKind | None:
    """What ``data`` provably is, or None: unlike :func:`classify` (which takes any other bytes for a device
    binary, as packing with --kind needs), only a known header or magic, or text holding a ``__kernel``
    function as :func:`accelcore.kernels.pack.opencl_kernels` finds them, counts."""
    from accelcore.kernels.pack import detect_module_kind, opencl_kernels

    kind = classify(data)
    if kind in (FileKind.PACKAGE, FileKind.REFERENCE, FileKind.SPIRV):
        return kind
    try:
        module_kind = detect_module_kind(data)
    except BackendError:
        return None
    if module_kind is ModuleKind.OPENCL_BINARY:
        return FileKind.OPENCL_BINARY
    if module_kind is ModuleKind.OPENCL_SOURCE and opencl_kernels(data.decode("utf-8")):
        return FileKind.OPENCL_SOURCE
    return None


def local_size_text(pkg: KernelPackage) -> str:
    """``(64, 1, 1)``, or ``driver chooses`` for an OpenCL package without a local size."""
    return "driver chooses" if tuple(pkg.local_size) == (0, 0, 0) else str(tuple(pkg.local_size))


def parse_package_file(path: Path, data: bytes) -> KernelPackage:
    try:
        return parse_package(data)
    except BackendError as exc:
        raise ArtifactError(f"{path}: {exc}", exc.kind.name) from None


def _from_package(pkg: KernelPackage, data: bytes, kind: FileKind) -> Artifact:
    slots = tuple(
        SlotSpec(row.slot, row.access, row.element_size) for row in sorted(pkg.bindings, key=lambda r: r.slot)
    )
    summary = f"{pkg.module_kind.name} package, entry {pkg.entry_point!r}, local size {local_size_text(pkg)}"
    return Artifact(kind, format_for(pkg.module_kind), pkg.target, data, slots, pkg, summary)


def _reference(path: Path, data: bytes) -> Artifact:
    from accelcore.contract.ports import MemorySource
    from accelcore.testing.programs import BUILTIN_PROGRAMS, REFERENCE_FORMAT, REFERENCE_TARGET, parse_program

    try:
        program = parse_program(MemorySource(data))
    except BackendError as exc:
        raise ArtifactError(f"{path}: {exc}", exc.kind.name) from None
    builtin = BUILTIN_PROGRAMS[program.name]
    slots = tuple(SlotSpec(slot, access, builtin.element_bytes) for slot, access in sorted(builtin.slots.items()))
    summary = f"reference program {program.name!r}"
    return Artifact(FileKind.REFERENCE, REFERENCE_FORMAT, REFERENCE_TARGET, data, slots, None, summary)


def load_artifact(path: Path, options: PackOptions | None = None) -> Artifact:
    """The artifact for ``path``: a package parsed, a reference program, or a raw module packed on the fly."""
    given = options or PackOptions()
    data = read_file(path, given.build_options, given.entry_point)
    if not data:
        raise ArtifactError(f"{path}: empty file")
    kind = classify(data)
    if kind is FileKind.PACKAGE:
        return _from_package(parse_package_file(path, data), data, kind)
    if kind is FileKind.REFERENCE:
        return _reference(path, data)
    pkg = pack_raw(path, data, kind, given, named=True)  # only built here: compiler messages may name the file
    try:
        return _from_package(pkg, write_package(pkg), kind)
    except BackendError as exc:
        raise ArtifactError(f"{path}: {exc}", exc.kind.name) from None


def pack_raw(path: Path, data: bytes, kind: FileKind, options: PackOptions, *, named: bool = False) -> KernelPackage:
    """Wrap a raw module with :mod:`accelcore.kernels.pack` (see :func:`accel_cli.packing.pack_module`); the
    ``#include`` s of OpenCL C are inlined from the file's folder and the ``-I`` folders of ``--build-options``
    first (:func:`accelcore.kernels.opencl_includes.source_with_includes`, as ``Device.kernel(path)`` does).

    ``named``: OpenCL C gets ``#line 1 "path"`` first, so the driver's build log names the file rather than its
    temporary copy (:func:`accelcore.kernels.opencl_includes.named_source`; ``accel run`` and ``accel compile``, whose
    source is built and not written; ``accel pack`` writes the text as it is)."""
    from accelcore.kernels.opencl_includes import named_source, source_with_includes

    module_kind = options.kind
    if module_kind is None and kind is FileKind.OPENCL_BINARY:
        module_kind = ModuleKind.OPENCL_BINARY  # an unrecognised binary; ``--kind`` overrides what the content says
    try:
        if kind is FileKind.OPENCL_SOURCE:
            data = source_with_includes(path, data, options.build_options)
            if named:
                data = named_source(path, data)
        return pack_module(data, module_kind, options)
    except BackendError as exc:
        raise ArtifactError(f"{path}: {exc}", exc.kind.name) from None
