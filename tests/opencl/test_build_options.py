"""Build options are checked before any driver sees them (rusticl aborts or segfaults on many).

The risky loads run in a child process (``isolated_load.py``): without the check, rusticl takes
that child down (SIGABRT on a control byte or ``-D X``, SIGSEGV on a word without ``-``) and the
test fails on its exit status instead of killing pytest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from accel_opencl.source_check import check_build_options

from accelcore import ErrorKind

from .isolated_load import load_isolated

SOURCE = """
__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i < count) { dst[i] = src[i] * 2u + 1u; }
}
"""

# (options, what the refusal names): each of these took rusticl down (Mesa 22.3.6, 2026-12-01).
CRASHERS = [
    ("-DX=1 \x7f", "byte 0x7F at position 6"),
    ("\x01", "byte 0x01 at position 0"),
    ("-DX=\u00e9", "byte 0xC3 at position 4"),
    ("abc", "option 'abc' at position 0"),
    ("-DX=1 foo.cl", "option 'foo.cl' at position 6"),
    ("-D X", "-D at position 0 is apart from its name"),
    ('-DX="a"', "'\"' at position 4"),
]


@pytest.mark.parametrize(("options", "needle"), CRASHERS, ids=[f"crasher{i}" for i in range(len(CRASHERS))])
def test_options_that_crash_a_driver_are_refused_and_the_process_survives(
    entry: Any, options: str, needle: str
) -> None:
    answer = load_isolated(entry.index, source=SOURCE, options=options)["loads"][0]
    assert answer["kind"] == "INVALID_ARGUMENT", answer
    assert needle in answer["message"] and "before the driver saw them" in answer["message"], answer


@pytest.mark.parametrize(
    "options",
    ["", "  -DA=1   -DB ", "-DN=3 -I /tmp -I/tmp -w -Werror -cl-std=CL1.2 -cl-mad-enable", "-cl-fast-relaxed-math"],
)
def test_ordinary_options_pass_the_check(options: str) -> None:
    checked = check_build_options(options)
    assert checked.text == options


def test_include_folders_are_reported_in_order() -> None:
    assert check_build_options("-Ia -DX -I b -Ic").include_dirs == ("a", "b", "c")


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ("-include /etc/hostname", "'-include'"),
        ("-Xclang -load", "'-Xclang'"),
        ("-o /tmp/out", "'-o'"),
        ("-I", "names no folder"),
        ("-DX=1\t-DY", "byte 0x09 at position 5"),
    ],
)
def test_refusals_name_the_option_and_what_is_valid(options: str, needle: str, raises_kind: Any) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        check_build_options(options)
    assert needle in info.value.message


def test_checked_options_still_reach_the_driver(rig: Any, make_package: Any) -> None:
    program = rig.load(make_package(source=SOURCE.replace("2u + 1u", "2u + ADD"), options="-DADD=5u -w"))
    src = np.arange(32, dtype=np.uint32)
    a, b = rig.buffer(src, "r"), rig.buffer(np.zeros(32, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (a, "r"), 1: (b, "w")}))) == "Complete"
    assert np.array_equal(np.frombuffer(rig.read(b), dtype=np.uint32), src * 2 + 5)


def test_binary_loads_check_the_options_too(rig: Any, make_package: Any, raises_kind: Any) -> None:
    import dataclasses

    from accelcore.kernels.package import ModuleKind

    binary = rig.accel.program_binary(rig.load(make_package()))
    package = dataclasses.replace(
        make_package(options="\x7f"),
        module_kind=ModuleKind.OPENCL_BINARY,
        module=binary,
        target=rig.accel.binary_target,
    )
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        rig.load(package)
    assert "byte 0x7F at position 0" in info.value.message
