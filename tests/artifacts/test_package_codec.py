"""Kernel package codec: round trip, every rejection rule, limits, segmented sources, parse_artifact."""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelcore import AccessMode, ArtifactFormat, ArtifactRef, BackendError, ErrorKind, MemorySource, TargetIdentity
from accelcore.conformance.corpus import KERNELS, SHIPPED_KINDS, load_package
from accelcore.contract.ports import PatternSource
from accelcore.kernels.package import (
    NO_COUNT_ARGUMENT,
    Dispatch,
    DispatchKind,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    format_for,
    opencl_target_identity,
    target_accepts,
)
from accelcore.kernels.package_codec import (
    HEADER_BYTES,
    MAGIC,
    parse_artifact,
    parse_package,
    validate_package,
    write_package,
)

SPIRV_HEADER = struct.pack("<5I", 0x07230203, 0x00010300, 0, 8, 0)
OPENCL_KINDS = (ModuleKind.SPIRV_OPENCL, ModuleKind.OPENCL_SOURCE, ModuleKind.OPENCL_BINARY)


def sample(kind: ModuleKind = ModuleKind.OPENCL_SOURCE, **changes: object) -> KernelPackage:
    module = {
        ModuleKind.SPIRV_VULKAN: SPIRV_HEADER + b"\0" * 8,
        ModuleKind.SPIRV_OPENCL: SPIRV_HEADER,
        ModuleKind.OPENCL_SOURCE: b"__kernel void k(__global const uint *a, __global uint *b, uint n) {}",
        ModuleKind.OPENCL_BINARY: b"poclbin\x00\x01\x02",
    }[kind]
    pkg = KernelPackage(
        module_kind=kind,
        entry_point="k",
        local_size=(64, 1, 1),
        bindings=(PackageBinding(0, 0, AccessMode.READ), PackageBinding(1, 1, AccessMode.WRITE)),
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=2),
        module=module,
        build_options="-cl-std=CL1.2",
    )
    return replace(pkg, **changes)  # type: ignore[arg-type]


# Byte offsets of header fields (docs/artifact-format.md).
OFF_VERSION, OFF_HEADER_BYTES, OFF_KIND, OFF_RESERVED0 = 8, 10, 12, 16
OFF_LOCAL, OFF_DISPATCH_KIND, OFF_GROUPS, OFF_DISPATCH_SLOT, OFF_COUNT = 20, 32, 36, 48, 52
OFF_BINDING_COUNT, OFF_ENTRY_BYTES, OFF_OPTIONS_BYTES, OFF_RESERVED1, OFF_MODULE_BYTES, OFF_TARGET = (
    56,
    60,
    64,
    68,
    72,
    80,
)


def patch(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


# --------------------------------------------------------------------------- strategies

texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=24)
u32 = st.integers(0, 2**32 - 1)
positive = st.integers(1, 2**32 - 1)


@st.composite
def packages(draw: st.DrawFn) -> KernelPackage:
    kind = draw(st.sampled_from(list(ModuleKind)))
    count = draw(st.integers(1, 6))
    slots = draw(st.lists(u32, min_size=count, max_size=count, unique=True))
    natives = draw(st.lists(st.integers(0, 64), min_size=count, max_size=count, unique=True))
    rows = tuple(
        PackageBinding(slot, native, draw(st.sampled_from(list(AccessMode))), draw(positive))
        for slot, native in zip(slots, natives, strict=True)
    )
    if kind in OPENCL_KINDS:
        count_argument = draw(st.sampled_from([NO_COUNT_ARGUMENT, *[n for n in range(70) if n not in natives]]))
    else:
        count_argument = draw(st.sampled_from([NO_COUNT_ARGUMENT, 0]))
    if draw(st.booleans()):
        dispatch = Dispatch(DispatchKind.FIXED, (draw(positive), draw(positive), draw(positive)), 0, count_argument)
    else:
        dispatch = Dispatch(DispatchKind.FROM_BINDING, slot=draw(st.sampled_from(slots)), count_argument=count_argument)
    if kind in (ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL):
        module = SPIRV_HEADER + draw(st.binary(max_size=64).map(lambda b: b[: len(b) - len(b) % 4]))
    elif kind is ModuleKind.OPENCL_SOURCE:
        module = draw(texts).encode()
    else:
        module = draw(st.binary(min_size=1, max_size=64))
    target = (
        TargetIdentity(tuple(draw(st.lists(u32, min_size=12, max_size=12))))
        if kind is ModuleKind.OPENCL_BINARY
        else TargetIdentity.any()
    )
    return KernelPackage(
        module_kind=kind,
        entry_point=draw(texts),
        local_size=(draw(positive), draw(positive), draw(positive)),
        bindings=rows,
        dispatch=dispatch,
        module=module,
        build_options=draw(st.one_of(st.just(""), texts)),
        target=target,
    )


