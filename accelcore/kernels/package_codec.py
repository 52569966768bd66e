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

from ..contract._checks import U32_MAX, U64_MAX
from ..contract.errors import BackendError, ErrorKind
from ..contract.flags import AccessMode
from ..contract.ports import ByteSource, source_of
from ..contract.program import TARGET_WORDS, ArtifactRef, TargetIdentity
from .package import (
    ANY_LOCAL_SIZE,
    MAX_AGGREGATE_BYTES,
    NO_COUNT_ARGUMENT,
    ArgumentKind,
    ArgumentName,
    Coverage,
    DescriptorType,
    Dispatch,
    DispatchKind,
    KernelArgument,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    SpecConstant,
    module_kind_of_format,
    target_accepts,
    target_differences,
    target_text,
)
from .values import ScalarType, ValueType

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

VERSION = 2
"""The newest version this codec reads and writes; version 1 stays readable and is written when it suffices."""
VERSIONS = (1, 2)
HEADER_BYTES = 128
BINDING_BYTES = 16
BINDING_BYTES_V2 = 40
RECORD_BYTES = 16
MAX_ENTRY_POINT_BYTES = 1024
MAX_BUILD_OPTIONS_BYTES = 16384
MAX_RECORDS = 4096
"""Argument / push / specialization records one package may hold."""
MAX_RECORD_DATA_BYTES = 65536
"""Bytes of record data (argument values, the push block, spec constant values) one package may hold."""

RECORD_PUSH_CONSTANTS = 3
RECORD_SPEC_CONSTANT = 4
RECORD_ARGUMENT_NAME = 5
MAX_ARGUMENT_NAME_BYTES = 1024
"""The longest argument name (UTF-8 bytes) an OPENCL_BINARY package records."""

_SPIRV_MAGIC = 0x07230203

