"""A second set of kernels the project has never seen, written fresh in the styles of Rodinia (kmeans, nn,
hotspot, backprop, lavaMD), SHOC (md, reduction, spmv), Parboil (sgemm, stencil), clpeak (vector types), Sascha
Willems' Vulkan examples (particles, n-body), ncnn (binaryop), ggml's Vulkan shaders (add) and uVkCompute
(tiled matmul). Each runs on every device of its API two ways, as a user writes it: the Python layer
(``ac.open(...).kernel(path)(...)`` with ints for sizes, numpy arrays in the kernel's layout, dicts for structs by
value and uniform blocks) and ``accel run`` with ``.npy`` files; every result is compared with the numpy
reference in ``data/second_set/references.py``. Tolerances are stated per kernel, from the operations involved:
exact where every intermediate is representable, otherwise a bound from float32's epsilon (2**-23 ≈ 1.19e-7) and
the OpenCL/Vulkan precision of the builtins used (sqrt 3 ulp, divide 2.5 ulp, exp 3 ulp, pow from exp2/log2).
"""

from __future__ import annotations

import importlib.util
import itertools
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind
from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import provider_device_params, raises_kind

apply_defaults()

DATA = Path(__file__).parent / "data" / "second_set"
_spec = importlib.util.spec_from_file_location("second_set_references", DATA / "references.py")
assert _spec is not None and _spec.loader is not None
REF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REF)

OPENCL, OPENCL_IDS = provider_device_params("opencl")
VULKAN, VULKAN_IDS = provider_device_params("vulkan")
opencl = pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
vulkan = pytest.mark.parametrize("entry", VULKAN, ids=VULKAN_IDS)

EPS32 = float(np.finfo(np.float32).eps)


class CliFailed(AssertionError):
    """``accel run`` exited with a nonzero status (a refusal, a device error or a crash of its worker)."""


def _cli(tmp_path: Path, device: str, kernel: str, words: str, **arrays: np.ndarray) -> dict[str, np.ndarray]:
    """``accel run DEVICE DATA/kernel WORDS`` in ``tmp_path`` after saving ``arrays`` as NAME.npy there; returns
    every ``--out`` file written (by its stem)."""
    for name, array in arrays.items():
        np.save(tmp_path / f"{name}.npy", array)
    argv = [sys.executable, "-m", "accel_cli", "run", device, str(DATA / kernel), *shlex.split(words)]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise CliFailed(f"exit {done.returncode}: {shlex.join(argv[3:])}\n{done.stdout}\n{done.stderr}")
    split = shlex.split(words)
    outs = [value.split("=", 1)[1] for flag, value in itertools.pairwise(split) if flag == "--out"]
    return {Path(o).stem: np.load(tmp_path / o) for o in outs}


def _fp64(entry: Any) -> None:
    if not entry.facts.fp64:
        pytest.skip(f"{entry.device_id} reports no fp64 (no cl_khr_fp64): the double build cannot run there")


# ==================================================================================================
# Rodinia kmeans: two kernels of one file, ints for sizes, a global size rounded up to whole groups
# ==================================================================================================