def split_source(data: bytes, cuts: Sequence[int]) -> MemorySource:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    return MemorySource(*pieces)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packages(), st.lists(st.integers(0, 10_000), max_size=5))
def test_round_trip_through_segmented_sources(pkg: KernelPackage, cuts: list[int]) -> None:
    data = write_package(pkg)
    assert data.startswith(MAGIC)
    assert parse_package(split_source(data, cuts)) == pkg
    assert write_package(parse_package(data)) == data


def test_every_corpus_package_round_trips_byte_for_byte() -> None:
    for kernel in KERNELS:
        for kind in SHIPPED_KINDS:
            data = load_package(kernel, kind)
            pkg = parse_package(data)
            assert pkg.module_kind is kind
            assert write_package(pkg) == data


def test_layout_matches_the_documented_offsets() -> None:
    pkg = sample(ModuleKind.OPENCL_BINARY, target=opencl_target_identity("P", "D", "1.0"))
    data = write_package(pkg)
    assert struct.unpack_from("<HH", data, OFF_VERSION) == (1, HEADER_BYTES)
    assert struct.unpack_from("<I", data, OFF_KIND) == (int(ModuleKind.OPENCL_BINARY),)
    assert struct.unpack_from("<3I", data, OFF_LOCAL) == (64, 1, 1)
    assert struct.unpack_from("<I3III", data, OFF_DISPATCH_KIND) == (2, 1, 1, 1, 1, 2)
    assert struct.unpack_from("<IIII", data, OFF_BINDING_COUNT) == (2, 1, len("-cl-std=CL1.2"), 0)
    assert struct.unpack_from("<Q", data, OFF_MODULE_BYTES) == (len(pkg.module),)
    assert struct.unpack_from("<12I", data, OFF_TARGET) == pkg.target.words
    assert struct.unpack_from("<4I", data, HEADER_BYTES) == (0, 0, 1, 4)
    text_end = HEADER_BYTES + 32 + 1 + len("-cl-std=CL1.2")
    module_start = text_end + (-text_end % 4)
    assert data[module_start:] == pkg.module
    assert module_start % 4 == 0


# --------------------------------------------------------------------------- rejections

