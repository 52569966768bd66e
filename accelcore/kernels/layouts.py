"""The declared layout of a buffer's element, and the one check of a numpy array against it.

Promise: :class:`ElementLayout` describes one element of a buffer as the module declares it — a
scalar, a vector, a struct or union with its members at their byte offsets, an array, a matrix —
with the sizes the compiler chose: OpenCL C layouts come from Clang (:mod:`accelcore.kernels.opencl_signature`),
OpenCL SPIR-V layouts from the OpenCL C ABI and Vulkan layouts from the module's ``Offset`` /
``ArrayStride`` / ``MatrixStride`` decorations (std430, std140, scalar: whatever the shader was
compiled with) through :mod:`accelcore.kernels.spirv`. :func:`check_array` is what the Python layer, ``accel
run --bind`` and every other path that binds an array call; it never converts. It accepts:

* a **plain array** (no fields) when every scalar of the element has one type and the array has
  that dtype: any shape for a scalar element; for a vector or struct element either a 1-D array
  (a whole number of elements, when the element has no padding) or a last axis equal to the
  scalars one element spans (its size over the scalar's, padding included: ``(N, 4)`` for a
  16-byte ``{vec3 pos; float scale;}`` or ``float3``, never ``(N, 3)``);
* a **structured array** whose itemsize is the element's size and whose fields are the declared
  members at the declared offsets with the declared dtypes, recursively (a vector member as a
  ``(lanes,)`` subarray, a 3-lane OpenCL vector also as ``(4,)``; an array member as a subarray
  of its length; a nested struct as a nested structured dtype). Member names must match where the
  module has them; an extra field may only fill padding.

Scalar dtypes match exactly (byte order included), with two rules stated in docs/python.md: where
the module cannot express integer signedness (``signedness_known=False``: OpenCL SPIR-V, clspv's
Vulkan SPIR-V) either signedness of the declared width is accepted, and numpy ``bool`` is accepted
for 8-bit integer elements. Everything else is ``BackendError(INVALID_ARGUMENT)`` naming the
argument, the declared layout (members, offsets, size) and what was given, with the numpy dtype
that would match (:meth:`ElementLayout.numpy_dtype`).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contract.errors import BackendError, ErrorKind
from .values import OPENCL_NAMES, ScalarType, ValueType

if TYPE_CHECKING:
    from .spirv import SpirvType

__all__ = [
    "CLSPV_GENERATOR",
    "ElementLayout",
    "LayoutField",
    "block_layout",
    "check_array",
    "layout_from_json",
    "scalar_layout",
    "spirv_layout",
    "spirv_value_type",
    "with_stride",
]

_MAX_DEPTH = 32
_MAX_DESCRIBED = 24
"""Members a message lists before saying how many more there are."""


@dataclass(frozen=True, slots=True)
class LayoutField:
    """One member of a struct or union: its name ('' when the module has none), byte offset and layout."""

    name: str
    offset: int
    layout: ElementLayout


@dataclass(frozen=True, slots=True)
class ElementLayout:
    """One element as declared (see the module docstring).

    ``kind``: scalar, vector, struct, union, array, matrix or opaque (a pointer, an image, a type the
    module does not lay out: nothing can be checked against it). ``size``: bytes one element takes
    (the array stride of the buffer); ``scalar``/``lanes``: the component type and lane count of a
    scalar or vector (a matrix's column); ``fields``: a struct's or union's members; ``element``,
    ``count``, ``stride``: an array's element, length and stride (a matrix's column, columns and
    column stride). ``name``: the type as declared (``Pt``, ``float4``, ``struct P``).
    """

    kind: str
    """scalar, vector, struct, union, array, matrix, block (a storage block whose members come before a
    runtime array: ``fields`` are those members, ``element``/``stride`` the array's, ``size`` the array's
    offset and ``why`` its name) or opaque."""
    size: int | None
    name: str = ""
    scalar: ScalarType | None = None
    lanes: int = 1
    fields: tuple[LayoutField, ...] = ()
    element: ElementLayout | None = None
    count: int = 0
    stride: int = 0
    why: str = ""
    """For an opaque layout: why it cannot be checked."""

    # -- what it is made of ----------------------------------------------------------------

    def single_scalar(self, depth: int = 0) -> ScalarType | None:
        """The one scalar type of every member (recursively); None when they differ or any is opaque."""
        if depth > _MAX_DEPTH:
            return None
        if self.kind in ("scalar", "vector"):
            return self.scalar
        if self.kind in ("array", "matrix"):
            return None if self.element is None else self.element.single_scalar(depth + 1)
        if self.kind in ("struct", "union") and self.fields:
            found = {f.layout.single_scalar(depth + 1) for f in self.fields}
            return found.pop() if len(found) == 1 else None
        if self.kind == "block" and self.element is not None:
            found = {f.layout.single_scalar(depth + 1) for f in self.fields} | {self.element.single_scalar(depth + 1)}
            return found.pop() if len(found) == 1 else None
        return None

    def data_bytes(self, depth: int = 0) -> int:
        """Bytes of the element that hold data (its size less padding)."""
        if depth > _MAX_DEPTH:
            return 0
        if self.kind in ("scalar", "vector") and self.scalar is not None:
            return self.scalar.bytes * self.lanes
        if self.kind in ("array", "matrix") and self.element is not None:
            return self.count * self.element.data_bytes(depth + 1)
        if self.kind == "struct":
            return sum(f.layout.data_bytes(depth + 1) for f in self.fields)
        if self.kind == "union":
            return max((f.layout.data_bytes(depth + 1) for f in self.fields), default=0)
        return self.size or 0

    @property
    def is_scalar(self) -> bool:
        return self.kind == "scalar"

    @property
    def checkable(self) -> bool:
        return self.kind != "opaque" and self.size is not None and self.size > 0

    @property
    def value_type(self) -> ValueType | None:
        """The scalar/vector type, for a scalar or vector element."""
        if self.kind in ("scalar", "vector") and self.scalar is not None:
            return ValueType(self.scalar, self.lanes)
        return None

    # -- how it reads ----------------------------------------------------------------------

    def describe(self, depth: int = 0) -> str:
        """``Pt {float weight at 0; long assign at 8; float cost at 16} (24 bytes)``."""
        if self.kind in ("scalar", "vector"):
            vtype = self.value_type
            if depth > 0 or vtype is None:
                return self.name or (vtype.opencl_name if vtype else "?")
            typedef = f" ({self.name})" if self.name and self.name != vtype.opencl_name else ""
            return f"{vtype}{typedef}"  # a buffer's own element: f32, f32x4, u64 (size_t)
        if self.kind in ("array", "matrix") and self.element is not None:
            inner = self.element.describe(depth + 1) if depth < 3 else self.element.name
            stride = f", stride {self.stride}" if self.stride and self.stride != self.element.size else ""
            return f"{inner}[{self.count}{stride}]"
        if self.kind == "block" and self.element is not None:
            header = "; ".join(f"{f.layout.describe(depth + 1)} {f.name or '?'} at {f.offset}" for f in self.fields)
            return (
                f"{self.name or 'block'} {{{header}; {self.element.describe(depth + 1)} {self.why or '?'}[] "
                f"at {self.size}, stride {self.stride}}}"
            )
        if self.kind in ("struct", "union"):
            if depth >= 3:
                return f"{self.name or self.kind} ({self.size} bytes)"
            parts = [
                f"{f.layout.describe(depth + 1)} {f.name or '?'} at {f.offset}" for f in self.fields[:_MAX_DESCRIBED]
            ]
            if len(self.fields) > _MAX_DESCRIBED:
                parts.append(f"... {len(self.fields) - _MAX_DESCRIBED} more")
            head = self.name or self.kind
            return f"{head} {{{'; '.join(parts)}}} ({self.size} bytes)"
        return self.name or self.kind

    def numpy_dtype(self, depth: int = 0) -> np.dtype[Any] | None:
        """The numpy dtype one element is (a structured dtype with the declared names, offsets and itemsize);
        None when the layout has opaque parts or unnamed members."""
        if depth > _MAX_DEPTH or not self.checkable:
            return None
        if self.kind == "scalar" and self.scalar is not None:
            return self.scalar.numpy_dtype
        if self.kind == "vector" and self.scalar is not None:
            return np.dtype((self.scalar.numpy_dtype, (self.lanes,)))
        if self.kind in ("array", "matrix") and self.element is not None:
            inner = self.element.numpy_dtype(depth + 1)
            if inner is None:
                return None
            if self.stride and self.stride != inner.itemsize:  # std140: each element padded to the stride
                if self.stride < inner.itemsize:
                    return None
                inner = np.dtype({"names": ["v"], "formats": [inner], "offsets": [0], "itemsize": self.stride})
            return np.dtype((inner, (self.count,)))
        if self.kind in ("struct", "union") and self.fields:
            names, formats, offsets = [], [], []
            for f in self.fields:
                inner = f.layout.numpy_dtype(depth + 1)
                if inner is None or not f.name:
                    return None
                names.append(f.name)
                formats.append(inner)
                offsets.append(f.offset)
            spec: dict[str, Any] = {"names": names, "formats": formats, "offsets": offsets, "itemsize": self.size}
            try:
                made: np.dtype[Any] = np.dtype(spec)  # type: ignore[call-overload]
            except (ValueError, TypeError):
                return None
            return made
        return None


def scalar_layout(value_type: ValueType, size: int | None = None) -> ElementLayout:
    """The layout of a scalar or vector element (``size``: its stride when it differs from the type's size)."""
    kind = "scalar" if value_type.lanes == 1 else "vector"
    return ElementLayout(kind, size or value_type.size, value_type.opencl_name, value_type.scalar, value_type.lanes)


def layout_from_json(node: Mapping[str, Any], depth: int = 0) -> ElementLayout:
    """A layout from the JSON the Clang child writes (``accelcore.kernels._clang_reflect``)."""
    if depth > _MAX_DEPTH:
        return ElementLayout("opaque", None, why="nested too deeply")
    kind = str(node.get("kind", "opaque"))
    size = node.get("size")
    size = int(size) if isinstance(size, int) and size >= 0 else None
    name = _type_name(str(node.get("text", "")))
    if kind in ("scalar", "vector"):
        scalar = OPENCL_NAMES.get(str(node.get("scalar")))
        if scalar is None:
            return ElementLayout("opaque", size, name, why=f"{name} has no scalar type")
        lanes = int(node.get("lanes", 1)) if kind == "vector" else 1
        return ElementLayout(kind, size, name, scalar, lanes)
    if kind == "array":
        element = layout_from_json(node.get("element") or {}, depth + 1)
        count = int(node.get("count", 0))
        return ElementLayout("array", size, name, element=element, count=count, stride=element.size or 0)
    if kind in ("struct", "union"):
        fields = tuple(
            LayoutField(
                str(f.get("name", "")), int(f.get("offset", 0)), layout_from_json(f.get("type") or {}, depth + 1)
            )
            for f in node.get("fields") or ()
        )
        return ElementLayout(kind, size, name, fields=fields)
    if kind == "pointer":
        return ElementLayout("opaque", size, name, why=f"{name} is a pointer (a kernel argument cannot carry one)")
    return ElementLayout("opaque", size, name, why=str(node.get("why") or f"{name} is not a data type"))


def _type_name(text: str) -> str:
    words = [w for w in text.replace("*", " * ").split() if w not in _QUALIFIERS]
    return " ".join(words)


_QUALIFIERS = frozenset(
    {
        "const",
        "volatile",
        "restrict",
        "__global",
        "__local",
        "__constant",
        "__private",
        "__generic",
        "global",
        "local",
        "constant",
        "private",
        "generic",
    }
)


# --------------------------------------------------------------------------- the check


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, message)


