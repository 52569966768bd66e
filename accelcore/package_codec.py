"""Kernel package codec: the versioned binary container of docs/artifact-format.md.

Promise: :func:`parse_package` reads through ``ByteSource.read_at`` (segmented
sources work), checks every count and length against the bytes that remain
and against the caller's limits *before* allocating, and fails only with
:class:`BackendError` — INVALID_ARGUMENT for malformed bytes, UNSUPPORTED for
an unknown version or module kind, RESOURCE_LIMIT for a package over
``max_bytes`` or with more than ``max_bindings`` bindings. It keeps no
reference to the source; the returned package owns a copy of the module.
:func:`write_package` applies the same rules to a :class:`KernelPackage` and
returns the exact bytes the parser accepts (round trip is the identity).
"""

from __future__ import annotations

import struct
from collections.abc import Collection

from ._checks import U32_MAX, U64_MAX
from .errors import BackendError, ErrorKind
from .flags import AccessMode
from .package import (
    NO_COUNT_ARGUMENT,
    Dispatch,
    DispatchKind,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    module_kind_of_format,
    target_accepts,
)
from .ports import ByteSource, source_of
from .program import TARGET_WORDS, ArtifactRef, TargetIdentity

__all__ = [
    "HEADER_BYTES",
    "MAGIC",
    "MAX_BUILD_OPTIONS_BYTES",
    "MAX_ENTRY_POINT_BYTES",
    "VERSION",
    "parse_artifact",
    "parse_package",
    "validate_package",
    "write_package",
]

MAGIC = b"\x89KPK\r\n\x1a\n"
"""Eight bytes that open every kernel package (PNG-style: catches text-mode mangling)."""

VERSION = 1
HEADER_BYTES = 128
BINDING_BYTES = 16
MAX_ENTRY_POINT_BYTES = 1024
MAX_BUILD_OPTIONS_BYTES = 16384

_SPIRV_MAGIC = 0x07230203

# magic, version, header_bytes, module_kind, reserved0, local_size[3], dispatch_kind, groups[3],
# dispatch_slot, count_argument, binding_count, entry_point_bytes, build_options_bytes, reserved1,
# module_bytes, target[12]
_HEADER = struct.Struct("<8sHHII3II3IIIIIIIQ12I")
_BINDING = struct.Struct("<4I")
assert _HEADER.size == HEADER_BYTES
assert _BINDING.size == BINDING_BYTES


def _malformed(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"kernel package: {message}")


def _pad4(length: int) -> int:
    return -length % 4


# --------------------------------------------------------------------------- shared rules


def _check_names(entry_point: str, build_options: str) -> tuple[bytes, bytes]:
    if not isinstance(entry_point, str) or not isinstance(build_options, str):
        raise _malformed("entry_point and build_options must be str")
    try:
        entry = entry_point.encode("utf-8")
        options = build_options.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _malformed(f"text is not encodable as UTF-8 ({exc.reason})") from None
    if not entry:
        raise _malformed("entry point is empty; name the kernel / shader entry point")
    if len(entry) > MAX_ENTRY_POINT_BYTES:
        raise _malformed(f"entry point of {len(entry)} bytes exceeds {MAX_ENTRY_POINT_BYTES}")
    if len(options) > MAX_BUILD_OPTIONS_BYTES:
        raise _malformed(f"build options of {len(options)} bytes exceed {MAX_BUILD_OPTIONS_BYTES}")
    if b"\0" in entry or b"\0" in options:
        raise _malformed("entry point and build options must not contain NUL")
    return entry, options


