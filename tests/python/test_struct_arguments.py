"""OpenCL kernels that take a struct by value: ``pack_module(arguments={"p": ...})`` and ``dev.kernel(...)(p=...)``
with a dict of members, a numpy structured scalar or raw bytes, each result checked against numpy on every real
OpenCL device; and the refusals (wrong size, unknown or missing member, a structured dtype whose offsets differ,
a struct value for a ``__global`` argument, a package whose struct bytes do not match the kernel, a struct over
the device's ``CL_DEVICE_MAX_PARAMETER_SIZE``)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind
from accelcore.contract.ports import MemorySource
from accelcore.contract.program import ArtifactRef
from accelcore.devices.environment import apply_defaults
from accelcore.kernels.pack import pack_module
from accelcore.kernels.package import KernelArgument, KernelPackage, PackageBinding
from accelcore.kernels.package_codec import parse_package, write_package
from accelcore.testing.pytest_support import raises_kind, real_device_params

apply_defaults()

_spec = importlib.util.spec_from_file_location("struct_affine", Path(__file__).parent / "data" / "struct_affine.py")
assert _spec is not None and _spec.loader is not None
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
STRUCT_CL: bytes = _shared.SOURCE
PARAMS: np.dtype[Any] = _shared.PARAMS
PACKED = np.dtype([("scale", "<f4"), ("n", "<i4"), ("bias", "<f4", 4), ("step", "<i2"), ("tail", "<f4")])
"""The same fields without OpenCL's padding: bias at 8, not 16."""
MEMBERS = {"scale": 1.5, "n": 200, "bias": (0.25, -7.0, 3.0, 0.5), "step": 6, "tail": -0.125}

OPENCL = [p for p in real_device_params() if p.id == "opencl" or (p.values[1] and p.values[1].provider == "opencl")]


def _expected(x: np.ndarray) -> np.ndarray:
    f = np.float32
    return x * f(1.5) + f(0.25) + f(0.5) * f(6) + f(-0.125)  # quarters and eighths: exact in f32


def _structured() -> np.void:
    value = np.zeros((), PARAMS)
    for name, member in MEMBERS.items():
        value[name] = member
    return value[()]  # type: ignore[no-any-return]


def _kernel_file(tmp_path: Path) -> Path:
    path = tmp_path / "affine.cl"
    path.write_bytes(STRUCT_CL)
    return path


def test_the_three_forms_give_the_same_bytes_and_the_padding_is_zero() -> None:
    encoded = []
    for given in (MEMBERS, _structured(), _structured().tobytes(), bytearray(_structured().tobytes())):
        pkg = pack_module(STRUCT_CL, global_size=256, arguments={"p": given})
        (argument,) = pkg.arguments
        assert argument.index == 2 and argument.is_aggregate and len(argument.data) == 48
        encoded.append(argument.data)
    assert len(set(encoded)) == 1
    data = encoded[0]
    assert data[8:16] == bytes(8) and data[34:36] == bytes(2) and data[40:] == bytes(8)
    assert np.frombuffer(data, PARAMS)[0]["n"] == 200


@pytest.mark.parametrize(("family", "entry"), OPENCL)
def test_struct_by_value_computes_like_numpy_in_every_form(family: Any, entry: Any, tmp_path: Path) -> None:
    x = np.random.default_rng(5).integers(-16, 16, 256).astype(np.float32)
    forms = {"dict": MEMBERS, "structured": _structured(), "bytes": _structured().tobytes()}
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(_kernel_file(tmp_path))
        for form, given in forms.items():
            y = np.full(256, 99.0, np.float32)
            kernel(x, y, p=given, global_size=256)
            np.testing.assert_array_equal(y[:200], _expected(x)[:200], err_msg=form)
            assert (y[200:] == 99.0).all(), form  # p.n is 200: the int member landed at offset 4