# magic, version, header_bytes, module_kind, reserved0, local_size[3], dispatch_kind, groups[3],
# dispatch_slot, count_argument, binding_count, entry_point_bytes, build_options_bytes, reserved1,
# module_bytes, target[12]
_HEADER = struct.Struct("<8sHHII3II3IIIIIIIQ12I")
_BINDING = struct.Struct("<4I")
# slot, native index, access, element size, set, descriptor type, coverage, reserved, coverage elements
_BINDING_V2 = struct.Struct("<8IQ")
# kind, index, type code, byte size
_RECORD = struct.Struct("<4I")
assert _HEADER.size == HEADER_BYTES
assert _BINDING.size == BINDING_BYTES
assert _BINDING_V2.size == BINDING_BYTES_V2
assert _RECORD.size == RECORD_BYTES
_OPENCL_KINDS = (ModuleKind.OPENCL_SOURCE, ModuleKind.OPENCL_BINARY, ModuleKind.SPIRV_OPENCL)


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
    arguments: tuple[KernelArgument, ...] = (),
    push_constants: bytes = b"",
    spec_constants: tuple[SpecConstant, ...] = (),
    argument_names: tuple[ArgumentName, ...] = (),
) -> None:
    """Every structural rule of a package (shared by parser and writer)."""
    opencl = kind in _OPENCL_KINDS
    if len(local_size) != 3:
        raise _malformed(f"local size needs 3 dimensions, got {len(local_size)}")
    for axis, value in zip("xyz", local_size, strict=True):
        _check_u32(f"local size {axis}", value)
    any_local = tuple(local_size) == ANY_LOCAL_SIZE
    if any_local and not opencl:
        raise _malformed("local size (0, 0, 0) ('driver chooses') is for OpenCL packages only")
    if not any_local and 0 in local_size:
        raise _malformed(
            f"local size {tuple(local_size)} has a 0; every dimension must be at least 1 "
            "(or all three 0 to let an OpenCL driver choose)"
        )
    if not bindings:
        raise _malformed("binding table is empty; a kernel needs at least one bound buffer")
    slots: set[int] = set()
    natives: set[tuple[int, int]] = set()
    for row in bindings:
        _check_u32("binding slot", row.slot)
        _check_u32("binding native index", row.native_index)
        _check_u32("binding set", row.set)
        if _check_u32("binding element size", row.element_size) == 0:
            raise _malformed(f"slot {row.slot} has element size 0; give the bytes per element (>= 1)")
        if int(row.access) not in (1, 2, 3):
            raise _malformed(f"slot {row.slot} has access {int(row.access)}; valid: 1 (Read), 2 (Write), 3 (ReadWrite)")
        if int(row.descriptor_type) not in (1, 2):
            raise _malformed(
                f"slot {row.slot} has descriptor type {int(row.descriptor_type)}; valid: 1 (storage), 2 (uniform)"
            )
        if opencl and (row.set != 0 or row.descriptor_type is not DescriptorType.STORAGE_BUFFER):
            raise _malformed(f"slot {row.slot}: OpenCL bindings are storage buffers in set 0")
        if row.descriptor_type is DescriptorType.UNIFORM_BUFFER and row.access is not AccessMode.READ:
            raise _malformed(f"slot {row.slot} is a uniform buffer, which a kernel can only read; declare Read")
        if int(row.coverage) not in (0, 1, 2):
            raise _malformed(f"slot {row.slot} has coverage {int(row.coverage)}; valid: 0 unknown, 1 per item, 2 exact")
        if (row.coverage is Coverage.EXACT) != (row.coverage_elements != 0):
            raise _malformed(f"slot {row.slot}: coverage_elements is given exactly when coverage is EXACT (>= 1)")
        if isinstance(row.coverage_elements, bool) or not 0 <= row.coverage_elements <= U64_MAX:
            raise _malformed(f"slot {row.slot}: coverage_elements {row.coverage_elements!r} is not a u64")
        if row.slot in slots:
            raise _malformed(f"slot {row.slot} appears twice in the binding table")
        if (row.set, row.native_index) in natives:
            where = f"set {row.set} binding" if not opencl else "native index"
            raise _malformed(f"{where} {row.native_index} is bound by two slots")
        slots.add(row.slot)
        natives.add((row.set, row.native_index))
    if int(dispatch.kind) not in (1, 2, 3):
        raise _malformed(f"dispatch kind {int(dispatch.kind)} is not 1 (Fixed), 2 (FromBinding) or 3 (Global)")
    if len(dispatch.groups) != 3 or len(dispatch.global_size) != 3:
        raise _malformed("dispatch groups and global size need 3 dimensions")
    for axis, value in zip("xyz", dispatch.groups, strict=True):
        _check_u32(f"dispatch groups {axis}", value)
    for axis, value in zip("xyz", dispatch.global_size, strict=True):
        _check_u32(f"dispatch global size {axis}", value)
    _check_u32("dispatch slot", dispatch.slot)
    _check_u32("count argument", dispatch.count_argument)
    if dispatch.kind == DispatchKind.FIXED:
        if 0 in dispatch.groups:
            raise _malformed(f"fixed dispatch groups {tuple(dispatch.groups)} contain 0")
        if dispatch.slot != 0:
            raise _malformed(f"fixed dispatch has slot {dispatch.slot}; the field is reserved and must be 0")
        if any_local:
            raise _malformed("a fixed dispatch counts workgroups, so it needs a local size (not 'driver chooses')")
    elif dispatch.kind == DispatchKind.FROM_BINDING:
        if tuple(dispatch.groups) != (1, 1, 1):
            raise _malformed(f"from-binding dispatch has groups {tuple(dispatch.groups)}; reserved, must be (1, 1, 1)")
        if dispatch.slot not in slots:
            raise _malformed(f"dispatch slot {dispatch.slot} is not in the binding table (slots {sorted(slots)})")
    else:
        if tuple(dispatch.groups) != (1, 1, 1) or dispatch.slot != 0:
            raise _malformed("a global dispatch keeps groups (1, 1, 1) and slot 0 (reserved)")
        if 0 in dispatch.global_size:
            raise _malformed(f"global size {tuple(dispatch.global_size)} has a 0; each axis is at least 1")
    if dispatch.kind != DispatchKind.GLOBAL and tuple(dispatch.global_size) != (0, 0, 0):
        raise _malformed("global_size is for GLOBAL dispatches only; keep (0, 0, 0)")
    buffer_args = {native for _, native in natives}
    if opencl and dispatch.count_argument != NO_COUNT_ARGUMENT and dispatch.count_argument in buffer_args:
        raise _malformed(f"count argument {dispatch.count_argument} is also a buffer argument")
    _check_arguments(kind, arguments, buffer_args, dispatch.count_argument)
    _check_push_and_specs(kind, push_constants, spec_constants)
    _check_argument_names(kind, argument_names, len(arguments))
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


