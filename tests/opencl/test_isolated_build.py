"""The first build of an OpenCL C source runs in a bounded child; its verdict is remembered.

Risky loads run in a child of the test (``isolated_load.py``) as well, so a regression fails the
test instead of killing pytest: without the isolated build, rusticl's SIGSEGV on a recursive
function takes that child down, and a 2^16-fold macro expansion holds it for minutes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_opencl import binary_cache, isolation

from accelcore import ErrorKind

from .isolated_load import load_isolated

RECURSIVE = """
uint depth(uint n) { return n == 0u ? 0u : depth(n - 1u) + 1u; }
__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i < count) { dst[i] = src[i] * 2u + depth(1u); }
}
"""


def expanded(doublings: int) -> str:
    """A kernel whose one macro expands to 2**doublings statements."""
    defines = "#define A0 x = x * 3u + 1u;\n" + "".join(
        f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, doublings + 1)
    )
    return defines + (
        "__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {\n"
        f"    uint x = src[0];\n    A{doublings}\n    dst[get_global_id(0)] = x;\n}}\n"
    )


def test_a_recursive_function_is_refused_on_rusticl_and_the_process_survives(entry: Any) -> None:
    answers = load_isolated(entry.index, source=RECURSIVE, loads=2, run=True)
    first, second = answers["loads"]
    if entry.native["tag"] == "rusticl":  # Mesa 22.3.6: clCreateKernel segfaults (2026-12-01)
        assert first["kind"] == "INVALID_ARGUMENT", first
        assert "the driver crashed (SIGSEGV) compiling this OpenCL C source" in first["message"], first
    else:  # PoCL compiles it; if it loads, it must compute the right thing
        assert first["kind"] in (None, "INVALID_ARGUMENT"), first
        if first["kind"] is None:
            assert first["output"] == [v * 6 + 1 for v in range(64)]
    assert second["kind"] == first["kind"] and second["message"] == first["message"]
    assert answers["children"] == 1  # the second load used the remembered verdict


def test_the_child_builds_first_and_is_skipped_after(
    rig: Any, make_package: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELCORE_CACHE_DIR", str(tmp_path))
    package = make_package(options=f"-DCHILD_TEST={time.monotonic_ns()}")
    before = isolation.children_started()
    first = rig.load(package)
    assert isolation.children_started() == before + 1 and not first.from_cache
    second = rig.load(package)  # the binary cache
    assert isolation.children_started() == before + 1 and second.from_cache
    binary_cache.clear_memory()
    for path in (tmp_path / "opencl").glob("*.bin"):
        path.unlink()
    third = rig.load(package)  # no binary anywhere: the remembered verdict lets it build here
    assert isolation.children_started() == before + 1 and not third.from_cache
    binary_cache.clear_memory()
    isolation.clear_memory()
    for path in (tmp_path / "opencl").glob("*.bin"):
        path.unlink()
    fourth = rig.load(package)  # as in a new process: the verdict on disk
    assert isolation.children_started() == before + 1 and not fourth.from_cache
    src = np.arange(16, dtype=np.uint32)
    for program in (first, second, third, fourth):
        a, b = rig.buffer(src, "r"), rig.buffer(np.zeros(16, np.uint32), "w")
        assert str(rig.wait(rig.submit(program, {0: (a, "r"), 1: (b, "w")}))) == "Complete"
        assert np.array_equal(np.frombuffer(rig.read(b), dtype=np.uint32), src * 2 + 1)


def test_build_errors_come_back_from_the_child_with_the_log(rig: Any, make_package: Any, raises_kind: Any) -> None:
    broken = make_package(source="__kernel void twice(__global uint *a) { a[0] = undefined_child_name; }")
    before = isolation.children_started()
    for _ in range(2):
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            rig.load(broken)
        assert "undefined_child_name" in info.value.message
        assert info.value.native_code == -11 and info.value.native_call == "clBuildProgram"
    assert isolation.children_started() == before + 1


def test_a_build_over_the_time_limit_is_stopped(
    rig: Any, make_package: Any, raises_kind: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(isolation.TIMEOUT_ENV, "2")
    # 2^20 statements: minutes of build on every driver here, far past both limits below (2^16
    # took 2.65 s on PoCL here and under 2.5 s on the CI machine, which made the raised limit race)
    package = make_package(source=expanded(20), options=f"-DSLOW={time.monotonic_ns()}")
    started = time.monotonic()
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as info:
        rig.load(package)
    assert time.monotonic() - started < 15
    assert "over the 2 s limit (ACCELCORE_OPENCL_BUILD_TIMEOUT_S)" in info.value.message
    before = isolation.children_started()
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        rig.load(package)  # remembered under the same limits
    assert isolation.children_started() == before
    monkeypatch.setenv(isolation.TIMEOUT_ENV, "3")
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        rig.load(package)  # a raised limit: tried again
    assert isolation.children_started() == before + 1


def test_a_build_over_the_memory_limit_is_stopped(
    rig: Any, make_package: Any, raises_kind: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(isolation.MEMORY_ENV, "256")  # below what the drivers need to start (~340 MiB)
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as info:
        rig.load(make_package(options=f"-DMEMORY={time.monotonic_ns()}"))
    assert "over the 256 MiB memory limit (ACCELCORE_OPENCL_BUILD_MEMORY_MIB)" in info.value.message


@pytest.mark.parametrize(
    ("name", "value"),
    [(isolation.TIMEOUT_ENV, "soon"), (isolation.TIMEOUT_ENV, "0"), (isolation.MEMORY_ENV, "12")],
)
def test_bad_limits_are_named(
    rig: Any, make_package: Any, raises_kind: Any, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        rig.load(make_package(options=f"-DLIMITS={time.monotonic_ns()}"))
    assert f"{name}={value!r}" in info.value.message


@pytest.mark.slow
def test_a_huge_kernel_is_stopped_at_the_default_limit(entry: Any) -> None:
    """rusticl: 2^16 statements keep clCreateKernel busy for minutes (PoCL: builds in ~15 s)."""
    started = time.monotonic()
    answer = load_isolated(entry.index, source=expanded(16), timeout=200)["loads"][0]
    assert time.monotonic() - started < 120
    if entry.native["tag"] == "rusticl":
        assert answer["kind"] == "RESOURCE_LIMIT", answer
        assert "limit" in answer["message"]
    else:
        assert answer["kind"] in (None, "RESOURCE_LIMIT"), answer


BINARY_OF_RECURSIVE = """
import os, sys
os.environ.setdefault("RUSTICL_ENABLE", "swrast")
import pyopencl as cl
from pyopencl import _cl
device = [d for p in cl.get_platforms() for d in p.get_devices() if "rusticl" in p.name.lower()][0]
program = _cl._Program(cl.Context([device]), sys.stdin.read())
program._build(options=b"", devices=[device])  # builds; only clCreateKernel crashes
print(bytes(program.get_info(cl.program_info.BINARIES)[0]).hex())
"""


def test_a_recursive_rusticl_binary_is_refused_before_any_driver(
    entry: Any, rig: Any, make_package: Any, raises_kind: Any
) -> None:
    import dataclasses
    import subprocess
    import sys

    from accelcore.kernels.package import ModuleKind

    if entry.native["tag"] != "rusticl":
        pytest.skip("a rusticl binary (header + SPIR-V) is what accelcore can inspect")
    done = subprocess.run(
        [sys.executable, "-P", "-c", BINARY_OF_RECURSIVE], input=RECURSIVE.encode(), capture_output=True, check=True
    )
    binary = bytes.fromhex(done.stdout.decode().split()[-1])
    package = dataclasses.replace(
        make_package(), module_kind=ModuleKind.OPENCL_BINARY, module=binary, target=rig.accel.binary_target
    )
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:  # before: the probe child's SIGSEGV
        rig.load(package)
    assert "calls functions recursively" in info.value.message and "before the driver saw it" in info.value.message


def test_one_worker_serves_many_builds_and_a_crash_is_retried_fresh(
    entry: Any, rig: Any, make_package: Any, raises_kind: Any
) -> None:
    before = isolation.processes_started()
    for n in range(3):
        rig.load(make_package(options=f"-DWORKER_TEST={time.monotonic_ns()}_{n}"))
    assert isolation.processes_started() - before <= 1  # at most one start (none if one was warm)
    if entry.native["tag"] != "rusticl":
        return
    warm = isolation.processes_started()
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:  # the warm worker dies; a fresh one confirms
        rig.load(make_package(source=RECURSIVE, options=f"-DWORKER_CRASH={time.monotonic_ns()}"))
    assert "the driver crashed (SIGSEGV)" in info.value.message
    assert isolation.processes_started() == warm + 1
