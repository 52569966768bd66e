"""Program loading: OpenCL C source, device binaries, OpenCL SPIR-V, limits and the binary cache."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from accel_opencl import provider_family
from accel_opencl.discovery import list_devices

from accelcore import ArtifactRef, ErrorKind, MemorySource, TargetIdentity
from accelcore.conformance.corpus import load_package
from accelcore.kernels.package import KernelPackage, ModuleKind, format_for
from accelcore.kernels.package_codec import write_package

N = 100


def _artifact(pkg: KernelPackage, resident: int = 64 << 20, *, split: bool = False) -> ArtifactRef:
    raw = write_package(pkg)
    source = MemorySource(raw[:50], raw[50:]) if split else MemorySource(raw)
    return ArtifactRef(pkg.format, pkg.target, source, resident)


def _run_twice(rig: Any, program: Any) -> np.ndarray:
    src = np.arange(N, dtype=np.uint32) * 3
    a = rig.buffer(src, "r")
    b = rig.buffer(np.zeros(N, np.uint32), "w")
    event = rig.submit(program, {0: (a, "r"), 1: (b, "w")})
    assert str(rig.wait(event)) == "Complete"
    return np.frombuffer(rig.read(b), dtype=np.uint32)


def _expected() -> np.ndarray:
    return np.arange(N, dtype=np.uint32) * 3 * 2 + 1


def test_source_package_builds_and_runs(rig: Any, make_package: Any) -> None:
    program = rig.accel.load_program(rig.context, _artifact(make_package(), split=True))
    rig.programs.append(program)
    assert np.array_equal(_run_twice(rig, program), _expected())
    assert program.resident_bytes >= len(program.binary) > 0


def test_second_load_of_the_same_source_comes_from_the_binary_cache(rig: Any, make_package: Any) -> None:
    unique = make_package(options="-DCACHE_PROBE=" + str(id(rig)))
    first = rig.load(unique)
    second = rig.load(unique)
    assert not first.from_cache and second.from_cache
    assert second.binary == first.binary
    assert np.array_equal(_run_twice(rig, first), _run_twice(rig, second))


def test_source_to_binary_to_reload_gives_identical_results(rig: Any, make_package: Any) -> None:
    source_program = rig.load(make_package())
    binary_pkg = dataclasses.replace(
        make_package(),
        module_kind=ModuleKind.OPENCL_BINARY,
        module=rig.accel.program_binary(source_program),
        target=rig.accel.binary_target,
    )
    binary_program = rig.accel.load_program(rig.context, _artifact(binary_pkg))
    rig.programs.append(binary_program)
    assert np.array_equal(_run_twice(rig, source_program), _run_twice(rig, binary_program))
    assert np.array_equal(_run_twice(rig, binary_program), _expected())


def test_build_failure_carries_the_build_log(rig: Any, make_package: Any, raises_kind: Any) -> None:
    broken = make_package(source="__kernel void twice(__global uint *a) { a[0] = undefined_name; }")
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        rig.load(broken)
    assert "undefined_name" in info.value.message
    assert info.value.native_code == -11 and info.value.native_call == "clBuildProgram"


@pytest.mark.parametrize(
    ("kwargs", "kind", "needle"),
    [
        ({"options": "-cl-no-such-option"}, ErrorKind.INVALID_ARGUMENT, "-cl-no-such-option"),
        ({"entry": "nope"}, ErrorKind.INVALID_ARGUMENT, "twice"),
        ({"source": "__kernel void twice(__global uint *a) { a[0] = 1u; }"}, ErrorKind.INCOMPATIBLE, "arguments"),
    ],
    ids=["bad-options", "missing-entry", "argument-mismatch"],
)
def test_inconsistent_packages_are_refused(
    rig: Any, make_package: Any, raises_kind: Any, kwargs: dict[str, str], kind: ErrorKind, needle: str
) -> None:
    with raises_kind(kind) as info:
        rig.load(make_package(**kwargs))
    assert needle in info.value.message


@pytest.mark.parametrize("module", [b"\xff\xfe not utf-8", b"__kernel void twice() {}\0"], ids=["utf8", "nul"])
def test_malformed_source_bytes_never_reach_the_driver(
    rig: Any, make_package: Any, raises_kind: Any, module: bytes
) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        rig.load(dataclasses.replace(make_package(), module=module))


def test_reqd_work_group_size_must_match_the_package(rig: Any, make_package: Any, raises_kind: Any) -> None:
    source = (
        "__kernel __attribute__((reqd_work_group_size(32, 1, 1)))\n"
        "void twice(__global const uint *s, __global uint *d, const uint n) { }"
    )
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        rig.load(make_package(source=source))
    assert "(32, 1, 1)" in info.value.message


def _binary_pkg(rig: Any, make_package: Any, module: bytes, target: TargetIdentity | None = None) -> KernelPackage:
    return dataclasses.replace(
        make_package(),
        module_kind=ModuleKind.OPENCL_BINARY,
        module=module,
        target=rig.accel.binary_target if target is None else target,
    )


def test_foreign_binary_is_refused_before_the_driver(rig: Any, make_package: Any, raises_kind: Any) -> None:
    words = list(rig.accel.binary_target.words)
    words[3] ^= 1  # another driver version
    foreign = TargetIdentity(tuple(words))
    # Garbage bytes: had any driver here seen them, it would have aborted the process.
    with raises_kind(ErrorKind.INCOMPATIBLE):
        rig.accel.load_program(rig.context, _artifact(_binary_pkg(rig, make_package, b"\x00garbage" * 64, foreign)))
    with raises_kind(ErrorKind.INCOMPATIBLE):
        rig.accel.load_program(rig.context, _artifact(_binary_pkg(rig, make_package, b"x" * 64, TargetIdentity.any())))


def test_a_binary_of_another_device_is_incompatible(entry: Any, rig: Any, make_package: Any, raises_kind: Any) -> None:
    others = [d for d in list_devices() if d.index != entry.index]
    if not others:
        pytest.skip("needs a second OpenCL device to build a foreign binary")
    other = provider_family.open(provider_family.discover()[others[0].index])
    ctx = other.create_context(__import__("accelcore").ContextDesc())
    program = other.load_package(ctx, make_package(), 64 << 20)
    foreign = _binary_pkg(rig, make_package, other.program_binary(program), other.binary_target)
    other.unload_program(program)
    other.destroy_context(ctx)
    with raises_kind(ErrorKind.INCOMPATIBLE):
        rig.accel.load_program(rig.context, _artifact(foreign))


def test_malformed_binaries_are_refused_and_the_process_survives(
    entry: Any, rig: Any, make_package: Any, raises_kind: Any
) -> None:
    good = rig.accel.program_binary(rig.load(make_package(options="-DMALFORMED_TEST")))
    with raises_kind(ErrorKind.INCOMPATIBLE):  # header check
        rig.load(_binary_pkg(rig, make_package, b"\x01\x02\x03\x04" * 40))
    if entry.native["tag"] == "rusticl":
        corrupt = bytearray(good)
        for offset in range(40, len(corrupt) - 8, 97):
            corrupt[offset] ^= 0x5A
    else:
        corrupt = bytearray(good[: max(100, len(good) // 3)])  # pocl: header intact, body cut
    with pytest.raises(Exception) as info:
        rig.load(_binary_pkg(rig, make_package, bytes(corrupt)))
    assert getattr(info.value, "kind", None) in (ErrorKind.INVALID_ARGUMENT, ErrorKind.INCOMPATIBLE), info.value
    # Still alive, and the good binary still loads and runs.
    reloaded = rig.load(_binary_pkg(rig, make_package, good))
    assert np.array_equal(_run_twice(rig, reloaded), _expected())


def test_opencl_spirv_names_the_missing_il_capability(rig: Any, raises_kind: Any) -> None:
    raw = load_package("conformance", ModuleKind.SPIRV_OPENCL)
    ref = ArtifactRef(format_for(ModuleKind.SPIRV_OPENCL), TargetIdentity.any(), MemorySource(raw), 64 << 20)
    if rig.accel._loader.il_version or rig.accel._loader.il_khr:
        program = rig.accel.load_program(rig.context, ref)
        rig.programs.append(program)
        return
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        rig.accel.load_program(rig.context, ref)
    assert "CL_DEVICE_IL_VERSION" in info.value.message and "cl_khr_il_program" in info.value.message


def test_vulkan_spirv_is_unsupported(rig: Any, raises_kind: Any) -> None:
    raw = load_package("conformance", ModuleKind.SPIRV_VULKAN)
    ref = ArtifactRef(format_for(ModuleKind.SPIRV_VULKAN), TargetIdentity.any(), MemorySource(raw), 64 << 20)
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        rig.accel.load_program(rig.context, ref)
    # The message names what this device really takes: SPIRV_OPENCL only where it has IL.
    takes = info.value.message.split("it takes ")[1]
    has_il = bool(rig.accel._loader.il_version or rig.accel._loader.il_khr)
    assert ("SPIRV_OPENCL" in takes) is has_il and "OPENCL_SOURCE" in takes


def test_resident_bytes_is_enforced_from_the_real_binary(rig: Any, make_package: Any, raises_kind: Any) -> None:
    rig.load(make_package(options="-DRESIDENT_TEST"))  # a source build: binary + retained source
    probe = rig.load(make_package(options="-DRESIDENT_TEST"))  # from the cache: the binary alone
    assert probe.from_cache and probe.resident_bytes == len(probe.binary)
    size = probe.resident_bytes
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        rig.accel.load_program(rig.context, _artifact(make_package(options="-DRESIDENT_TEST"), resident=size - 1))
    ok = rig.accel.load_program(rig.context, _artifact(make_package(options="-DRESIDENT_TEST"), resident=size))
    rig.programs.append(ok)
    assert ok.resident_bytes <= size


def test_artifact_over_max_artifact_bytes_is_resource_limit(rig: Any, make_package: Any, raises_kind: Any) -> None:
    limit = rig.accel.device_info().limits.max_artifact_bytes
    raw = write_package(make_package())
    padded = raw + b"\0" * (limit + 1 - len(raw))
    ref = ArtifactRef(format_for(ModuleKind.OPENCL_SOURCE), TargetIdentity.any(), MemorySource(padded), 64 << 20)
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        rig.accel.load_program(rig.context, ref)


def test_programs_are_accounted(accel: Any, make_package: Any) -> None:
    from accelcore import ContextDesc

    ctx = accel.create_context(ContextDesc())
    program = accel.load_package(ctx, make_package(), 64 << 20)
    assert accel.live_resources()["programs"] == 1 and accel.live_resources()["kernels"] == 1
    accel.unload_program(program)
    accel.destroy_context(ctx)
    assert not any(accel.live_resources().values())


def _spirv_ref(module: bytes, entry: str = "conformance") -> ArtifactRef:
    from accelcore.conformance.corpus import kernel_spec

    spec = kernel_spec("conformance")
    pkg = KernelPackage(
        module_kind=ModuleKind.SPIRV_OPENCL,
        entry_point=entry,
        local_size=spec.local_size,
        bindings=spec.bindings,
        dispatch=spec.dispatch,
        module=module,
    )
    return _artifact(pkg)


def test_spirv_is_inspected_before_anything_else(rig: Any, raises_kind: Any) -> None:
    from accelcore.conformance.corpus import load_module

    opencl_spirv = load_module("conformance", ModuleKind.SPIRV_OPENCL)
    vulkan_spirv = load_module("conformance", ModuleKind.SPIRV_VULKAN)
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:  # a Vulkan module in an OpenCL SPIR-V package
        rig.accel.load_program(rig.context, _spirv_ref(vulkan_spirv))
    assert "vulkan" in info.value.message
    with raises_kind(ErrorKind.INVALID_ARGUMENT):  # no such entry point
        rig.accel.load_program(rig.context, _spirv_ref(opencl_spirv, entry="missing"))
    truncated = opencl_spirv[: len(opencl_spirv) // 2 // 4 * 4]
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        rig.accel.load_program(rig.context, _spirv_ref(truncated))


def test_declared_artifact_formats_match_what_loads(rig: Any) -> None:
    formats = rig.accel.artifact_formats
    assert format_for(ModuleKind.OPENCL_SOURCE) in formats and format_for(ModuleKind.OPENCL_BINARY) in formats
    has_il = bool(rig.accel._loader.il_version or rig.accel._loader.il_khr)
    assert (format_for(ModuleKind.SPIRV_OPENCL) in formats) == has_il
    assert format_for(ModuleKind.SPIRV_VULKAN) not in formats


def test_binary_cache_survives_the_process_on_disk(
    rig: Any, make_package: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accel_opencl import binary_cache

    monkeypatch.setenv("ACCELCORE_CACHE_DIR", str(tmp_path))
    pkg = make_package(options=f"-DDISK_CACHE_TEST={id(tmp_path)}")
    first = rig.load(pkg)
    files = list((tmp_path / "opencl").glob("*.bin"))
    assert not first.from_cache and len(files) == 1
    binary_cache.clear_memory()  # as if this were a new process
    second = rig.load(pkg)
    assert second.from_cache and second.binary == first.binary
    raw = bytearray(files[0].read_bytes())
    raw[-1] ^= 0xFF  # corrupt the stored binary: it must be ignored, not loaded
    files[0].write_bytes(bytes(raw))
    binary_cache.clear_memory()
    third = rig.load(pkg)
    assert not third.from_cache
    assert files[0].read_bytes()[-1] != raw[-1]  # rewritten by the fresh build
    assert np.array_equal(_run_twice(rig, third), _expected())


def test_binary_cache_disk_level_can_be_disabled(
    rig: Any, make_package: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELCORE_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    rig.load(make_package(options=f"-DNO_DISK_CACHE={id(tmp_path)}"))
    assert not list(tmp_path.rglob("*.bin"))
