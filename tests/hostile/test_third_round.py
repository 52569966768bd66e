"""Hostile inputs, third round: numbers that overflow, arrays with no device form, and provider
variables that name nothing - each a BackendError naming what was given, never an inf that was not
written, a segfault, an OverflowError or an empty listing.

(The interrupted isolated build of the same issue is tests/opencl/test_interrupted_build.py.)
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_cli.main import main
from click.testing import CliRunner

import accelcore as ac
from accelcore import BackendError, ErrorKind
from accelcore.devices.environment import apply_defaults
from accelcore.kernels.values import ScalarType, ValueType, encode_value, parse_value_text
from accelcore.testing.pytest_support import device_params

apply_defaults()

F16, F32, F64 = ValueType(ScalarType.F16), ValueType(ScalarType.F32), ValueType(ScalarType.F64)


def _entries(provider: str) -> list[object]:
    return [e for e in ac.devices() if e.provider == provider]


OPENCL, OPENCL_IDS = device_params(lambda: _entries("opencl"), "OpenCL")
VULKAN, VULKAN_IDS = device_params(lambda: _entries("vulkan"), "Vulkan")


def refused(call: Any, *args: Any, match: str, **kwargs: Any) -> BackendError:
    with pytest.raises(BackendError, match=match) as info:
        call(*args, **kwargs)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT, info.value
    return info.value


# --------------------------------------------------------------------------- 2. numbers


@pytest.mark.parametrize(
    "text",
    ["1e999", "-1e999", "1" * 400, "-" + "9" * 400 + ".5", "1e39", "3.40282357e38"],
    ids=["1e999", "-1e999", "400-digits", "-400-digits", "1e39", "3.40282357e38"],
)
def test_a_finite_text_past_float32_is_refused_not_read_as_inf(text: str) -> None:
    refused(parse_value_text, F32, text, "argument a", match=r"argument a .*outside its finite range")


def test_a_finite_text_past_float64_is_refused_too() -> None:
    for text in ("1e999", "2e308", "1" * 400):
        refused(parse_value_text, F64, text, "argument d", match="argument d .*outside its finite range")
        refused(parse_value_text, F16, text, "argument h", match="argument h .*outside its finite range")


def test_only_the_words_give_inf_and_nan() -> None:
    for text, expected in (("inf", math.inf), ("-inf", -math.inf), ("Infinity", math.inf), ("+INF", math.inf)):
        assert np.frombuffer(parse_value_text(F32, text), np.float32)[0] == expected
    assert np.isnan(np.frombuffer(parse_value_text(F64, "nan"), np.float64)[0])
    assert np.frombuffer(encode_value(F32, -math.inf), np.float32)[0] == -math.inf  # a float inf is as given


@pytest.mark.parametrize(
    "text",
    [
        "3.4028235e38",  # numpy's repr of float32 max
        "3.4028234663852886e38",
        "3.40282356e38",  # above max, below the halfway point to 2**128: rounds to max
        "-3.4028235e38",
        "3.40282357e38",  # past the halfway point: inf
        "3.4028236e38",
        "1e39",
        "1.5",
        "1e-50",
    ],
)
def test_float32_text_is_taken_exactly_when_numpy_rounds_it_to_a_finite_float32(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow warning on the refused ones
        expected = np.float32(text)
    if np.isfinite(expected):
        assert parse_value_text(F32, text) == expected.tobytes()
    else:
        refused(parse_value_text, F32, text, match="outside its finite range")


def test_half_rounds_like_numpy_too() -> None:
    assert parse_value_text(F16, "65519") == np.float16(65519).tobytes()  # rounds to 65504
    refused(parse_value_text, F16, "65520", match="outside its finite range")


def test_float32_max_as_a_python_float_is_accepted() -> None:
    assert encode_value(F32, 3.4028235e38) == np.float32(3.4028235e38).tobytes()
    assert encode_value(F32, float(np.finfo(np.float32).max)) == np.finfo(np.float32).max.tobytes()


@pytest.mark.parametrize("value", [10**400, -(10**400), 10**5000, 2**1024], ids=["1e400", "-1e400", "1e5000", "2^1024"])
@pytest.mark.parametrize("vtype", [F16, F32, F64, ValueType(ScalarType.F32, 2)])
def test_a_python_int_too_large_for_any_float_names_the_argument(value: int, vtype: ValueType) -> None:
    given: object = [value, 1.0] if vtype.lanes == 2 else value
    refused(encode_value, vtype, given, "argument a", match=r"argument a.* integer of \d+ bits is outside")


def test_a_python_int_too_large_for_an_integer_type_prints_its_size() -> None:
    refused(encode_value, ValueType(ScalarType.I32), 10**5000, "argument n", match="an integer of 16610 bits")


SCALE_CL = b"__kernel void scale(__global float *x, const float a) { x[get_global_id(0)] = a; }\n"
STRUCT_CL = (
    b"typedef struct { float a; int n; } P;\n"
    b"__kernel void member(__global float *x, const P p) { x[get_global_id(0)] = p.a + (float)p.n; }\n"
)


@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_the_python_layer_refuses_overflowing_numbers_and_takes_float32_max(entry: Any) -> None:
    with ac.open(entry.device_id) as dev:
        scale = dev.kernel(SCALE_CL)
        x = np.zeros(4, np.float32)
        for given in ("1e999", "f32:1e999", "1" * 400, "-1e999"):
            error = refused(scale, x, a=given, global_size=4, match="outside its finite range")
            assert "argument a" in str(error)
        refused(scale, x, a=10**400, global_size=4, match=r"argument a .*an integer of 1329 bits is outside")
        scale(x, a="3.4028235e38", global_size=4)
        assert (x == np.finfo(np.float32).max).all()
        scale(x, a="-inf", global_size=4)
        assert (x == -np.inf).all()
        member = dev.kernel(STRUCT_CL)
        refused(member, x, p={"a": 10**400, "n": 1}, global_size=4, match=r"p\.a .*outside its finite range")
        refused(member, x, p={"a": "1e999", "n": 1}, global_size=4, match=r"p\.a .*outside its finite range")
        member(x, p={"a": 3.4028235e38, "n": 0}, global_size=4)
        assert (x == np.finfo(np.float32).max).all()


SPEC_GLSL = b"""#version 450
layout(local_size_x = 4) in;
layout(constant_id = 1) const float A = 1.0;
layout(set = 0, binding = 0) buffer Out { float v[]; };
void main() { v[gl_GlobalInvocationID.x] = A; }
"""


@pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)
def test_a_spec_constant_too_large_for_any_float_names_it(entry: Any) -> None:
    with ac.open(entry.device_id) as dev:
        for given in (10**400, "1e999"):
            with pytest.raises(BackendError, match=r"A .*outside its finite range") as info:
                dev.kernel(SPEC_GLSL, spec={"A": given})(np.zeros(4, np.float32), global_size=4)
            assert info.value.kind is ErrorKind.INVALID_ARGUMENT
        v = dev.kernel(SPEC_GLSL, spec={"A": "3.4028235e38"})(np.zeros(4, np.float32), global_size=4)
        assert (v == np.finfo(np.float32).max).all()


@pytest.mark.parametrize("entry", OPENCL[:1], ids=OPENCL_IDS[:1])
def test_accel_run_refuses_an_overflowing_arg(entry: Any, tmp_path: Path) -> None:
    (tmp_path / "scale.cl").write_text(SCALE_CL.decode())
    np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
    command = [sys.executable, "-m", "accel_cli", "run", entry.device_id, str(tmp_path / "scale.cl")]
    command += ["--global", "4", "--bind", f"0={tmp_path / 'x.npy'}:rw", "--out", f"0={tmp_path / 'out.npy'}"]
    env = {**os.environ, "ACCEL_PROVIDERS": "opencl"}
    for given in ("1e999", "f32:1e999"):
        done = subprocess.run([*command, "--arg", f"a={given}"], capture_output=True, text=True, env=env, check=False)
        assert done.returncode not in (0, 1), done.stderr  # refused before anything ran
        assert "'1e999' is outside its finite range" in done.stderr, done.stderr
    done = subprocess.run([*command, "--arg", "a=3.4028235e38"], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert (np.load(tmp_path / "out.npy") == np.finfo(np.float32).max).all()


@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_a_timeout_that_is_no_finite_number_of_seconds_names_timeout(entry: Any) -> None:
    with ac.open(entry.device_id) as dev:
        scale = dev.kernel(SCALE_CL)
        x = np.zeros(4, np.float32)
        for timeout in (math.inf, math.nan, 1e300, -math.inf, 10**400, "5", True):
            error = refused(scale, x, a=1.0, global_size=4, timeout=timeout, match="timeout=")
            assert "not a number of seconds" in str(error)
            run = scale.submit(x, a=2.0, global_size=4)
            refused(run.wait, timeout=timeout, match="timeout=")
            run.wait()  # the run itself is untouched
            assert (x == 2.0).all()
        scale(x, a=3.0, global_size=4, timeout=60)
        assert (x == 3.0).all()


# --------------------------------------------------------------------------- 3. arrays with no device form

OBJECT_FIELD = np.dtype([("a", "O"), ("b", "<f4")])


@pytest.mark.parametrize("entry", OPENCL + VULKAN, ids=OPENCL_IDS + VULKAN_IDS)
def test_device_arrays_of_objects_or_wrapped_sizes_are_refused(entry: Any) -> None:
    with ac.open(entry.device_id) as dev:
        refused(dev.empty, 4, object, match=r"empty\(4, object\)")
        refused(dev.empty, 4, OBJECT_FIELD, match="Python objects")
        refused(dev.empty, (-2, -2), np.float32, match=r"empty\(\(-2, -2\), float32\)")
        refused(dev.empty, (2**62 + 1, 4), np.uint8, match=r"empty\(\(4611686018427387905, 4\), uint8\)")
        refused(dev.empty, (2, 2.0), np.float32, match="integers")
        refused(dev.array, np.array([1, None, "x"], dtype=object), match="Python objects")
        refused(dev.array, np.zeros(3, OBJECT_FIELD), match="Python objects")
        refused(dev.array, np.ma.array([1.0, 2.0], mask=[False, True]), match="masked array")
        refused(dev.array, [[1, 2], [3]], match="numpy cannot make one array")
        made = dev.empty(np.int64(6), np.float32)  # a numpy integer is a shape too
        assert made.shape == (6,) and made.numpy().shape == (6,)
        assert dev.empty((2, 3), np.int16).numpy().shape == (2, 3)


@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_masked_and_object_arrays_given_to_a_kernel_are_refused(entry: Any) -> None:
    source = b"__kernel void k(__global float *x, __global uchar *u) { x[get_global_id(0)] += (float)u[0]; }\n"
    with ac.open(entry.device_id) as dev:
        k = dev.kernel(source)
        x, u = np.zeros(4, np.float32), np.ones(4, np.uint8)
        refused(k, np.ma.array(x, mask=[0, 1, 0, 0]), u, global_size=4, match="argument x is a masked array")
        refused(k, x, np.ma.array(u), global_size=4, match="argument u is a masked array")  # once taken as is
        refused(k, x, np.zeros(4, OBJECT_FIELD), global_size=4, match="argument u .*Python objects")
        refused(k, np.array([None] * 4, dtype=object), u, global_size=4, match="argument x .*Python objects")
        k(x, u, global_size=4)
        assert (x == 1.0).all()


# --------------------------------------------------------------------------- 4. provider variables


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("ACCEL_PROVIDERS", ",", ["ACCEL_PROVIDERS=','", "names no provider", "known providers: ", "opencl"]),
        ("ACCEL_PROVIDERS", " , ", ["names no provider", "known providers: "]),
        ("ACCEL_PROVIDERS", "vulkn", ["ACCEL_PROVIDERS names 'vulkn'", "known providers: ", "vulkan"]),
        ("ACCEL_EXTRA_PROVIDERS", "garbage", ["ACCEL_EXTRA_PROVIDERS entry 'garbage'", "name=module:attribute"]),
        ("ACCEL_EXTRA_PROVIDERS", "=mod:attr", ["ACCEL_EXTRA_PROVIDERS entry '=mod:attr'", "name=module:attribute"]),
    ],
)
def test_a_provider_variable_that_names_nothing_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, words: list[str]
) -> None:
    monkeypatch.setenv(variable, value)
    for call in (ac.devices, lambda: ac.open("opencl:0")):
        error = refused(call, match=variable)
        for word in words:
            assert word in str(error), str(error)
    result = CliRunner().invoke(main, ["devices"])
    assert result.exit_code == 2, result.output
    assert words[0] in result.output