def _scalar_fits(declared: ScalarType, given: np.dtype[Any], signedness_known: bool) -> bool:
    if given.fields is not None or given.subdtype is not None:
        return False
    if given == declared.numpy_dtype:
        return True
    if given.kind == "b" and declared in (ScalarType.I8, ScalarType.U8):
        return True  # numpy bool for char/uchar elements (docs/python.md)
    if not signedness_known and given.kind in "iu" and given.itemsize == declared.bytes and given.isnative:
        return declared not in (ScalarType.BOOL,) and not declared.is_float
    return False


def _hint(layout: ElementLayout) -> str:
    dtype = layout.numpy_dtype()
    if dtype is None or dtype.fields is None:
        return ""
    return f"; a structured array of dtype {_dtype_text(dtype)} matches it"


def _dtype_text(dtype: np.dtype[Any]) -> str:
    """How to write ``dtype`` in Python: ``'<f4'``, ``('<f4', (3,))`` or ``np.dtype({...})``."""
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return f"({_dtype_text(base)}, {tuple(shape)})"
    if dtype.fields is None:
        return repr(dtype.str)
    names = list(dtype.names or ())
    formats = ", ".join(_dtype_text(dtype.fields[n][0]) for n in names)
    offsets = [dtype.fields[n][1] for n in names]
    return f"np.dtype({{'names': {names}, 'formats': [{formats}], 'offsets': {offsets}, 'itemsize': {dtype.itemsize}}})"


