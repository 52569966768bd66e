"""A kernel's parameters as the Python layer sees them (:class:`Parameter`: name, slot, access, element
dtype and layout, read from the kernel's own declarations), and the one check of an array against
one (:func:`check_buffer_array`, :func:`_checked_array`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..contract.errors import BackendError
from ..contract.flags import AccessMode, access_allows
from ..kernels.arguments import describe, encode_layout
from ..kernels.dispatch_extent import Extent
from ..kernels.layouts import (
    CLSPV_GENERATOR,
    ElementLayout,
    LayoutField,
    block_layout,
    check_array,
    spirv_layout,
    spirv_value_type,
    with_stride,
)
from ..kernels.opencl_signature import opencl_kernels
from ..kernels.package import KernelPackage, ModuleKind
from ..kernels.spirv import SpirvType, inspect_spirv
from ..kernels.values import ScalarType, ValueType
from .keywords import _invalid
from .memory import DeviceArray

__all__ = ["Parameter", "check_buffer_array", "declared_elements"]


# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class Parameter:
    """One thing a call can pass: a ``buffer``, a by-value ``value``, a ``local`` pointer or a ``push`` member."""

    name: str
    role: str  # buffer, value, local, push
    index: int  # OpenCL argument index / Vulkan position in (set, binding) order / push member index
    element: ValueType | None = None
    access: AccessMode = AccessMode.READ
    uniform: bool = False
    set: int = 0
    binding: int = 0
    aliases: tuple[str, ...] = ()
    """Other names that denote it (a Vulkan descriptor's instance, block and only-member names)."""
    min_bytes: int = 0
    """A uniform block's size: a shorter array is refused before anything is uploaded."""
    layout: str = ""
    """A uniform block's members with their offsets (std140 surprises: a float[] member's 16-byte stride)."""
    element_layout: ElementLayout | None = None
    """A buffer's element (a uniform block: the whole block) as the module lays it out; None when unknown.
    Every array bound to it is checked against it (:func:`accelcore.kernels.layouts.check_array`)."""
    signedness_known: bool = True
    """False where the module cannot say int from uint (OpenCL SPIR-V, clspv): either is accepted."""


def _opencl_parameters(module: bytes, kind: ModuleKind, entry: str | None, options: str) -> list[Parameter]:
    out: list[Parameter] = []
    if kind is ModuleKind.OPENCL_SOURCE:
        kernels = opencl_kernels(module.decode("utf-8"), options)
        chosen = [k for k in kernels if entry is None or k.name == entry]
        if not chosen:
            return out
        for p in chosen[0].parameters:
            role = "buffer" if p.is_buffer else "local" if p.is_local else "value"
            access = AccessMode.READ if (p.is_const or p.address_space == "constant") else AccessMode.READ_WRITE
            element = p.value_type or p.aggregate_scalar  # struct { float4 pos; float4 vel; }: float32 arrays
            layout = p.layout if role == "buffer" else None
            out.append(Parameter(p.name or str(p.index), role, p.index, element, access, element_layout=layout))
        return out
    spirv = inspect_spirv(module)
    entries = [
        e for e in spirv.entry_points if e.execution_model_name == "Kernel" and (entry is None or e.name == entry)
    ]
    for kp in entries[0].parameters if entries else ():
        space = kp.storage_class
        role = "value" if space is None else "local" if space == 4 else "buffer"
        element = spirv_value_type(kp.type) if kp.type is not None else None
        access = AccessMode.READ if (kp.no_write or space == 0) else AccessMode.READ_WRITE
        layout = spirv_layout(kp.type) if role == "buffer" and kp.type is not None else None
        name = kp.name or str(kp.index)
        out.append(Parameter(name, role, kp.index, element, access, element_layout=layout, signedness_known=False))
    return out


def _vulkan_parameters(module: bytes) -> list[Parameter]:
    spirv = inspect_spirv(module)
    out: list[Parameter] = []
    for position, d in enumerate(spirv.descriptors):
        element = None
        element_layout = None
        members = d.type.members if d.type is not None else ()
        component = members[-1].type.component if members else None
        if members and members[-1].type.kind in ("runtime_array", "array") and component is not None:
            element = spirv_value_type(component) or _single_scalar(component)
            last = members[-1]
            element_layout = with_stride(
                spirv_layout(component, matrix_stride=last.matrix_stride, row_major=last.row_major), last.type.stride
            )
            if len(members) > 1 and d.type is not None:
                if last.type.kind == "runtime_array" and last.offset is not None and last.type.stride:
                    header = [
                        LayoutField(m.name or "", m.offset or 0, spirv_layout(m.type, matrix_stride=m.matrix_stride,
                                                                              row_major=m.row_major))
                        for m in members[:-1]
                    ]  # fmt: skip
                    element_layout = block_layout(
                        header, last.offset, element_layout, last.type.stride, last.name or ""
                    )
                else:
                    element_layout = spirv_layout(d.type)  # members then a fixed array: the block is one element
        if d.descriptor_type == "uniform_buffer" or (members and element_layout is None and d.type is not None):
            element_layout = spirv_layout(d.type) if d.type is not None else None  # the whole block is one element
        only_member = members[0].name if len(members) == 1 else None
        names = [n for n in (d.name, only_member, d.block_name) if n]
        label = names[0] if names else str(position)
        uniform = d.descriptor_type == "uniform_buffer"
        block_size = d.type.size if uniform and d.type is not None and d.type.size else 0
        layout = ", ".join(
            f"{m.name or n} {describe(m.type)}{f' (stride {m.type.stride})' if m.type.stride else ''} at {m.offset}"
            for n, m in enumerate(members)
        )
        out.append(
            Parameter(
                label,
                "buffer",
                position,
                element,
                d.access,
                uniform,
                d.set,
                d.binding,
                tuple(dict.fromkeys(n for n in names[1:] if n != label)),
                block_size,
                layout if uniform else "",
                element_layout,
                (spirv.generator >> 16) != CLSPV_GENERATOR,
            )
        )
    block = spirv.push_constant_block
    for number, member in enumerate(block.members if block is not None else ()):
        out.append(Parameter(member.name or str(number), "push", number, spirv_value_type(member.type)))
    taken = {p.name for p in out}
    whole = next((n for n in (block.variable_name, block.type_name) if n and n not in taken), None) if block else None
    if whole is not None:  # the whole block by its instance (or block) name: bytes, or a dict of members
        out.append(Parameter(whole, "push_block", -1))
    return out


def _single_scalar(t: SpirvType, depth: int = 0) -> ValueType | None:
    """The one scalar type every leaf of a struct/array/matrix element has (``struct { vec2 pos; vec2 vel; }``:
    f32), so a plain array of another dtype is refused; None when the leaves differ, or a bool or opaque type."""
    if depth > 16:
        return None
    if t.kind == "struct":
        found = {_single_scalar(m.type, depth + 1) for m in t.members}
    elif t.kind in ("array", "runtime_array", "matrix", "vector") and t.component is not None:
        found = {_single_scalar(t.component, depth + 1)}
    else:
        vtype = spirv_value_type(t)
        found = {vtype if vtype is not None and vtype.lanes == 1 and vtype.scalar is not ScalarType.BOOL else None}
    return found.pop() if len(found) == 1 else None


def _element_dtype(element: ValueType | None) -> np.dtype[Any] | None:
    return None if element is None else element.scalar.numpy_dtype


def declared_elements(pkg: KernelPackage) -> dict[int, Parameter]:
    """Slot → the buffer parameter the package's module declares there (its name, element type and layout)."""
    try:
        if pkg.module_kind is ModuleKind.SPIRV_VULKAN:
            params = _vulkan_parameters(pkg.module)
            by_native = {(p.set, p.binding): p for p in params if p.role == "buffer"}
            return {
                row.slot: by_native[(row.set, row.native_index)]
                for row in pkg.bindings
                if (row.set, row.native_index) in by_native
            }
        if pkg.module_kind in (ModuleKind.OPENCL_SOURCE, ModuleKind.SPIRV_OPENCL):
            by_index = {
                p.index: p
                for p in _opencl_parameters(pkg.module, pkg.module_kind, pkg.entry_point, pkg.build_options)
                if p.role == "buffer"
            }
            return {row.slot: by_index[row.native_index] for row in pkg.bindings if row.native_index in by_index}
        if pkg.module_kind is ModuleKind.OPENCL_BINARY:  # the element types `accel compile` recorded
            recorded = {n.index: n for n in pkg.argument_names}
            return {
                row.slot: Parameter(
                    recorded[row.native_index].name, "buffer", row.slot, recorded[row.native_index].element
                )
                for row in pkg.bindings
                if row.native_index in recorded and recorded[row.native_index].element is not None
            }
    except UnicodeDecodeError:
        pass  # not text: the provider refuses it at load
    return {}


def check_buffer_array(what: str, dtype: np.dtype[Any], shape: Sequence[int], declared: Parameter | None) -> None:
    """INVALID_ARGUMENT unless an array of ``dtype`` and ``shape`` holds the declared elements exactly
    (:func:`accelcore.kernels.layouts.check_array`: dtype, struct layout, vector lanes; never converted)."""
    if declared is None:
        return
    if declared.element_layout is not None:
        check_array(what, dtype, shape, declared.element_layout, signedness_known=declared.signedness_known)
        return
    wanted = _element_dtype(declared.element)
    if wanted is not None and (dtype.fields is not None or dtype.base != wanted):
        raise _invalid(
            f"{what} declares {declared.element} elements ({wanted}) but was given an array of {dtype}; "
            f"convert it first (e.g. x.astype(np.{wanted.name}))"
        )


# --------------------------------------------------------------------------- kernels


def _entry_points(name: str, module: bytes, kind: ModuleKind, build_options: str) -> list[str]:
    """The kernels ``module`` offers: OpenCL C ``__kernel`` functions, OpenCL SPIR-V Kernel or Vulkan GLCompute
    entry points."""
    if kind is ModuleKind.OPENCL_SOURCE:
        try:
            source = module.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _invalid(f"{name}: OpenCL C source is not UTF-8 text (byte {exc.start})") from None
        return [k.name for k in opencl_kernels(source, build_options)]
    model = "GLCompute" if kind is ModuleKind.SPIRV_VULKAN else "Kernel"
    return [e.name for e in inspect_spirv(module).entry_points if e.execution_model_name == model]


def _check_entry(name: str, entry: str | None, offered: Sequence[str]) -> None:
    """INVALID_ARGUMENT, listing ``offered``, unless ``entry=`` names one of them (or is None and there is one)."""
    listed = ", ".join(offered)
    if entry is not None and entry not in offered:
        has = f"its kernels: {listed}" if offered else "it has no kernel"
        raise _invalid(f"entry={entry!r}: {name} has no kernel {entry!r} ({has})")
    if not offered:
        raise _invalid(f"{name} has no kernel (no __kernel function or compute entry point)")
    if entry is None and len(offered) > 1:
        raise _invalid(f"{name} has {len(offered)} kernels ({listed}); pass entry= to choose one")


_SLOT_ACCESS = {"r": AccessMode.READ, "w": AccessMode.WRITE, "rw": AccessMode.READ_WRITE}


def _parse_slots(
    texts: Mapping[str, str], parameters: Sequence[Parameter], is_package: bool
) -> dict[str, tuple[AccessMode, int | None]]:
    """``slots=`` of :meth:`Device.kernel`: buffer name → (access, element bytes or None); INVALID_ARGUMENT naming
    a name that is no buffer, a malformed value or access the module does not declare."""
    if not texts:
        return {}
    if is_package:
        raise _invalid("slots=: a kernel package records its binding table; give slots= with the source module")
    buffers = {p.name: p for p in parameters if p.role == "buffer"}
    out: dict[str, tuple[AccessMode, int | None]] = {}
    for name, text in texts.items():
        param = buffers.get(name)
        if param is None:
            raise _invalid(f"slots={{{name!r}: ...}}: the kernel has no buffer {name!r} (it has: {', '.join(buffers)})")
        access_text, _, size_text = str(text).partition(":")
        access = _SLOT_ACCESS.get(access_text.strip().lower())
        element: int | None = None
        if size_text:
            element = int(size_text) if size_text.strip().isdecimal() else 0
        if access is None or element == 0:
            raise _invalid(f"slots={{{name!r}: {text!r}}} is not r, w or rw, optionally :BYTES (e.g. 'w', 'r:16')")
        if not access_allows(param.access, access):
            raise _invalid(
                f"slots={{{name!r}: {text!r}}} asks for {access.name} but the module declares {name} "
                f"{param.access.name} (a const or read-only buffer cannot be written)"
            )
        out[name] = (access, element)
    return out


def _with_slots(
    pkg: KernelPackage,
    slots: Mapping[str, tuple[AccessMode, int | None]],
    parameters: Sequence[Parameter],
    kind: ModuleKind,
) -> KernelPackage:
    """``pkg`` with the binding rows ``slots=`` names set to its access and element size."""
    if not slots:
        return pkg
    by_name = {p.name: p for p in parameters}
    rows = []
    for row in pkg.bindings:
        for name, (access, element) in slots.items():
            param = by_name[name]
            native = (param.set, param.binding) if kind is ModuleKind.SPIRV_VULKAN else (0, param.index)
            if (row.set, row.native_index) == native:
                row = dataclasses.replace(row, access=access, element_size=element or row.element_size)
        rows.append(row)
    return dataclasses.replace(pkg, bindings=tuple(rows))


def _checked_array(param: Parameter, row: Any, value: object, pkg: KernelPackage) -> npt.NDArray[Any] | DeviceArray:
    """The array for a buffer parameter, checked against the declaration (never converted)."""
    what = f"argument {param.name}"
    writes = bool(int(row.access) & int(AccessMode.WRITE))
    if isinstance(value, DeviceArray):
        dtype, nbytes = value.dtype, value.nbytes
    elif isinstance(value, Mapping) and param.uniform and param.element_layout is not None:
        return np.frombuffer(encode_layout(param.element_layout, value, what), np.uint8)  # laid out here
    elif isinstance(value, np.ndarray):
        dtype, nbytes = value.dtype, value.nbytes
        if isinstance(value, np.ma.MaskedArray):
            raise _invalid(f"{what} is a masked array (np.ma); a kernel sees no mask: pass .filled(VALUE) or .data")
        if not value.flags.c_contiguous:
            order = "Fortran-ordered (column-major)" if value.flags.f_contiguous else "not contiguous"
            raise _invalid(
                f"{what} is {order}; a kernel sees flat memory in C order: pass np.ascontiguousarray(x) to keep its "
                "values (the kernel then reads them row-major), or x.T when the kernel reads column-major data "
                "(the same bytes, C-ordered)"
            )
        if writes and not value.flags.writeable:
            raise _invalid(f"{what} is read-only, but the kernel writes it ({row.access.name})")
    else:
        raise _invalid(f"{what} is a buffer; pass a numpy array or a device array, not {type(value).__name__}")
    check_buffer_array(what, dtype, value.shape, param)
    if dtype.hasobject:  # (a declared element type says so above, naming it)
        raise _invalid(f"{what} is an array of {dtype}, which holds Python objects; a buffer takes plain data")
    if nbytes == 0:
        raise _invalid(f"{what} is empty; a buffer needs at least one element")
    block = param.element_layout is not None and param.element_layout.kind == "block"
    if block and param.element_layout is not None and (param.element_layout.size or 0) > nbytes:
        raise _invalid(f"{what} holds {nbytes} bytes, less than the {param.element_layout.size} of its block's members")
    if nbytes % row.element_size and not block:  # a block's members come before its elements
        raise _invalid(
            f"{what}: {nbytes} bytes are not a whole number of the kernel's {row.element_size}-byte elements"
        )
    if nbytes < param.min_bytes:
        raise _invalid(
            f"{what} is a uniform block of {param.min_bytes} bytes ({param.layout}) but was given {nbytes} bytes"
        )
    return value  # stated coverage is the engine's to check at submit


@dataclass(frozen=True, slots=True)
class _Slot:
    """One buffer parameter of a package, worked out once per package: its row, slot and access,
    whether the kernel writes it, the element dtype an array of any shape may have without the full
    check (:func:`_fast_dtype`) and the row's element size."""

    param: Parameter
    row: Any
    slot: int
    access: AccessMode
    writes: bool
    dtype: np.dtype[Any] | None
    element_size: int
    unchecked: bool = False
    """Nothing is known of the element: any dtype passes (a byte-size check still applies)."""


def _fast_dtype(param: Parameter) -> np.dtype[Any] | None:
    """The dtype whose arrays of any shape match ``param`` without the full check (a scalar element);
    None when every array needs :func:`check_buffer_array` (vectors, structs, blocks) or nothing is known."""
    layout = param.element_layout
    if layout is not None:
        return layout.scalar.numpy_dtype if layout.kind == "scalar" and layout.scalar is not None else None
    return _element_dtype(param.element) if param.element is not None and param.element.lanes == 1 else None


def _short_device_array(name: str, array: DeviceArray, extent: Extent) -> BackendError:
    """The refusal of a device array shorter than the work-items a dispatch asks for (coverage unknown)."""
    items = extent.requested_bytes // extent.element_size
    return _invalid(
        f"argument {name} is a device array of {array.nbytes} bytes ({array.nbytes // extent.element_size} "
        f"elements of {extent.element_size} bytes), but the dispatch asks for {items} work-items and the "
        f"kernel's coverage of it is unknown: indexed by work-item it would be read or written {items} elements "
        "long, past its end (a device array has no guard); give a device array as long as the dispatch, state "
        "the coverage, or pass allow_short_device_arrays=True if the kernel checks its index"
    )