def _check_arguments(
    kind: ModuleKind, arguments: tuple[KernelArgument, ...], buffer_args: set[int], count_argument: int
) -> None:
    if arguments and kind not in _OPENCL_KINDS:
        raise _malformed(f"{kind.name} packages take no kernel arguments (use push constants / spec constants)")
    if len(arguments) > MAX_RECORDS:
        raise _malformed(f"{len(arguments)} kernel arguments exceed {MAX_RECORDS}")
    previous = -1
    for argument in arguments:
        index = _check_u32("argument index", argument.index)
        if index <= previous:
            raise _malformed(f"kernel arguments must be in increasing index order without repeats (index {index})")
        previous = index
        if index in buffer_args:
            raise _malformed(f"argument {index} is both a buffer binding and a {argument.kind.name.lower()} argument")
        if index == count_argument:
            raise _malformed(f"argument {index} is the count argument; the dispatch sets its value")
        if argument.kind is ArgumentKind.VALUE:
            if argument.local_bytes:
                raise _malformed(f"value argument {index} has a local size; only LOCAL arguments do")
            if argument.value_type is None:
                if not isinstance(argument.data, bytes) or not 1 <= len(argument.data) <= MAX_AGGREGATE_BYTES:
                    size = len(argument.data) if isinstance(argument.data, bytes) else repr(argument.data)
                    raise _malformed(
                        f"struct argument {index} holds {size} bytes; a by-value struct or union is "
                        f"1..{MAX_AGGREGATE_BYTES} bytes"
                    )
            elif not isinstance(argument.value_type, ValueType):
                raise _malformed(f"value argument {index} has no value type")
            elif len(argument.data) != argument.value_type.size:
                raise _malformed(
                    f"value argument {index} declares {argument.value_type} ({argument.value_type.size} bytes) "
                    f"but holds {len(argument.data)} bytes"
                )
        elif argument.kind is ArgumentKind.LOCAL:
            if argument.value_type is not None or argument.data:
                raise _malformed(f"__local argument {index} carries no value, only a byte size")
            if _check_u32(f"__local argument {index} size", argument.local_bytes) == 0:
                raise _malformed(f"__local argument {index} has 0 bytes; give its size (>= 1)")
        else:
            raise _malformed(f"argument {index} has kind {argument.kind!r}; valid: 1 (value), 2 (__local)")


def _check_argument_names(kind: ModuleKind, names: tuple[ArgumentName, ...], other_records: int) -> None:
    if not names:
        return
    if kind is not ModuleKind.OPENCL_BINARY:
        raise _malformed(f"{kind.name} packages record no argument names (their module names its arguments)")
    if len(names) + other_records > MAX_RECORDS:
        raise _malformed(f"{len(names) + other_records} records exceed {MAX_RECORDS}")
    previous = -1
    seen: set[str] = set()
    for recorded in names:
        index = _check_u32("argument name index", recorded.index)
        if index <= previous:
            raise _malformed(f"argument names must be in increasing index order without repeats (index {index})")
        previous = index
        if not isinstance(recorded.name, str):
            raise _malformed(f"the name of argument {index} is {recorded.name!r}, not text")
        try:
            raw = recorded.name.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _malformed(f"the name of argument {index} is not encodable as UTF-8 ({exc.reason})") from None
        if not 1 <= len(raw) <= MAX_ARGUMENT_NAME_BYTES or b"\0" in raw:
            raise _malformed(
                f"the name of argument {index} is {len(raw)} bytes; a name is 1..{MAX_ARGUMENT_NAME_BYTES} "
                "bytes without NUL"
            )
        if recorded.name in seen:
            raise _malformed(f"two arguments are named {recorded.name!r}")
        seen.add(recorded.name)
        if recorded.element is not None and not isinstance(recorded.element, ValueType):
            raise _malformed(f"the element type of argument {index} is {recorded.element!r}, not a ValueType")