def _field_text(dtype: np.dtype[Any]) -> str:
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return f"{base}{list(shape)}"
    return str(dtype) if dtype.fields is None else f"struct ({dtype.itemsize} bytes)"


def _given_text(dtype: np.dtype[Any], shape: Sequence[int]) -> str:
    if dtype.fields is None:
        return f"an array of {dtype} with shape {tuple(shape)}"
    parts = []
    for name in list(dtype.names or ())[:_MAX_DESCRIBED]:
        sub, offset = dtype.fields[name][0], dtype.fields[name][1]
        parts.append(f"{_field_text(sub)} {name} at {offset}")
    more = f"; ... {len(dtype.names or ()) - _MAX_DESCRIBED} more" if len(dtype.names or ()) > _MAX_DESCRIBED else ""
    return f"a structured array {{{'; '.join(parts)}{more}}} ({dtype.itemsize} bytes per element)"


def check_array(
    what: str,
    dtype: np.dtype[Any],
    shape: Sequence[int],
    layout: ElementLayout | None,
    *,
    signedness_known: bool = True,
) -> None:
    """INVALID_ARGUMENT unless an array of ``dtype`` and ``shape`` holds elements of ``layout`` exactly
    (the rules are the module docstring's); nothing is checked against an unknown or opaque layout."""
    if layout is None or not layout.checkable:
        return
    declared = layout.describe()
    if dtype.hasobject:
        raise _invalid(f"{what} declares {declared} elements but was given an array of Python objects ({dtype})")
    if layout.kind == "block":
        _check_block(what, dtype, shape, layout, declared, signedness_known)
        return
    if dtype.fields is None:
        _check_plain(what, dtype, shape, layout, declared, signedness_known)
        return
    if layout.kind in ("scalar", "vector"):
        raise _invalid(
            f"{what} declares {declared} elements but was given {_given_text(dtype, shape)}; "
            f"pass a plain array of {_plain_dtype(layout)}"
        )
    if dtype.itemsize != layout.size:
        raise _invalid(
            f"{what} declares {declared} but was given {_given_text(dtype, shape)}: "
            f"{dtype.itemsize} bytes per element against {layout.size}{_hint(layout)}"
        )
    problem = _compare(layout, dtype, "", signedness_known, 0)
    if problem:
        raise _invalid(
            f"{what} declares {declared} but was given {_given_text(dtype, shape)}: {problem}{_hint(layout)}"
        )