@pytest.mark.parametrize(
    ("given", "words"),
    [
        (bytes(47), "takes exactly 48 bytes but was given bytes of 47 bytes"),
        (memoryview(bytes(64)), "takes exactly 48 bytes but was given memoryview of 64 bytes"),
        ({**MEMBERS, "scales": 1.0}, "has no member 'scales' (it declares: float scale at offset 0, int n at"),
        ({k: v for k, v in MEMBERS.items() if k != "tail"}, "member(s) float tail at offset 36 have no value"),
        ({**MEMBERS, "n": 2.5}, "argument p.n (int n at offset 4 of argument p (Params p; struct Params, 48 bytes))"),
        (
            {**MEMBERS, "bias": (1.0, 2.0)},
            "p.bias (float4 bias at offset 16 of argument p (Params p; struct Params, 48 bytes)) declares f32x4 "
            "(4 lanes) but was given 2 values",
        ),
        (np.zeros((), PACKED)[()], "takes 48 bytes but was given a numpy void of dtype"),
        ((1.5, 200), "was given tuple (1.5, 200); pass a dict of its members (float scale at offset 0"),
        ("1.5", "was given str '1.5'"),
    ],
    ids=[
        "short",
        "long",
        "unknown-member",
        "missing-member",
        "int-member-float",
        "vector-lanes",
        "dtype",
        "tuple",
        "text",
    ],
)
def test_a_wrong_value_is_refused_naming_argument_declaration_and_value(given: object, words: str) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        pack_module(STRUCT_CL, global_size=256, arguments={"p": given})
    assert "argument p (Params p; struct Params, 48 bytes)" in str(info.value)
    assert words in str(info.value)


def test_a_structured_dtype_with_other_offsets_is_refused_naming_the_member() -> None:
    shifted = np.dtype({"names": PACKED.names, "formats": [PACKED[n] for n in PACKED.names], "itemsize": 48})
    value = np.zeros((), shifted)  # same fields, bias at 8, size padded to 48: only the offsets differ
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        pack_module(STRUCT_CL, global_size=256, arguments={"p": value})
    assert (
        "member float4 bias at offset 16 (float32 x 4) but the given dtype has field 'bias' of float32 x 4 at offset 8"
    ) in str(info.value)
    wrong_type = np.dtype(
        {
            "names": PARAMS.names,
            "formats": ["<f4", "<u4", ("<f4", 4), "<i2", "<f4"],
            "offsets": [0, 4, 16, 32, 36],
            "itemsize": 48,
        }
    )
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        pack_module(STRUCT_CL, global_size=256, arguments={"p": np.zeros((), wrong_type)})
    assert "member int n at offset 4 (int32 x 1) but the given dtype has field 'n' of uint32 x 1" in str(info.value)


def test_a_struct_value_for_a_global_argument_is_refused() -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        pack_module(STRUCT_CL, global_size=256, arguments={"p": MEMBERS, "x": _structured().tobytes()})
    assert "argument 0 (__global const float *x), which is a buffer (bind it)" in str(info.value)


def _tampered(arguments: tuple[KernelArgument, ...], bindings: tuple[PackageBinding, ...] | None = None) -> Any:
    pkg = pack_module(STRUCT_CL, global_size=256, arguments={"p": MEMBERS})
    changed = dataclasses.replace(pkg, arguments=arguments, bindings=bindings or pkg.bindings)
    assert parse_package(write_package(changed)) == changed  # the codec takes it: only the kernel can tell
    return _artifact(changed)


def _artifact(pkg: KernelPackage) -> ArtifactRef:
    return ArtifactRef(pkg.format, pkg.target, MemorySource(write_package(pkg)), 1 << 26)


@pytest.mark.parametrize(("family", "entry"), OPENCL)
def test_a_package_whose_struct_bytes_do_not_fit_the_kernel_is_refused_at_load(family: Any, entry: Any) -> None:
    good = _structured().tobytes()
    short = _tampered((KernelArgument.aggregate(2, good[:32]),))
    at_buffer = _tampered(
        (KernelArgument.aggregate(0, good),),
        (PackageBinding(0, 1, ac.AccessMode.READ_WRITE, 4), PackageBinding(1, 2, ac.AccessMode.READ_WRITE, 4)),
    )
    with ac.open(entry.device_id) as dev:
        with raises_kind(ErrorKind.INCOMPATIBLE) as info:
            dev.load_artifact(short)
        assert "argument 2 (Params p): struct Params is 48 bytes in OpenCL C layout but the package gives 32" in str(
            info.value
        )
        with raises_kind(ErrorKind.INCOMPATIBLE) as info:
            dev.load_artifact(at_buffer)
        assert "argument 0 (__global const float *x) is a pointer but the package gives a 48-byte struct" in str(
            info.value
        )