def _check_push_and_specs(kind: ModuleKind, push: bytes, specs: tuple[SpecConstant, ...]) -> None:
    if (push or specs) and kind is not ModuleKind.SPIRV_VULKAN:
        raise _malformed(f"{kind.name} packages take no push constants or specialization constants")
    if len(push) % 4:
        raise _malformed(f"push-constant block of {len(push)} bytes; Vulkan needs a multiple of 4")
    if len(push) > MAX_RECORD_DATA_BYTES:
        raise _malformed(f"push-constant block of {len(push)} bytes exceeds {MAX_RECORD_DATA_BYTES}")
    if len(specs) > MAX_RECORDS:
        raise _malformed(f"{len(specs)} specialization constants exceed {MAX_RECORDS}")
    previous = -1
    for spec in specs:
        spec_id = _check_u32("SpecId", spec.spec_id)
        if spec_id <= previous:
            raise _malformed(f"specialization constants must be in increasing SpecId order without repeats ({spec_id})")
        previous = spec_id
        if not isinstance(spec.value_type, ValueType) or spec.value_type.lanes != 1:
            raise _malformed(f"SpecId {spec_id}: a specialization constant is a scalar, not {spec.value_type}")
        if len(spec.data) != spec.expected_bytes:
            raise _malformed(
                f"SpecId {spec_id} declares {spec.value_type} ({spec.expected_bytes} bytes) "
                f"but holds {len(spec.data)} bytes"
            )
        if spec.value_type.scalar is ScalarType.BOOL and int.from_bytes(spec.data, "little") not in (0, 1):
            raise _malformed(f"SpecId {spec_id} is a bool; its VkBool32 must be 0 or 1")


def validate_package(pkg: KernelPackage) -> None:
    """Every rule :func:`write_package` and :func:`parse_package` enforce; INVALID_ARGUMENT or UNSUPPORTED."""
    try:
        kind = ModuleKind(int(pkg.module_kind))
    except ValueError:
        raise BackendError(ErrorKind.UNSUPPORTED, f"module kind {pkg.module_kind!r} is not a ModuleKind") from None
    _check_package(kind, pkg, bytes(pkg.module))
    _check_names(pkg.entry_point, pkg.build_options)


def _check_package(kind: ModuleKind, pkg: KernelPackage, module: bytes) -> None:
    _check_model(
        kind,
        pkg.local_size,
        tuple(pkg.bindings),
        pkg.dispatch,
        module,
        pkg.target,
        tuple(pkg.arguments),
        bytes(pkg.push_constants),
        tuple(pkg.spec_constants),
        tuple(pkg.argument_names),
    )


# --------------------------------------------------------------------------- writer