def _plain_dtype(layout: ElementLayout) -> str:
    scalar = layout.single_scalar()
    return "?" if scalar is None else str(scalar.numpy_dtype)


def _check_plain(
    what: str, dtype: np.dtype[Any], shape: Sequence[int], layout: ElementLayout, declared: str, signedness_known: bool
) -> None:
    scalar = layout.single_scalar()
    if scalar is None:
        raise _invalid(
            f"{what} declares {declared}, whose members have different types, but was given "
            f"{_given_text(dtype, shape)}; pass a structured array{_hint(layout)}"
        )
    if not _scalar_fits(scalar, dtype, signedness_known):
        wanted = scalar.numpy_dtype
        either = (
            f" (or {np.dtype(wanted.str.replace('i', 'u') if wanted.kind == 'i' else wanted.str.replace('u', 'i'))})"
            if not signedness_known and wanted.kind in "iu"
            else ""
        )
        raise _invalid(
            f"{what} declares {declared} elements ({wanted}{either}) but was given an array of {dtype}; "
            f"convert it first (e.g. x.astype(np.{wanted.name}))"
        )
    if layout.kind == "scalar" or layout.size is None:
        return
    per_element, remainder = divmod(layout.size, scalar.bytes)
    if remainder:
        raise _invalid(f"{what} declares {declared}, whose size is not a whole number of {scalar.numpy_dtype}")
    padded = layout.data_bytes() < layout.size
    if len(shape) >= 2 and shape[-1] == per_element:
        return
    if len(shape) == 1 and not padded:
        return
    if len(shape) == 1:
        reason = (
            f"its elements are {layout.size} bytes with {layout.size - layout.data_bytes()} bytes of padding, "
            f"so a flat array would be read out of step"
        )
    else:
        reason = f"its last axis is {shape[-1]}, but one element spans {per_element} values of {scalar.numpy_dtype}"
    raise _invalid(
        f"{what} declares {declared} but was given an array of {dtype} with shape {tuple(shape)}: {reason}; "
        f"pass shape (N, {per_element}){'' if padded else ' or a flat array'}, or a structured array{_hint(layout)}"
    )