def _decode_text(what: str, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _malformed(f"{what} is not valid UTF-8 (byte {exc.start})") from None
    return text


def _check_u32(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U32_MAX:
        raise _malformed(f"{what} = {value!r} is not a u32")
    return value


def _check_model(
    kind: ModuleKind,
    local_size: tuple[int, int, int],
    bindings: tuple[PackageBinding, ...],
    dispatch: Dispatch,
    module: bytes,
    target: TargetIdentity,
) -> None:
    """Every structural rule of a package (shared by parser and writer)."""
    if len(local_size) != 3:
        raise _malformed(f"local size needs 3 dimensions, got {len(local_size)}")
    for axis, value in zip("xyz", local_size, strict=True):
        if _check_u32(f"local size {axis}", value) == 0:
            raise _malformed(f"local size {axis} is 0; every dimension must be at least 1")
    if not bindings:
        raise _malformed("binding table is empty; a kernel needs at least one bound buffer")
    slots: set[int] = set()
    natives: set[int] = set()
    for row in bindings:
        _check_u32("binding slot", row.slot)
        _check_u32("binding native index", row.native_index)
        if _check_u32("binding element size", row.element_size) == 0:
            raise _malformed(f"slot {row.slot} has element size 0; give the bytes per element (>= 1)")
        if int(row.access) not in (1, 2, 3):
            raise _malformed(f"slot {row.slot} has access {int(row.access)}; valid: 1 (Read), 2 (Write), 3 (ReadWrite)")
        if row.slot in slots:
            raise _malformed(f"slot {row.slot} appears twice in the binding table")
        if row.native_index in natives:
            raise _malformed(f"native index {row.native_index} is bound by two slots")
        slots.add(row.slot)
        natives.add(row.native_index)
    if int(dispatch.kind) not in (1, 2):
        raise _malformed(f"dispatch kind {int(dispatch.kind)} is not 1 (Fixed) or 2 (FromBinding)")
    if len(dispatch.groups) != 3:
        raise _malformed(f"dispatch groups need 3 dimensions, got {len(dispatch.groups)}")
    for axis, value in zip("xyz", dispatch.groups, strict=True):
        _check_u32(f"dispatch groups {axis}", value)
    _check_u32("dispatch slot", dispatch.slot)
    _check_u32("count argument", dispatch.count_argument)
    if dispatch.kind == DispatchKind.FIXED:
        if 0 in dispatch.groups:
            raise _malformed(f"fixed dispatch groups {tuple(dispatch.groups)} contain 0")
        if dispatch.slot != 0:
            raise _malformed(f"fixed dispatch has slot {dispatch.slot}; the field is reserved and must be 0")
    else:
        if tuple(dispatch.groups) != (1, 1, 1):
            raise _malformed(f"from-binding dispatch has groups {tuple(dispatch.groups)}; reserved, must be (1, 1, 1)")
        if dispatch.slot not in slots:
            raise _malformed(f"dispatch slot {dispatch.slot} is not in the binding table (slots {sorted(slots)})")
    opencl = kind in (ModuleKind.OPENCL_SOURCE, ModuleKind.OPENCL_BINARY, ModuleKind.SPIRV_OPENCL)
    if opencl and dispatch.count_argument != NO_COUNT_ARGUMENT and dispatch.count_argument in natives:
        raise _malformed(f"count argument {dispatch.count_argument} is also a buffer argument")
    if not module:
        raise _malformed("module is empty")
    if kind in (ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL):
        if len(module) % 4 or len(module) < 20:
            raise _malformed(f"SPIR-V module of {len(module)} bytes is not a whole header plus words")
        first = int.from_bytes(module[:4], "little")
        if first not in (_SPIRV_MAGIC, int.from_bytes(_SPIRV_MAGIC.to_bytes(4, "little"), "big")):
            raise _malformed(f"SPIR-V module starts with {first:#010x}, not the SPIR-V magic {_SPIRV_MAGIC:#010x}")
    elif kind is ModuleKind.OPENCL_SOURCE:
        _decode_text("OpenCL C source", module)
        if b"\0" in module:
            raise _malformed("OpenCL C source contains NUL")
    if kind is not ModuleKind.OPENCL_BINARY and any(target.words):
        raise _malformed(f"{kind.name} packages record no target; all 12 target words must be 0")


def validate_package(pkg: KernelPackage) -> None:
    """Every rule :func:`write_package` and :func:`parse_package` enforce; INVALID_ARGUMENT or UNSUPPORTED."""
    try:
        kind = ModuleKind(int(pkg.module_kind))
    except ValueError:
        raise BackendError(ErrorKind.UNSUPPORTED, f"module kind {pkg.module_kind!r} is not a ModuleKind") from None
    _check_model(kind, pkg.local_size, tuple(pkg.bindings), pkg.dispatch, bytes(pkg.module), pkg.target)
    _check_names(pkg.entry_point, pkg.build_options)


# --------------------------------------------------------------------------- writer


def write_package(pkg: KernelPackage) -> bytes:
    """Serialise ``pkg``; an invalid package → INVALID_ARGUMENT naming the bad field."""
    try:
        kind = ModuleKind(int(pkg.module_kind))
    except ValueError:
        raise BackendError(ErrorKind.UNSUPPORTED, f"module kind {pkg.module_kind!r} is not a ModuleKind") from None
    module = bytes(pkg.module)
    _check_model(kind, pkg.local_size, tuple(pkg.bindings), pkg.dispatch, module, pkg.target)
    entry, options = _check_names(pkg.entry_point, pkg.build_options)
    dispatch = pkg.dispatch
    header = _HEADER.pack(
        MAGIC,
        VERSION,
        HEADER_BYTES,
        int(kind),
        0,
        *pkg.local_size,
        int(dispatch.kind),
        *dispatch.groups,
        dispatch.slot,
        dispatch.count_argument,
        len(pkg.bindings),
        len(entry),
        len(options),
        0,
        len(module),
        *pkg.target.words,
    )
    rows = b"".join(
        _BINDING.pack(row.slot, row.native_index, int(row.access), row.element_size) for row in pkg.bindings
    )
    text = entry + options
    return b"".join((header, rows, text, bytes(_pad4(len(text))), module))


# --------------------------------------------------------------------------- parser


class _Reader:
    """Sequential bounded reads from a ByteSource; every read is checked against what remains."""

    __slots__ = ("_length", "_position", "_source")

    def __init__(self, source: ByteSource, length: int) -> None:
        self._source = source
        self._length = length
        self._position = 0

    @property
    def remaining(self) -> int:
        return self._length - self._position

    def take(self, what: str, count: int) -> bytes:
        if count > self.remaining:
            raise _malformed(f"{what} needs {count} bytes at offset {self._position}, only {self.remaining} remain")
        out = bytearray(count)
        if count:
            self._source.read_at(self._position, memoryview(out))
        self._position += count
        return bytes(out)


def parse_package(
    source: ByteSource | bytes,
    *,
    max_bindings: int | None = None,
    max_bytes: int | None = None,
) -> KernelPackage:
    """Decode one package from ``source`` (see the module docstring for the promise).

    ``max_bytes`` bounds the whole package (a device's ``max_artifact_bytes``);
    ``max_bindings`` bounds the binding table (``max_bindings_per_submission``).
    """
    port = source_of(source)
    total = port.len()
    if max_bytes is not None and total > max_bytes:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT, f"kernel package of {total} bytes exceeds the limit of {max_bytes}"
        )
    reader = _Reader(port, total)
    header = _HEADER.unpack(reader.take("header", HEADER_BYTES))
    magic, version, header_bytes, raw_kind, reserved0 = header[:5]
    local_size = (header[5], header[6], header[7])
    dispatch_kind = header[8]
    groups = (header[9], header[10], header[11])
    dispatch_slot, count_argument, binding_count, entry_bytes, options_bytes, reserved1, module_bytes = header[12:19]
    target_words = tuple(header[19:])
    assert len(target_words) == TARGET_WORDS
    if magic != MAGIC:
        raise _malformed(f"magic {magic!r} is not {MAGIC!r}")
    if version != VERSION:
        raise BackendError(
            ErrorKind.UNSUPPORTED, f"kernel package version {version} is not supported (this reader knows {VERSION})"
        )
    if header_bytes != HEADER_BYTES:
        raise _malformed(f"header size {header_bytes} is not {HEADER_BYTES} for version {VERSION}")
    if reserved0 or reserved1:
        raise _malformed(f"reserved header fields are {reserved0:#x}, {reserved1:#x}; both must be 0")
    try:
        kind = ModuleKind(raw_kind)
    except ValueError:
        known = ", ".join(f"{int(k)} ({k.name})" for k in ModuleKind)
        raise BackendError(ErrorKind.UNSUPPORTED, f"module kind {raw_kind} is unknown (known: {known})") from None
    if dispatch_kind not in (1, 2):
        raise _malformed(f"dispatch kind {dispatch_kind} is not 1 (Fixed) or 2 (FromBinding)")
    if max_bindings is not None and binding_count > max_bindings:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT, f"binding table has {binding_count} rows; the limit is {max_bindings}"
        )
    if entry_bytes > MAX_ENTRY_POINT_BYTES:
        raise _malformed(f"entry point of {entry_bytes} bytes exceeds {MAX_ENTRY_POINT_BYTES}")
    if options_bytes > MAX_BUILD_OPTIONS_BYTES:
        raise _malformed(f"build options of {options_bytes} bytes exceed {MAX_BUILD_OPTIONS_BYTES}")
    text_bytes = entry_bytes + options_bytes
    needed = binding_count * BINDING_BYTES + text_bytes + _pad4(text_bytes) + module_bytes
    if module_bytes > U64_MAX or needed != reader.remaining:
        raise _malformed(
            f"header declares {needed} bytes after the header ({binding_count} bindings, {entry_bytes}+{options_bytes}"
            f" text bytes, {module_bytes} module bytes) but {reader.remaining} follow"
        )
    raw_rows = reader.take("binding table", binding_count * BINDING_BYTES)
    bindings = []
    for slot, native, access, element_size in _BINDING.iter_unpack(raw_rows):
        if access not in (1, 2, 3):
            raise _malformed(f"slot {slot} has access {access}; valid: 1 (Read), 2 (Write), 3 (ReadWrite)")
        bindings.append(PackageBinding(slot, native, AccessMode(access), element_size))
    entry_point = _decode_text("entry point", reader.take("entry point", entry_bytes))
    build_options = _decode_text("build options", reader.take("build options", options_bytes))
    padding = reader.take("padding", _pad4(text_bytes))
    if any(padding):
        raise _malformed("padding bytes after the build options must be 0")
    module = reader.take("module", module_bytes)
    if reader.remaining:
        raise _malformed(f"{reader.remaining} trailing bytes after the module")
    dispatch = Dispatch(DispatchKind(dispatch_kind), groups, dispatch_slot, count_argument)
    target = TargetIdentity(target_words)
    rows = tuple(bindings)
    _check_model(kind, local_size, rows, dispatch, module, target)
    _check_names(entry_point, build_options)
    return KernelPackage(
        module_kind=kind,
        entry_point=entry_point,
        local_size=local_size,
        bindings=rows,
        dispatch=dispatch,
        module=module,
        build_options=build_options,
        target=target,
    )


