"""Version-2 VALUE records with type code 0: a by-value OpenCL struct as raw bytes (docs/artifact-format.md).

Round trip, the bounds (1..4096 bytes) in the model and in the bytes, padding, and mutations of such a
package failing only with BackendError."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelcore import AccessMode, BackendError, ErrorKind
from accelcore.kernels.package import (
    ANY_LOCAL_SIZE,
    MAX_AGGREGATE_BYTES,
    ArgumentKind,
    Dispatch,
    KernelArgument,
    KernelPackage,
    ModuleKind,
    PackageBinding,
)
from accelcore.kernels.package_codec import HEADER_BYTES, parse_package, validate_package, write_package
from accelcore.testing.pytest_support import RaisesKind

ROW_BYTES, RECORD_BYTES = 40, 16
STRUCT = bytes(range(1, 34))  # 33 bytes: the record data is padded to 36


def struct_package(*arguments: KernelArgument) -> KernelPackage:
    return KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point="k",
        local_size=ANY_LOCAL_SIZE,
        bindings=(PackageBinding(0, 0, AccessMode.READ_WRITE),),
        dispatch=Dispatch.global_items(64),
        module=b"typedef struct { char c[33]; } S; __kernel void k(__global float *y, S s) {}",
        arguments=arguments or (KernelArgument.aggregate(1, STRUCT),),
    )


def test_a_struct_value_round_trips_as_a_type_code_0_record() -> None:
    pkg = struct_package()
    data = write_package(pkg)
    assert struct.unpack_from("<H", data, 8)[0] == 2
    record = HEADER_BYTES + ROW_BYTES
    assert struct.unpack_from("<4I", data, record) == (int(ArgumentKind.VALUE), 1, 0, 33)
    assert data[record + RECORD_BYTES : record + RECORD_BYTES + 36] == STRUCT + bytes(3)
    back = parse_package(data)
    assert back == pkg and back.arguments[0].is_aggregate and back.arguments[0].value_type is None
    assert write_package(back) == data
    largest = struct_package(KernelArgument.aggregate(1, bytes(MAX_AGGREGATE_BYTES)))
    assert parse_package(write_package(largest)) == largest


@pytest.mark.parametrize("size", [0, MAX_AGGREGATE_BYTES + 1])
def test_the_model_refuses_an_empty_or_oversized_struct(size: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=f"struct argument 1 holds {size} bytes"):
        validate_package(struct_package(KernelArgument.aggregate(1, bytes(size))))


def test_the_model_refuses_a_struct_with_a_local_size(raises_kind: RaisesKind) -> None:
    bad = replace(KernelArgument.aggregate(1, STRUCT), local_bytes=4)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="has a local size"):
        validate_package(struct_package(bad))


def patched(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def test_malformed_struct_records_are_refused(raises_kind: RaisesKind) -> None:
    data = write_package(struct_package())
    record = HEADER_BYTES + ROW_BYTES
    cases = {
        "size 0": (patched(data, record + 12, "<I", 0), "struct argument 1 of 0 bytes"),
        "size 4097": (patched(data, record + 12, "<I", MAX_AGGREGATE_BYTES + 1), "of 4097 bytes"),
        "size u32 max": (patched(data, record + 12, "<I", 0xFFFFFFFF), "of 4294967295 bytes"),
        "size past its data": (patched(data, record + 12, "<I", 40), "needs 40 data bytes"),
        "nonzero padding": (patched(data, record + RECORD_BYTES + 34, "<B", 7), "padding after its data"),
        "shorter size, data left over": (patched(data, record + 12, "<I", 28), "belong to no record"),
    }
    for name, (bad, words) in cases.items():
        assert bad != data, name
        with raises_kind(ErrorKind.INVALID_ARGUMENT, match=words):
            parse_package(bad)


def test_a_struct_value_at_a_buffer_index_is_refused_by_the_codec(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="argument 0 is both a buffer binding and a value argument"):
        validate_package(struct_package(KernelArgument.aggregate(0, STRUCT)))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=48), st.integers(0, len(write_package(struct_package())) - 1))
def test_struct_record_mutations_fail_only_with_backend_error(noise: bytes, at: int) -> None:
    data = bytearray(write_package(struct_package()))
    data[at : at + len(noise)] = noise
    try:
        parse_package(bytes(data))
    except BackendError:
        pass