def _subarray(given: np.dtype[Any]) -> tuple[np.dtype[Any], tuple[int, ...]]:
    if given.subdtype is not None:
        base, shape = given.subdtype
        return base, tuple(shape)
    return given, ()


def _compare(layout: ElementLayout, given: np.dtype[Any], path: str, signedness_known: bool, depth: int) -> str:
    """'' when ``given`` (a field's dtype, subarrays included) is ``layout``; else what differs."""
    if depth > _MAX_DEPTH:
        return f"{path or 'the element'} nests too deeply to check"
    label = path or "the element"
    base, dims = _subarray(given)
    if layout.kind == "scalar" and layout.scalar is not None:
        if dims or not _scalar_fits(layout.scalar, base, signedness_known):
            return f"{label} is {layout.describe(1)} ({layout.scalar.numpy_dtype}), given {_field_text(given)}"
        return ""
    if layout.kind == "vector" and layout.scalar is not None:
        lanes_ok = dims == (layout.lanes,) or (
            layout.lanes == 3 and dims == (4,) and (layout.size or 0) >= 4 * layout.scalar.bytes
        )
        if not lanes_ok or not _scalar_fits(layout.scalar, base, signedness_known):
            wanted = f"{layout.scalar.numpy_dtype}[{layout.lanes}]"
            return f"{label} is {layout.describe(1)} ({wanted}), given {_field_text(given)}"
        return ""
    if layout.kind in ("array", "matrix") and layout.element is not None:
        if not dims or dims[0] != layout.count:
            return f"{label} is {layout.describe()} ({layout.count} elements), given {given}"
        inner = base if len(dims) == 1 else np.dtype((base, dims[1:]))
        if layout.stride and layout.element.size and layout.stride != layout.element.size:
            if inner.itemsize != layout.stride:
                return (
                    f"{label} holds one {layout.element.describe(1)} every {layout.stride} bytes, "
                    f"given elements of {inner.itemsize} bytes"
                )
            if inner.fields is not None and layout.element.kind not in ("struct", "union"):
                names = list(inner.names or ())  # a padded element: one field at offset 0, the rest padding
                if len(names) != 1 or inner.fields[names[0]][1] != 0:
                    return f"{label} holds one {layout.element.describe(1)} per {layout.stride} bytes, given {inner}"
                inner = inner.fields[names[0]][0]
        return _compare(layout.element, inner, f"{label}[i]", signedness_known, depth + 1)
    if layout.kind in ("struct", "union"):
        if dims or base.fields is None:
            return f"{label} is {layout.describe(2)}, given {given}"
        if base.itemsize != layout.size:
            return f"{label} is {layout.size} bytes ({layout.describe(2)}), given {base.itemsize} bytes"
        return _compare_fields(layout, base, path, signedness_known, depth)
    return f"{label} is {layout.describe()}, which cannot be checked"


def _compare_fields(layout: ElementLayout, given: np.dtype[Any], path: str, signedness_known: bool, depth: int) -> str:
    fields: Mapping[str, Any] = given.fields or {}
    given_fields = [(name, fields[name][0], fields[name][1]) for name in given.names or ()]
    named = all(f.name for f in layout.fields)
    by_name = {g[0]: g for g in given_fields}
    by_offset: dict[int, tuple[str, Any, int]] = {}
    for g in given_fields:
        by_offset.setdefault(g[2], g)  # the first field at an offset, as a scan in order would find
    used: set[str] = set()
    matched_any = False
    for member in layout.fields:  # linear in the members and fields (a kernel may declare thousands)
        where = f"{path}.{member.name}" if path else (member.name or f"member at {member.offset}")
        found = by_name.get(member.name) if named else by_offset.get(member.offset)
        if found is None:
            if layout.kind == "union":
                continue
            return f"member {where} ({member.layout.describe(2)} at offset {member.offset}) has no field"
        name, sub, offset = found
        if offset != member.offset:
            return f"member {where} is at offset {member.offset}, given at {offset}"
        problem = _compare(member.layout, sub, where, signedness_known, depth + 1)
        if problem:
            return problem
        used.add(name)
        matched_any = True
    if layout.kind == "union" and not matched_any:
        return f"no field names a member of {layout.describe(2)}"
    spans = sorted((m.offset, m.offset + (m.layout.size or 0)) for m in layout.fields)
    starts = [start for start, _ in spans]
    reach = list(itertools.accumulate((stop for _, stop in spans), max))  # furthest end among the first k
    for name, sub, offset in given_fields:
        if name in used:
            continue
        end = offset + sub.itemsize
        before = bisect.bisect_left(starts, end)  # members starting before this field ends
        if layout.kind == "union" or (before and reach[before - 1] > offset):
            where = f"{path}.{name}" if path else name
            return f"field {where} ({sub} at {offset}) is not a member of {layout.describe(2)}"
    return ""