BASE = write_package(sample())


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("empty", b"", ErrorKind.INVALID_ARGUMENT),
        ("short header", BASE[:100], ErrorKind.INVALID_ARGUMENT),
        ("bad magic", b"X" + BASE[1:], ErrorKind.INVALID_ARGUMENT),
        ("version 3", patch(BASE, OFF_VERSION, "<H", 3), ErrorKind.UNSUPPORTED),
        ("version 0", patch(BASE, OFF_VERSION, "<H", 0), ErrorKind.UNSUPPORTED),
        ("header size", patch(BASE, OFF_HEADER_BYTES, "<H", 132), ErrorKind.INVALID_ARGUMENT),
        ("reserved0", patch(BASE, OFF_RESERVED0, "<I", 1), ErrorKind.INVALID_ARGUMENT),
        ("reserved1", patch(BASE, OFF_RESERVED1, "<I", 0x80000000), ErrorKind.INVALID_ARGUMENT),
        ("module kind 0", patch(BASE, OFF_KIND, "<I", 0), ErrorKind.UNSUPPORTED),
        ("module kind 9", patch(BASE, OFF_KIND, "<I", 9), ErrorKind.UNSUPPORTED),
        ("local size 0", patch(BASE, OFF_LOCAL + 4, "<I", 0), ErrorKind.INVALID_ARGUMENT),
        ("dispatch kind 3", patch(BASE, OFF_DISPATCH_KIND, "<I", 3), ErrorKind.INVALID_ARGUMENT),
        ("dispatch slot absent", patch(BASE, OFF_DISPATCH_SLOT, "<I", 7), ErrorKind.INVALID_ARGUMENT),
        ("from-binding groups", patch(BASE, OFF_GROUPS, "<I", 2), ErrorKind.INVALID_ARGUMENT),
        ("count is a buffer", patch(BASE, OFF_COUNT, "<I", 1), ErrorKind.INVALID_ARGUMENT),
        ("trailing byte", BASE + b"\0", ErrorKind.INVALID_ARGUMENT),
        ("truncated module", BASE[:-1], ErrorKind.INVALID_ARGUMENT),
        ("binding count huge", patch(BASE, OFF_BINDING_COUNT, "<I", 2**32 - 1), ErrorKind.INVALID_ARGUMENT),
        ("module bytes huge", patch(BASE, OFF_MODULE_BYTES, "<Q", 2**64 - 1), ErrorKind.INVALID_ARGUMENT),
        ("entry too long", patch(BASE, OFF_ENTRY_BYTES, "<I", 4096), ErrorKind.INVALID_ARGUMENT),
        ("options too long", patch(BASE, OFF_OPTIONS_BYTES, "<I", 2**32 - 1), ErrorKind.INVALID_ARGUMENT),
        ("duplicate slot", patch(BASE, HEADER_BYTES + 16, "<I", 0), ErrorKind.INVALID_ARGUMENT),
        ("duplicate native", patch(BASE, HEADER_BYTES + 20, "<I", 0), ErrorKind.INVALID_ARGUMENT),
        ("access 0", patch(BASE, HEADER_BYTES + 8, "<I", 0), ErrorKind.INVALID_ARGUMENT),
        ("access 4", patch(BASE, HEADER_BYTES + 8, "<I", 4), ErrorKind.INVALID_ARGUMENT),
        ("element size 0", patch(BASE, HEADER_BYTES + 12, "<I", 0), ErrorKind.INVALID_ARGUMENT),
        ("entry not UTF-8", patch(BASE, HEADER_BYTES + 32, "<B", 0xFF), ErrorKind.INVALID_ARGUMENT),
        ("entry has NUL", patch(BASE, HEADER_BYTES + 32, "<B", 0), ErrorKind.INVALID_ARGUMENT),
        ("target on source", patch(BASE, OFF_TARGET, "<I", 1), ErrorKind.INVALID_ARGUMENT),
    ],
)
def test_malformed_headers_and_tables_are_rejected(name: str, data: bytes, kind: ErrorKind, raises_kind) -> None:
    with raises_kind(kind):
        parse_package(data)


def test_nonzero_padding_is_rejected(raises_kind) -> None:
    pkg = sample(entry_point="k", build_options="")  # 1 text byte → 3 padding bytes
    data = write_package(pkg)
    padding_at = HEADER_BYTES + 32 + 1
    assert data[padding_at : padding_at + 3] == b"\0\0\0"
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="padding"):
        parse_package(patch(data, padding_at + 1, "<B", 7))


@pytest.mark.parametrize(
    ("kind", "module", "match"),
    [
        (ModuleKind.SPIRV_VULKAN, SPIRV_HEADER + b"\0\0", "whole header"),
        (ModuleKind.SPIRV_OPENCL, b"\0" * 20, "magic"),
        (ModuleKind.OPENCL_SOURCE, b"kernel \xff", "UTF-8"),
        (ModuleKind.OPENCL_SOURCE, b"kernel\0", "NUL"),
        (ModuleKind.OPENCL_BINARY, b"", "empty"),
    ],
)
def test_module_level_checks(kind: ModuleKind, module: bytes, match: str, raises_kind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=match):
        write_package(sample(kind, module=module))


