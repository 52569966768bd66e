"""Intel's CPU runtime binaries (an ELF64 container, providers/accel_opencl/binaries.py): the header
check refuses a broken container INCOMPATIBLE before the driver sees it, and a damaged ``.ocl.meta``
(which segfaults the runtime, measured 2026-12-01) is refused by the isolated probe while this
process survives. The structural check also runs without the device, on a hand-made container."""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import pytest
from accel_opencl.binaries import check_binary_header, driver_family

from accelcore import ArtifactRef, BackendError, ErrorKind, MemorySource
from accelcore.kernels.package import ModuleKind
from accelcore.kernels.package_codec import write_package


def _container(sections: list[tuple[str, bytes]], e_type: int = 0xFF04, machine: int = 62) -> bytes:
    names = b"\0" + b"".join(name.encode() + b"\0" for name, _ in sections)
    bodies = [body for _, body in sections] + [names]
    offset = 64 + 64 * (len(bodies) + 1)
    table = [bytes(64)]
    data = b""
    name_at = 1
    for index, body in enumerate(bodies):
        name = name_at if index < len(sections) else 0
        if index < len(sections):
            name_at += len(sections[index][0]) + 1
        kind = 3 if index == len(sections) else 0
        table.append(struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, offset + len(data), len(body), 0, 0, 0, 0))
        data += body
    header = struct.pack(
        "<16sHHIQQQIHHHHHH",
        b"\x7fELF\x02\x01" + bytes(10),
        e_type,
        machine,
        0,
        0,
        0,
        64,
        6,
        64,
        0,
        0,
        64,
        len(table),
        len(table) - 1,
    )
    return header + b"".join(table) + data


GOOD = _container([(".ocl.ir", b"BC\xc0\xde" + bytes(60)), (".ocl.meta", bytes(16)), (".ocl.obj", bytes(32))])


def test_the_intel_family_is_the_cpu_runtime_only() -> None:
    assert driver_family("Intel(R) OpenCL") == "intel-cpu"
    assert driver_family("Intel(R) OpenCL Graphics") == "other"  # the GPU runtime: another format


@pytest.mark.parametrize(
    ("binary", "needle"),
    [
        (GOOD[: len(GOOD) - 40], "runs past"),
        (GOOD[:64], "section table"),
        (b"poclbin\0" + bytes(100), "ELF64"),
        (_container([(".ocl.ir", b"XXXX")]), ".ocl.ir"),
        (_container([(".ocl.ir", b"BC\xc0\xde")], machine=40), "machine"),
        (_container([(".other", b"BC\xc0\xde")]), ".ocl.ir"),
    ],
    ids=["truncated", "header-only", "foreign-magic", "no-bitcode", "arm-machine", "no-ir-section"],
)
def test_broken_containers_are_incompatible(binary: bytes, needle: str) -> None:
    check_binary_header("intel-cpu", GOOD)
    check_binary_header("intel-cpu", _container([(".ocl.ir", b"BC\xc0\xde")], e_type=0xFF02, machine=0))
    with pytest.raises(BackendError) as info:
        check_binary_header("intel-cpu", binary)
    assert info.value.kind is ErrorKind.INCOMPATIBLE and needle in info.value.message


def test_a_real_intel_binary_passes_and_a_damaged_one_never_reaches_this_process(
    entry: Any, rig: Any, make_package: Any, raises_kind: Any
) -> None:
    family = driver_family(entry.native.get("platform", "") or rig.accel._loader._platform.name)
    if family != "intel-cpu":
        assert entry.native.get("tag") != "intel"
        return
    source = make_package(options="-DINTEL_BINARY_TEST")
    good = rig.accel.program_binary(rig.load(source))
    check_binary_header(family, good)
    fields = struct.unpack_from("<16sHHIQQQIHHHHHH", good)
    shoff, shnum = fields[6], fields[12]
    sections = [struct.unpack_from("<IIQQQQIIQQ", good, shoff + 64 * i) for i in range(shnum)]
    names_at = sections[fields[13]][4]
    meta = next(s for s in sections if good[names_at + s[0] :].startswith(b".ocl.meta\0"))
    damaged = bytearray(good)
    damaged[meta[4] : meta[4] + meta[5]] = b"\xff" * meta[5]
    package = dataclasses.replace(
        source, module_kind=ModuleKind.OPENCL_BINARY, module=bytes(damaged), target=rig.accel.binary_target
    )
    ref = ArtifactRef(package.format, package.target, MemorySource(write_package(package)), 64 << 20)
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        rig.accel.load_program(rig.context, ref)
    assert "probe" in info.value.message
    assert rig.load(source) is not None  # this process and the device still work
