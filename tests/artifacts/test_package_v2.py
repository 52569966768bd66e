"""Kernel package format version 2: kernel arguments, push/spec constants, descriptor sets and types,
coverage, global dispatches, 'driver chooses' local sizes — round trip, canonical bytes, every rule."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelcore import AccessMode, BackendError, ErrorKind
from accelcore.conformance.corpus import KERNELS, SHIPPED_KINDS, load_package
from accelcore.kernels.package import (
    ANY_LOCAL_SIZE,
    ArgumentKind,
    Coverage,
    DescriptorType,
    Dispatch,
    DispatchKind,
    KernelArgument,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    SpecConstant,
)
from accelcore.kernels.package_codec import HEADER_BYTES, parse_package, validate_package, write_package
from accelcore.kernels.values import ScalarType, ValueType, encode_value
from accelcore.testing.pytest_support import RaisesKind

SPIRV_HEADER = struct.pack("<5I", 0x07230203, 0x00010300, 0, 8, 0)
F32 = ValueType(ScalarType.F32)
I32 = ValueType(ScalarType.I32)


def opencl_v2(**changes: object) -> KernelPackage:
    pkg = KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point="saxpy",
        local_size=ANY_LOCAL_SIZE,
        bindings=(
            PackageBinding(1, 1, AccessMode.READ, coverage=Coverage.PER_WORK_ITEM),
            PackageBinding(2, 2, AccessMode.READ_WRITE, coverage=Coverage.EXACT, coverage_elements=1024),
        ),
        dispatch=Dispatch.global_items(1024),
        module=b"__kernel void saxpy(float a, __global const float *x, __global float *y, int n, __local float *t) {}",
        arguments=(
            KernelArgument.value(0, F32, encode_value(F32, 2.5)),
            KernelArgument.value(3, I32, encode_value(I32, 1024)),
            KernelArgument.local(4, 1024),
        ),
    )
    return replace(pkg, **changes)  # type: ignore[arg-type]


def vulkan_v2(**changes: object) -> KernelPackage:
    pkg = KernelPackage(
        module_kind=ModuleKind.SPIRV_VULKAN,
        entry_point="main",
        local_size=(256, 1, 1),
        bindings=(
            PackageBinding(0, 0, AccessMode.READ, 16, set=0, descriptor_type=DescriptorType.UNIFORM_BUFFER),
            PackageBinding(1, 3, AccessMode.READ_WRITE, 16, set=1),
        ),
        dispatch=Dispatch.global_items(1000, 7),
        module=SPIRV_HEADER + b"\0" * 8,
        push_constants=struct.pack("<fI", 2.5, 1024),
        spec_constants=(
            SpecConstant(0, ValueType(ScalarType.U32), struct.pack("<I", 256)),
            SpecConstant(1, ValueType(ScalarType.BOOL), struct.pack("<I", 1)),
            SpecConstant(7, ValueType(ScalarType.F64), struct.pack("<d", 0.01)),
        ),
    )
    return replace(pkg, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [opencl_v2, vulkan_v2], ids=["opencl", "vulkan"])
def test_v2_round_trip_is_the_identity(make: object) -> None:
    pkg = make()  # type: ignore[operator]
    assert pkg.version == 2
    data = write_package(pkg)
    assert struct.unpack_from("<H", data, 8)[0] == 2
    back = parse_package(data)
    assert back == pkg
    assert write_package(back) == data


def test_a_package_without_v2_fields_is_written_as_v1_and_the_corpus_still_reads() -> None:
    for kernel in KERNELS:
        for kind in SHIPPED_KINDS:
            data = load_package(kernel, kind)
            pkg = parse_package(data)
            assert pkg.version == 1
            assert write_package(pkg) == data


def test_global_dispatch_grid_and_work_items() -> None:
    d = Dispatch.global_items(1000, 7)
    assert d.global_size == (1000, 7, 1)
    assert d.elements_and_groups((256, 1, 1), 0, 4) == (7000, (4, 7, 1))
    assert d.work_items((256, 1, 1), 0, 4) == (7000, (1000, 7, 1))
    from_binding = Dispatch(DispatchKind.FROM_BINDING, slot=0)
    assert from_binding.work_items(ANY_LOCAL_SIZE, 4 * 50000, 4) == (50000, (50000, 1, 1))
    assert from_binding.work_items((64, 1, 1), 4 * 50000, 4) == (50000, (50048, 1, 1))


def test_binding_required_elements() -> None:
    assert PackageBinding(0, 0, AccessMode.READ).required_elements(10) is None
    assert PackageBinding(0, 0, AccessMode.READ, coverage=Coverage.PER_WORK_ITEM).required_elements(10) == 10
    exact = PackageBinding(0, 0, AccessMode.READ, coverage=Coverage.EXACT, coverage_elements=3)
    assert exact.required_elements(10) == 3


BAD_MODELS = {
    "push constants on OpenCL": lambda: opencl_v2(push_constants=b"\0" * 4),
    "spec constants on OpenCL": lambda: opencl_v2(spec_constants=(SpecConstant(0, F32, b"\0" * 4),)),
    "kernel arguments on Vulkan": lambda: vulkan_v2(arguments=(KernelArgument.local(5, 4),)),
    "argument also a buffer": lambda: opencl_v2(arguments=(KernelArgument.local(1, 4),)),
    "argument is the count": lambda: opencl_v2(
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=3),
    ),
    "arguments out of order": lambda: opencl_v2(
        arguments=(KernelArgument.local(4, 8), KernelArgument.value(0, F32, b"\0" * 4))
    ),
    "value of the wrong size": lambda: opencl_v2(arguments=(KernelArgument.value(0, F32, b"\0" * 8),)),
    "local of 0 bytes": lambda: opencl_v2(arguments=(KernelArgument.local(4, 0),)),
    "local carrying a value": lambda: opencl_v2(arguments=(KernelArgument(4, ArgumentKind.LOCAL, F32, b"\0" * 4, 4),)),
    "push block not a multiple of 4": lambda: vulkan_v2(push_constants=b"\0" * 6),
    "vector spec constant": lambda: vulkan_v2(
        spec_constants=(SpecConstant(0, ValueType(ScalarType.F32, 4), b"0" * 16),)
    ),
    "bool spec constant of 1 byte": lambda: vulkan_v2(
        spec_constants=(SpecConstant(0, ValueType(ScalarType.BOOL), b"\1"),)
    ),
    "bool spec constant of 2": lambda: vulkan_v2(
        spec_constants=(SpecConstant(0, ValueType(ScalarType.BOOL), struct.pack("<I", 2)),)
    ),
    "spec ids repeated": lambda: vulkan_v2(
        spec_constants=(SpecConstant(1, F32, b"\0" * 4), SpecConstant(1, F32, b"\0" * 4))
    ),
    "any local size on Vulkan": lambda: vulkan_v2(local_size=ANY_LOCAL_SIZE),
    "partly zero local size": lambda: opencl_v2(local_size=(64, 0, 1)),
    "any local size with a fixed dispatch": lambda: opencl_v2(dispatch=Dispatch(DispatchKind.FIXED, groups=(4, 1, 1))),
    "global size with a 0": lambda: opencl_v2(dispatch=Dispatch(DispatchKind.GLOBAL, global_size=(4, 0, 1))),
    "global size on a from-binding dispatch": lambda: opencl_v2(
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1, global_size=(4, 1, 1))
    ),
    "OpenCL binding in set 1": lambda: opencl_v2(bindings=(PackageBinding(1, 1, AccessMode.READ, set=1),)),
    "OpenCL uniform buffer": lambda: opencl_v2(
        bindings=(PackageBinding(1, 1, AccessMode.READ, descriptor_type=DescriptorType.UNIFORM_BUFFER),)
    ),
    "writable uniform buffer": lambda: vulkan_v2(
        bindings=(PackageBinding(0, 0, AccessMode.READ_WRITE, descriptor_type=DescriptorType.UNIFORM_BUFFER),)
    ),
    "exact coverage without a count": lambda: opencl_v2(
        bindings=(PackageBinding(1, 1, AccessMode.READ, coverage=Coverage.EXACT),)
    ),
    "a count without exact coverage": lambda: opencl_v2(
        bindings=(PackageBinding(1, 1, AccessMode.READ, coverage_elements=4),)
    ),
    "same set and binding twice": lambda: vulkan_v2(
        bindings=(PackageBinding(0, 2, AccessMode.READ, set=1), PackageBinding(1, 2, AccessMode.READ, set=1))
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_MODELS))
def test_v2_model_rules(name: str, raises_kind: RaisesKind) -> None:
    pkg = BAD_MODELS[name]()
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        validate_package(pkg)
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        write_package(pkg)


def test_same_binding_number_in_two_sets_is_fine() -> None:
    pkg = vulkan_v2(
        bindings=(PackageBinding(0, 2, AccessMode.READ, set=0), PackageBinding(1, 2, AccessMode.READ, set=1))
    )
    assert parse_package(write_package(pkg)) == pkg


# Byte offsets of version 2 (docs/artifact-format.md).
OFF_VERSION, OFF_RECORDS, OFF_DATA_BYTES = 8, 16, 68
ROW_BYTES, RECORD_BYTES = 40, 16


def patched(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def test_v2_byte_rules(raises_kind: RaisesKind) -> None:
    data = write_package(opencl_v2())
    rows = HEADER_BYTES
    records = rows + 2 * ROW_BYTES
    cases = {
        "version 1 with records": patched(data, OFF_VERSION, "<H", 1),
        "reserved binding word": patched(data, rows + 28, "<I", 1),
        "descriptor type 3": patched(data, rows + 20, "<I", 3),
        "coverage 3": patched(data, rows + 24, "<I", 3),
        "record kind 9": patched(data, records, "<I", 9),
        "type code of no scalar": patched(data, records + 8, "<I", 0x10D),
        "type code with 5 lanes": patched(data, records + 8, "<I", int(ScalarType.F32) | 5 << 8),
        "record size past its data": patched(data, records + 12, "<I", 400),
        "local with a type code": patched(data, records + 2 * RECORD_BYTES + 8, "<I", 7),
    }
    # A value argument of 2 bytes (i16) is padded to 4: put a nonzero byte into its padding.
    short = opencl_v2(arguments=(KernelArgument.value(0, ValueType(ScalarType.I16), b"\1\0"),))
    short_data = write_package(short)
    cases["nonzero padding"] = patched(short_data, HEADER_BYTES + 2 * ROW_BYTES + RECORD_BYTES + 2, "<B", 9)
    for name, bad in cases.items():
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            parse_package(bad)
        assert bad != (short_data if name == "nonzero padding" else data), name  # each case really changed bytes


def test_v2_without_v2_fields_is_not_canonical(raises_kind: RaisesKind) -> None:
    v1 = write_package(
        opencl_v2(
            arguments=(),
            local_size=(64, 1, 1),
            dispatch=Dispatch(DispatchKind.FIXED, (4, 1, 1)),
            bindings=(PackageBinding(1, 1, AccessMode.READ),),
        )
    )
    assert struct.unpack_from("<H", v1, 8)[0] == 1
    # The same content rewritten as version 2: rows grow from 16 to 40 bytes.
    slot, native, access, size = struct.unpack_from("<4I", v1, HEADER_BYTES)
    row = struct.pack("<8IQ", slot, native, access, size, 0, 1, 0, 0, 0)
    v2 = patched(v1[:HEADER_BYTES], OFF_VERSION, "<H", 2) + row + v1[HEADER_BYTES + 16 :]
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="written as version 1"):
        parse_package(v2)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(0, len(write_package(vulkan_v2())) - 1))
def test_v2_mutations_fail_only_with_backend_error(noise: bytes, at: int) -> None:
    data = bytearray(write_package(vulkan_v2()))
    data[at : at + len(noise)] = noise
    try:
        parse_package(bytes(data))
    except BackendError:
        pass
