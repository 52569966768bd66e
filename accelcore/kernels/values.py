"""Typed kernel-argument values: scalar and vector types, their bytes, and strict conversion.

Promise: a value is turned into bytes only when it fits the declared type
exactly — an integer type takes integers in its range (no float, no
truncation, no wrap-around), a float type takes real numbers that round to a
finite value of the type (round to nearest even, as numpy's ``float32(text)``:
``3.4028235e38`` is float32's max, ``3.4028236e38`` and ``1e999`` are refused)
unless given as inf/nan (the float itself, or the words ``inf``, ``-inf``,
``infinity``, ``nan`` as text), a bool takes True/False/0/1, a vector
takes exactly its lane count, and a numpy scalar or array must already have
the declared dtype. Anything else raises ``BackendError(INVALID_ARGUMENT)``
naming what was declared and what was given; nothing is reinterpreted.
Sizes and alignments follow the OpenCL C rules (a 3-lane vector takes the
size of 4 lanes); :mod:`accelcore.kernels.pack` applies SPIR-V layouts itself.
"""

from __future__ import annotations

import enum
import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..contract.errors import BackendError, ErrorKind
from ..support.text import plain

__all__ = [
    "ScalarType",
    "ValueType",
    "decode_value",
    "encode_value",
    "parse_typed_text",
    "parse_value_text",
    "parse_value_type",
]


class ScalarType(enum.IntEnum):
    """Scalar element types; the numbers are the package format's type codes (docs/artifact-format.md)."""

    BOOL = 1
    I8 = 2
    U8 = 3
    I16 = 4
    U16 = 5
    I32 = 6
    U32 = 7
    I64 = 8
    U64 = 9
    F16 = 10
    F32 = 11
    F64 = 12

    @property
    def bytes(self) -> int:
        return _SCALAR_BYTES[self]

    @property
    def is_float(self) -> bool:
        return self in (ScalarType.F16, ScalarType.F32, ScalarType.F64)

    @property
    def is_signed(self) -> bool:
        return self in (ScalarType.I8, ScalarType.I16, ScalarType.I32, ScalarType.I64)

    @property
    def short(self) -> str:
        """The CLI spelling: ``f32``, ``u32``, ``i64``, ``bool``."""
        return self.name.lower()

    @property
    def numpy_dtype(self) -> np.dtype[np.generic]:
        return np.dtype(_NUMPY[self])


_SCALAR_BYTES = {
    ScalarType.BOOL: 1,
    ScalarType.I8: 1,
    ScalarType.U8: 1,
    ScalarType.I16: 2,
    ScalarType.U16: 2,
    ScalarType.I32: 4,
    ScalarType.U32: 4,
    ScalarType.I64: 8,
    ScalarType.U64: 8,
    ScalarType.F16: 2,
    ScalarType.F32: 4,
    ScalarType.F64: 8,
}
_NUMPY = {
    ScalarType.BOOL: "bool",
    ScalarType.I8: "<i1",
    ScalarType.U8: "<u1",
    ScalarType.I16: "<i2",
    ScalarType.U16: "<u2",
    ScalarType.I32: "<i4",
    ScalarType.U32: "<u4",
    ScalarType.I64: "<i8",
    ScalarType.U64: "<u8",
    ScalarType.F16: "<f2",
    ScalarType.F32: "<f4",
    ScalarType.F64: "<f8",
}
_STRUCT = {
    ScalarType.BOOL: "?",
    ScalarType.I8: "b",
    ScalarType.U8: "B",
    ScalarType.I16: "h",
    ScalarType.U16: "H",
    ScalarType.I32: "i",
    ScalarType.U32: "I",
    ScalarType.I64: "q",
    ScalarType.U64: "Q",
    ScalarType.F16: "e",
    ScalarType.F32: "f",
    ScalarType.F64: "d",
}
_FLOAT_MAX = {ScalarType.F16: 65504.0, ScalarType.F32: 3.4028234663852886e38, ScalarType.F64: 1.7976931348623157e308}
_FLOAT_ROUNDS_TO_INF = {ScalarType.F16: 65520.0, ScalarType.F32: 2.0**128 - 2.0**103, ScalarType.F64: math.inf}
"""The least magnitude that rounds to infinity in the type: halfway from its max to the next power of two
(round to nearest even goes up there: the max's last mantissa bit is 1)."""
_NON_FINITE_WORDS = {"inf", "infinity", "nan"}

OPENCL_NAMES = {
    "bool": ScalarType.BOOL,
    "char": ScalarType.I8,
    "uchar": ScalarType.U8,
    "short": ScalarType.I16,
    "ushort": ScalarType.U16,
    "int": ScalarType.I32,
    "uint": ScalarType.U32,
    "long": ScalarType.I64,
    "ulong": ScalarType.U64,
    "half": ScalarType.F16,
    "float": ScalarType.F32,
    "double": ScalarType.F64,
}
"""OpenCL C scalar type names (``unsigned int`` etc. are normalised by the source parser)."""
VECTOR_LANES = (1, 2, 3, 4, 8, 16)


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, message)