BIG_CL = b"""
typedef struct { float v[1000]; } Big;
__kernel void total(__global float *out, Big b)
{
    float s = 0.0f;
    for (int i = 0; i < 1000; ++i) s += b.v[i];
    out[get_global_id(0)] = s;
}
"""


@pytest.mark.parametrize(("family", "entry"), OPENCL)
def test_a_struct_over_the_device_parameter_size_is_refused_naming_it(family: Any, entry: Any) -> None:
    values = np.arange(1000, dtype=np.float32) / 8
    pkg = pack_module(BIG_CL, global_size=1, arguments={"b": {"v": values}})
    assert len(pkg.arguments[0].data) == 4000
    with ac.open(entry.device_id) as dev:
        try:
            dev.load_artifact(_artifact(pkg))
        except ac.BackendError as exc:
            assert exc.kind is ErrorKind.RESOURCE_LIMIT, exc
            assert "a 4000-byte struct value (4000 bytes of by-value arguments in all) exceeds this device's " in str(
                exc
            )
            assert "CL_DEVICE_MAX_PARAMETER_SIZE of " in str(exc)
            return
        out = np.zeros(1, np.float32)  # a device that takes 4000 bytes of arguments must compute the sum
        dev.kernel(BIG_CL)(out, b={"v": values}, global_size=1)
        assert out[0] == values.sum()  # eighths up to 124.875: every partial sum is exact in f32


@pytest.mark.parametrize(("family", "entry"), OPENCL)
def test_a_structured_scalar_changed_in_place_is_packed_again(family: Any, entry: Any, tmp_path: Path) -> None:
    """``arr[()]`` of a structured array is a view: the call cache must not reuse the previous package for it."""
    x = np.random.default_rng(6).integers(-16, 16, 256).astype(np.float32)
    holder = np.zeros((), PARAMS)
    for name, member in MEMBERS.items():
        holder[name] = member
    view = holder[()]
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(_kernel_file(tmp_path))
        y = np.zeros(256, np.float32)
        kernel(x, y, p=view, global_size=256)
        np.testing.assert_array_equal(y[:200], _expected(x)[:200])
        holder["scale"] = 2.0  # the same np.void object now holds another scale
        kernel(x, y, p=view, global_size=256)
        np.testing.assert_array_equal(y[:200], _expected(x)[:200] + x[:200] * np.float32(0.5))
        shifted = np.dtype({"names": PACKED.names, "formats": [PACKED[n] for n in PACKED.names], "itemsize": 48})
        same_bytes = np.frombuffer(holder.tobytes(), shifted)[0]  # same bits, other offsets: refused, not cached
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            kernel(x, y, p=same_bytes, global_size=256)
        assert "member float4 bias at offset 16" in str(info.value)


def test_the_driver_argument_info_check_takes_a_struct_only_at_a_by_value_struct_parameter() -> None:
    """What each real OpenCL driver reports (``-cl-kernel-arg-info``) is what the provider checks a struct VALUE
    against for packages without source (IL, binaries): a ``__global`` parameter is refused."""
    cl = pytest.importorskip("pyopencl", reason="the OpenCL provider's pyopencl is not installed")
    from accel_opencl.kernel_arguments import check_argument_info, read_argument_info

    from accelcore.kernels.package import ModuleKind

    checked = 0
    for platform in cl.get_platforms():
        for device in platform.get_devices():
            context = cl.Context([device])
            program = cl._cl._Program(context, STRUCT_CL.decode())  # no pyopencl binary cache: Intel's cached
            program._build(options=b"-cl-kernel-arg-info", devices=[device])  # binaries keep no argument info
            infos = read_argument_info(cl, cl._cl.Kernel(program, "affine"), 3)
            assert infos is not None, device.name
            good = dataclasses.replace(
                pack_module(STRUCT_CL, global_size=256, arguments={"p": MEMBERS}), module_kind=ModuleKind.OPENCL_BINARY
            )
            check_argument_info(good, infos)  # index 2 is by value, type Params: taken
            at_buffer = dataclasses.replace(good, arguments=(KernelArgument.aggregate(1, bytes(48)),))
            with raises_kind(ErrorKind.INCOMPATIBLE) as info:
                check_argument_info(at_buffer, infos)
            assert "argument 1 is a __global pointer (float*) but the package gives a 48-byte struct value" in str(
                info.value
            ), device.name
            checked += 1
    assert checked >= 1
