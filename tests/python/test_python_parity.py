"""The Python layer takes what the CLI takes and refuses early what the CLI refuses.

- every work size (``local_size=``, ``global_size=``, ``groups=``) is an int or a tuple of 1 to 3, numpy
  integers included; anything else is INVALID_ARGUMENT naming the keyword and the value as given;
- ``dev.kernel(path, entry=...)`` refuses a kernel the file lacks, listing those it has;
- ``dev.kernel()`` builds OpenCL C once and raises a compile error there, naming the user's file and line;
- errors name the keywords a Python caller writes (``entry=``, ``n=VALUE``), not ``pack_module``'s.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind
from accelcore.conformance.corpus import module_path
from accelcore.devices.environment import apply_defaults
from accelcore.kernels.glsl import compile_glsl
from accelcore.kernels.pack import pack_module
from accelcore.kernels.package import ModuleKind
from accelcore.kernels.package_codec import write_package
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

LOCAL_SIZE_CL = """
__kernel void sizes(__global int* out)
{
    out[get_global_id(0)] = (int)(get_local_size(0) * 1000 + get_num_groups(0));
}
"""
TWO_KERNELS_CL = """
__kernel void sum(__global float* y, const int n) { int i = get_global_id(0); if (i < n) y[i] += 1.0f; }
__kernel void scale(__global float* y, const float a) { y[get_global_id(0)] *= a; }
"""
BROKEN_CL = """__kernel void broken(__global float* y, const int n)
{
    int i = get_global_id(0);
    if (i < n) y[i] = undeclared_name + 1.0f;
}
"""
LOCAL_CL = """
__kernel void reduce(__global const float* in, __global float* out, __local float* scratch)
{
    scratch[get_local_id(0)] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) out[get_group_id(0)] = scratch[0];
}
"""
PUSH_GLSL = """#version 450
layout(local_size_x = 32) in;
layout(push_constant) uniform Params { float a; uint n; } p;
layout(set = 0, binding = 0) buffer Y { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = p.a * float(gl_NumWorkGroups.x); }
"""


OPENCL, OPENCL_IDS = provider_device_params("opencl")
VULKAN, VULKAN_IDS = provider_device_params("vulkan")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "sizes.cl").write_text(LOCAL_SIZE_CL)
    (tmp_path / "two.cl").write_text(TWO_KERNELS_CL)
    (tmp_path / "broken.cl").write_text(BROKEN_CL)
    (tmp_path / "reduce.cl").write_text(LOCAL_CL)
    (tmp_path / "push.comp").write_text(PUSH_GLSL)
    return tmp_path


# --------------------------------------------------------------------------- work sizes


@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_every_work_size_takes_an_int_a_tuple_or_a_numpy_integer(entry, files: Path) -> None:
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(files / "sizes.cl", local_size=96)
        out = np.zeros(288, np.int32)
        kernel(out, groups=3)
        np.testing.assert_array_equal(out, 96 * 1000 + 3)
        for sizes in ({"groups": (3,)}, {"groups": [3]}, {"groups": np.int64(3)}, {"global_size": np.int32(288)}):
            out[:] = 0
            kernel.submit(out, **sizes).wait()
            np.testing.assert_array_equal(out, 96 * 1000 + 3, err_msg=str(sizes))
        kernel = dev.kernel(files / "sizes.cl", local_size=(np.int64(32),))
        out = np.zeros(64, np.int32)
        kernel(out, global_size=(np.int64(64), 1))
        np.testing.assert_array_equal(out, 32 * 1000 + 2)


@pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)
def test_groups_takes_an_int_on_vulkan_too(entry, files: Path) -> None:
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(files / "push.comp")
        y = np.zeros(96, np.float32)
        kernel(y, a=2.0, n=96, groups=3)
        np.testing.assert_array_equal(y, 6.0)
        y[:] = 0
        kernel(y, a=2.0, n=96, global_size=np.int64(96))
        np.testing.assert_array_equal(y, 6.0)


BAD_SIZES = [True, np.bool_(True), 64.0, np.float32(64), "64", b"64", 0, -3, np.int64(0), (), (1, 1, 1, 1), (64, "1")]


@pytest.mark.parametrize("entry", OPENCL[:1], ids=OPENCL_IDS[:1])
def test_a_bad_work_size_is_refused_naming_the_keyword_and_the_value(entry, files: Path) -> None:
    with ac.open(entry.device_id) as dev:
        for bad in BAD_SIZES:
            with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
                dev.kernel(files / "sizes.cl", local_size=bad)
            assert f"local_size={bad!r}" in info.value.message, info.value.message
        kernel = dev.kernel(files / "sizes.cl", local_size=8)
        out = np.zeros(64, np.int32)
        before = dict(dev.engine.live_objects())
        for keyword in ("global_size", "groups"):
            for bad in BAD_SIZES:
                for call in (kernel, kernel.submit):
                    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
                        call(out, **{keyword: bad})
                    assert f"{keyword}={bad!r}" in info.value.message, info.value.message
        assert dict(dev.engine.live_objects()) == before  # refused before anything was allocated or loaded


def test_the_work_size_check_is_one_function() -> None:
    from accelcore.api.keywords import work_size

    given = (64, 2)
    assert work_size("global_size", given) is given  # a plain tuple is kept (the call memo matches identity)
    assert work_size("groups", 3) == 3
    assert work_size("groups", np.int16(3)) == 3 and type(work_size("groups", np.int16(3))) is int
    assert work_size("global_size", [np.uint32(4), 2]) == (4, 2)
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        work_size("global_size", "64")
    assert "global_size='64'" in info.value.message and "'6'" not in info.value.message


# --------------------------------------------------------------------------- entry points


@pytest.mark.parametrize("entry", OPENCL[:1], ids=OPENCL_IDS[:1])
def test_an_entry_the_file_lacks_is_refused_at_kernel_listing_its_kernels(entry, files: Path) -> None:
    with ac.open(entry.device_id) as dev:
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(files / "two.cl", entry="summ")
        message = info.value.message
        assert "entry='summ'" in message and "sum, scale" in message and "entry_point" not in message
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(files / "two.cl")
        assert "sum, scale" in info.value.message and "entry=" in info.value.message
        y = np.zeros(16, np.float32)
        dev.kernel(files / "two.cl", entry="sum")(y, 16, global_size=16)
        np.testing.assert_array_equal(y, 1.0)
        # OpenCL SPIR-V: its Kernel entry points (refused before any load, so no IL support is needed).
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(module_path("saxpy", ModuleKind.SPIRV_OPENCL), entry="summ")
        assert "no kernel 'summ'" in info.value.message and "saxpy" in info.value.message
        # A package: the one kernel it records.
        pkg = pack_module(TWO_KERNELS_CL.encode(), entry_point="scale", arguments={"a": 2.0}, global_size=16)
        (files / "scale.kpkg").write_bytes(write_package(pkg))
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(files / "scale.kpkg", entry="sum")
        assert "no kernel 'sum'" in info.value.message and "scale" in info.value.message


@pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)
def test_an_entry_a_vulkan_module_lacks_is_refused_at_kernel(entry, files: Path) -> None:
    (files / "push.spv").write_bytes(compile_glsl(PUSH_GLSL.encode()))
    with ac.open(entry.device_id) as dev, raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        dev.kernel(files / "push.spv", entry="summ")
    assert "no kernel 'summ'" in info.value.message and "main" in info.value.message


# --------------------------------------------------------------------------- eager builds


@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_a_compile_error_is_raised_by_kernel_naming_the_file_and_line(entry, files: Path) -> None:
    path = files / "broken.cl"
    with ac.open(entry.device_id) as dev:
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(path)
        message = info.value.message
        assert f"{path}:4:" in message, message  # the driver's build log, mapped to the user's file
        assert "undeclared_name" in message and "tempfile" not in message and "input.cl" not in message
        assert info.value.native_call == "clBuildProgram"
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            dev.kernel(BROKEN_CL.encode())  # bytes too (named as the driver names them)
        # An error in the signature (the parameters cannot be read) and text with no kernel left to read:
        # still the compiler's log, not a check of the text.
        for text in ("__kernel void typo(__global floot* y, const intt n) { }\n", "__kernel void (int x) {\n"):
            (files / "typo.cl").write_text(text)
            with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
                dev.kernel(files / "typo.cl")
            assert info.value.native_call == "clBuildProgram" and f"{files / 'typo.cl'}:1:" in info.value.message
        # An include's error names the header and its line.
        (files / "common.h").write_text("inline float twice(float v) { return v * nope; }\n")
        (files / "uses.cl").write_text('#include "common.h"\n' + BROKEN_CL.replace("undeclared_name", "twice(1.0f)"))
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            dev.kernel(files / "uses.cl")
        assert "common.h:1:" in info.value.message, info.value.message


@pytest.mark.parametrize("entry", OPENCL[:1], ids=OPENCL_IDS[:1])
def test_kernel_builds_once_and_the_first_call_compiles_nothing(entry, files: Path) -> None:
    from accel_opencl import isolation

    source = LOCAL_SIZE_CL.replace("sizes", f"sizes_{uuid.uuid4().hex}").encode()  # a source no cache has seen
    with ac.open(entry.device_id) as dev:
        before = isolation.children_started()
        kernel = dev.kernel(source, local_size=8)
        built = isolation.children_started()
        assert built == before + 1  # the isolated first build ran in dev.kernel()
        assert dev.engine.live_objects().get("program", 0) == 0  # the build-only program is not kept
        out = np.zeros(16, np.int32)
        kernel(out, global_size=16)
        assert isolation.children_started() == built
        np.testing.assert_array_equal(out, 8 * 1000 + 2)
        # A kernel with a __local pointer and values builds the same way.
        reduce = dev.kernel(files / "reduce.cl", local_size=4)
        partial = np.zeros(2, np.float32)
        reduce(np.arange(8, dtype=np.float32), partial, ac.local_memory(16), global_size=8)
        np.testing.assert_array_equal(partial, [0, 4])


# --------------------------------------------------------------------------- wording


@pytest.mark.parametrize("entry", OPENCL[:1], ids=OPENCL_IDS[:1])
def test_opencl_errors_name_python_keywords(entry, files: Path) -> None:
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(files / "two.cl", entry="sum")
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            kernel(np.zeros(4, np.float32), global_size=4)  # n not given
        message = info.value.message
        assert "n=VALUE" in message, message
        for pack_word in ("arguments=", "count_argument", "entry_point", "dispatch"):
            assert pack_word not in message, message
        reduce = dev.kernel(files / "reduce.cl", local_size=4)
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            reduce(np.zeros(8, np.float32), np.zeros(2, np.float32), global_size=8)  # scratch not given
        assert "ac.local_memory(" in info.value.message and "local_memory=" not in info.value.message


@pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)
def test_vulkan_errors_name_python_keywords(entry, files: Path) -> None:
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(files / "push.comp")
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            kernel(np.zeros(32, np.float32), global_size=32)  # the push-constant members not given
        message = info.value.message
        assert "a=VALUE" in message and "n=VALUE" in message, message
        assert "push_constants" not in message and "count_argument" not in message, message