def _shown(value: object) -> str:
    """``repr(value)``; an int too long to print usefully (or at all: Python's 4300-digit limit) by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"{'a negative' if value < 0 else 'an'} integer of {value.bit_length()} bits"
    return repr(value)


@dataclass(frozen=True, slots=True)
class ValueType:
    """A scalar or an OpenCL-style vector (``lanes`` in 1, 2, 3, 4, 8, 16)."""

    scalar: ScalarType
    lanes: int = 1

    def __post_init__(self) -> None:
        if self.lanes not in VECTOR_LANES:
            raise _invalid(f"vector of {self.lanes} lanes; valid lane counts: {', '.join(map(str, VECTOR_LANES))}")

    @property
    def size(self) -> int:
        """Bytes the value occupies (OpenCL C: a 3-lane vector is stored as 4 lanes)."""
        return self.scalar.bytes * (4 if self.lanes == 3 else self.lanes)

    @property
    def alignment(self) -> int:
        """OpenCL C alignment: a vector aligns to its (padded) size, a scalar to its size."""
        return self.size

    @property
    def name(self) -> str:
        """``f32``, ``f32x4``: the spelling :func:`parse_value_type` reads."""
        return self.scalar.short if self.lanes == 1 else f"{self.scalar.short}x{self.lanes}"

    @property
    def opencl_name(self) -> str:
        base = next(k for k, v in OPENCL_NAMES.items() if v is self.scalar)
        return base if self.lanes == 1 else f"{base}{self.lanes}"

    @property
    def code(self) -> int:
        """The package format's type code: scalar type | lanes << 8."""
        return int(self.scalar) | self.lanes << 8

    @classmethod
    def from_code(cls, code: int) -> ValueType:
        try:
            scalar = ScalarType(code & 0xFF)
        except ValueError:
            raise _invalid(f"type code {code:#x} names no scalar type (1..12)") from None
        if code >> 16:
            raise _invalid(f"type code {code:#x} has bits above the lane count set")
        return cls(scalar, (code >> 8) & 0xFF)

    def __str__(self) -> str:
        return self.name


_OPENCL_TYPE_TEXT = re.compile(r"(?P<base>[a-z]+?)(?P<lanes>2|3|4|8|16)?")
_SHORT = {t.short: t for t in ScalarType}


def parse_value_type(text: str) -> ValueType:
    """``f32``, ``u32``, ``i64``, ``bool``, ``f32x4`` or an OpenCL C name (``float``, ``uint4``, ``half``)."""
    spelled = text.strip().lower()
    if spelled in _SHORT:
        return ValueType(_SHORT[spelled])
    match = re.fullmatch(r"([a-z]+\d*)x(\d+)", spelled)
    if match and match.group(1) in _SHORT:
        return ValueType(_SHORT[match.group(1)], int(match.group(2)))
    match = _OPENCL_TYPE_TEXT.fullmatch(spelled)
    if match and match.group("base") in OPENCL_NAMES:
        return ValueType(OPENCL_NAMES[match.group("base")], int(match.group("lanes") or 1))
    valid = ", ".join(t.short for t in ScalarType)
    raise _invalid(f"type {text!r} is unknown; valid: {valid}, a vector such as f32x4, or an OpenCL C name (float4)")


# --------------------------------------------------------------------------- encoding


def _scalar_bytes(scalar: ScalarType, value: object, what: str) -> bytes:
    if isinstance(value, np.generic):
        if value.dtype != scalar.numpy_dtype:
            raise _invalid(
                f"{what} declares {scalar.short} but was given a numpy {value.dtype} ({plain(value)}); "
                f"pass np.{scalar.numpy_dtype.name}(...) or a plain Python number"
            )
        return bytes(np.asarray(value, dtype=scalar.numpy_dtype).tobytes())
    if scalar is ScalarType.BOOL:
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return struct.pack("<?", bool(value))
        raise _invalid(f"{what} declares bool but was given {value!r}; valid: true, false, 0, 1")
    if scalar.is_float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _invalid(f"{what} declares {scalar.short} but was given {type(value).__name__} {value!r}")
        try:
            number = float(value)
        except OverflowError:  # an int beyond every float
            number = math.inf
        # (A float inf or nan is taken as given; an int never rounds to one.)
        if abs(number) >= _FLOAT_ROUNDS_TO_INF[scalar] and (isinstance(value, int) or math.isfinite(number)):
            raise _invalid(
                f"{what} declares {scalar.short} but {_shown(value)} is outside its finite range "
                f"(±{_FLOAT_MAX[scalar]:g})"
            )
        return struct.pack("<" + _STRUCT[scalar], number)
    if isinstance(value, bool) or not isinstance(value, int):
        hint = " (an integer type takes no fraction)" if isinstance(value, float) else ""
        raise _invalid(f"{what} declares {scalar.short} but was given {type(value).__name__} {value!r}{hint}")
    bits = scalar.bytes * 8
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if scalar.is_signed else (0, (1 << bits) - 1)
    if not low <= value <= high:
        raise _invalid(f"{what} declares {scalar.short} but {_shown(value)} is outside {low}..{high}")
    return struct.pack("<" + _STRUCT[scalar], value)