def write_package(pkg: KernelPackage) -> bytes:
    """Serialise ``pkg`` in the lowest version that expresses it (1 unless a version-2 field is used).

    An invalid package → INVALID_ARGUMENT naming the bad field.
    """
    try:
        kind = ModuleKind(int(pkg.module_kind))
    except ValueError:
        raise BackendError(ErrorKind.UNSUPPORTED, f"module kind {pkg.module_kind!r} is not a ModuleKind") from None
    module = bytes(pkg.module)
    _check_package(kind, pkg, module)
    entry, options = _check_names(pkg.entry_point, pkg.build_options)
    dispatch = pkg.dispatch
    version = pkg.version
    records, data = _records_of(pkg) if version == 2 else ([], b"")
    header = _HEADER.pack(
        MAGIC,
        version,
        HEADER_BYTES,
        int(kind),
        len(records),
        *pkg.local_size,
        int(dispatch.kind),
        *(dispatch.global_size if dispatch.kind is DispatchKind.GLOBAL else dispatch.groups),
        dispatch.slot,
        dispatch.count_argument,
        len(pkg.bindings),
        len(entry),
        len(options),
        len(data),
        len(module),
        *pkg.target.words,
    )
    if version == 1:
        rows = b"".join(
            _BINDING.pack(row.slot, row.native_index, int(row.access), row.element_size) for row in pkg.bindings
        )
    else:
        rows = b"".join(
            _BINDING_V2.pack(
                row.slot,
                row.native_index,
                int(row.access),
                row.element_size,
                row.set,
                int(row.descriptor_type),
                int(row.coverage),
                0,
                row.coverage_elements,
            )
            for row in pkg.bindings
        )
    text = entry + options
    return b"".join((header, rows, b"".join(records), data, text, bytes(_pad4(len(text))), module))