def test_spirv_magic_is_accepted_in_either_byte_order() -> None:
    swapped = struct.pack(">5I", 0x07230203, 0x00010300, 0, 8, 0)
    pkg = sample(ModuleKind.SPIRV_OPENCL, module=swapped)
    assert parse_package(write_package(pkg)).module == swapped


@pytest.mark.parametrize(
    "changes",
    [
        {"entry_point": ""},
        {"entry_point": "a" * 1025},
        {"entry_point": "k\0"},
        {"entry_point": "\ud800"},
        {"build_options": "x" * 16385},
        {"local_size": (0, 1, 1)},
        {"local_size": (1, 1)},
        {"local_size": (2**32, 1, 1)},
        {"bindings": ()},
        {"bindings": (PackageBinding(0, 0, AccessMode.READ), PackageBinding(0, 1, AccessMode.READ))},
        {"bindings": (PackageBinding(0, 0, AccessMode.READ), PackageBinding(1, 0, AccessMode.READ))},
        {"bindings": (PackageBinding(0, 0, AccessMode.READ, 0), PackageBinding(1, 1, AccessMode.WRITE))},
        {"bindings": (PackageBinding(-1, 0, AccessMode.READ), PackageBinding(1, 1, AccessMode.WRITE))},
        {"dispatch": Dispatch(DispatchKind.FIXED, (0, 1, 1))},
        {"dispatch": Dispatch(DispatchKind.FIXED, (1, 1, 1), slot=1)},
        {"dispatch": Dispatch(DispatchKind.FROM_BINDING, (2, 1, 1), slot=1)},
        {"dispatch": Dispatch(DispatchKind.FROM_BINDING, slot=5)},
        {"dispatch": Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=0)},
        {"target": TargetIdentity((1,) + (0,) * 11)},
    ],
)
def test_writer_refuses_invalid_models(changes: dict[str, object], raises_kind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        write_package(sample(**changes))  # type: ignore[arg-type]
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        validate_package(sample(**changes))  # type: ignore[arg-type]


def test_vulkan_count_argument_may_equal_a_binding_index() -> None:
    # On Vulkan any count_argument other than NO_COUNT_ARGUMENT means "push constant at offset 0".
    pkg = sample(ModuleKind.SPIRV_VULKAN, dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=0))
    assert parse_package(write_package(pkg)) == pkg


# --------------------------------------------------------------------------- limits and reading discipline


def test_limits_are_resource_limit(raises_kind) -> None:
    assert parse_package(BASE, max_bindings=2, max_bytes=len(BASE)) == sample()
    with raises_kind(ErrorKind.RESOURCE_LIMIT, match="limit is 1"):
        parse_package(BASE, max_bindings=1)
    with raises_kind(ErrorKind.RESOURCE_LIMIT, match=str(len(BASE) - 1)):
        parse_package(BASE, max_bytes=len(BASE) - 1)