# --------------------------------------------------------------------------- SPIR-V

CLSPV_GENERATOR = 21
"""The SPIR-V generator tool id of Google's clspv (Khronos registry): its modules carry no integer signedness."""


def spirv_value_type(t: SpirvType) -> ValueType | None:
    """The scalar/vector :class:`ValueType` of a SPIR-V bool/int/float/vector type; None otherwise."""
    if t.kind == "vector" and t.component is not None and t.count in (2, 3, 4, 8, 16):
        base = spirv_value_type(t.component)
        return None if base is None or base.lanes != 1 else ValueType(base.scalar, t.count)
    if t.kind == "bool":
        return ValueType(ScalarType.BOOL)
    if t.kind == "float":
        return {16: ValueType(ScalarType.F16), 32: ValueType(ScalarType.F32), 64: ValueType(ScalarType.F64)}.get(
            t.width
        )
    if t.kind == "int":
        table = {
            (8, True): ScalarType.I8,
            (8, False): ScalarType.U8,
            (16, True): ScalarType.I16,
            (16, False): ScalarType.U16,
            (32, True): ScalarType.I32,
            (32, False): ScalarType.U32,
            (64, True): ScalarType.I64,
            (64, False): ScalarType.U64,
        }
        scalar = table.get((t.width, t.signed))
        return None if scalar is None else ValueType(scalar)
    return None


def spirv_layout(
    t: SpirvType, *, matrix_stride: int | None = None, row_major: bool = False, depth: int = 0
) -> ElementLayout:
    """The layout of a SPIR-V type as the module decorates it (Vulkan ``Offset``/``ArrayStride``/``MatrixStride``,
    or the OpenCL C ABI sizes :mod:`accelcore.kernels.spirv` computes for OpenCL modules)."""
    if depth > _MAX_DEPTH:
        return ElementLayout("opaque", None, why="nested too deeply")
    vtype = spirv_value_type(t)
    if vtype is not None:
        if vtype.scalar is ScalarType.BOOL:
            return ElementLayout("opaque", None, "bool", why="a bool has no size in a buffer")
        kind = "scalar" if vtype.lanes == 1 else "vector"
        return ElementLayout(kind, t.size or vtype.size, vtype.opencl_name, vtype.scalar, vtype.lanes)
    if t.kind == "matrix" and t.component is not None and t.count:
        column = spirv_layout(t.component, depth=depth + 1)
        if column.kind != "vector" or column.scalar is None:
            return ElementLayout("opaque", t.size, "matrix", why="a matrix of an unknown component")
        if row_major:
            row = ElementLayout("vector", t.count * column.scalar.bytes, "", column.scalar, t.count)
            stride = matrix_stride or row.size or 0
            name = f"mat{t.count}x{column.lanes} (row-major)"
            return ElementLayout("matrix", stride * column.lanes, name, element=row, count=column.lanes, stride=stride)
        stride = matrix_stride or column.size or 0
        name = f"mat{t.count}x{column.lanes}"
        return ElementLayout("matrix", stride * t.count, name, element=column, count=t.count, stride=stride)
    if t.kind == "array" and t.component is not None and t.count:
        element = spirv_layout(t.component, matrix_stride=matrix_stride, row_major=row_major, depth=depth + 1)
        stride = t.stride or element.size or 0
        return ElementLayout("array", stride * t.count, element.name, element=element, count=t.count, stride=stride)
    if t.kind == "struct":
        fields: list[LayoutField] = []
        for number, member in enumerate(t.members):
            if member.offset is None:
                return ElementLayout("opaque", t.size, "struct", why=f"member {number} has no offset")
            inner = spirv_layout(
                member.type, matrix_stride=member.matrix_stride, row_major=member.row_major, depth=depth + 1
            )
            fields.append(LayoutField(member.name or "", member.offset, inner))
        return ElementLayout("struct", t.size, "struct", fields=tuple(fields))
    return ElementLayout("opaque", t.size, t.kind, why=f"a {t.kind} is not a data type")