def _kmeans_python(device: str, d: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    n, nf = d["npoints"], d["nfeatures"]
    feature_swap = np.zeros(n * nf, np.float32)
    membership = np.full(n, -1, np.int32)
    with ac.open(device) as dev:
        swap = dev.kernel(DATA / "kmeans_rodinia.cl", entry="kmeans_swap")
        swap(feature=d["feature"], feature_swap=feature_swap, npoints=n, nfeatures=nf, global_size=1024)
        assign = dev.kernel(DATA / "kmeans_rodinia.cl", entry="kmeans_kernel_c")
        assign(feature_swap, d["clusters"], membership, n, d["nclusters"], nf, 0, n, global_size=1024)
    return feature_swap, membership


@opencl
def test_kmeans_python(entry: Any) -> None:
    d = REF.make_kmeans()
    want = REF.expected_kmeans(d)
    feature_swap, membership = _kmeans_python(entry.device_id, d)
    np.testing.assert_array_equal(feature_swap.reshape(want["feature_swap"].shape), want["feature_swap"])
    np.testing.assert_array_equal(membership, want["membership"])  # quarters: every distance is exact


@opencl
def test_kmeans_python_device_arrays_chained_without_waiting(entry: Any) -> None:
    """The Rodinia host's pattern: the swapped features stay on the device; the second kernel is called while the
    first may still run (one in-order queue)."""
    d = REF.make_kmeans()
    want = REF.expected_kmeans(d)
    n, nf = d["npoints"], d["nfeatures"]
    with ac.open(entry.device_id) as dev:
        feature, clusters = dev.array(d["feature"]), dev.array(d["clusters"])
        feature_swap, membership = dev.empty(n * nf, np.float32), dev.empty(n, np.int32)
        swap = dev.kernel(DATA / "kmeans_rodinia.cl", entry="kmeans_swap")
        assign = dev.kernel(DATA / "kmeans_rodinia.cl", entry="kmeans_kernel_c")
        first = swap.submit(feature=feature, feature_swap=feature_swap, npoints=n, nfeatures=nf, global_size=1024)
        # 1,024 work-items on 1,000 memberships: the kernel checks point_id < npoints, so the short array is allowed
        assign(
            feature_swap,
            clusters,
            membership,
            n,
            d["nclusters"],
            nf,
            0,
            n,
            global_size=1024,
            allow_short_device_arrays=True,
        )
        first.wait()
        np.testing.assert_array_equal(feature_swap.numpy().reshape(nf, n), want["feature_swap"])
        np.testing.assert_array_equal(membership.numpy(), want["membership"])


@opencl
def test_kmeans_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_kmeans()
    want = REF.expected_kmeans(d)
    n, nf, nc = d["npoints"], d["nfeatures"], d["nclusters"]
    swapped = _cli(
        tmp_path,
        entry.device_id,
        "kmeans_rodinia.cl",
        f"--entry kmeans_swap --bind feature=feature.npy --bind feature_swap=zeros.npy --arg npoints={n} "
        f"--arg nfeatures={nf} --global 1024 --out feature_swap=swapped.npy",
        feature=d["feature"],
        zeros=np.zeros(n * nf, np.float32),
    )["swapped"]
    np.testing.assert_array_equal(swapped.reshape(nf, n), want["feature_swap"])
    got = _cli(
        tmp_path,
        entry.device_id,
        "kmeans_rodinia.cl",
        f"--entry kmeans_kernel_c --bind feature=swapped.npy --bind clusters=clusters.npy --bind membership=m.npy "
        f"--arg npoints={n} --arg nclusters={nc} --arg nfeatures={nf} --arg offset=0 --arg size={n} --global 1024 "
        "--out membership=membership.npy",
        clusters=d["clusters"],
        m=np.full(n, -1, np.int32),
    )
    np.testing.assert_array_equal(got["membership"], want["membership"])


# ==================================================================================================
# Rodinia nn: an array of typedef'd LatLong structs
# ==================================================================================================

NN_RTOL = 8 * EPS32  # f32 sum of two squares (1 ulp, 2 with contraction) then sqrt (3 ulp in OpenCL)


@opencl
def test_nn_python(entry: Any) -> None:
    d = REF.make_nn()
    want = REF.expected_nn(d)
    distances = np.zeros(d["numRecords"], np.float32)
    with ac.open(entry.device_id) as dev:
        nn = dev.kernel(DATA / "nn_rodinia.cl")
        nn(d["locations"], distances, d["numRecords"], d["lat"], d["lng"], global_size=1024)
        # the same records as rows of two floats: LatLong holds only floats, 8 bytes
        rows = np.ascontiguousarray(np.stack([d["locations"]["lat"], d["locations"]["lng"]], axis=1))
        distances2 = np.zeros_like(distances)
        nn(
            d_locations=rows,
            d_distances=distances2,
            numRecords=d["numRecords"],
            lat=d["lat"],
            lng=d["lng"],
            global_size=1024,
        )
    np.testing.assert_allclose(distances, want["distances"], rtol=NN_RTOL)
    np.testing.assert_array_equal(distances2, distances)


@opencl
def test_nn_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_nn()
    want = REF.expected_nn(d)
    got = _cli(
        tmp_path,
        entry.device_id,
        "nn_rodinia.cl",
        f"--bind d_locations=loc.npy --bind d_distances=dist.npy --arg numRecords={d['numRecords']} "
        f"--arg lat={d['lat']} --arg lng={d['lng']} --global 1024 --out d_distances=out.npy",
        loc=d["locations"],
        dist=np.zeros(d["numRecords"], np.float32),
    )
    np.testing.assert_allclose(got["out"], want["distances"], rtol=NN_RTOL)


# ==================================================================================================
# Rodinia hotspot: reqd_work_group_size, three static __local tiles, 13 scalar arguments
# ==================================================================================================

# Two explicit steps on temperatures of 323-343 K: each step adds terms computed from differences of
# neighbouring temperatures; float32 rounds each to ~2e-5 K (ulp at 330 is 3.05e-5). 1e-6 relative is ~3e-4 K:
# about ten ulps of the result.
HOTSPOT_RTOL = 1e-6


def _hotspot_args(d: dict[str, Any]) -> dict[str, Any]:
    return {
        k: d[k]
        for k in ("iteration", "grid_cols", "grid_rows", "border_cols", "border_rows", "Cap", "Rx", "Ry", "Rz", "step")
    }


@opencl
def test_hotspot_python(entry: Any) -> None:
    d = REF.make_hotspot()
    want = REF.expected_hotspot(d)
    four_steps = REF.expected_hotspot(d, launches=2)["temp_dst"]
    src, dst = d["temp"].copy(), np.zeros_like(d["temp"])
    with ac.open(entry.device_id) as dev:
        hotspot = dev.kernel(DATA / "hotspot_rodinia.cl")
        hotspot(power=d["power"], temp_src=src, temp_dst=dst, **_hotspot_args(d), global_size=d["global_size"])
        np.testing.assert_allclose(dst, want["temp_dst"], rtol=HOTSPOT_RTOL)
        # Rodinia's host loop: the same scalars, source and destination swapped (a remembered package)
        hotspot(power=d["power"], temp_src=dst, temp_dst=src, **_hotspot_args(d), global_size=d["global_size"])
        np.testing.assert_allclose(src, four_steps, rtol=HOTSPOT_RTOL)
        # the same on device arrays, without a round trip between the launches; the pyramid launches 6,144
        # work-items over 3,072 cells and checks IN_RANGE, so the shorter device arrays are allowed
        power, a, b = dev.array(d["power"]), dev.array(d["temp"]), dev.empty(d["temp"].shape, np.float32)
        for _ in range(2):
            hotspot(
                power=power,
                temp_src=a,
                temp_dst=b,
                **_hotspot_args(d),
                global_size=d["global_size"],
                allow_short_device_arrays=True,
            )
            a, b = b, a
        np.testing.assert_allclose(a.numpy(), four_steps, rtol=HOTSPOT_RTOL)


@opencl
def test_hotspot_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_hotspot()
    want = REF.expected_hotspot(d)
    args = " ".join(f"--arg {k}={v}" for k, v in _hotspot_args(d).items())
    gx, gy = d["global_size"]
    got = _cli(
        tmp_path,
        entry.device_id,
        "hotspot_rodinia.cl",
        f"--bind power=power.npy --bind temp_src=temp.npy --bind temp_dst=dst.npy {args} --global {gx},{gy} "
        "--out temp_dst=out.npy",
        power=d["power"],
        temp=d["temp"],
        dst=np.zeros_like(d["temp"]),
    )
    np.testing.assert_allclose(got["out"], want["temp_dst"], rtol=HOTSPOT_RTOL)


# ==================================================================================================
# Rodinia backprop: __local pointer arguments, a 2-D local size, an argument named `in`
# ==================================================================================================

BACKPROP_RTOL = 20 * EPS32  # sums of 16 positive products (a tree of 4 levels) and a*b*c + d*e of positives


# input_node[ty] is indexed by get_local_id(1) only: it needs HEIGHT = 16 elements, as Rodinia's host gives it
# (the __local check once counted the whole 16 x 16 group and refused it).


@opencl
def test_backprop_python(entry: Any) -> None:
    d = REF.make_backprop()
    want = REF.expected_backprop(d)
    n_in, hid = d["in"], d["hid"]
    partial = np.zeros(n_in // 16 * hid, np.float32)
    w, oldw = d["weights"].copy(), d["oldw"].copy()
    with ac.open(entry.device_id) as dev:
        forward = dev.kernel(DATA / "backprop_rodinia.cl", entry="bpnn_layerforward_ocl", local_size=(16, 16))
        # `in` is a Python keyword: the argument is given through a dict
        forward(
            input_cuda=d["input"],
            output_hidden_cuda=np.zeros(hid + 1, np.float32),
            input_hidden_cuda=w,
            hidden_partial_sum=partial,
            input_node=ac.local_memory(16 * 4),
            weight_matrix=ac.local_memory(16 * 16 * 4),
            hid=hid,
            **{"in": n_in},
            global_size=(16, n_in),
        )
        assert np.array_equal(w, d["weights"])  # the forward pass does not touch the weights
        adjust = dev.kernel(DATA / "backprop_rodinia.cl", entry="bpnn_adjust_weights_ocl", local_size=(16, 16))
        adjust(d["delta"], hid, d["input"], n_in, w, oldw, global_size=(16, n_in))
    np.testing.assert_allclose(partial, want["hidden_partial_sum"], rtol=BACKPROP_RTOL)
    np.testing.assert_allclose(w, want["w"], rtol=BACKPROP_RTOL)
    np.testing.assert_allclose(oldw, want["oldw"], rtol=BACKPROP_RTOL)


@opencl
def test_backprop_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_backprop()
    want = REF.expected_backprop(d)
    n_in, hid = d["in"], d["hid"]
    got = _cli(
        tmp_path,
        entry.device_id,
        "backprop_rodinia.cl",
        "--entry bpnn_layerforward_ocl --bind input_cuda=input.npy --bind output_hidden_cuda=hidden.npy "
        "--bind input_hidden_cuda=w.npy --bind hidden_partial_sum=partial.npy --local-mem input_node=64 "
        f"--local-mem weight_matrix=1024 --arg in={n_in} --arg hid={hid} --global 16,{n_in} --local-size 16,16 "
        "--out hidden_partial_sum=partial_out.npy",
        input=d["input"],
        hidden=np.zeros(hid + 1, np.float32),
        w=d["weights"],
        partial=np.zeros(n_in // 16 * hid, np.float32),
    )
    np.testing.assert_allclose(got["partial_out"], want["hidden_partial_sum"], rtol=BACKPROP_RTOL)
    got = _cli(
        tmp_path,
        entry.device_id,
        "backprop_rodinia.cl",
        f"--entry bpnn_adjust_weights_ocl --bind delta=delta.npy --arg hid={hid} --bind ly=input.npy --arg in={n_in} "
        f"--bind w=w.npy --bind oldw=oldw.npy --global 16,{n_in} --local-size 16,16 --out w=w_out.npy "
        "--out oldw=oldw_out.npy",
        delta=d["delta"],
        oldw=d["oldw"],
    )
    np.testing.assert_allclose(got["w_out"], want["w"], rtol=BACKPROP_RTOL)
    np.testing.assert_allclose(got["oldw_out"], want["oldw"], rtol=BACKPROP_RTOL)


# ==================================================================================================
# Rodinia lavaMD: structs by value (one with longs), an array of structs holding an array of structs
# ==================================================================================================


def _lavamd_close(fv: np.ndarray, want: np.ndarray) -> None:
    got = np.stack([fv[n] for n in ("v", "x", "y", "z")], axis=1) if fv.dtype.names else fv.reshape(-1, 4)
    # 256 terms per particle, each from exp (3 ulp) of a float32 argument that is itself rounded (r2 up to ~3,
    # a2 = 0.5: an argument error of ~1e-7 relative); the x/y/z sums cancel (mixed signs), so the bound is
    # relative to the largest magnitude of the column, not to each value.
    scale = np.abs(want).max(axis=0)
    np.testing.assert_allclose(got, want, rtol=0, atol=float((2e-5 * scale).max()))


@opencl
def test_lavamd_python(entry: Any) -> None:
    d = REF.make_lavamd()
    want = REF.expected_lavamd(d)["fv"]
    fv = np.zeros(len(d["rv"]), REF.FOUR_VECTOR)
    other = dict(d, par={"alpha": 0.25})
    fv2 = np.zeros(len(d["rv"]), REF.FOUR_VECTOR)
    with ac.open(entry.device_id) as dev:
        lavamd = dev.kernel(DATA / "lavamd_rodinia.cl", local_size=32)  # NUMBER_THREADS
        lavamd(
            d_par_gpu=d["par"],
            d_dim_gpu=d["dim"],
            d_box_gpu=d["boxes"],
            d_rv_gpu=d["rv"],
            d_qv_gpu=d["qv"],
            d_fv_gpu=fv,
            global_size=d["dim"]["number_boxes"] * 32,
        )
        lavamd(
            d_par_gpu=other["par"],
            d_dim_gpu=d["dim"],
            d_box_gpu=d["boxes"],
            d_rv_gpu=d["rv"],
            d_qv_gpu=d["qv"],
            d_fv_gpu=fv2,
            global_size=d["dim"]["number_boxes"] * 32,
        )
    _lavamd_close(fv, want)
    _lavamd_close(fv2, REF.expected_lavamd(other)["fv"])  # the new alpha reached the kernel


@opencl
def test_lavamd_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_lavamd()
    want = REF.expected_lavamd(d)["fv"]
    dim = " ".join(f"--arg d_dim_gpu.{k}={v}" for k, v in d["dim"].items())
    got = _cli(
        tmp_path,
        entry.device_id,
        "lavamd_rodinia.cl",
        f"--arg d_par_gpu.alpha={d['par']['alpha']} {dim} --bind d_box_gpu=boxes.npy --bind d_rv_gpu=rv.npy "
        f"--bind d_qv_gpu=qv.npy --bind d_fv_gpu=fv.npy --global {d['dim']['number_boxes'] * 32} --local-size 32 "
        "--out d_fv_gpu=fv_out.npy",
        boxes=d["boxes"],
        rv=d["rv"],
        qv=d["qv"],
        fv=np.zeros(len(d["rv"]), REF.FOUR_VECTOR),
    )
    _lavamd_close(got["fv_out"], want)


# ==================================================================================================
# SHOC md: FPTYPE / float4 / double4 chosen by -DSINGLE_PRECISION
# ==================================================================================================


def _md_close(force: np.ndarray, want: np.ndarray, double: bool) -> None:
    # 16 neighbours, 3-4 inside the cut-off; 1/r2 (2.5 ulp in float32), r^-14 and r^-8 products (each a few ulp)
    # and a sum with mixed signs: bounded relative to the largest force.
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(force, want, rtol=0, atol=(1e-12 if double else 1e-5) * scale)


def _md_python(device: str, dtype: Any, options: str) -> None:
    d = REF.make_md(dtype)
    wider = dict(d, cutsq=2.56)  # r < 1.6: the in-plane diagonals (~1.56) too
    with ac.open(device) as dev:
        md = dev.kernel(DATA / "md_shoc.cl", build_options=options)
        for case in (d, wider, d):  # a changed scalar, then the first values again on fresh arrays
            force = np.zeros_like(d["position"])
            md(
                force=force,
                position=d["position"],
                neighCount=d["neighCount"],
                neighList=d["neighList"],
                cutsq=case["cutsq"],
                lj1=d["lj1"],
                lj2=d["lj2"],
                inum=d["inum"],
                global_size=d["inum"],
            )
            _md_close(force, REF.expected_md(case)["force"], dtype is np.float64)


def _md_cli(tmp_path: Path, device: str, dtype: Any, options: str) -> None:
    d = REF.make_md(dtype)
    want = REF.expected_md(d)["force"]
    build = f"--build-options {shlex.quote(options)} " if options else ""
    got = _cli(
        tmp_path,
        device,
        "md_shoc.cl",
        f"{build}--bind force=force.npy --bind position=pos.npy --arg neighCount={d['neighCount']} "
        f"--bind neighList=neigh.npy --arg cutsq={d['cutsq']} --arg lj1={d['lj1']} --arg lj2={d['lj2']} "
        f"--arg inum={d['inum']} --global {d['inum']} --out force=out.npy",
        force=np.zeros_like(d["position"]),
        pos=d["position"],
        neigh=d["neighList"],
    )
    _md_close(got["out"], want, dtype is np.float64)


@opencl
def test_md_single_python(entry: Any) -> None:
    _md_python(entry.device_id, np.float32, "-DSINGLE_PRECISION")


@opencl
def test_md_single_cli(entry: Any, tmp_path: Path) -> None:
    _md_cli(tmp_path, entry.device_id, np.float32, "-DSINGLE_PRECISION")


@opencl
def test_md_double_python(entry: Any) -> None:
    _fp64(entry)
    _md_python(entry.device_id, np.float64, "")


@opencl
def test_md_double_cli(entry: Any, tmp_path: Path) -> None:
    _fp64(entry)
    _md_cli(tmp_path, entry.device_id, np.float64, "")


# ==================================================================================================
# SHOC reduction: FPTYPE from -DFPTYPE=..., a __local pointer sized by the host, two passes
# ==================================================================================================


def _reduction_python(device: str, fptype: str, dtype: Any) -> None:
    d = REF.make_reduction(dtype)
    want = REF.expected_reduction(d)
    partial = np.zeros(REF.REDUCE_GROUPS, dtype)
    total = np.zeros(1, dtype)
    item = np.dtype(dtype).itemsize
    with ac.open(device) as dev:
        reduce = dev.kernel(
            DATA / "reduction_shoc.cl", entry="reduce", build_options=f"-DFPTYPE={fptype}", local_size=REF.REDUCE_LOCAL
        )
        reduce(
            d["data"],
            partial,
            ac.local_memory(REF.REDUCE_LOCAL * item),
            d["n"],
            global_size=REF.REDUCE_GROUPS * REF.REDUCE_LOCAL,
        )
        second = dev.kernel(DATA / "reduction_shoc.cl", entry="reduceNoLocal", build_options=f"-DFPTYPE={fptype}")
        second(g_idata=partial, g_odata=total, n=REF.REDUCE_GROUPS, global_size=1)
    np.testing.assert_array_equal(partial, want["partial"])  # small integers: every partial sum is exact
    np.testing.assert_array_equal(total, want["total"])


def _reduction_cli(tmp_path: Path, device: str, fptype: str, dtype: Any) -> None:
    d = REF.make_reduction(dtype)
    want = REF.expected_reduction(d)
    item = np.dtype(dtype).itemsize
    got = _cli(
        tmp_path,
        device,
        "reduction_shoc.cl",
        f"--entry reduce --build-options -DFPTYPE={fptype} --bind g_idata=data.npy --bind g_odata=partial.npy "
        f"--local-mem sdata={REF.REDUCE_LOCAL * item} --arg n={d['n']} "
        f"--global {REF.REDUCE_GROUPS * REF.REDUCE_LOCAL} --local-size {REF.REDUCE_LOCAL} "
        "--out g_odata=partial_out.npy",
        data=d["data"],
        partial=np.zeros(REF.REDUCE_GROUPS, dtype),
    )
    np.testing.assert_array_equal(got["partial_out"], want["partial"])
    got = _cli(
        tmp_path,
        device,
        "reduction_shoc.cl",
        f"--entry reduceNoLocal --build-options -DFPTYPE={fptype} --bind g_idata=partial_out.npy "
        f"--bind g_odata=total.npy --arg n={REF.REDUCE_GROUPS} --global 1 --out g_odata=total_out.npy",
        total=np.zeros(1, dtype),
    )
    np.testing.assert_array_equal(got["total_out"], want["total"])


@opencl
def test_reduction_float_python(entry: Any) -> None:
    _reduction_python(entry.device_id, "float", np.float32)


@opencl
def test_reduction_float_cli(entry: Any, tmp_path: Path) -> None:
    _reduction_cli(tmp_path, entry.device_id, "float", np.float32)


@opencl
def test_reduction_double_python(entry: Any) -> None:
    _fp64(entry)
    _reduction_python(entry.device_id, "double", np.float64)


@opencl
def test_reduction_double_cli(entry: Any, tmp_path: Path) -> None:
    _fp64(entry)
    _reduction_cli(tmp_path, entry.device_id, "double", np.float64)


# ==================================================================================================
# SHOC spmv: three kernels, restrict pointers, a static __local array, an #ifdef'd image path
# ==================================================================================================


def _spmv_close(out: np.ndarray, d: dict[str, Any]) -> None:
    want = REF.expected_spmv(d)["out"]
    # each row sums at most ~25 products of magnitude <= 1, with mixed signs: the error of a float32 dot
    # product of n terms is at most n * eps * sum(|a_j * x_j|) (plus one rounding of each product)
    bound = 30 * EPS32 * (np.abs(d["dense"]).astype(np.float64) @ np.abs(d["vec"]).astype(np.float64))
    assert np.all(np.abs(out - want) <= bound + 1e-30), np.abs(out - want).max()


@opencl
def test_spmv_python(entry: Any) -> None:
    d = REF.make_spmv()
    dim = d["dim"]
    with ac.open(entry.device_id) as dev:
        scalar = dev.kernel(DATA / "spmv_shoc.cl", entry="spmv_csr_scalar_kernel", build_options="-DSINGLE_PRECISION")
        out = np.zeros(dim, np.float32)
        scalar(d["val"], d["vec"], d["cols"], d["rowDelimiters"], dim, out, global_size=dim)
        _spmv_close(out, d)
        vector = dev.kernel(DATA / "spmv_shoc.cl", entry="spmv_csr_vector_kernel", build_options="-DSINGLE_PRECISION")
        out = np.zeros(dim, np.float32)
        rows_per_group = 128 // 32
        vector(
            val=d["val"],
            vec=d["vec"],
            cols=d["cols"],
            rowDelimiters=d["rowDelimiters"],
            dim=dim,
            vecWidth=32,
            out=out,
            global_size=-(-dim // rows_per_group) * 128,
        )
        _spmv_close(out, d)
        ell = dev.kernel(DATA / "spmv_shoc.cl", entry="spmv_ellpackr_kernel", build_options="-DSINGLE_PRECISION")
        out = np.zeros(dim, np.float32)
        ell(d["ell_val"], d["vec"], d["ell_cols"], d["rowLengths"], dim, out, global_size=dim)
        _spmv_close(out, d)


@opencl
def test_spmv_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_spmv()
    dim = d["dim"]
    got = _cli(
        tmp_path,
        entry.device_id,
        "spmv_shoc.cl",
        "--entry spmv_csr_vector_kernel --build-options -DSINGLE_PRECISION --bind val=val.npy --bind vec=vec.npy "
        f"--bind cols=cols.npy --bind rowDelimiters=rows.npy --arg dim={dim} --arg vecWidth=32 --bind out=out.npy "
        f"--global {-(-dim // 4) * 128} --out out=result.npy",
        val=d["val"],
        vec=d["vec"],
        cols=d["cols"],
        rows=d["rowDelimiters"],
        out=np.zeros(dim, np.float32),
    )
    _spmv_close(got["result"], d)


# ==================================================================================================
# Parboil sgemm: column-major NT, register tiling, reqd_work_group_size(16, 8, 1)
# ==================================================================================================

SGEMM_RTOL = 40 * EPS32  # k = 24 positive products summed in float32, then alpha * c + beta * C


@opencl
def test_sgemm_python(entry: Any) -> None:
    d = REF.make_sgemm()
    want = REF.expected_sgemm(d)["C"]
    c = d["C"].copy()
    m, n, k = d["m"], d["n"], d["k"]
    with ac.open(entry.device_id) as dev:
        sgemm = dev.kernel(DATA / "sgemm_parboil.cl")
        sgemm(d["A"], m, d["B"], n, c, m, k, d["alpha"], d["beta"], global_size=(m // 128 * 16, n // 16 * 8))
    np.testing.assert_allclose(c, want, rtol=SGEMM_RTOL)


@opencl
def test_sgemm_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_sgemm()
    want = REF.expected_sgemm(d)["C"]
    m, n, k = d["m"], d["n"], d["k"]
    got = _cli(
        tmp_path,
        entry.device_id,
        "sgemm_parboil.cl",
        f"--bind A=A.npy --arg lda={m} --bind B=B.npy --arg ldb={n} --bind C=C.npy --arg ldc={m} --arg k={k} "
        f"--arg alpha={d['alpha']} --arg beta={d['beta']} --global {m // 128 * 16},{n // 16 * 8} --out C=C_out.npy",
        A=d["A"],
        B=d["B"],
        C=d["C"],
    )
    np.testing.assert_allclose(got["C_out"], want, rtol=SGEMM_RTOL)


# ==================================================================================================
# Parboil stencil: a __local tile pointer sized by the host, registers along k
# ==================================================================================================

# values in [0, 1): six-term sum (~3, 3 ulp), times 1/36, minus a value times 1/6 of similar size (~0.08):
# the difference cancels, so the bound is absolute: a few ulps of 3 / 36.
STENCIL_ATOL = 8 * EPS32 * 3 / 36 * 4


def _stencil_global(d: dict[str, Any]) -> tuple[int, int]:
    lx, ly = d["local"]
    return -(-(d["nx"] - 2) // lx) * lx, -(-(d["ny"] - 2) // ly) * ly


@opencl
def test_stencil_python(entry: Any) -> None:
    d = REF.make_stencil()
    want = REF.expected_stencil(d)["Anext"]
    anext = d["A0"].copy()
    lx, ly = d["local"]
    with ac.open(entry.device_id) as dev:
        stencil = dev.kernel(DATA / "stencil_parboil.cl", local_size=d["local"])
        stencil(
            d["c0"],
            d["c1"],
            d["A0"],
            anext,
            d["nx"],
            d["ny"],
            d["nz"],
            ac.local_memory(lx * ly * 4),
            global_size=_stencil_global(d),
        )
    np.testing.assert_allclose(anext, want, rtol=0, atol=STENCIL_ATOL)


@opencl
def test_stencil_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_stencil()
    want = REF.expected_stencil(d)["Anext"]
    lx, ly = d["local"]
    gx, gy = _stencil_global(d)
    got = _cli(
        tmp_path,
        entry.device_id,
        "stencil_parboil.cl",
        f"--arg c0={d['c0']!r} --arg c1={d['c1']!r} --bind A0=A0.npy --bind Anext=Anext.npy --arg nx={d['nx']} "
        f"--arg ny={d['ny']} --arg nz={d['nz']} --local-mem sh_A0={lx * ly * 4} --global {gx},{gy} "
        f"--local-size {lx},{ly} --out Anext=out.npy",
        A0=d["A0"],
        Anext=d["A0"],
    )
    np.testing.assert_allclose(got["out"], want, rtol=0, atol=STENCIL_ATOL)


# ==================================================================================================
# clpeak-style vector types: float8/float4 by value, float3 buffers (16-byte elements), vload8/vstore8
# ==================================================================================================


def _clpeak_check(got: dict[str, np.ndarray], d: dict[str, Any]) -> None:
    want = REF.expected_clpeak(d)
    n = d["n"]
    for name in ("out8", "out4", "outs"):  # halves: every product and sum is exact in float32
        np.testing.assert_array_equal(got[name][:n], want[name], err_msg=name)
        assert np.all(got[name][n:] == -1), f"{name}: rows past n were written"
    np.testing.assert_array_equal(got["out3"][:n, :3], want["out3"][:, :3], err_msg="out3")
    np.testing.assert_array_equal(got["dst"], want["dst"], err_msg="dst")


def _clpeak_outputs(d: dict[str, Any]) -> dict[str, np.ndarray]:
    rows = d["rows"]
    return {
        "out8": np.full((rows, 8), -1, np.float32),
        "out4": np.full((rows, 4), -1, np.float32),
        "out3": np.full((rows, 4), -1, np.float32),
        "outs": np.full(rows, -1, np.float32),
        "dst": np.zeros(d["nvec"] * 8, np.int32),
    }


@opencl
def test_clpeak_vectors_python(entry: Any) -> None:
    d = REF.make_clpeak()
    got = _clpeak_outputs(d)
    with ac.open(entry.device_id) as dev:
        mix = dev.kernel(DATA / "clpeak_vectors.cl", entry="vec_mix")
        mix(
            a=d["a"],
            b=d["b"],
            out8=got["out8"],
            out4=got["out4"],
            out3=got["out3"],
            outs=got["outs"],
            scale=d["scale"],
            bias=d["bias"],
            shift=d["shift"],
            n=d["n"],
            global_size=d["rows"],
        )
        quantize = dev.kernel(DATA / "clpeak_vectors.cl", entry="quantize8")
        quantize(d["src"], got["dst"], d["inv_scale"], d["nvec"], global_size=d["nvec"])
    _clpeak_check(got, d)


@opencl
def test_clpeak_vectors_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_clpeak()
    outs = _clpeak_outputs(d)
    scale, bias, shift = (",".join(map(str, d[k])) for k in ("scale", "bias", "shift"))
    got = _cli(
        tmp_path,
        entry.device_id,
        "clpeak_vectors.cl",
        "--entry vec_mix --bind a=a.npy --bind b=b.npy --bind out8=out8.npy --bind out4=out4.npy --bind out3=out3.npy "
        f"--bind outs=outs.npy --arg scale={scale} --arg bias={bias} --arg shift={shift} --arg n={d['n']} "
        f"--global {d['rows']} "
        "--out out8=r8.npy --out out4=r4.npy --out out3=r3.npy --out outs=rs.npy",
        a=d["a"],
        b=d["b"],
        **{k: v for k, v in outs.items() if k != "dst"},
    )
    got |= _cli(
        tmp_path,
        entry.device_id,
        "clpeak_vectors.cl",
        f"--entry quantize8 --bind src=src.npy --bind dst=dst.npy --arg inv_scale={d['inv_scale']} "
        f"--arg nvec={d['nvec']} --global {d['nvec']} --out dst=rq.npy",
        src=d["src"],
        dst=outs["dst"],
    )
    _clpeak_check({"out8": got["r8"], "out4": got["r4"], "out3": got["r3"], "outs": got["rs"], "dst": got["rq"]}, d)


# ==================================================================================================
# Sascha Willems particles: std430 struct with vec3 members, std140 uniform block with a vec3, as a dict
# ==================================================================================================


def _particles_check(got: np.ndarray, d: dict[str, Any]) -> None:
    want = REF.expected_particles(d)
    # 1 / (mass * dist2) (2.5 ulp), length (sqrt of a dot product), a few multiply-adds: values of order 1-10
    for name in REF.PARTICLE.names:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-6, atol=1e-6, err_msg=name)


@vulkan
def test_particles_python(entry: Any) -> None:
    d = REF.make_particles()
    particles = d["particles"].copy()
    with ac.open(entry.device_id) as dev:
        step = dev.kernel(DATA / "particles_willems.comp")
        step(particles=particles, ubo=d["ubo"], global_size=len(particles))
    _particles_check(particles, d)


@vulkan
def test_particles_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_particles()
    got = _cli(
        tmp_path,
        entry.device_id,
        "particles_willems.comp",
        f"--bind particles=p.npy --bind ubo=ubo.npy --global {len(d['particles'])} --out particles=out.npy",
        p=d["particles"],
        ubo=REF.particles_ubo_array(d["ubo"]),
    )
    _particles_check(got["out"], d)


# ==================================================================================================
# Sascha Willems n-body: shared memory sized and work-group sized by one specialization constant
# ==================================================================================================


def _nbody_check(got: np.ndarray, d: dict[str, Any]) -> None:
    want = REF.expected_nbody(d)["particles"]
    np.testing.assert_array_equal(got[:, :4], d["particles"][:, :4])  # positions and masses are read only
    np.testing.assert_array_equal(got[:, 7], d["particles"][:, 7])
    # 200 terms of G * len * m / pow(r2 + soften, 0.75): GLSL's pow is exp2(y * log2(x)) with a precision
    # inherited from those (lavapipe: ~1e-6 relative); the sums cancel (mixed signs), so the bound is relative
    # to the largest velocity change.
    change, want_change = got[:, 4:7] - d["particles"][:, 4:7], want[:, 4:7] - d["particles"][:, 4:7]
    np.testing.assert_allclose(change, want_change, rtol=0, atol=1e-4 * float(np.abs(want_change).max()))


# A specialization constant that also sets the work-group size (local_size_x_id = N with constant_id = N) is
# named although glslang adds an unnamed twin with the same SpecId (it once was not: the twin's '' won).


def _nbody_spec_by_id(spec: dict[str, Any]) -> dict[Any, Any]:
    """SHARED_DATA_SIZE by its SpecId (by name works too)."""
    return {0 if k == "SHARED_DATA_SIZE" else k: v for k, v in spec.items()}


@vulkan
def test_nbody_python(entry: Any) -> None:
    d = REF.make_nbody()
    particles = d["particles"].copy()
    with ac.open(entry.device_id) as dev:
        step = dev.kernel(DATA / "nbody_willems.comp", spec=d["spec"])
        step(particles=particles, ubo=d["ubo"], global_size=256)
    _nbody_check(particles, d)


@vulkan
def test_nbody_python_with_the_work_group_constant_by_spec_id(entry: Any) -> None:
    d = REF.make_nbody()
    particles = d["particles"].copy()
    with ac.open(entry.device_id) as dev:
        step = dev.kernel(DATA / "nbody_willems.comp", spec=_nbody_spec_by_id(d["spec"]))
        step(particles=particles, ubo=d["ubo"], global_size=256)
    _nbody_check(particles, d)


@vulkan
def test_nbody_cli(entry: Any, tmp_path: Path) -> None:
    _nbody_cli(entry, tmp_path, REF.make_nbody()["spec"])


@vulkan
def test_nbody_cli_with_the_work_group_constant_by_spec_id(entry: Any, tmp_path: Path) -> None:
    _nbody_cli(entry, tmp_path, _nbody_spec_by_id(REF.make_nbody()["spec"]))


def _nbody_cli(entry: Any, tmp_path: Path, spec_values: dict[Any, Any]) -> None:
    d = REF.make_nbody()
    spec = " ".join(f"--spec {k}={v}" for k, v in spec_values.items())
    ubo = np.zeros(1, [("deltaT", "<f4"), ("particleCount", "<i4")])
    ubo["deltaT"], ubo["particleCount"] = d["ubo"]["deltaT"], d["ubo"]["particleCount"]
    got = _cli(
        tmp_path,
        entry.device_id,
        "nbody_willems.comp",
        f"{spec} --bind particles=p.npy --bind ubo=ubo.npy --global 256 --out particles=out.npy",
        p=d["particles"],
        ubo=ubo,
    )
    _nbody_check(got["out"], d)


# ==================================================================================================
# ncnn binaryop: local size from specialization constants 233-235, 15 int push constants, padded cstep
# ==================================================================================================


def _binaryop_check(top: np.ndarray, d: dict[str, Any], op_type: int, per_channel: bool) -> None:
    want = REF.expected_binaryop(d, op_type, per_channel)["valid"]
    got = top.reshape(d["c"], d["cstep"])
    # mul: one correctly rounded product, exactly float32(the float64 product); div: 2.5 ulp in Vulkan
    if op_type == 2:
        np.testing.assert_array_equal(got[:, : d["w"] * d["h"]], want.astype(np.float32))
    else:
        np.testing.assert_allclose(got[:, : d["w"] * d["h"]], want, rtol=3 * EPS32)
    assert np.all(got[:, d["w"] * d["h"] :] == -7), "the cstep padding was written"


@vulkan
def test_binaryop_python(entry: Any) -> None:
    d = REF.make_binaryop()
    w, h, c = d["w"], d["h"], d["c"]
    with ac.open(entry.device_id) as dev:
        kernels = {
            op: dev.kernel(DATA / "binaryop_ncnn.comp", spec={"op_type": op, 233: 8, 234: 8, 235: 1}) for op in (2, 3)
        }
        # each kernel with b per channel, then as large as a: only the push constants change between the calls
        for op_type, per_channel in ((2, True), (2, False), (3, False), (3, True)):
            top = np.full(c * d["cstep"], -7, np.float32)
            b = d["b_channel"] if per_channel else d["b_full"]
            kernels[op_type](
                a_blob_data=d["a"],
                b_blob_data=b,
                top_blob_data=top,
                **REF.binaryop_push(d, per_channel),
                global_size=(w, h, c),
            )
            _binaryop_check(top, d, op_type, per_channel)


@vulkan
def test_binaryop_cli(entry: Any, tmp_path: Path) -> None:
    d = REF.make_binaryop()
    push = " ".join(f"--push {k}={v}" for k, v in REF.binaryop_push(d, True).items())
    got = _cli(
        tmp_path,
        entry.device_id,
        "binaryop_ncnn.comp",
        f"--spec op_type=2 --spec 233=8 --spec 234=8 --spec 235=1 {push} --bind a_blob_data=a.npy "
        f"--bind b_blob_data=b.npy --bind top_blob_data=top.npy --global {d['w']},{d['h']},{d['c']} "
        "--out top_blob_data=out.npy",
        a=d["a"],
        b=d["b_channel"],
        top=np.full(d["c"] * d["cstep"], -7, np.float32),
    )
    _binaryop_check(got["out"], d, 2, True)


# ==================================================================================================
# ggml add: element types from -D, bindings A/B/D holding data_a/data_b/data_d, a 29-member push block
# ==================================================================================================

GGML_FLOAT = "-DA_TYPE=float -DB_TYPE=float -DD_TYPE=float"
GGML_HALF_OUT = "-DA_TYPE=float -DB_TYPE=float -DD_TYPE=float16_t"


def _ggml_check(out: np.ndarray, d: dict[str, Any]) -> None:
    want = REF.expected_ggml_add(d)["d"]
    if out.dtype == np.float16:  # one float32 add, then a conversion to half (correctly rounded in Vulkan)
        np.testing.assert_array_equal(out, want.astype(np.float32).astype(np.float16))
    else:  # one correctly rounded float32 add
        np.testing.assert_array_equal(out, want.astype(np.float32))


@vulkan
@pytest.mark.parametrize(
    "options, out_dtype", [(GGML_FLOAT, np.float32), (GGML_HALF_OUT, np.float16)], ids=["f32", "f16-out"]
)
def test_ggml_add_python(entry: Any, options: str, out_dtype: Any) -> None:
    with ac.open(entry.device_id) as dev:
        add = dev.kernel(DATA / "add_ggml.comp", build_options=options)
        for broadcast in (True, False, True):  # another b shape: only the push constants change
            d = REF.make_ggml_add(broadcast)
            out = np.zeros(d["push"]["ne"], out_dtype)
            add(data_a=d["a"], data_b=d["b"], data_d=out, **d["push"], groups=1)
            _ggml_check(out, d)


@vulkan
@pytest.mark.parametrize(
    "options, out_dtype", [(GGML_FLOAT, np.float32), (GGML_HALF_OUT, np.float16)], ids=["f32", "f16-out"]
)
def test_ggml_add_cli(entry: Any, tmp_path: Path, options: str, out_dtype: Any) -> None:
    d = REF.make_ggml_add()
    push = " ".join(f"--push {k}={v}" for k, v in d["push"].items())
    got = _cli(
        tmp_path,
        entry.device_id,
        "add_ggml.comp",
        f"--build-options {shlex.quote(options)} {push} --bind A=a.npy --bind B=b.npy --bind D=d.npy --groups 1 "
        "--out D=out.npy",
        a=d["a"],
        b=d["b"],
        d=np.zeros(d["push"]["ne"], out_dtype),
    )
    _ggml_check(got["out"], d)


# ==================================================================================================
# uVkCompute matmul: sizes and tiles as specialization constants, vec4 buffers, spec-sized shared arrays
# ==================================================================================================

MATMUL_RTOL = 40 * EPS32  # k = 24 positive products summed in float32


def _vec4_rows(matrix: np.ndarray) -> np.ndarray:
    """A row-major matrix as the vec4 elements the shader declares: (rows * cols / 4, 4) float32."""
    return np.ascontiguousarray(matrix).reshape(-1, 4)


def _matmul_spec_by_id(spec: dict[str, Any]) -> dict[Any, Any]:
    """WG_X and WG_Y by their SpecIds (by name works too)."""
    return {{"WG_X": 3, "WG_Y": 4}.get(k, k): v for k, v in spec.items()}


@vulkan
def test_matmul_python(entry: Any) -> None:
    _matmul_python(entry, REF.make_matmul()["spec"])


@vulkan
def test_matmul_python_with_the_tile_constants_by_spec_id(entry: Any) -> None:
    _matmul_python(entry, _matmul_spec_by_id(REF.make_matmul()["spec"]))


def _matmul_python(entry: Any, spec_values: dict[Any, Any]) -> None:
    d = REF.make_matmul()
    spec = d["spec"]
    c = np.zeros((spec["M"] * spec["N"] // 4, 4), np.float32)
    with ac.open(entry.device_id) as dev:
        matmul = dev.kernel(DATA / "matmul_uvkcompute.comp", spec=spec_values)
        matmul(inputA=_vec4_rows(d["A"]), inputB=_vec4_rows(d["B"]), outputO=c, global_size=(spec["N"] // 4, spec["M"]))
    np.testing.assert_allclose(c.reshape(spec["M"], spec["N"]), REF.expected_matmul(d)["C"], rtol=MATMUL_RTOL)


@vulkan
def test_matmul_cli(entry: Any, tmp_path: Path) -> None:
    _matmul_cli(entry, tmp_path, REF.make_matmul()["spec"])


@vulkan
def test_matmul_cli_with_the_tile_constants_by_spec_id(entry: Any, tmp_path: Path) -> None:
    _matmul_cli(entry, tmp_path, _matmul_spec_by_id(REF.make_matmul()["spec"]))


def _matmul_cli(entry: Any, tmp_path: Path, spec_values: dict[Any, Any]) -> None:
    d = REF.make_matmul()
    spec = d["spec"]
    got = _cli(
        tmp_path,
        entry.device_id,
        "matmul_uvkcompute.comp",
        " ".join(f"--spec {k}={v}" for k, v in spec_values.items())
        + f" --bind inputA=a.npy --bind inputB=b.npy --bind outputO=c.npy --global {spec['N'] // 4},{spec['M']}"
        " --out outputO=out.npy",
        a=_vec4_rows(d["A"]),
        b=_vec4_rows(d["B"]),
        c=np.zeros((spec["M"] * spec["N"] // 4, 4), np.float32),
    )
    np.testing.assert_allclose(got["out"].reshape(spec["M"], spec["N"]), REF.expected_matmul(d)["C"], rtol=MATMUL_RTOL)


@vulkan
def test_matmul_a_row_major_matrix_for_a_vec4_buffer_is_refused_naming_the_shape_to_pass(entry: Any) -> None:
    """A user's first attempt: the (M, K) matrix itself. Refused, saying (N, 4) or flat (same bytes) will do."""
    d = REF.make_matmul()
    spec = _matmul_spec_by_id(d["spec"])
    with ac.open(entry.device_id) as dev, raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        dev.kernel(DATA / "matmul_uvkcompute.comp", spec=spec)(
            inputA=d["A"], inputB=d["B"], outputO=np.zeros((32, 32), np.float32), global_size=(8, 32)
        )
    assert "argument inputA declares f32x4" in str(info.value) and "pass shape (N, 4) or a flat array" in str(
        info.value
    )


@vulkan
def test_matmul_a_member_name_shared_by_three_blocks_is_refused_as_ambiguous(entry: Any) -> None:
    d = REF.make_matmul()
    spec = _matmul_spec_by_id(d["spec"])
    with ac.open(entry.device_id) as dev, raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        dev.kernel(DATA / "matmul_uvkcompute.comp", spec=spec)(
            inputA=_vec4_rows(d["A"]),
            inputB=_vec4_rows(d["B"]),
            x=np.zeros((256, 4), np.float32),
            global_size=(8, 32),
        )
    assert "'x'" in str(info.value)


@opencl
def test_sgemm_with_fortran_ordered_matrices(entry: Any) -> None:
    """Parboil's matrices are column-major; in numpy that is Fortran order. An F-ordered array is refused (the
    kernel sees flat memory); its ``.T`` is the C-ordered view of the same bytes and gives the right answer. The
    refusal names both that and ``np.ascontiguousarray(x)``, which reorders the bytes row-major (a wrong product
    for this column-major kernel), saying which is which."""
    d = REF.make_sgemm()
    m, n, k = d["m"], d["n"], d["k"]
    a_mk, b_nk, c_mn = (np.asfortranarray(d[x].T) for x in "ABC")  # m x k, n x k, m x n: column-major
    with ac.open(entry.device_id) as dev:
        sgemm = dev.kernel(DATA / "sgemm_parboil.cl")
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            sgemm(a_mk, m, b_nk, n, c_mn, m, k, d["alpha"], d["beta"], global_size=(m // 128 * 16, n // 16 * 8))
        assert "argument A is Fortran-ordered (column-major)" in str(info.value) and "x.T" in str(info.value)
        c = c_mn.T.copy()  # C-ordered (n, m): the column-major m x n bytes
        sgemm(a_mk.T, m, b_nk.T, n, c, m, k, d["alpha"], d["beta"], global_size=(m // 128 * 16, n // 16 * 8))
    np.testing.assert_allclose(c, REF.expected_sgemm(d)["C"], rtol=SGEMM_RTOL)