def parse_artifact(
    ref: ArtifactRef,
    *,
    max_bindings: int | None = None,
    max_bytes: int | None = None,
    accepted_kinds: Collection[ModuleKind] | None = None,
    device_target: TargetIdentity | None = None,
) -> KernelPackage:
    """What a provider's ``load_program`` runs before any driver sees the bytes.

    Checks, in order: ``ref.format`` is a kernel package format (else
    UNSUPPORTED) and one of ``accepted_kinds`` (else UNSUPPORTED); the package
    parses (see :func:`parse_package`); its module kind matches the format and
    its recorded target equals ``ref.target`` (else INVALID_ARGUMENT); the
    recorded target accepts ``device_target`` (else INCOMPATIBLE).
    """
    kind = module_kind_of_format(ref.format)
    if accepted_kinds is not None and kind not in accepted_kinds:
        takes = ", ".join(sorted(k.name for k in accepted_kinds)) or "nothing"
        raise BackendError(ErrorKind.UNSUPPORTED, f"this device does not take {kind.name} packages (it takes {takes})")
    pkg = parse_package(ref.payload, max_bindings=max_bindings, max_bytes=max_bytes)
    if pkg.module_kind is not kind:
        raise _malformed(f"artifact format says {kind.name} but the package holds {pkg.module_kind.name}")
    if pkg.target != ref.target:
        raise _malformed("ArtifactRef.target differs from the target recorded in the package")
    if device_target is not None and not target_accepts(pkg.target, device_target):
        raise BackendError(
            ErrorKind.INCOMPATIBLE,
            f"{kind.name} package was built for another target: it records target words "
            f"{list(pkg.target.words)}, this device is {list(device_target.words)}; rebuild it for this device "
            "(accel compile DEVICE SOURCE) or load the portable source package",
        )
    return pkg
