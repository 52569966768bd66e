"""Inputs and numpy references for the kernels of this folder (one reference per kernel file).

Each ``make_*`` function returns the inputs a user would build for the kernel (numpy arrays in the
kernel's layout, plain ints and floats for the sizes and scalars) and each ``expected_*`` function
computes what the kernel must produce from them, in numpy. The test file
``tests/python/test_second_kernel_set.py`` runs every kernel through ``accelcore`` and ``accel run``
and compares with these. All generators are seeded, so every run sees the same data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

f32 = np.float32


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------------------------------
# kmeans_rodinia.cl: kmeans_swap then kmeans_kernel_c
# --------------------------------------------------------------------------------------------------


def make_kmeans() -> dict[str, Any]:
    rng = _rng(1)
    npoints, nfeatures, nclusters = 1000, 5, 6
    # integers and quarters: every squared distance is exact in float32, so ties break as in numpy
    feature = rng.integers(0, 16, (npoints, nfeatures)).astype(f32)
    clusters = (rng.integers(0, 16, (nclusters, nfeatures)) + 0.25).astype(f32)
    return {
        "feature": feature,
        "clusters": clusters,
        "npoints": npoints,
        "nfeatures": nfeatures,
        "nclusters": nclusters,
    }


def expected_kmeans(d: dict[str, Any]) -> dict[str, np.ndarray]:
    feature, clusters = d["feature"], d["clusters"]
    dist = ((feature[:, None, :] - clusters[None, :, :]) ** 2).sum(axis=2)
    return {"feature_swap": np.ascontiguousarray(feature.T), "membership": dist.argmin(axis=1).astype(np.int32)}


# --------------------------------------------------------------------------------------------------
# nn_rodinia.cl: NearestNeighbor over LatLong records
# --------------------------------------------------------------------------------------------------

LATLONG = np.dtype([("lat", "<f4"), ("lng", "<f4")])


def make_nn() -> dict[str, Any]:
    rng = _rng(2)
    n = 1000
    locations = np.zeros(n, LATLONG)
    locations["lat"] = rng.uniform(-90, 90, n)
    locations["lng"] = rng.uniform(-180, 180, n)
    return {"locations": locations, "numRecords": n, "lat": 30.0, "lng": 90.0}


def expected_nn(d: dict[str, Any]) -> dict[str, np.ndarray]:
    loc = d["locations"]
    dlat = f32(d["lat"]) - loc["lat"]
    dlng = f32(d["lng"]) - loc["lng"]
    return {"distances": np.sqrt(dlat.astype(np.float64) ** 2 + dlng.astype(np.float64) ** 2)}


# --------------------------------------------------------------------------------------------------
# hotspot_rodinia.cl: `iteration` time steps per launch
# --------------------------------------------------------------------------------------------------

BLOCK_SIZE = 16


def make_hotspot() -> dict[str, Any]:
    rng = _rng(3)
    rows, cols, iteration = 48, 64, 2
    # Rodinia's chip constants and derived coefficients (hotspot.c)
    t_chip, chip_height, chip_width = 0.0005, 0.016, 0.016
    spec_heat_si, k_si, factor_chip, max_pd, precision = 1.75e6, 100.0, 0.5, 3.0e6, 0.001
    grid_height, grid_width = chip_height / rows, chip_width / cols
    cap = factor_chip * spec_heat_si * t_chip * grid_width * grid_height
    rx = grid_width / (2.0 * k_si * t_chip * grid_height)
    ry = grid_height / (2.0 * k_si * t_chip * grid_width)
    rz = t_chip / (k_si * grid_height * grid_width)
    max_slope = max_pd / (factor_chip * t_chip * spec_heat_si)
    step = precision / max_slope
    small = BLOCK_SIZE - 2 * iteration
    block_cols, block_rows = -(-cols // small), -(-rows // small)
    return {
        "temp": rng.uniform(323.0, 343.0, (rows, cols)).astype(f32),
        "power": rng.uniform(0.0, 1e-3, (rows, cols)).astype(f32),
        "iteration": iteration,
        "grid_cols": cols,
        "grid_rows": rows,
        "border_cols": iteration,
        "border_rows": iteration,
        "Cap": float(f32(cap)),
        "Rx": float(f32(rx)),
        "Ry": float(f32(ry)),
        "Rz": float(f32(rz)),
        "step": float(f32(step)),
        "global_size": (block_cols * BLOCK_SIZE, block_rows * BLOCK_SIZE),
    }


def expected_hotspot(d: dict[str, Any], launches: int = 1) -> dict[str, np.ndarray]:
    """The temperatures after ``launches`` launches of ``iteration`` steps each."""
    t = d["temp"].astype(np.float64)
    p = d["power"].astype(np.float64)
    sdc = d["step"] / d["Cap"]
    for _ in range(d["iteration"] * launches):
        e = np.pad(t, 1, mode="edge")  # the kernel clamps neighbours at the chip's edges
        north, south = e[:-2, 1:-1], e[2:, 1:-1]
        west, east = e[1:-1, :-2], e[1:-1, 2:]
        t = t + sdc * (p + (south + north - 2 * t) / d["Ry"] + (east + west - 2 * t) / d["Rx"] + (80.0 - t) / d["Rz"])
    return {"temp_dst": t}


# --------------------------------------------------------------------------------------------------
# backprop_rodinia.cl: bpnn_layerforward_ocl and bpnn_adjust_weights_ocl
# --------------------------------------------------------------------------------------------------

ETA, MOMENTUM = 0.3, 0.3


def make_backprop() -> dict[str, Any]:
    rng = _rng(4)
    n_in, hid = 64, 16
    return {
        "in": n_in,
        "hid": hid,
        "input": rng.uniform(0.0, 1.0, n_in + 1).astype(f32),
        "weights": rng.uniform(0.0, 1.0, (n_in + 1) * (hid + 1)).astype(f32),
        "delta": rng.uniform(0.0, 1.0, hid + 1).astype(f32),
        "oldw": rng.uniform(0.0, 0.1, (n_in + 1) * (hid + 1)).astype(f32),
    }


def expected_backprop(d: dict[str, Any]) -> dict[str, np.ndarray]:
    n_in, hid = d["in"], d["hid"]
    w = d["weights"].astype(np.float64).reshape(n_in + 1, hid + 1)
    x = d["input"].astype(np.float64)
    products = w[1:, 1:] * x[1:, None]  # rows 1..in, columns 1..hid
    partial = products.reshape(n_in // 16, 16, hid).sum(axis=1)
    delta, ly = d["delta"].astype(np.float64), d["input"].astype(np.float64)
    oldw = d["oldw"].astype(np.float64).reshape(n_in + 1, hid + 1)
    new_w, new_oldw = w.copy(), oldw.copy()
    change = ETA * delta[None, 1:] * ly[1:, None] + MOMENTUM * oldw[1:, 1:]
    new_w[1:, 1:] += change
    new_oldw[1:, 1:] = change
    bias = ETA * delta[1:] + MOMENTUM * oldw[0, 1:]
    new_w[0, 1:] += bias
    new_oldw[0, 1:] = bias
    return {"hidden_partial_sum": partial.ravel(), "w": new_w.ravel(), "oldw": new_oldw.ravel()}


# --------------------------------------------------------------------------------------------------
# lavamd_rodinia.cl: structs by value and arrays of nested structs
# --------------------------------------------------------------------------------------------------

NUMBER_PAR_PER_BOX = 32
NEI = np.dtype(
    {
        "names": ["x", "y", "z", "number", "offset"],
        "formats": ["<i4", "<i4", "<i4", "<i4", "<i8"],
        "offsets": [0, 4, 8, 12, 16],
        "itemsize": 24,
    }
)
BOX = np.dtype(
    {
        "names": ["x", "y", "z", "number", "offset", "nn", "nei"],
        "formats": ["<i4", "<i4", "<i4", "<i4", "<i8", "<i4", (NEI, 26)],
        "offsets": [0, 4, 8, 12, 16, 24, 32],
        "itemsize": 656,
    }
)
"""Clang's SPIR64 layout of ``box_str``: ``long offset`` at 16, ``nn`` at 24, 4 bytes of padding, the
``nei_str[26]`` array (24-byte elements, aligned to 8) at 32."""
FOUR_VECTOR = np.dtype([("v", "<f4"), ("x", "<f4"), ("y", "<f4"), ("z", "<f4")])


def make_lavamd() -> dict[str, Any]:
    rng = _rng(5)
    boxes1d = 2
    nboxes = boxes1d**3
    boxes = np.zeros(nboxes, BOX)
    coords = [(i, j, k) for k in range(boxes1d) for j in range(boxes1d) for i in range(boxes1d)]
    for number, (i, j, k) in enumerate(coords):
        box = boxes[number]
        box["x"], box["y"], box["z"], box["number"] = i, j, k, number
        box["offset"] = number * NUMBER_PAR_PER_BOX
        nn = 0
        for other, (a, b, c) in enumerate(coords):
            if other != number and max(abs(a - i), abs(b - j), abs(c - k)) <= 1:
                box["nei"][nn] = (a, b, c, other, other * NUMBER_PAR_PER_BOX)
                nn += 1
        box["nn"] = nn
    nparticles = nboxes * NUMBER_PAR_PER_BOX
    rv = np.zeros(nparticles, FOUR_VECTOR)
    for name in ("v", "x", "y", "z"):
        rv[name] = (rng.integers(0, 10, nparticles) + 1) / 10.0  # Rodinia's (rand() % 10 + 1) / 10
    qv = ((rng.integers(0, 10, nparticles) + 1) / 10.0).astype(f32)
    dim = {
        "cur_arg": 1,
        "arch_arg": 0,
        "cores_arg": 1,
        "boxes1d_arg": boxes1d,
        "number_boxes": nboxes,
        "box_mem": nboxes * BOX.itemsize,
        "space_elem": nparticles,
        "space_mem": nparticles * 16,
        "space_mem2": nparticles * 4,
    }
    return {"par": {"alpha": 0.5}, "dim": dim, "boxes": boxes, "rv": rv, "qv": qv}


def expected_lavamd(d: dict[str, Any]) -> dict[str, np.ndarray]:
    a2 = 2.0 * d["par"]["alpha"] ** 2
    rv = np.stack([d["rv"][n].astype(np.float64) for n in ("v", "x", "y", "z")], axis=1)
    qv = d["qv"].astype(np.float64)
    fv = np.zeros_like(rv)
    for box in d["boxes"]:
        home = slice(int(box["offset"]), int(box["offset"]) + NUMBER_PAR_PER_BOX)
        for pointer in [int(box["number"])] + [int(n["number"]) for n in box["nei"][: int(box["nn"])]]:
            first = int(d["boxes"][pointer]["offset"])
            other = slice(first, first + NUMBER_PAR_PER_BOX)
            ra, rb, qb = rv[home], rv[other], qv[other]
            r2 = ra[:, None, 0] + rb[None, :, 0] - (ra[:, None, 1:] * rb[None, :, 1:]).sum(axis=2)
            vij = np.exp(-a2 * r2)
            fs = 2.0 * vij
            dxyz = ra[:, None, 1:] - rb[None, :, 1:]
            fv[home, 0] += (qb[None, :] * vij).sum(axis=1)
            fv[home, 1:] += (qb[None, :, None] * fs[:, :, None] * dxyz).sum(axis=1)
    return {"fv": fv}


# --------------------------------------------------------------------------------------------------
# md_shoc.cl: Lennard-Jones forces, single or double precision
# --------------------------------------------------------------------------------------------------


def make_md(dtype: Any = np.float32) -> dict[str, Any]:
    rng = _rng(6)
    side, neigh = 7, 16
    grid = np.stack(np.meshgrid(*(np.arange(side),) * 3, indexing="ij"), axis=-1).reshape(-1, 3)[:256]
    pos = grid * 1.1 + rng.uniform(-0.1, 0.1, grid.shape)
    n = len(pos)
    dist = ((pos[:, None, :] - pos[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(dist, np.inf)
    order = np.argsort(dist, axis=1, kind="stable")[:, :neigh]  # the 16 nearest atoms of each atom
    position = np.zeros((n, 4), dtype)
    position[:, :3] = pos
    return {
        "position": position,
        "neighList": np.ascontiguousarray(order.T).astype(np.int32),  # column-major: [j * inum + i]
        "neighCount": neigh,
        "cutsq": 1.69,  # r < 1.3: the face neighbours, not the diagonals
        "lj1": 1.5,
        "lj2": 2.0,
        "inum": n,
    }


def expected_md(d: dict[str, Any]) -> dict[str, np.ndarray]:
    pos = d["position"].astype(np.float64)[:, :3]
    force = np.zeros((len(pos), 4))
    neigh = d["neighList"].T
    delta = pos[:, None, :] - pos[neigh]
    r2 = (delta**2).sum(axis=2)
    inside = r2 < d["cutsq"]
    r2inv = np.where(inside, 1.0 / r2, 0.0)
    r6inv = r2inv**3
    forcec = r2inv * r6inv * (d["lj1"] * r6inv - d["lj2"])
    force[:, :3] = (delta * forcec[:, :, None]).sum(axis=1)
    return {"force": force}


# --------------------------------------------------------------------------------------------------
# reduction_shoc.cl: reduce then reduceNoLocal
# --------------------------------------------------------------------------------------------------

REDUCE_GROUPS, REDUCE_LOCAL = 8, 256


def make_reduction(dtype: Any = np.float32) -> dict[str, Any]:
    n = REDUCE_GROUPS * REDUCE_LOCAL * 2 * 4
    return {"data": _rng(7).integers(0, 10, n).astype(dtype), "n": n}  # small integers: every sum is exact


def expected_reduction(d: dict[str, Any]) -> dict[str, np.ndarray]:
    data = d["data"].astype(np.float64)
    # group g folds the pairs (i, i + 256) of its 512-element slices g, g + 8, g + 16, ...
    partial = data.reshape(-1, REDUCE_GROUPS, 2 * REDUCE_LOCAL).sum(axis=(0, 2))
    return {"partial": partial, "total": np.array([data.sum()])}


# --------------------------------------------------------------------------------------------------
# spmv_shoc.cl: CSR scalar, CSR vector and ELLPACK-R
# --------------------------------------------------------------------------------------------------


def make_spmv() -> dict[str, Any]:
    rng = _rng(8)
    dim = 300
    dense = np.where(rng.random((dim, dim)) < 0.04, rng.uniform(-1, 1, (dim, dim)), 0.0).astype(f32)
    dense[7] = 0.0  # an empty row
    rows, cols = np.nonzero(dense)
    row_delimiters = np.zeros(dim + 1, np.int32)
    np.cumsum(np.bincount(rows, minlength=dim), out=row_delimiters[1:])
    row_lengths = np.diff(row_delimiters).astype(np.int32)
    width = int(row_lengths.max())
    ell_val = np.zeros((width, dim), f32)  # column-major: entry i of every row together
    ell_cols = np.zeros((width, dim), np.int32)
    for r in range(dim):
        cs = np.nonzero(dense[r])[0]
        ell_val[: len(cs), r] = dense[r, cs]
        ell_cols[: len(cs), r] = cs
    return {
        "dense": dense,
        "val": dense[rows, cols].astype(f32),
        "cols": cols.astype(np.int32),
        "rowDelimiters": row_delimiters,
        "rowLengths": row_lengths,
        "ell_val": ell_val.ravel(),
        "ell_cols": ell_cols.ravel(),
        "vec": rng.uniform(-1, 1, dim).astype(f32),
        "dim": dim,
    }


def expected_spmv(d: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"out": d["dense"].astype(np.float64) @ d["vec"].astype(np.float64)}


# --------------------------------------------------------------------------------------------------
# sgemm_parboil.cl: C = alpha * A * B^T + beta * C, column-major
# --------------------------------------------------------------------------------------------------


def make_sgemm() -> dict[str, Any]:
    rng = _rng(9)
    m, n, k = 256, 32, 24
    # column-major storage: A (m x k) is a (k, m) row-major array, B (n x k) a (k, n) one, C (m x n) an (n, m) one
    return {
        "A": rng.random((k, m), dtype=f32),
        "B": rng.random((k, n), dtype=f32),
        "C": rng.random((n, m), dtype=f32),
        "m": m,
        "n": n,
        "k": k,
        "alpha": 1.5,
        "beta": 0.5,
    }


def expected_sgemm(d: dict[str, Any]) -> dict[str, np.ndarray]:
    a, b, c = (d[x].astype(np.float64) for x in "ABC")
    return {"C": d["alpha"] * (b.T @ a) + d["beta"] * c}


# --------------------------------------------------------------------------------------------------
# stencil_parboil.cl: one 7-point Jacobi step
# --------------------------------------------------------------------------------------------------


def make_stencil() -> dict[str, Any]:
    nx, ny, nz = 34, 20, 12
    a0 = _rng(10).random((nz, ny, nx), dtype=f32)  # Index3D: i fastest, then j, then k
    return {"A0": a0, "nx": nx, "ny": ny, "nz": nz, "c0": 1.0 / 6.0, "c1": 1.0 / 6.0 / 6.0, "local": (8, 8)}


def expected_stencil(d: dict[str, Any]) -> dict[str, np.ndarray]:
    a = d["A0"].astype(np.float64)
    out = a.copy()  # boundary cells are not written: Anext starts as a copy of A0
    ring = (
        a[2:, 1:-1, 1:-1]
        + a[:-2, 1:-1, 1:-1]
        + a[1:-1, 1:-1, :-2]
        + a[1:-1, 1:-1, 2:]
        + a[1:-1, :-2, 1:-1]
        + a[1:-1, 2:, 1:-1]
    )
    out[1:-1, 1:-1, 1:-1] = ring * f32(d["c1"]) - a[1:-1, 1:-1, 1:-1] * f32(d["c0"])
    return {"Anext": out}


# --------------------------------------------------------------------------------------------------
# clpeak_vectors.cl: vec_mix and quantize8
# --------------------------------------------------------------------------------------------------


def make_clpeak() -> dict[str, Any]:
    rng = _rng(11)
    n, rows = 100, 128  # the arrays hold 128 rows; the kernel touches n of them
    halves = lambda *shape: (rng.integers(-8, 9, shape) / 2).astype(f32)  # noqa: E731 - exact products and sums
    nvec = 64
    return {
        "a": halves(rows, 4),
        "b": halves(rows, 8),
        "scale": tuple(float(v) for v in halves(8)),
        "bias": tuple(float(v) for v in halves(4)),
        "shift": (0.5, -1.0, 2.0),  # a float3 by value: 16 bytes, three of them given
        "n": n,
        "rows": rows,
        "src": (rng.integers(-400, 401, nvec * 8) / 8).astype(f32),  # v * 4 is a multiple of 1/2: ties included
        "inv_scale": 4.0,
        "nvec": nvec,
    }


def expected_clpeak(d: dict[str, Any]) -> dict[str, np.ndarray]:
    n = d["n"]
    a, b = d["a"][:n].astype(np.float64), d["b"][:n].astype(np.float64)
    scale, bias = np.array(d["scale"]), np.array(d["bias"])
    out8 = b * scale + np.concatenate([a, a[:, ::-1]], axis=1)
    out4 = (b[:, :4] + b[:, 4:]) * bias + b[:, 0::2] * b[:, 1::2]
    out3 = np.zeros((n, 4))
    out3[:, :3] = np.cross(a[:, :3], b[:, 5:8]) + np.array(d["shift"])
    outs = (a * b[:, 4:]).sum(axis=1) + (b[:, :4] * bias).sum(axis=1)
    quant = np.rint(d["src"].astype(np.float64) * d["inv_scale"]).astype(np.int32)  # rint: ties to even, as _rte
    return {"out8": out8, "out4": out4, "out3": out3, "outs": outs, "dst": quant}


# --------------------------------------------------------------------------------------------------
# particles_willems.comp: std430 struct with vec3 members, std140 uniform block with a vec3
# --------------------------------------------------------------------------------------------------

PARTICLE = np.dtype(
    {
        "names": ["pos", "mass", "vel", "color"],
        "formats": [("<f4", 3), "<f4", ("<f4", 3), ("<f4", 4)],
        "offsets": [0, 12, 16, 32],
        "itemsize": 48,
    }
)
"""std430 ``struct Particle { vec3 pos; float mass; vec3 vel; vec4 color; }``: 48 bytes, 4 of them padding."""


def make_particles() -> dict[str, Any]:
    rng = _rng(12)
    total, count = 1024, 1000
    particles = np.zeros(total, PARTICLE)
    particles["pos"] = rng.uniform(-1, 1, (total, 3))
    particles["mass"] = rng.uniform(0.5, 2.0, total)
    particles["vel"] = rng.uniform(-0.1, 0.1, (total, 3))
    particles["color"] = rng.uniform(0, 1, (total, 4))
    ubo = {
        "deltaT": 0.05,
        "attractor": (0.25, -0.5),
        "particleCount": count,
        "gravity": (0.0, -9.8, 0.0),
        "damping": 0.99,
    }
    return {"particles": particles, "ubo": ubo}


UBO_STD140 = np.dtype(
    {
        "names": ["deltaT", "attractor", "particleCount", "gravity", "damping"],
        "formats": ["<f4", ("<f4", 2), "<i4", ("<f4", 3), "<f4"],
        "offsets": [0, 8, 16, 32, 44],
        "itemsize": 48,
    }
)
"""std140 ``uniform UBO { float deltaT; vec2 attractor; int particleCount; vec3 gravity; float damping; }``."""


def particles_ubo_array(ubo: dict[str, Any]) -> np.ndarray:
    block = np.zeros(1, UBO_STD140)
    for name, value in ubo.items():
        block[name] = value
    return block


def expected_particles(d: dict[str, Any]) -> dict[str, np.ndarray]:
    p, ubo = d["particles"], d["ubo"]
    count = ubo["particleCount"]
    out = {name: p[name].astype(np.float64) for name in PARTICLE.names}
    pos, vel, mass = out["pos"][:count], out["vel"][:count], out["mass"][:count]
    to_attractor = np.array([*ubo["attractor"], 0.0]) - pos
    dist2 = (to_attractor**2).sum(axis=1) + 0.25
    accel = np.array(ubo["gravity"]) + to_attractor / (mass * dist2)[:, None]
    vel[:] = (vel + accel * ubo["deltaT"]) * ubo["damping"]
    pos += vel * ubo["deltaT"]
    out["color"][:count, 0] = np.clip(np.sqrt((vel**2).sum(axis=1)) * 0.1, 0.0, 1.0)
    return out


# --------------------------------------------------------------------------------------------------
# nbody_willems.comp: shared-memory tiles, specialization constants
# --------------------------------------------------------------------------------------------------

NBODY_SPEC = {"SHARED_DATA_SIZE": 64, "GRAVITY": 0.01, "POWER": 0.75, "SOFTEN": 0.05}


def make_nbody() -> dict[str, Any]:
    rng = _rng(13)
    count = 200  # not a multiple of the tile: the last tile is padded with zero-mass bodies
    particles = np.zeros((count, 8), f32)  # struct { vec4 pos; vec4 vel; }: 32 bytes of floats
    particles[:, :3] = rng.uniform(-1, 1, (count, 3))
    particles[:, 3] = rng.uniform(0.5, 1.0, count)
    particles[:, 4:7] = rng.uniform(-0.1, 0.1, (count, 3))
    particles[:, 7] = 7.0  # vel.w is kept
    return {"particles": particles, "ubo": {"deltaT": 0.05, "particleCount": count}, "spec": dict(NBODY_SPEC)}


def expected_nbody(d: dict[str, Any]) -> dict[str, np.ndarray]:
    p = d["particles"].astype(np.float64)
    s = d["spec"]
    pos, mass = p[:, :3], p[:, 3]
    length = pos[None, :, :] - pos[:, None, :]  # other - me
    soft = ((length**2).sum(axis=2) + s["SOFTEN"]) ** s["POWER"]
    accel = (s["GRAVITY"] * length * mass[None, :, None] / soft[:, :, None]).sum(axis=1)
    out = p.copy()
    out[:, 4:7] += d["ubo"]["deltaT"] * accel
    return {"particles": out}


# --------------------------------------------------------------------------------------------------
# binaryop_ncnn.comp: channel-major blobs with a padded cstep, push-constant shapes
# --------------------------------------------------------------------------------------------------


def cstep_of(w: int, h: int) -> int:
    """ncnn's channel stride: w * h rounded up to 16 bytes (4 floats)."""
    return -(-(w * h) // 4) * 4


def make_binaryop() -> dict[str, Any]:
    rng = _rng(14)
    w, h, c = 7, 5, 3
    cstep = cstep_of(w, h)  # 36, not 35
    a = np.full((c, cstep), -1.0, f32)
    a[:, : w * h] = rng.uniform(1, 2, (c, w * h))
    b_full = np.full((c, cstep), -1.0, f32)
    b_full[:, : w * h] = rng.uniform(1, 2, (c, w * h))
    b_channel = rng.uniform(1, 2, c).astype(f32)
    return {"a": a.ravel(), "b_full": b_full.ravel(), "b_channel": b_channel, "w": w, "h": h, "c": c, "cstep": cstep}


def binaryop_push(d: dict[str, Any], per_channel: bool) -> dict[str, int]:
    w, h, c, cstep = d["w"], d["h"], d["c"], d["cstep"]
    shape = {"dims": 3, "w": w, "h": h, "c": c, "cstep": cstep}
    b = {"dims": 1, "w": c, "h": 1, "c": 1, "cstep": c} if per_channel else shape
    return {
        **{f"a{k}": v for k, v in shape.items()},
        **{f"b{k}": v for k, v in b.items()},
        **{f"out{k}": v for k, v in shape.items()},
    }


def expected_binaryop(d: dict[str, Any], op_type: int, per_channel: bool) -> dict[str, np.ndarray]:
    w, h, c, cstep = d["w"], d["h"], d["c"], d["cstep"]
    a = d["a"].reshape(c, cstep)[:, : w * h].astype(np.float64)
    if per_channel:
        b = np.broadcast_to(d["b_channel"].astype(np.float64)[:, None], a.shape)
    else:
        b = d["b_full"].reshape(c, cstep)[:, : w * h].astype(np.float64)
    ops = {0: np.add, 1: np.subtract, 2: np.multiply, 3: np.divide, 4: np.maximum, 5: np.minimum}
    return {"valid": ops[op_type](a, b)}  # compare only the first w * h of each channel: the padding is untouched


# --------------------------------------------------------------------------------------------------
# add_ggml.comp: broadcasting add with ggml's push-constant block
# --------------------------------------------------------------------------------------------------


def make_ggml_add(broadcast: bool = True) -> dict[str, Any]:
    rng = _rng(15)
    ne0 = (10, 6, 3, 1)  # ggml order: ne00 is the fastest axis
    ne1 = (10, 1, 3, 1) if broadcast else ne0  # b broadcast along axis 1, or as large as a
    a = rng.uniform(-4, 4, ne0[::-1]).astype(f32)
    b = rng.uniform(-4, 4, ne1[::-1]).astype(f32)

    def strides(ne: tuple[int, ...]) -> tuple[int, ...]:
        return (1, ne[0], ne[0] * ne[1], ne[0] * ne[1] * ne[2])  # in elements, as the backend passes them

    push: dict[str, Any] = {"ne": int(np.prod(ne0))}
    for t, (ne, nb) in enumerate(((ne0, strides(ne0)), (ne1, strides(ne1)), (ne0, strides(ne0)))):
        for axis in range(4):
            push[f"ne{t}{axis}"] = ne[axis]
            push[f"nb{t}{axis}"] = nb[axis]
    push.update(misalign_offsets=0, param1=0.0, param2=0.0, param3=0)
    return {"a": a.ravel(), "b": b.ravel(), "push": push, "shape_a": a.shape, "shape_b": b.shape}


def expected_ggml_add(d: dict[str, Any]) -> dict[str, np.ndarray]:
    a = d["a"].reshape(d["shape_a"]).astype(np.float64)
    b = d["b"].reshape(d["shape_b"]).astype(np.float64)
    return {"d": (a + b).ravel()}


# --------------------------------------------------------------------------------------------------
# matmul_uvkcompute.comp: spec-constant sizes and tiles
# --------------------------------------------------------------------------------------------------


def make_matmul() -> dict[str, Any]:
    rng = _rng(16)
    m, n, k = 32, 32, 24
    spec = {"M": m, "N": n, "K": k, "WG_X": 4, "WG_Y": 8, "TILE_K": 8}
    return {"A": rng.random((m, k), dtype=f32), "B": rng.random((k, n), dtype=f32), "spec": spec}


def expected_matmul(d: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"C": d["A"].astype(np.float64) @ d["B"].astype(np.float64)}