def encode_value(vtype: ValueType, value: object, what: str = "value") -> bytes:
    """The ``vtype.size`` little-endian bytes of ``value``; a mismatch → INVALID_ARGUMENT naming ``what``."""
    if isinstance(value, np.ndarray):
        if value.dtype != vtype.scalar.numpy_dtype:
            raise _invalid(f"{what} declares {vtype} but was given a numpy array of {value.dtype}")
        value = value[()] if value.ndim == 0 else list(value.reshape(-1))  # a 0-d array is its one value
    if vtype.lanes == 1:
        if isinstance(value, (list, tuple)):
            raise _invalid(f"{what} declares the scalar {vtype} but was given {len(value)} values")
        return _scalar_bytes(vtype.scalar, value, what)
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise _invalid(f"{what} declares {vtype} ({vtype.lanes} lanes) but was given {type(value).__name__} {value!r}")
    if len(value) != vtype.lanes:
        raise _invalid(f"{what} declares {vtype} ({vtype.lanes} lanes) but was given {len(value)} values")
    lanes = b"".join(_scalar_bytes(vtype.scalar, v, f"{what} lane {i}") for i, v in enumerate(value))
    return lanes + bytes(vtype.size - len(lanes))


def decode_value(vtype: ValueType, data: bytes) -> bool | int | float | list[bool | int | float]:
    """Inverse of :func:`encode_value` (for display); ``data`` must be ``vtype.size`` bytes."""
    if len(data) != vtype.size:
        raise _invalid(f"{vtype} takes {vtype.size} bytes, got {len(data)}")
    code = "<" + _STRUCT[vtype.scalar] * vtype.lanes
    values: list[bool | int | float] = list(struct.unpack_from(code, data))
    return values[0] if vtype.lanes == 1 else values


# --------------------------------------------------------------------------- text (the CLI's spelling)

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _scalar_from_text(scalar: ScalarType, text: str, what: str) -> bool | int | float:
    word = text.strip()
    if scalar is ScalarType.BOOL:
        if word.lower() in _TRUE:
            return True
        if word.lower() in _FALSE:
            return False
        raise _invalid(f"{what} declares bool but was given {text!r}; valid: true, false, 1, 0")
    if scalar.is_float:
        try:
            number = float(word)
        except ValueError:
            raise _invalid(f"{what} declares {scalar.short} but {text!r} is not a number") from None
        if not math.isfinite(number) and word.lower().lstrip("+-") not in _NON_FINITE_WORDS:
            # float() reads a finite text too large for a double (1e999, 400 digits) as inf: refused, as
            # 1e39 is for f32; only the words give inf and nan.
            shown = text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"
            raise _invalid(
                f"{what} declares {scalar.short} but {shown!r} is outside its finite range "
                f"(±{_FLOAT_MAX[scalar]:g}); write inf or -inf for an infinity"
            )
        return number
    try:
        return int(word, 0)
    except ValueError:
        hint = " (an integer type takes no fraction)" if re.fullmatch(r"[-+]?\d*\.\d*(e[-+]?\d+)?", word) else ""
        raise _invalid(f"{what} declares {scalar.short} but {text!r} is not an integer{hint}") from None


def parse_value_text(vtype: ValueType, text: str, what: str = "value") -> bytes:
    """Bytes of ``text`` read as ``vtype``: ``2.5``, ``0x10``, ``true``, ``1,2,3,4`` for a vector."""
    pieces = [p for p in text.split(",")] if vtype.lanes > 1 else [text]
    if vtype.lanes == 1 and "," in text:
        raise _invalid(f"{what} declares the scalar {vtype} but was given the list {text!r}")
    values = [_scalar_from_text(vtype.scalar, p, what) for p in pieces]
    return encode_value(vtype, values if vtype.lanes > 1 else values[0], what)


def parse_typed_text(text: str) -> tuple[ValueType | None, str]:
    """Split an explicit ``TYPE:VALUE`` (``f32:2.5``, ``f32x4:1,2,3,4``); (None, text) when untyped."""
    head, sep, rest = text.partition(":")
    if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", head.strip()):
        return parse_value_type(head), rest
    return None, text
