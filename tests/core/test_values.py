"""Typed kernel-argument values: strict conversion, never a reinterpretation."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from accelcore import BackendError, ErrorKind
from accelcore.kernels.values import (
    ScalarType,
    ValueType,
    decode_value,
    encode_value,
    parse_typed_text,
    parse_value_text,
    parse_value_type,
)


def refused(call: object, *args: object, match: str) -> BackendError:
    with pytest.raises(BackendError, match=match) as info:
        call(*args)  # type: ignore[operator]
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT
    return info.value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("f32", ValueType(ScalarType.F32)),
        ("u32", ValueType(ScalarType.U32)),
        ("i64", ValueType(ScalarType.I64)),
        ("bool", ValueType(ScalarType.BOOL)),
        ("f32x4", ValueType(ScalarType.F32, 4)),
        ("float4", ValueType(ScalarType.F32, 4)),
        ("uint", ValueType(ScalarType.U32)),
        ("half", ValueType(ScalarType.F16)),
        ("double2", ValueType(ScalarType.F64, 2)),
        ("uchar16", ValueType(ScalarType.U8, 16)),
    ],
)
def test_type_spellings(text: str, expected: ValueType) -> None:
    assert parse_value_type(text) == expected
    assert parse_value_type(expected.name) == expected


def test_unknown_types_and_lane_counts_are_refused() -> None:
    refused(parse_value_type, "f33", match="valid: bool")
    refused(parse_value_type, "f32x5", match="valid lane counts")
    refused(parse_value_type, "float5", match="valid")


def test_opencl_sizes() -> None:
    assert ValueType(ScalarType.F32, 3).size == 16
    assert ValueType(ScalarType.F32, 4).size == 16
    assert ValueType(ScalarType.F16).size == 2
    assert ValueType(ScalarType.F64, 2).alignment == 16


def test_exact_encodings() -> None:
    assert encode_value(ValueType(ScalarType.F32), 2.5) == struct.pack("<f", 2.5)
    assert encode_value(ValueType(ScalarType.F32), 2) == struct.pack("<f", 2.0)
    assert encode_value(ValueType(ScalarType.I64), -1) == struct.pack("<q", -1)
    assert encode_value(ValueType(ScalarType.F16), 1.5) == struct.pack("<e", 1.5)
    assert encode_value(ValueType(ScalarType.F32, 3), [1, 2, 3]) == struct.pack("<4f", 1, 2, 3, 0)
    assert encode_value(ValueType(ScalarType.F32), np.float32(0.1)) == np.float32(0.1).tobytes()
    assert encode_value(ValueType(ScalarType.F32), math.inf) == struct.pack("<f", math.inf)


def test_mismatches_are_refused_naming_declaration_and_value() -> None:
    f32, u32 = ValueType(ScalarType.F32), ValueType(ScalarType.U32)
    refused(encode_value, u32, 2.5, "n", match=r"n declares u32 but was given float 2\.5")
    refused(encode_value, u32, -1, "n", match=r"outside 0\.\.4294967295")
    refused(encode_value, ValueType(ScalarType.I8), 128, "c", match=r"outside -128\.\.127")
    refused(encode_value, f32, np.float64(2.5), "a", match="numpy float64")
    refused(encode_value, f32, np.int32(2), "a", match="numpy int32")
    refused(encode_value, u32, np.int32(2), "n", match="numpy int32")
    refused(encode_value, f32, 1e39, "a", match="finite range")
    refused(encode_value, ValueType(ScalarType.F16), 70000.0, "h", match="finite range")
    refused(encode_value, ValueType(ScalarType.F32, 4), [1, 2, 3], "v", match="4 lanes.*3 values")
    refused(encode_value, f32, [1.0], "a", match="scalar f32")
    refused(encode_value, f32, True, "a", match="bool")
    refused(encode_value, ValueType(ScalarType.BOOL), 2, "b", match="valid: true")
    refused(encode_value, f32, np.zeros(1, np.float64), "a", match="array of float64")


def test_text_values() -> None:
    assert parse_value_text(ValueType(ScalarType.F32), "2.5") == struct.pack("<f", 2.5)
    assert parse_value_text(ValueType(ScalarType.U32), "0x10") == struct.pack("<I", 16)
    assert parse_value_text(ValueType(ScalarType.BOOL), "true") == b"\1"
    assert parse_value_text(ValueType(ScalarType.F32, 4), "1,2,3,4") == struct.pack("<4f", 1, 2, 3, 4)
    refused(parse_value_text, ValueType(ScalarType.U32), "2.5", "n", match="no fraction")
    refused(parse_value_text, ValueType(ScalarType.F32), "abc", "a", match="not a number")
    refused(parse_value_text, ValueType(ScalarType.F32), "1,2", "a", match="scalar f32.*list")


def test_typed_text() -> None:
    assert parse_typed_text("f32:2.5") == (ValueType(ScalarType.F32), "2.5")
    assert parse_typed_text("f32x4:1,2,3,4") == (ValueType(ScalarType.F32, 4), "1,2,3,4")
    assert parse_typed_text("2.5") == (None, "2.5")
    assert parse_typed_text("i64:-1") == (ValueType(ScalarType.I64), "-1")


def test_decode_round_trip() -> None:
    vtype = ValueType(ScalarType.I32, 2)
    assert decode_value(vtype, encode_value(vtype, [-5, 7])) == [-5, 7]
    assert decode_value(ValueType(ScalarType.F32), encode_value(ValueType(ScalarType.F32), 2.5)) == 2.5


def test_a_zero_dimensional_array_of_the_declared_dtype_is_its_value() -> None:
    import numpy as np

    from accelcore.kernels.values import ScalarType, ValueType, encode_value

    f32 = ValueType(ScalarType.F32)
    assert encode_value(f32, np.array(30.0, np.float32)) == encode_value(f32, np.float32(30.0))
    with pytest.raises(BackendError, match="numpy array of float64"):
        encode_value(f32, np.array(30.0))
    with pytest.raises(BackendError, match="declares the scalar f32 but was given 2 values"):
        encode_value(f32, np.array([1, 2], np.float32))