def _records_of(pkg: KernelPackage) -> tuple[list[bytes], bytes]:
    """Version-2 records (canonical order: arguments by index, the push block, spec constants by SpecId,
    argument names by index)."""
    records: list[bytes] = []
    data: list[bytes] = []

    def add(kind: int, index: int, type_code: int, size: int, payload: bytes) -> None:
        records.append(_RECORD.pack(kind, index, type_code, size))
        data.append(payload + bytes(_pad4(len(payload))))

    for argument in pkg.arguments:
        if argument.kind is ArgumentKind.VALUE:
            code = 0 if argument.value_type is None else argument.value_type.code  # 0: a struct's raw bytes
            add(int(ArgumentKind.VALUE), argument.index, code, len(argument.data), argument.data)
        else:
            add(int(ArgumentKind.LOCAL), argument.index, 0, argument.local_bytes, b"")
    if pkg.push_constants:
        add(RECORD_PUSH_CONSTANTS, 0, 0, len(pkg.push_constants), bytes(pkg.push_constants))
    for spec in pkg.spec_constants:
        add(RECORD_SPEC_CONSTANT, spec.spec_id, spec.value_type.code, len(spec.data), spec.data)
    for recorded in pkg.argument_names:
        raw = recorded.name.encode("utf-8")
        code = 0 if recorded.element is None else recorded.element.code
        add(RECORD_ARGUMENT_NAME, recorded.index, code, len(raw), raw)
    joined = b"".join(data)
    if len(joined) > MAX_RECORD_DATA_BYTES:
        raise _malformed(f"{len(joined)} bytes of argument data exceed {MAX_RECORD_DATA_BYTES}")
    return records, joined


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
    magic, version, header_bytes, raw_kind, record_count = header[:5]
    local_size = (header[5], header[6], header[7])
    dispatch_kind = header[8]
    groups = (header[9], header[10], header[11])
    dispatch_slot, count_argument, binding_count, entry_bytes, options_bytes, data_bytes, module_bytes = header[12:19]
    target_words = tuple(header[19:])
    assert len(target_words) == TARGET_WORDS
    if magic != MAGIC:
        raise _malformed(f"magic {magic!r} is not {MAGIC!r}")
    if version not in VERSIONS:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"kernel package version {version} is not supported (this reader knows {', '.join(map(str, VERSIONS))})",
        )
    if header_bytes != HEADER_BYTES:
        raise _malformed(f"header size {header_bytes} is not {HEADER_BYTES} for version {version}")
    if version == 1 and (record_count or data_bytes):
        raise _malformed(f"reserved header fields are {record_count:#x}, {data_bytes:#x}; both must be 0")
    try:
        kind = ModuleKind(raw_kind)
    except ValueError:
        known = ", ".join(f"{int(k)} ({k.name})" for k in ModuleKind)
        raise BackendError(ErrorKind.UNSUPPORTED, f"module kind {raw_kind} is unknown (known: {known})") from None
    kinds = (1, 2) if version == 1 else (1, 2, 3)
    if dispatch_kind not in kinds:
        raise _malformed(f"dispatch kind {dispatch_kind} is not valid in version {version} (valid: {kinds})")
    if max_bindings is not None and binding_count > max_bindings:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT, f"binding table has {binding_count} rows; the limit is {max_bindings}"
        )
    if record_count > MAX_RECORDS:
        raise _malformed(f"{record_count} argument records exceed {MAX_RECORDS}")
    if data_bytes > MAX_RECORD_DATA_BYTES:
        raise _malformed(f"{data_bytes} bytes of argument data exceed {MAX_RECORD_DATA_BYTES}")
    if entry_bytes > MAX_ENTRY_POINT_BYTES:
        raise _malformed(f"entry point of {entry_bytes} bytes exceeds {MAX_ENTRY_POINT_BYTES}")
    if options_bytes > MAX_BUILD_OPTIONS_BYTES:
        raise _malformed(f"build options of {options_bytes} bytes exceed {MAX_BUILD_OPTIONS_BYTES}")
    row_bytes = BINDING_BYTES if version == 1 else BINDING_BYTES_V2
    text_bytes = entry_bytes + options_bytes
    needed = (
        binding_count * row_bytes + record_count * RECORD_BYTES + data_bytes + text_bytes + _pad4(text_bytes)
    ) + module_bytes
    if module_bytes > U64_MAX or needed != reader.remaining:
        raise _malformed(
            f"header declares {needed} bytes after the header ({binding_count} bindings, {record_count} records, "
            f"{data_bytes} record data bytes, {entry_bytes}+{options_bytes} text bytes, {module_bytes} module bytes) "
            f"but {reader.remaining} follow"
        )
    raw_rows = reader.take("binding table", binding_count * row_bytes)
    bindings = []
    if version == 1:
        for slot, native, access, element_size in _BINDING.iter_unpack(raw_rows):
            if access not in (1, 2, 3):
                raise _malformed(f"slot {slot} has access {access}; valid: 1 (Read), 2 (Write), 3 (ReadWrite)")
            bindings.append(PackageBinding(slot, native, AccessMode(access), element_size))
    else:
        for slot, native, access, element_size, set_, dtype, cover, reserved, elements in _BINDING_V2.iter_unpack(
            raw_rows
        ):
            if access not in (1, 2, 3):
                raise _malformed(f"slot {slot} has access {access}; valid: 1 (Read), 2 (Write), 3 (ReadWrite)")
            if dtype not in (1, 2):
                raise _malformed(f"slot {slot} has descriptor type {dtype}; valid: 1 (storage), 2 (uniform)")
            if cover not in (0, 1, 2):
                raise _malformed(f"slot {slot} has coverage {cover}; valid: 0 unknown, 1 per item, 2 exact")
            if reserved:
                raise _malformed(f"slot {slot}: the reserved binding word is {reserved:#x}; must be 0")
            bindings.append(
                PackageBinding(
                    slot,
                    native,
                    AccessMode(access),
                    element_size,
                    set_,
                    DescriptorType(dtype),
                    Coverage(cover),
                    elements,
                )
            )
    raw_records = reader.take("argument records", record_count * RECORD_BYTES)
    raw_data = reader.take("argument data", data_bytes)
    arguments, push, specs, names = _decode_records(raw_records, raw_data)
    entry_point = _decode_text("entry point", reader.take("entry point", entry_bytes))
    build_options = _decode_text("build options", reader.take("build options", options_bytes))
    padding = reader.take("padding", _pad4(text_bytes))
    if any(padding):
        raise _malformed("padding bytes after the build options must be 0")
    module = reader.take("module", module_bytes)
    if reader.remaining:
        raise _malformed(f"{reader.remaining} trailing bytes after the module")
    if dispatch_kind == DispatchKind.GLOBAL:
        dispatch = Dispatch(DispatchKind.GLOBAL, (1, 1, 1), dispatch_slot, count_argument, groups)
    else:
        dispatch = Dispatch(DispatchKind(dispatch_kind), groups, dispatch_slot, count_argument)
    target = TargetIdentity(target_words)
    package = KernelPackage(
        module_kind=kind,
        entry_point=entry_point,
        local_size=local_size,
        bindings=tuple(bindings),
        dispatch=dispatch,
        module=module,
        build_options=build_options,
        target=target,
        arguments=arguments,
        push_constants=push,
        spec_constants=specs,
        argument_names=names,
    )
    _check_package(kind, package, module)
    _check_names(entry_point, build_options)
    if package.version != version:
        raise _malformed(f"a package that uses no version-2 field is written as version 1, not {version}")
    return package