def test_over_limit_source_is_refused_before_reading(raises_kind) -> None:
    huge = PatternSource(1 << 40)
    tracemalloc.start()
    try:
        with raises_kind(ErrorKind.RESOURCE_LIMIT):
            parse_package(huge, max_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


class CountingSource:
    """A ByteSource without views: everything must go through read_at, whose sizes are recorded."""

    def __init__(self, data: bytes, claimed_length: int | None = None) -> None:
        self.data = data
        self.length = len(data) if claimed_length is None else claimed_length
        self.reads: list[int] = []

    def len(self) -> int:
        return self.length

    def read_at(self, offset: int, dst: memoryview) -> None:
        self.reads.append(dst.nbytes)
        if offset + dst.nbytes > len(self.data):
            raise BackendError(ErrorKind.OUT_OF_BOUNDS, "past the end")
        dst[:] = self.data[offset : offset + dst.nbytes]

    def contiguous(self) -> memoryview | None:
        return None

    def segments(self) -> Sequence[memoryview] | None:
        return None


def test_parser_reads_through_read_at_only() -> None:
    source = CountingSource(BASE)
    assert parse_package(source) == sample()
    assert sum(source.reads) == len(BASE)
    assert max(source.reads) <= max(HEADER_BYTES, len(sample().module))


def test_lying_counts_allocate_nothing_large(raises_kind) -> None:
    # The header claims a 4 GiB binding table in a source that says it holds 1 TiB.
    lying = patch(BASE, OFF_BINDING_COUNT, "<I", 2**28)
    source = CountingSource(lying, claimed_length=1 << 40)
    tracemalloc.start()
    try:
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            parse_package(source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert source.reads == [HEADER_BYTES]
    assert peak < 1 << 20


# --------------------------------------------------------------------------- parse_artifact and targets


def ref_for(
    pkg: KernelPackage, *, fmt: ArtifactFormat | None = None, target: TargetIdentity | None = None
) -> ArtifactRef:
    return ArtifactRef(
        fmt or format_for(pkg.module_kind),
        target if target is not None else pkg.target,
        MemorySource(write_package(pkg)),
        1 << 20,
    )


def test_parse_artifact_checks_format_kind_and_target(raises_kind) -> None:
    device = opencl_target_identity("Portable Computing Language", "cpu-x86-64", "3.1", vendor_id=0x10006)
    other = opencl_target_identity("Portable Computing Language", "cpu-x86-64", "3.2", vendor_id=0x10006)
    binary = sample(ModuleKind.OPENCL_BINARY, target=device)
    assert parse_artifact(ref_for(binary), device_target=device) == binary
    with raises_kind(
        ErrorKind.INCOMPATIBLE,
        match=r"built for a different device \(its driver version differs from this device's; recorded words 0x0",
    ):
        parse_artifact(ref_for(binary), device_target=other)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="differs"):
        parse_artifact(ref_for(binary, target=other), device_target=device)
    with raises_kind(ErrorKind.UNSUPPORTED, match="not a kernel package format"):
        parse_artifact(ref_for(binary, fmt=ArtifactFormat(0x1234)))
    with raises_kind(ErrorKind.UNSUPPORTED, match="does not take OPENCL_BINARY"):
        parse_artifact(ref_for(binary), accepted_kinds={ModuleKind.OPENCL_SOURCE})
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="holds OPENCL_BINARY"):
        parse_artifact(ref_for(binary, fmt=format_for(ModuleKind.OPENCL_SOURCE)))
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        parse_artifact(ref_for(binary), max_bytes=64)
    anywhere = sample(ModuleKind.OPENCL_BINARY)
    assert parse_artifact(ref_for(anywhere), device_target=device) == anywhere


def test_opencl_target_identity_words() -> None:
    one = opencl_target_identity("P", "D", "1.0", platform_version="OpenCL 3.0", vendor_id=7, address_bits=64)
    assert one == opencl_target_identity("P", "D", "1.0", platform_version="OpenCL 3.0", vendor_id=7, address_bits=64)
    assert one.words[0] == 1 and one.words[6:8] == (7, 64) and one.words[8:] == (0, 0, 0, 0)
    assert all(one.words[1:6])
    for changed in (
        opencl_target_identity("P2", "D", "1.0", platform_version="OpenCL 3.0", vendor_id=7, address_bits=64),
        opencl_target_identity("P", "D2", "1.0", platform_version="OpenCL 3.0", vendor_id=7, address_bits=64),
        opencl_target_identity("P", "D", "1.1", platform_version="OpenCL 3.0", vendor_id=7, address_bits=64),
        opencl_target_identity("P", "D", "1.0", platform_version="OpenCL 2.0", vendor_id=7, address_bits=64),
        opencl_target_identity("P", "D", "1.0", platform_version="OpenCL 3.0", vendor_id=8, address_bits=64),
    ):
        assert changed != one
        assert not target_accepts(one, changed)
    assert target_accepts(one, one)
    assert target_accepts(TargetIdentity.any(), one)
