"""Kernel argument values matched against what a module declares (used by :mod:`accelcore.kernels.pack`).

Promise: every value is typed from its declaration — an OpenCL parameter, a
push-constant member, a specialization constant — or written explicitly
(:class:`TypedValue`, the CLI's ``TYPE:VALUE``); an explicit type that differs
from a known declaration, a value that does not fit, a name or index the
module lacks, and a declared argument or member left without a value are
refused with INVALID_ARGUMENT naming the argument, the declaration and what
was given. Nothing is reinterpreted; nothing is left at a default without
being reported (specialization constants keep the module's default, which
inspection lists).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..contract.errors import BackendError, ErrorKind
from .layouts import _MAX_DEPTH, ElementLayout, spirv_layout, spirv_value_type
from .opencl_signature import AggregateMember
from .spirv import SpirvType, StructMember
from .values import ScalarType, ValueType, encode_value, parse_typed_text, parse_value_text

__all__ = [
    "ArgumentKey",
    "TypedValue",
    "encode_aggregate",
    "encode_for",
    "encode_layout",
    "lookup",
    "struct_bytes",
]

ArgumentKey = int | str
"""An argument, member or constant named by index/SpecId (int or decimal text) or by name."""


@dataclass(frozen=True, slots=True)
class TypedValue:
    """A value with its type written out (``f32:2.5``): refused if the declaration says otherwise."""

    value_type: ValueType
    value: object


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"pack: {message}")


def lookup(
    key: ArgumentKey,
    by_index: Mapping[int, str],
    what: str,
    *,
    index_word: str = "index",
) -> int:
    """The index ``key`` names: an int, decimal text, or a name in ``by_index`` (index → name).

    A name or index the module lacks → INVALID_ARGUMENT listing what it has.
    """
    if isinstance(key, int) and not isinstance(key, bool):
        if key in by_index:
            return key
    elif isinstance(key, str):
        text = key.strip()
        if text.isdecimal() and int(text) in by_index:
            return int(text)
        matches = [index for index, name in by_index.items() if name == text]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise _invalid(f"{what} name {text!r} is ambiguous ({index_word}es {matches}); use the {index_word}")
    listed = ", ".join(f"{i} ({n})" if n else str(i) for i, n in sorted(by_index.items())) or "none"
    raise _invalid(f"the module has no {what} {key!r} (it has: {listed})")


def encode_for(
    declared: ValueType | None, given: object, what: str, *, declaration: str = ""
) -> tuple[ValueType, bytes]:
    """(type, bytes) of ``given`` for a declaration of type ``declared`` (None: unknown to the parser).

    ``given`` is a :class:`TypedValue`, text (``2.5``, ``1,2,3,4``, or ``TYPE:VALUE``), a Python
    number or sequence, or a numpy scalar/array of exactly the declared dtype.
    """
    explicit: ValueType | None = None
    value = given
    if isinstance(given, TypedValue):
        explicit, value = given.value_type, given.value
    elif isinstance(given, str):
        explicit, value = parse_typed_text(given)
    described = f"{what} ({declaration})" if declaration else what
    if explicit is not None and declared is not None and explicit != declared:
        raise _invalid(f"{described} declares {declared} but was given {explicit}:{_show(value)}")
    vtype = explicit or declared
    if vtype is None:
        raise _invalid(f"cannot tell the type of {described}; write the value as TYPE:VALUE (e.g. f32:2.5, u64:7)")
    if isinstance(value, str):
        return vtype, parse_value_text(vtype, value, described)
    return vtype, encode_value(vtype, value, described)


def _show(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


# --------------------------------------------------------------------------- by-value structs (OpenCL)


def _given_words(given: object) -> str:
    if isinstance(given, np.ndarray | np.generic):
        return f"a numpy {type(given).__name__} of dtype {given.dtype} ({given.dtype.itemsize} bytes)"
    if isinstance(given, bytes | bytearray | memoryview):
        return f"{type(given).__name__} of {memoryview(given).nbytes} bytes"
    shown = repr(given)
    return f"{type(given).__name__} {shown[:80] + '...' if len(shown) > 80 else shown}"


def encode_aggregate(
    given: object,
    what: str,
    *,
    declaration: str,
    struct_name: str,
    size: int | None,
    members: Sequence[AggregateMember] = (),
) -> bytes:
    """The bytes of a by-value struct/union argument in its OpenCL C layout (``size`` bytes).

    ``given`` is ``bytes``/``bytearray``/``memoryview`` of exactly ``size`` bytes; a numpy structured
    scalar (``np.void``) or 0-d structured array of itemsize ``size`` whose fields are the declared
    members at the declared offsets and dtypes; or a dict member name → value, each encoded strictly
    from the member's type (every member of a struct; exactly one of a union), padding zero. Anything
    else, a size the source does not let us compute, or a mismatch → INVALID_ARGUMENT naming
    ``what``, the declaration (struct name and size) and what was given.
    """
    shown = f"{struct_name}, {size} bytes" if size is not None else struct_name
    described = f"{what} ({declaration}; struct {shown})"
    if size is None:
        raise _invalid(
            f"{described}: accelcore cannot compute this struct's OpenCL C layout (a member that is not a "
            "scalar, vector or array of one), so no value can be checked; pass its members as separate arguments "
            "or the struct in a __constant buffer"
        )
    layout = ", ".join(m.text for m in members)
    if isinstance(given, bytes | bytearray | memoryview):
        view = memoryview(given)
        if view.nbytes != size:
            raise _invalid(f"{described} takes exactly {size} bytes but was given {_given_words(given)}")
        return view.tobytes()
    if isinstance(given, np.void) or (isinstance(given, np.ndarray) and given.dtype.fields is not None):
        return _structured_bytes(given, described, size, members)
    if isinstance(given, Mapping):
        return _aggregate_member_bytes(given, what, described, size, members, layout)
    raise _invalid(
        f"{described} was given {_given_words(given)}; pass a dict of its members ({layout}), a numpy structured "
        f"scalar with those fields, or exactly {size} bytes"
    )


def _structured_bytes(given: object, described: str, size: int, members: Sequence[AggregateMember]) -> bytes:
    assert isinstance(given, np.void | np.ndarray)
    dtype = given.dtype
    if isinstance(given, np.ndarray) and given.shape != ():
        raise _invalid(f"{described} is one struct but was given a structured array of shape {given.shape}")
    if dtype.itemsize != size:
        raise _invalid(f"{described} takes {size} bytes but was given {_given_words(given)}")
    fields = dtype.fields or {}
    declared_names = {m.name for m in members}
    for name in fields:
        if name not in declared_names:
            raise _invalid(
                f"{described} has no member {name!r} (the given dtype's field; it declares: "
                f"{', '.join(m.text for m in members)})"
            )
    for member in members:
        if member.name not in fields:
            raise _invalid(
                f"{described}: member {member.text} has no field in the given dtype (fields: {', '.join(fields)})"
            )
        field_dtype, offset = fields[member.name][0], fields[member.name][1]
        base = field_dtype.base
        elements = int(np.prod(field_dtype.shape)) if field_dtype.shape else 1
        lanes = member.value_type.lanes
        counts = {lanes * member.count} | ({4 * member.count} if lanes == 3 else set())
        expected = member.value_type.scalar.numpy_dtype
        if offset != member.offset or base != expected or elements not in counts:
            raise _invalid(
                f"{described}: member {member.text} ({expected} x {lanes * member.count}) but the given dtype has "
                f"field {member.name!r} of {base} x {elements} at offset {offset}"
            )
    data = given.tobytes()
    assert len(data) == size
    return data


def _aggregate_member_bytes(
    given: Mapping[object, object],
    what: str,
    described: str,
    size: int,
    members: Sequence[AggregateMember],
    layout: str,
) -> bytes:
    by_name = {m.name: m for m in members}
    union = len(members) > 1 and len({m.offset for m in members}) < len(members)
    for key in given:
        if key not in by_name:
            raise _invalid(f"{described} has no member {key!r} (it declares: {layout})")
    missing = [m.text for m in members if m.name not in given]
    if union and len(given) != 1:
        raise _invalid(f"{described} is a union: give exactly one of its members ({layout}), not {len(given)}")
    if not union and missing:
        raise _invalid(f"{described}: member(s) {'; '.join(missing)} have no value (every member needs one)")
    out = bytearray(size)
    for name, value in given.items():
        member = by_name[str(name)]
        member_what = f"{what}.{member.name}"
        declaration = f"{member.text} of {described}"
        if member.count == 1:
            parts = [value]
        elif isinstance(value, str):
            parts = [v.strip() for v in value.split(";")] if ";" in value else [value]
        elif isinstance(value, np.ndarray) and value.ndim >= 1:
            parts = list(value)
        elif isinstance(value, Sequence):
            parts = list(value)
        else:
            parts = [value]
        if len(parts) != member.count:
            raise _invalid(
                f"{member_what} ({declaration}) is an array of {member.count} but was given {len(parts)} value(s)"
            )
        step = member.value_type.size
        for number, part in enumerate(parts):
            _vtype, data = encode_for(member.value_type, part, member_what, declaration=declaration)
            start = member.offset + number * step
            out[start : start + len(data)] = data
    return bytes(out)


# --------------------------------------------------------------------------- SPIR-V layouts


def describe(t: SpirvType) -> str:
    """``f32``, ``f32x3``, ``u32[4]``, ``struct``: how messages name a SPIR-V member type."""
    vtype = spirv_value_type(t)
    if vtype is not None:
        return vtype.name
    if t.kind == "array" and t.component is not None:
        return f"{describe(t.component)}[{t.count if t.count is not None else '?'}]"
    if t.kind == "matrix" and t.component is not None:
        return f"{describe(t.component)} matrix x{t.count}"
    return t.kind


def _tight(vtype: ValueType) -> int:
    """Bytes of a SPIR-V scalar/vector (no OpenCL 3-lane padding)."""
    return vtype.scalar.bytes * vtype.lanes


def _member_bytes(member: StructMember, given: object, what: str) -> bytes:
    """The bytes of one push-constant member under its SPIR-V layout."""
    t = member.type
    vtype = spirv_value_type(t)
    if vtype is not None:
        if vtype.scalar is ScalarType.BOOL:
            raise _invalid(f"{what} is a bool, which has no defined layout in a push-constant block")
        _, data = encode_for(vtype, given, what, declaration=describe(t))
        return data[: _tight(vtype)]
    if t.kind == "array" and t.component is not None and t.count is not None:
        element = spirv_value_type(t.component)
        if element is None or element.scalar is ScalarType.BOOL:
            return _nested_member_bytes(member, given, what)
        stride = t.stride or _tight(element)
        values = _split_list(given, t.count * element.lanes, what, describe(t))
        out = bytearray(stride * (t.count - 1) + _tight(element))
        for number in range(t.count):
            lanes = values[number * element.lanes : (number + 1) * element.lanes]
            piece = lanes if element.lanes > 1 else lanes[0]
            _, data = encode_for(element, piece, f"{what}[{number}]", declaration=describe(t))
            out[number * stride : number * stride + _tight(element)] = data[: _tight(element)]
        return bytes(out)
    return _nested_member_bytes(member, given, what)


def _nested_member_bytes(member: StructMember, given: object, what: str) -> bytes:
    """A struct, matrix or array-of-struct member, laid out from the module's decorations
    (:func:`encode_layout`: a dict by member name, sequences for arrays)."""
    layout = spirv_layout(member.type, matrix_stride=member.matrix_stride, row_major=member.row_major)
    try:
        return encode_layout(layout, given, what)
    except BackendError as exc:
        raise _invalid(exc.message) from None


def _split_list(given: object, count: int, what: str, declared: str) -> list[object]:
    if isinstance(given, str):
        explicit, text = parse_typed_text(given)
        if explicit is not None:
            raise _invalid(f"{what} declares {declared}; write its values as a comma list without a type")
        items: list[object] = [p for p in text.split(",")]
    elif isinstance(given, Sequence):
        items = list(given)
    else:
        try:
            items = list(given)  # type: ignore[call-overload]
        except TypeError:
            raise _invalid(f"{what} declares {declared} ({count} values) but was given {given!r}") from None
    if len(items) != count:
        raise _invalid(f"{what} declares {declared} ({count} values) but was given {len(items)}")
    return items


def struct_bytes(
    members: Sequence[StructMember],
    size: int,
    values: Mapping[ArgumentKey, object],
    what: str,
    *,
    preset: Mapping[int, str] | None = None,
) -> bytes:
    """A whole block of ``size`` bytes with every member of ``members`` set from ``values``.

    ``preset`` names members (by index) whose bytes something else writes (the element count at
    offset 0); they may be left out. A member without a value → INVALID_ARGUMENT naming it.
    """
    preset = {} if preset is None else preset
    by_index = {number: m.name or "" for number, m in enumerate(members)}
    chosen: dict[int, object] = {}
    for key, value in values.items():
        number = lookup(key, by_index, f"{what} member", index_word="index")
        if number in chosen:
            raise _invalid(f"{what} member {by_index[number] or number} is given twice")
        chosen[number] = value
    block = bytearray(size + (-size % 4))
    for number, member in enumerate(members):
        label = f"{what} member {member.name or number}"
        if member.offset is None:
            raise _invalid(
                f"{label} has no Offset decoration; give the whole block as bytes (in Python, by the block's "
                "instance name: pc=bytes(...))"
            )
        if number not in chosen:
            if number in preset:
                continue
            raise _invalid(f"{label} ({describe(member.type)} at offset {member.offset}) has no value")
        data = _member_bytes(member, chosen[number], label)
        block[member.offset : member.offset + len(data)] = data
    return bytes(block)


# --------------------------------------------------------------------------- values by member


def _member_error(message: str) -> BackendError:
    """INVALID_ARGUMENT as :mod:`accelcore.kernels.layouts` words it (no ``pack:`` prefix: a value given by member
    is refused in the words of the layout it does not fit)."""
    return BackendError(ErrorKind.INVALID_ARGUMENT, message)


def encode_layout(layout: ElementLayout, given: object, what: str, depth: int = 0) -> bytes:
    """The bytes of one element of ``layout`` from Python values: a number (or a numpy scalar of the declared
    dtype) for a scalar, a sequence for a vector or array (a flat one for an array of scalars or vectors), a
    dict by member name for a struct (every member, nested structs and arrays too; one member for a union).
    Every value is checked as :func:`encode_for` checks it; padding is zero."""
    if depth > _MAX_DEPTH or not layout.checkable or layout.size is None:
        raise _member_error(
            f"{what} is {layout.describe()}, which cannot be written by member ({layout.why or 'opaque'})"
        )
    out = bytearray(layout.size)
    vtype = layout.value_type
    if vtype is not None:
        _, data = encode_for(vtype, given, what, declaration=layout.describe(1))
        used = vtype.scalar.bytes * vtype.lanes
        out[:used] = data[:used]
        return bytes(out)
    if layout.kind in ("array", "matrix") and layout.element is not None:
        items = _items(given, layout, what)
        for number, item in enumerate(items):
            data = encode_layout(layout.element, item, f"{what}[{number}]", depth + 1)
            start = number * layout.stride
            out[start : start + len(data)] = data[: max(0, min(len(data), layout.size - start))]
        return bytes(out)
    if layout.kind in ("struct", "union"):
        if not isinstance(given, Mapping):
            raise _member_error(
                f"{what} is {layout.describe(1)}; give its members as a dict, not {type(given).__name__}"
            )
        by_name = {f.name: f for f in layout.fields if f.name}
        unknown = [str(k) for k in given if k not in by_name]
        if unknown:
            raise _member_error(
                f"{what} has no member {unknown[0]!r} (it has: {', '.join(by_name) or 'unnamed members'})"
            )
        if layout.kind == "union":
            if len(given) != 1:
                raise _member_error(f"{what} is a union ({layout.describe(1)}); give exactly one member")
        else:
            missing = [name for name in by_name if name not in given]
            if missing:
                raise _member_error(
                    f"{what} member {missing[0]} ({by_name[missing[0]].layout.describe(1)}) has no value"
                )
        for name, value in given.items():
            member = by_name[str(name)]
            data = encode_layout(member.layout, value, f"{what}.{name}", depth + 1)
            end = min(layout.size, member.offset + len(data))
            out[member.offset : end] = data[: end - member.offset]
        return bytes(out)
    raise _member_error(f"{what} is {layout.describe(1)}, which cannot be written by member")


def _items(given: object, layout: ElementLayout, what: str) -> list[object]:
    """The ``layout.count`` items of an array value (a flat sequence of scalars is grouped into vectors)."""
    element = layout.element
    assert element is not None
    if isinstance(given, (str, bytes, Mapping)) or not hasattr(given, "__len__"):
        raise _member_error(
            f"{what} is {layout.describe(1)} ({layout.count} elements); give a sequence, not {given!r:.60}"
        )
    items = list(np.asarray(given).reshape(-1)) if isinstance(given, np.ndarray) else list(given)  # type: ignore[call-overload]
    lanes = element.lanes if element.kind in ("vector",) else (element.count if element.kind == "matrix" else 1)
    if element.kind == "vector" and len(items) == layout.count * lanes and lanes > 1:
        items = [items[i * lanes : (i + 1) * lanes] for i in range(layout.count)]
    if len(items) != layout.count:
        raise _member_error(f"{what} is {layout.describe(1)} ({layout.count} elements) but was given {len(items)}")
    return items