def _decode_records(
    raw_records: bytes, raw_data: bytes
) -> tuple[tuple[KernelArgument, ...], bytes, tuple[SpecConstant, ...], tuple[ArgumentName, ...]]:
    arguments: list[KernelArgument] = []
    specs: list[SpecConstant] = []
    names: list[ArgumentName] = []
    push = b""
    position = 0
    order = 0  # 0 arguments, 1 after the push block, 2 spec constants, 3 argument names: the canonical order
    for number, (kind, index, type_code, size) in enumerate(_RECORD.iter_unpack(raw_records)):
        carried = 0 if kind == ArgumentKind.LOCAL else size
        if kind == ArgumentKind.VALUE and type_code == 0 and not 1 <= size <= MAX_AGGREGATE_BYTES:
            raise _malformed(
                f"record {number}: struct argument {index} of {size} bytes; "
                f"a by-value struct is 1..{MAX_AGGREGATE_BYTES}"
            )
        padded = carried + _pad4(carried)
        if padded > len(raw_data) - position:
            raise _malformed(f"record {number} needs {padded} data bytes, only {len(raw_data) - position} remain")
        payload = raw_data[position : position + carried]
        if any(raw_data[position + carried : position + padded]):
            raise _malformed(f"record {number}: padding after its data must be 0")
        position += padded
        if kind in (ArgumentKind.VALUE, ArgumentKind.LOCAL):
            if order:
                raise _malformed(f"record {number}: kernel arguments come before push and spec constant records")
            if kind == ArgumentKind.VALUE and type_code == 0:
                arguments.append(KernelArgument.aggregate(index, payload))
            elif kind == ArgumentKind.VALUE:
                arguments.append(KernelArgument.value(index, ValueType.from_code(type_code), payload))
            else:
                if type_code:
                    raise _malformed(f"record {number}: a __local argument has type code 0, not {type_code:#x}")
                arguments.append(KernelArgument.local(index, size))
        elif kind == RECORD_PUSH_CONSTANTS:
            if order >= 1 or index or type_code:
                raise _malformed(f"record {number}: one push-constant block (index 0, type 0), after the arguments")
            order = 1
            push = payload
            if not push:
                raise _malformed(f"record {number}: an empty push-constant block is written as no record")
        elif kind == RECORD_SPEC_CONSTANT:
            if order > 2:
                raise _malformed(f"record {number}: spec constant records come before argument names")
            order = 2
            specs.append(SpecConstant(index, ValueType.from_code(type_code), payload))
        elif kind == RECORD_ARGUMENT_NAME:
            order = 3
            element = None if type_code == 0 else ValueType.from_code(type_code)
            names.append(ArgumentName(index, _decode_text(f"record {number}: argument name", payload), element))
        else:
            raise _malformed(
                f"record {number} has kind {kind}; valid: 1 value, 2 __local, 3 push block, 4 spec, 5 argument name"
            )
    if position != len(raw_data):
        raise _malformed(f"{len(raw_data) - position} argument data bytes belong to no record")
    return tuple(arguments), push, tuple(specs), tuple(names)


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
        fields = target_differences(pkg.target, device_target)
        differ = f"{', '.join(fields)} {'differs' if len(fields) == 1 else 'differ'}"
        raise BackendError(
            ErrorKind.INCOMPATIBLE,
            f"{kind.name} package was built for a different device (its {differ} from this device's; "
            f"recorded words {target_text(pkg.target)}, this device {target_text(device_target)}); rebuild it for "
            "this device (accel compile DEVICE SOURCE) or load the portable source package",
        )
    return pkg