def with_stride(layout: ElementLayout, stride: int | None) -> ElementLayout:
    """``layout`` as the element of an array with ``stride`` bytes per element (padding after it, if larger)."""
    if stride is None or stride == layout.size or not layout.checkable:
        return layout
    return replace(layout, size=stride)


def block_layout(
    header: Sequence[LayoutField], array_offset: int, element: ElementLayout, stride: int, name: str
) -> ElementLayout:
    """A storage block of fixed members before a runtime array ``name`` at ``array_offset`` (GLSL
    ``buffer B { uint count; float data[]; }``): a buffer holds the members once, then any number of elements."""
    return ElementLayout("block", array_offset, "block", fields=tuple(header), element=element, stride=stride, why=name)


def _check_block(
    what: str, dtype: np.dtype[Any], shape: Sequence[int], layout: ElementLayout, declared: str, signedness_known: bool
) -> None:
    """A header-then-runtime-array block: a 1-D plain array of the one scalar type of every member, or one
    structured element whose fields are the members followed by the array as a subarray of any length."""
    element = layout.element
    assert element is not None and layout.size is not None
    name = layout.why or "data"
    header = [(f.name, f.layout.numpy_dtype(), f.offset) for f in layout.fields]
    inner = element.numpy_dtype()
    example = ""
    if inner is not None and all(d is not None for _, d, _ in header):
        names = [n for n, _, _ in header] + [name]
        formats = [_dtype_text(d) for _, d, _ in header if d is not None] + [f"({_dtype_text(inner)}, (N,))"]
        offsets = [o for _, _, o in header] + [layout.size]
        example = (
            f"; one structured element of np.dtype({{'names': {names}, 'formats': [{', '.join(formats)}], "
            f"'offsets': {offsets}}}) matches it"
        )
    if dtype.fields is None:
        scalar = layout.single_scalar()
        if scalar is None:
            raise _invalid(
                f"{what} declares {declared}, whose members have different types, but was given "
                f"{_given_text(dtype, shape)}; pass a structured array{example}"
            )
        if not _scalar_fits(scalar, dtype, signedness_known) or len(shape) != 1:
            raise _invalid(
                f"{what} declares {declared} but was given {_given_text(dtype, shape)}; pass a 1-D array of "
                f"{scalar.numpy_dtype} (the members, then the elements){example}"
            )
        return
    fields: Mapping[str, Any] = dtype.fields
    names = list(dtype.names or ())
    if tuple(shape) not in ((1,), ()) or not names or names[-1] != name:
        raise _invalid(
            f"{what} declares {declared} but was given {_given_text(dtype, shape)}: give one element whose last "
            f"field is {name}, the runtime array{example}"
        )
    array_dtype, array_offset = fields[name][0], fields[name][1]
    if array_offset != layout.size or array_dtype.subdtype is None:
        raise _invalid(
            f"{what} declares {declared} but was given {_given_text(dtype, shape)}: {name} is a subarray at offset "
            f"{layout.size}{example}"
        )
    base, dims = array_dtype.subdtype
    items = np.dtype((base, tuple(dims[1:]))) if len(dims) > 1 else base
    header_layout = ElementLayout("struct", layout.size, "header", fields=layout.fields)
    trimmed = np.dtype({"names": names[:-1], "formats": [fields[n][0] for n in names[:-1]],
                        "offsets": [fields[n][1] for n in names[:-1]], "itemsize": layout.size})  # fmt: skip
    problem = _compare_fields(header_layout, trimmed, "", signedness_known, 0)
    if not problem and items.itemsize != layout.stride:
        problem = f"{name} holds one element every {layout.stride} bytes, given {items.itemsize}"
    if not problem:
        problem = _compare(with_stride(element, layout.stride), items, f"{name}[i]", signedness_known, 1)
    if problem:
        raise _invalid(f"{what} declares {declared} but was given {_given_text(dtype, shape)}: {problem}{example}")
