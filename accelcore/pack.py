"""Wrap a raw module (``.spv``, ``.cl`` or an OpenCL device binary) into a kernel package.

Promise: :func:`pack_module` fills what the module itself says — kind,
entry point, local size and binding table — and checks what the caller
gives against it. What the module cannot say (the dispatch rule; everything
for a device binary) must be passed; a missing option raises
INVALID_ARGUMENT naming the keyword. Modules using what a package cannot
express (descriptor sets other than 0, ``__local`` pointer or by-value
arguments other than the element count) raise UNSUPPORTED. The returned
package has passed :func:`accelcore.package_codec.validate_package`.
The module bytes are copied once into the package.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import BackendError, ErrorKind
from .flags import AccessMode
from .package import NO_COUNT_ARGUMENT, Dispatch, KernelPackage, ModuleKind, PackageBinding, access_allows
from .package_codec import validate_package
from .program import TargetIdentity
from .spirv import Flavour, SpirvModule, inspect_spirv, is_spirv

__all__ = ["OpenCLKernel", "OpenCLParameter", "detect_module_kind", "opencl_kernels", "pack_module"]

POCL_BINARY_PREFIX = b"poclbin"


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"pack: {message}")


def _unsupported(message: str) -> BackendError:
    return BackendError(ErrorKind.UNSUPPORTED, f"pack: {message}")


def _is_rusticl_binary(data: bytes) -> bool:
    """Observed layout of Mesa rusticl (22.3.6) program binaries: a 12-byte header (u32 1, u32 byte count
    after the header, u32 binary type) followed by SPIR-V. Mesa-internal, so only a detection hint."""
    if len(data) < 32:
        return False
    version, length = int.from_bytes(data[0:4], "little"), int.from_bytes(data[4:8], "little")
    return version == 1 and length == len(data) - 12 and is_spirv(data[12:16])


def detect_module_kind(data: bytes) -> ModuleKind:
    """SPIR-V magic → the SPIR-V kind of its flavour; a PoCL (``poclbin``) or rusticl binary → OPENCL_BINARY;
    UTF-8 text → OPENCL_SOURCE; anything else → INVALID_ARGUMENT asking for ``kind=``."""
    if is_spirv(data):
        module = inspect_spirv(data)
        return ModuleKind.SPIRV_VULKAN if module.flavour is Flavour.VULKAN else ModuleKind.SPIRV_OPENCL
    if data.startswith(POCL_BINARY_PREFIX) or _is_rusticl_binary(data):
        return ModuleKind.OPENCL_BINARY
    if data and b"\0" not in data:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return ModuleKind.OPENCL_SOURCE
    raise _invalid(
        "cannot tell what this module is (not SPIR-V, not a PoCL binary, not UTF-8 OpenCL C); "
        "pass kind=ModuleKind.OPENCL_BINARY for another driver's binary"
    )


# --------------------------------------------------------------------------- OpenCL C signatures


@dataclass(frozen=True, slots=True)
class OpenCLParameter:
    """One kernel parameter as written in OpenCL C source.

    ``address_space``: global, constant, local or private (pointers), None
    for by-value; ``element_bytes`` of the pointee or value, None if unknown.
    """

    index: int
    text: str
    address_space: str | None
    is_const: bool
    element_bytes: int | None

    @property
    def is_buffer(self) -> bool:
        return self.address_space in ("global", "constant")


@dataclass(frozen=True, slots=True)
class OpenCLKernel:
    name: str
    parameters: tuple[OpenCLParameter, ...]
    required_local_size: tuple[int, int, int] | None


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_KERNEL = re.compile(
    r"\b(?:__kernel|kernel)\b(?P<pre>[^;{}]*?)\bvoid\s+(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)",
    re.DOTALL,
)
_REQD = re.compile(r"reqd_work_group_size\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
_SCALAR_BYTES = {
    "char": 1,
    "uchar": 1,
    "bool": 1,
    "short": 2,
    "ushort": 2,
    "half": 2,
    "int": 4,
    "uint": 4,
    "float": 4,
    "long": 8,
    "ulong": 8,
    "double": 8,
    "size_t": None,
}
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "unsigned", "signed", "__read_only", "__write_only"}
_SPACES = {
    "__global": "global",
    "global": "global",
    "__constant": "constant",
    "constant": "constant",
    "__local": "local",
    "local": "local",
    "__private": "private",
    "private": "private",
}


def _type_bytes(tokens: Sequence[str]) -> int | None:
    names = [t for t in tokens if t not in _QUALIFIERS and t not in _SPACES]
    if not names:
        return 4 if "unsigned" in tokens or "signed" in tokens else None
    match = re.fullmatch(r"([a-z]+?)(2|3|4|8|16)?", names[-1])
    if match is None or match.group(1) not in _SCALAR_BYTES:
        return None
    base = _SCALAR_BYTES[match.group(1)]
    lanes = int(match.group(2) or 1)
    if base is None:
        return None
    return base * (4 if lanes == 3 else lanes)


def _parameter(index: int, text: str) -> OpenCLParameter:
    pointer = "*" in text
    before = text.split("*", 1)[0] if pointer else text
    tokens = re.findall(r"[A-Za-z_]\w*", before)
    if not pointer and tokens:
        tokens = tokens[:-1]  # drop the parameter name
    space = next((_SPACES[t] for t in tokens if t in _SPACES), None)
    if pointer and space is None:
        space = "private"
    return OpenCLParameter(index, " ".join(text.split()), space, "const" in tokens, _type_bytes(tokens))


def opencl_kernels(source: str) -> tuple[OpenCLKernel, ...]:
    """Every ``__kernel`` function in ``source``, with its parameters (a light parse, not a compiler)."""
    text = _COMMENTS.sub(" ", source)
    kernels = []
    for match in _KERNEL.finditer(text):
        params_text = match.group("params").strip()
        pieces = [] if params_text in ("", "void") else [p.strip() for p in params_text.split(",")]
        reqd = _REQD.search(match.group("pre"))
        size = (int(reqd.group(1)), int(reqd.group(2)), int(reqd.group(3))) if reqd else None
        kernels.append(OpenCLKernel(match.group("name"), tuple(_parameter(i, p) for i, p in enumerate(pieces)), size))
    return tuple(kernels)


# --------------------------------------------------------------------------- packing


def _pick(names: Sequence[str], entry_point: str | None, what: str) -> str:
    if entry_point is not None:
        if entry_point not in names:
            raise _invalid(f"entry_point={entry_point!r} is not a {what} in the module ({', '.join(names) or 'none'})")
        return entry_point
    if len(names) == 1:
        return names[0]
    if not names:
        raise _invalid(f"the module has no {what}")
    raise _invalid(f"the module has {len(names)} {what}s ({', '.join(names)}); pass entry_point=")


def _local(found: tuple[int, int, int] | None, given: tuple[int, int, int] | None) -> tuple[int, int, int]:
    if found is not None:
        if given is not None and tuple(given) != found:
            raise _invalid(f"local_size={tuple(given)} contradicts the module's fixed work-group size {found}")
        return found
    if given is None:
        raise _invalid("local_size= is required: the module fixes no work-group size")
    return (given[0], given[1], given[2])


def _need_dispatch(dispatch: Dispatch | None) -> Dispatch:
    if dispatch is None:
        raise _invalid(
            "dispatch= is required: a module does not say how many workgroups to launch "
            "(e.g. Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=2))"
        )
    return dispatch


def _vulkan(
    module: SpirvModule,
    entry_point: str | None,
    bindings: Sequence[PackageBinding] | None,
    dispatch: Dispatch | None,
    local_size: tuple[int, int, int] | None,
) -> tuple[str, tuple[int, int, int], tuple[PackageBinding, ...], Dispatch]:
    entries = [e for e in module.entry_points if e.execution_model_name == "GLCompute"]
    name = _pick([e.name for e in entries], entry_point, "GLCompute entry point")
    entry = next(e for e in entries if e.name == name)
    size = _local(entry.local_size, local_size)
    for descriptor in module.descriptors:
        if descriptor.set != 0:
            raise _unsupported(
                f"descriptor {descriptor.name or descriptor.variable_id} is in set {descriptor.set}; "
                "kernel packages bind set 0 only"
            )
        if descriptor.descriptor_type not in ("storage_buffer", "uniform_buffer"):
            raise _unsupported(
                f"binding {descriptor.binding} is a {descriptor.descriptor_type}; kernel packages bind buffers only"
            )
    if bindings is None:
        rows = tuple(PackageBinding(d.binding, d.binding, d.access, d.array_stride or 4) for d in module.descriptors)
    else:
        rows = tuple(bindings)
        bound = {row.native_index for row in rows}
        for row in rows:
            named = module.descriptor(row.native_index)
            if named is None:
                have = sorted(d.binding for d in module.descriptors)
                raise _invalid(f"slot {row.slot} names binding {row.native_index}, which the module lacks ({have})")
            if not access_allows(AccessMode(row.access), named.access):
                raise _invalid(
                    f"slot {row.slot} declares {AccessMode(row.access).name} but binding "
                    f"{row.native_index} is {named.access.name} in the module"
                )
        unbound = [d.binding for d in module.descriptors if d.binding not in bound]
        if unbound:
            raise _invalid(f"the module uses binding {unbound[0]}, which no slot in bindings= binds")
    rule = _need_dispatch(dispatch)
    has_push = module.push_constant_bytes != 0
    if rule.count_argument != NO_COUNT_ARGUMENT and not has_push:
        raise _invalid("dispatch.count_argument is set but the module declares no push-constant block")
    if rule.count_argument == NO_COUNT_ARGUMENT and has_push:
        raise _invalid("the module reads a push-constant block; set dispatch.count_argument (the element count)")
    return name, size, rows, rule


def _opencl_rows(
    params: Sequence[tuple[int, str | None, bool, int | None, str]],
    bindings: Sequence[PackageBinding] | None,
    dispatch: Dispatch,
) -> tuple[PackageBinding, ...]:
    """params: (index, address space, read-only, element bytes, description)."""
    by_index = {p[0]: p for p in params}
    count = dispatch.count_argument
    if count != NO_COUNT_ARGUMENT:
        if count not in by_index or by_index[count][1] is not None or by_index[count][3] != 4:
            raise _invalid(f"dispatch.count_argument={count} is not a 4-byte by-value kernel argument")
    for index, space, _, size, text in params:
        if space == "local":
            raise _unsupported(f"argument {index} ({text}) is a __local pointer; kernel packages cannot size it")
        if space is None and index != count:
            raise _unsupported(
                f"argument {index} ({text}) is by value; packages pass only buffers and the count"
                + (" (set dispatch.count_argument to its index if it is the count)" if size == 4 else "")
            )
    buffers = [p for p in params if p[1] in ("global", "constant")]
    if bindings is None:
        rows = []
        for index, _, read_only, size, text in buffers:
            if size is None:
                raise _invalid(f"cannot tell the element size of argument {index} ({text}); pass bindings=")
            rows.append(PackageBinding(index, index, AccessMode.READ if read_only else AccessMode.READ_WRITE, size))
        return tuple(rows)
    rows = list(bindings)
    covered = {row.native_index for row in rows}
    for row in rows:
        if row.native_index not in by_index or by_index[row.native_index][1] not in ("global", "constant"):
            raise _invalid(f"slot {row.slot} names argument {row.native_index}, which is not a buffer argument")
        if by_index[row.native_index][2] and not access_allows(AccessMode.READ, AccessMode(row.access)):
            raise _invalid(
                f"slot {row.slot} declares {AccessMode(row.access).name} but argument "
                f"{row.native_index} is const (read-only)"
            )
    for index, *_ in buffers:
        if index not in covered:
            raise _invalid(f"buffer argument {index} is not bound by any slot in bindings=")
    return tuple(rows)


def pack_module(
    data: bytes,
    *,
    kind: ModuleKind | None = None,
    entry_point: str | None = None,
    bindings: Sequence[PackageBinding] | None = None,
    dispatch: Dispatch | None = None,
    local_size: tuple[int, int, int] | None = None,
    build_options: str = "",
    target: TargetIdentity | None = None,
) -> KernelPackage:
    """Wrap ``data`` into a :class:`KernelPackage` (see the module docstring)."""
    module = bytes(data)
    found_kind = detect_module_kind(module) if kind is None else ModuleKind(kind)
    if found_kind is ModuleKind.SPIRV_VULKAN or found_kind is ModuleKind.SPIRV_OPENCL:
        spirv = inspect_spirv(module)
        flavour = Flavour.VULKAN if found_kind is ModuleKind.SPIRV_VULKAN else Flavour.OPENCL
        if spirv.flavour is not flavour:
            raise _invalid(f"kind={found_kind.name} but the module is {spirv.flavour.value}-flavoured SPIR-V")
        if found_kind is ModuleKind.SPIRV_VULKAN:
            name, size, rows, rule = _vulkan(spirv, entry_point, bindings, dispatch, local_size)
        else:
            kernels = [e for e in spirv.entry_points if e.execution_model_name == "Kernel"]
            name = _pick([e.name for e in kernels], entry_point, "Kernel entry point")
            entry = next(e for e in kernels if e.name == name)
            size = _local(entry.local_size, local_size)
            rule = _need_dispatch(dispatch)
            spaces = {5: "global", 0: "constant", 4: "local"}
            params = [
                (
                    p.index,
                    spaces.get(p.storage_class, "private") if p.storage_class is not None else None,
                    p.no_write or p.storage_class == 0,
                    p.value_bytes,
                    f"parameter %{p.id}",
                )
                for p in entry.parameters
            ]
            rows = _opencl_rows(params, bindings, rule)
    elif found_kind is ModuleKind.OPENCL_SOURCE:
        try:
            source = module.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid("kind=OPENCL_SOURCE but the module is not UTF-8 text") from None
        kernels_cl = opencl_kernels(source)
        name = _pick([k.name for k in kernels_cl], entry_point, "__kernel function")
        kernel = next(k for k in kernels_cl if k.name == name)
        size = _local(kernel.required_local_size, local_size)
        rule = _need_dispatch(dispatch)
        params = [
            (p.index, p.address_space, p.is_const or p.address_space == "constant", p.element_bytes, p.text)
            for p in kernel.parameters
        ]
        rows = _opencl_rows(params, bindings, rule)
    else:
        missing = [
            option
            for option, value in (
                ("entry_point=", entry_point),
                ("bindings=", bindings),
                ("dispatch=", dispatch),
                ("local_size=", local_size),
            )
            if value is None
        ]
        if missing:
            raise _invalid(f"an OpenCL device binary says nothing about itself; pass {', '.join(missing)}")
        assert entry_point is not None and bindings is not None and dispatch is not None and local_size is not None
        name, size, rows, rule = entry_point, (local_size[0], local_size[1], local_size[2]), tuple(bindings), dispatch
    package = KernelPackage(
        module_kind=found_kind,
        entry_point=name,
        local_size=size,
        bindings=rows,
        dispatch=rule,
        module=module,
        build_options=build_options,
        target=target if target is not None else TargetIdentity.any(),
    )
    validate_package(package)
    return package
