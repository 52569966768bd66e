"""Every buffer's element layout is checked, on every device, through the Python layer and ``accel run``:
a layout that does not match what the kernel declares is refused (never run), one that matches gives numpy's
answer. The kernels in ``data/layouts/`` are written in the styles of Rodinia, SHOC and Sascha Willems'
examples; the layouts come from Clang (OpenCL C) and the module's decorations (SPIR-V)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind
from accelcore.devices.environment import apply_defaults
from accelcore.kernels.arguments import encode_layout
from accelcore.kernels.layouts import ElementLayout, LayoutField, check_array
from accelcore.kernels.opencl_signature import opencl_kernels
from accelcore.kernels.values import ScalarType
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

DATA = Path(__file__).parent / "data" / "layouts"
OPENCL, OPENCL_IDS = provider_device_params("opencl")
VULKAN, VULKAN_IDS = provider_device_params("vulkan")
opencl = pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
vulkan = pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)

PT = np.dtype({"names": ["weight", "assign", "cost"], "formats": ["<f4", "<i8", "<f4"], "offsets": [0, 8, 16]})
PT = np.dtype({"names": PT.names, "formats": ["<f4", "<i8", "<f4"], "offsets": [0, 8, 16], "itemsize": 24})


def _points(n: int) -> np.ndarray:
    points = np.zeros(n, PT)
    points["weight"] = np.arange(n, dtype=np.float32)
    points["assign"] = np.arange(n) * 3
    points["cost"] = 1.5
    return points


def _score(points: np.ndarray) -> np.ndarray:
    return (points["weight"] * 2 + points["assign"].astype(np.float32) + points["cost"] * np.float32(0.5)).astype(
        np.float32
    )


def _refused(match: str) -> Any:
    """pytest.raises for a BackendError(INVALID_ARGUMENT) whose message matches ``match``."""
    return pytest.raises(ac.BackendError, match=r"INVALID_ARGUMENT: .*" + match)


def _cli(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accel_cli", *words], cwd=cwd, capture_output=True, text=True, timeout=180
    )


# --------------------------------------------------------------------------- OpenCL structs


@opencl
def test_an_opencl_struct_buffer_takes_its_clang_layout_and_refuses_numpys_packed_one(entry: Any) -> None:
    n = 64
    points, out = _points(n), np.zeros(n, np.float32)
    packed = np.zeros(n, [("weight", "<f4"), ("assign", "<i8"), ("cost", "<f4")])  # numpy's default: 16 bytes
    with ac.open(entry.device_id) as dev:
        score = dev.kernel(DATA / "kmeans_points.cl")
        score(points=points, out=out, n=n, global_size=n)
        np.testing.assert_array_equal(out, _score(points))
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            score(points=packed, out=out, n=n, global_size=n)
        message = str(info.value)
        assert (
            "argument points declares Pt {float weight at 0; long assign at 8; float cost at 16} (24 bytes)" in message
        )
        assert "16 bytes per element against 24" in message and "'itemsize': 24" in message
        wrong_member = np.zeros(n, {"names": ["weight", "assign", "cost"], "formats": ["<f4", "<f8", "<f4"],
                                    "offsets": [0, 8, 16], "itemsize": 24})  # fmt: skip
        with _refused(r"assign is .*int64.*given float64"):
            score(points=wrong_member, out=out, n=n, global_size=n)
        renamed = np.zeros(n, {"names": ["w", "assign", "cost"], "formats": ["<f4", "<i8", "<f4"],
                               "offsets": [0, 8, 16], "itemsize": 24})  # fmt: skip
        with _refused("member weight"):
            score(points=renamed, out=out, n=n, global_size=n)
        with _refused("whose members have different types"):
            score(points=np.zeros(6 * n, np.float32), out=out, n=n, global_size=n)
        with _refused(r"argument out declares f32 elements but was given a struct"):
            score(points=points, out=np.zeros(n, [("a", "<i4")]), n=n, global_size=n)


@opencl
def test_the_cli_checks_struct_layouts_too(entry: Any, tmp_path: Path) -> None:
    n = 48  # 48 packed 16-byte elements are a whole number of 24-byte ones: only the layout check can refuse
    np.save(tmp_path / "good.npy", _points(n))
    np.save(tmp_path / "packed.npy", np.zeros(n, [("weight", "<f4"), ("assign", "<i8"), ("cost", "<f4")]))
    np.save(tmp_path / "out.npy", np.zeros(n, np.float32))
    np.save(tmp_path / "structured_out.npy", np.zeros(n, [("a", "<i4")]))
    base = ["run", entry.device_id, str(DATA / "kmeans_points.cl"), "--arg", f"n={n}", "--global", str(n)]
    done = _cli(*base, "--bind", "points=good.npy", "--bind", "out=out.npy", "--out", "out=r.npy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), _score(_points(n)))
    refused = _cli(*base, "--bind", "points=packed.npy", "--bind", "out=out.npy", cwd=tmp_path)
    assert refused.returncode == 3 and "24 bytes" in refused.stderr and "points" in refused.stderr, refused.stderr
    structured = _cli(*base, "--bind", "points=good.npy", "--bind", "out=structured_out.npy", cwd=tmp_path)
    assert structured.returncode == 3 and "argument out" not in structured.stdout, structured.stderr
    assert "--bind out" in structured.stderr and "structured" in structured.stderr


@opencl
def test_nested_structs_arrays_of_structs_and_a_struct_named_by_its_tag(entry: Any) -> None:
    (kernel,) = opencl_kernels((DATA / "lavamd_boxes.cl").read_text())
    boxes_layout = kernel.parameter("boxes").layout
    assert boxes_layout is not None and boxes_layout.size == 4 + 26 * 8
    nei = np.dtype([("x", "<i4"), ("number", "<i4")])
    box = np.dtype([("offset", "<i4"), ("nei", nei, 26)])
    n = 16
    rng = np.random.default_rng(5)
    boxes = np.zeros(n, box)
    boxes["offset"] = np.arange(n)
    boxes["nei"]["x"] = rng.integers(-5, 5, (n, 26))
    boxes["nei"]["number"] = rng.integers(0, 4, (n, 26))
    where = np.zeros(n, [("lat", "<f4"), ("lng", "<f4")])
    where["lat"], where["lng"] = 0.5, 0.25
    out = np.zeros(n, np.float32)
    with ac.open(entry.device_id) as dev:
        neighbours = dev.kernel(DATA / "lavamd_boxes.cl")
        neighbours(boxes=boxes, where=where, out=out, global_size=n)
        flat_nei = np.zeros(n, [("offset", "<i4"), ("nei", "<i4", 52)])  # the right bytes, not the declared shape
        with _refused(r"nei"):
            neighbours(boxes=flat_nei, where=where, out=out, global_size=n)
    products = (boxes["nei"]["x"] * boxes["nei"]["number"]).sum(axis=1)
    np.testing.assert_allclose(out, boxes["offset"] + products + 0.25, rtol=1e-6)


@opencl
def test_a_type_chosen_by_the_preprocessor_under_the_build_options(entry: Any) -> None:
    force = np.arange(8, dtype=np.float32)
    with ac.open(entry.device_id) as dev:
        scale = dev.kernel(DATA / "shoc_md.cl", build_options="-DSINGLE_PRECISION")
        scale(force=force, cutsq=2.5, n=8, global_size=8)
        np.testing.assert_array_equal(force, np.arange(8, dtype=np.float32) * np.float32(2.5))
        with _refused(r"argument force declares f32"):
            scale(force=np.zeros(8), cutsq=2.5, n=8, global_size=8)


@opencl
def test_numpy_bool_for_uchar_and_signedness_where_the_module_says_it(entry: Any) -> None:
    mask = np.array([True, False] * 8)
    v = np.arange(16, dtype=np.int32)
    out = np.zeros(16, np.int32)
    with ac.open(entry.device_id) as dev:
        masked = dev.kernel(DATA / "masks.cl")
        masked(mask=mask, v=v, out=out, global_size=16)
        np.testing.assert_array_equal(out, np.where(mask, v, -v))
        with _refused(r"argument v declares i32 elements .* uint32"):
            masked(mask=mask, v=v.astype(np.uint32), out=out, global_size=16)  # OpenCL C says int: required


# --------------------------------------------------------------------------- Vulkan std430 / std140


@vulkan
def test_a_std430_vec3_struct_and_a_std140_uniform_block(entry: Any) -> None:
    n = 32
    rng = np.random.default_rng(3)
    rows = rng.random((n, 4), dtype=np.float32)  # pos.xyz, scale: one 16-byte element per row
    expected = np.minimum((rows[:, 0] + 2 * rows[:, 1] + 3 * rows[:, 2]) * rows[:, 3] + np.float32(0.5), 2.0)
    structured = np.zeros(n, [("pos", "<f4", 3), ("scale", "<f4")])
    structured["pos"], structured["scale"] = rows[:, :3], rows[:, 3]
    params = np.array([0.5, 2.0], np.float32)
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(DATA / "particles.comp")
        for given in (rows, structured):
            result = np.zeros(n, np.float32)
            kernel(particles=given, result=result, Params=params, global_size=n)
            np.testing.assert_allclose(result, expected, rtol=1e-6)
        result = np.zeros(n, np.float32)
        kernel(particles=rows, result=result, Params={"offset": 0.5, "clamp_max": 2.0}, global_size=n)
        np.testing.assert_allclose(result, expected, rtol=1e-6)
        with _refused(r"last axis is 3, but one element spans 4"):
            kernel(particles=rows[:, :3].copy(), result=result, Params=params, global_size=n)
        with _refused("12 bytes per element against 16"):
            kernel(particles=np.zeros(n, [("pos", "<f4", 3)]), result=result, Params=params, global_size=n)
        ints = np.zeros(n, [("pos", "<i4", 3), ("scale", "<f4")])
        with _refused(r"pos is float3 .* given int32\[3\]"):
            kernel(particles=ints, result=result, Params=params, global_size=n)
        for wrong in (np.array([0.5, 2.0]), np.array([1, 2], np.int32)):
            with _refused(r"argument Params declares struct \{float offset at 0"):
                kernel(particles=rows, result=result, Params=wrong, global_size=n)
        with _refused(r"member clamp_max .* has no value"):
            kernel(particles=rows, result=result, Params={"offset": 0.5}, global_size=n)
        with _refused(r"no member 'clamp'"):
            kernel(particles=rows, result=result, Params={"offset": 0.5, "clamp": 1.0}, global_size=n)


@vulkan
def test_the_cli_refuses_a_float64_uniform_block_and_an_n_by_3_array(entry: Any, tmp_path: Path) -> None:
    n = 16
    np.save(tmp_path / "rows.npy", np.ones((n, 4), np.float32))
    np.save(tmp_path / "rows3.npy", np.ones((n, 3), np.float32))
    np.save(tmp_path / "result.npy", np.zeros(n, np.float32))
    np.save(tmp_path / "p32.npy", np.array([0.5, 12.0], np.float32))
    np.save(tmp_path / "p64.npy", np.array([0.5, 12.0]))
    base = ["run", entry.device_id, str(DATA / "particles.comp"), "--global", str(n), "--bind", "result=result.npy"]
    good = _cli(
        *base, "--bind", "particles=rows.npy", "--bind", "Params=p32.npy", "--out", "result=r.npy", cwd=tmp_path
    )
    assert good.returncode == 0, good.stderr
    np.testing.assert_allclose(np.load(tmp_path / "r.npy"), np.full(n, 6.5, np.float32))
    for particles, params in (("rows.npy", "p64.npy"), ("rows3.npy", "p32.npy")):
        done = _cli(*base, "--bind", f"particles={particles}", "--bind", f"Params={params}", cwd=tmp_path)
        assert done.returncode == 3, done.stderr
        assert ("float64" in done.stderr) if params == "p64.npy" else ("last axis is 3" in done.stderr)


# --------------------------------------------------------------------------- the check itself (no device)


def _f32(name: str = "float") -> ElementLayout:
    return ElementLayout("scalar", 4, name, ScalarType.F32)


def test_check_array_rules_without_a_device() -> None:
    vec3 = ElementLayout("vector", 16, "float3", ScalarType.F32, 3)  # OpenCL: 16 bytes
    check_array("x", np.dtype("<f4"), (7, 4), vec3)
    with pytest.raises(ac.BackendError, match="pass a plain array of float32"):
        check_array("x", np.dtype([("v", "<f4", 4)]), (7,), vec3)  # a vector element takes a plain array
    check_array(
        "x",
        np.dtype([("v", "<f4", 3), ("pad", "<f4")]),
        (7,),
        ElementLayout(
            "struct", 16, "S", fields=(LayoutField("v", 0, ElementLayout("vector", 12, "float3", ScalarType.F32, 3)),)
        ),
    )  # fmt: skip  -- an extra field in padding is fine
    with pytest.raises(ac.BackendError, match="padding"):
        check_array("x", np.dtype("<f4"), (28,), vec3)  # flat xyz triples would be read out of step
    with pytest.raises(ac.BackendError, match="last axis is 3"):
        check_array("x", np.dtype("<f4"), (7, 3), vec3)
    u32 = ElementLayout("scalar", 4, "uint", ScalarType.U32)
    check_array("x", np.dtype("<i4"), (4,), u32, signedness_known=False)  # OpenCL SPIR-V / clspv
    with pytest.raises(ac.BackendError, match="int32"):
        check_array("x", np.dtype("<i4"), (4,), u32)
    with pytest.raises(ac.BackendError, match="float32"):
        check_array("x", np.dtype("<f4"), (4,), u32, signedness_known=False)  # never a float for an int
    with pytest.raises(ac.BackendError, match=">f4"):
        check_array("x", np.dtype(">f4"), (4,), _f32())
    check_array("x", np.dtype("?"), (4,), ElementLayout("scalar", 1, "uchar", ScalarType.U8))
    with pytest.raises(ac.BackendError, match="Python objects"):
        check_array("x", np.dtype(object), (4,), _f32())


def test_encode_layout_by_member_with_nested_structs_and_strided_arrays() -> None:
    inner = ElementLayout("struct", 8, "In", fields=(LayoutField("a", 0, _f32()), LayoutField("b", 4, _f32())))
    strided = ElementLayout("array", 48, "float", element=_f32(), count=3, stride=16)
    outer = ElementLayout("struct", 64, "Out", fields=(LayoutField("in", 0, inner), LayoutField("w", 16, strided)))
    data = encode_layout(outer, {"in": {"a": 1.0, "b": 2.0}, "w": [3.0, 4.0, 5.0]}, "p")
    floats = np.frombuffer(data, np.float32)
    assert floats.size == 16 and floats[0] == 1 and floats[1] == 2 and list(floats[4:16:4]) == [3, 4, 5]
    assert not floats[5:8].any()  # padding is zero
    with pytest.raises(ac.BackendError, match=r"p.in member b"):
        encode_layout(outer, {"in": {"a": 1.0}, "w": [1, 2, 3]}, "p")
    with pytest.raises(ac.BackendError, match=r"p.w is .* \(3 elements\) but was given 2"):
        encode_layout(outer, {"in": {"a": 1.0, "b": 2.0}, "w": [1, 2]}, "p")


@vulkan
def test_a_push_constant_block_with_nested_structs_and_a_matrix_by_member(entry: Any) -> None:
    out = np.zeros(8, np.float32)
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(DATA / "nested_push.comp")
        affine = [{"scale": 0.0, "shift": 1.5}, {"scale": 2.0, "shift": 0.0}]
        kernel(out, aff=affine, n=8, m=[[1, 2], [3, 4]], global_size=8)  # mat2 by columns
        np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 2 + np.float32(1.5) + 3)
        with _refused(r"aff\[0\] member shift \(float\) has no value"):
            kernel(out, aff=[{"scale": 0.0}, affine[1]], n=8, m=[[1, 2], [3, 4]], global_size=8)
        with _refused(r"aff is .*\(2 elements\) but was given 3"):
            kernel(out, aff=[*affine, affine[0]], n=8, m=[[1, 2], [3, 4]], global_size=8)


@vulkan
def test_a_block_whose_members_come_before_its_runtime_array(entry: Any) -> None:
    header = [("count", "<u4"), ("scale", "<f4")]
    block = np.array([(6, 2.0, np.arange(8))], dtype=[*header, ("data", "<f4", (8,))])
    out = np.zeros(8, np.float32)
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(DATA / "header_block.comp")
        kernel(block, out, global_size=8)
        np.testing.assert_array_equal(out, [0, 2, 4, 6, 8, 10, -1, -1])
        with _refused(r"declares block \{uint count at 0; float scale at 4; float data\[\] at 8, stride 4\}, whose"):
            kernel(np.arange(10, dtype=np.float32), out, global_size=8)  # float bits for the uint count
        wrong = np.array([(6, 2, np.arange(8))], dtype=[("count", "<u4"), ("scale", "<u4"), ("data", "<f4", (8,))])
        with _refused(r"scale is float \(float32\), given uint32"):
            kernel(wrong, out, global_size=8)
        ints = np.array([(6, 2.0, np.arange(8))], dtype=[*header, ("data", "<i4", (8,))])
        with _refused(r"data\[i\] is float"):
            kernel(ints, out, global_size=8)


@vulkan
def test_a_push_constant_block_as_its_exact_bytes_by_its_instance_name(entry: Any) -> None:
    block = np.zeros(
        1, [("aff", [("scale", "<f4"), ("shift", "<f4")], 2), ("n", "<u4"), ("pad", "<u4"), ("m", "<f4", (2, 2))]
    )  # fmt: skip  -- std430 push layout: mat2 at 24, 8-byte aligned
    block["aff"]["scale"][0, 1], block["aff"]["shift"][0, 0], block["n"] = 2.0, 1.5, 8
    block["m"][0] = [[1, 2], [3, 4]]
    out = np.zeros(8, np.float32)
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(DATA / "nested_push.comp")
        kernel(out, pc=block.tobytes(), global_size=8)
        np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 2 + np.float32(1.5) + 3)
        with _refused(r"push_constants= is 8 bytes; the module's block is 40 bytes"):
            kernel(out, pc=bytes(8), global_size=8)
        with _refused(r"pc= gives the whole push-constant block; do not also give its members"):
            kernel(out, pc=block.tobytes(), n=8, global_size=8)


@pytest.mark.timeout(30)
def test_a_struct_of_twenty_thousand_members_is_checked_in_linear_time() -> None:
    """Members come from the kernel's source (anyone's): matching them to fields once took members x fields."""
    n = 20_000
    f32 = _f32()
    layout = ElementLayout("struct", 4 * n, "Big", fields=tuple(LayoutField(f"m{i}", 4 * i, f32) for i in range(n)))
    check_array("x", np.dtype([(f"m{i}", "<f4") for i in range(n)]), (2,), layout)
    padded = ElementLayout("struct", 4 * n + 4, "Big", fields=layout.fields)
    extra = np.dtype({"names": [*(f"m{i}" for i in range(n)), "pad"], "formats": ["<f4"] * (n + 1),
                      "offsets": [*(4 * i for i in range(n)), 4 * n], "itemsize": 4 * n + 4})  # fmt: skip
    check_array("x", extra, (2,), padded)  # a field in the padding is fine
    clash = np.dtype({"names": [*(f"m{i}" for i in range(n)), "over"], "formats": ["<f4"] * (n + 1),
                      "offsets": [*(4 * i for i in range(n)), 8], "itemsize": 4 * n + 4})  # fmt: skip
    with pytest.raises(ac.BackendError, match="field over"):
        check_array("x", clash, (2,), padded)
