"""``opencl.argument-layouts``: struct buffers laid out as Clang says run on the device as numpy says.

One kernel reads a buffer of each shape real projects use - a struct whose ``long`` member is aligned
to 8 (Rodinia's kmeans), a struct holding an array of structs and a ``float4`` (lavaMD), a
``packed`` struct, ``float3`` elements (16 bytes) and a union - and writes one float per work-item.
The arrays are built from the layouts Clang reports (:meth:`ElementLayout.numpy_dtype`); the case
checks that they pass the host check, that the mistakes users make (numpy's packed layout for the
kmeans struct, ``(N, 3)`` for ``float3``, the nested array flattened, a float64 union) are refused,
and that the device's answer is numpy's, bit for bit (small integer values: every sum is exact).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accelcore.conformance.case import CaseContext
from accelcore.conformance.layouts import layout_problems
from accelcore.contract.flags import MemoryDomain
from accelcore.kernels.opencl_signature import opencl_kernels
from accelcore.kernels.pack import pack_module

__all__ = ["LAYOUT_SOURCE", "argument_layouts"]

LAYOUT_SOURCE = """
typedef struct { float weight; long assign; float cost; } Pt;
typedef struct { int x; short y; } Inner;
typedef struct { char tag; Inner in[3]; float4 v; } Outer;
typedef struct __attribute__((packed)) { char c; int i; } Packed;
typedef union { int i; float f; } Bits;

__kernel void layouts(__global const Pt *p, __global const Outer *o, __global const Packed *k,
                      __global const float3 *v3, __global const Bits *u, __global float *out) {
    int i = get_global_id(0);
    out[i] = p[i].weight + (float)p[i].assign + p[i].cost + (float)o[i].tag + (float)o[i].in[2].x
           + (float)o[i].in[1].y + o[i].v.w + (float)k[i].c + (float)k[i].i + v3[i].z + u[i].f;
}
"""
_N = 64


def _arrays() -> tuple[dict[int, np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
    """The input arrays in Clang's layouts (slots 0..4), the output (slot 5) and numpy's answer."""
    (kernel,) = opencl_kernels(LAYOUT_SOURCE)
    dtypes = []
    for param in kernel.parameters[:5]:
        assert param.layout is not None, param.unknown
        dtype = param.layout.numpy_dtype()
        assert dtype is not None, param.layout.describe()
        dtypes.append(dtype)
    rng = np.random.default_rng(24)

    def small(*shape: int) -> np.ndarray[Any, Any]:
        return rng.integers(-8, 8, shape)  # every float sum stays exact

    p, o, k = (np.zeros(_N, d) for d in dtypes[:3])
    p["weight"], p["assign"], p["cost"] = small(_N), small(_N), small(_N)
    o["tag"], o["in"]["x"], o["in"]["y"], o["v"] = small(_N), small(_N, 3), small(_N, 3), small(_N, 4)
    k["c"], k["i"] = small(_N), small(_N)
    v3: np.ndarray[Any, Any] = small(_N, 4).astype(np.float32)  # float3: 16 bytes, the 4th lane padding
    u = np.zeros(_N, dtypes[4])
    u["f"] = small(_N)
    f = np.float32
    terms = [
        p["weight"], p["assign"].astype(f), p["cost"], o["tag"].astype(f), o["in"]["x"][:, 2].astype(f),
        o["in"]["y"][:, 1].astype(f), o["v"][:, 3], k["c"].astype(f), k["i"].astype(f), v3[:, 2], u["f"],
    ]  # fmt: skip
    expected = np.zeros(_N, f)
    for term in terms:
        expected = (expected + term.astype(f)).astype(f)
    return {0: p, 1: o, 2: k, 3: v3, 4: u, 5: np.zeros(_N, f)}, expected


def argument_layouts(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    arrays, expected = _arrays()
    p, o, u = arrays[0], arrays[1], arrays[4]
    packed = np.zeros(_N, [("weight", "<f4"), ("assign", "<i8"), ("cost", "<f4")])
    flattened = np.zeros(_N, {"names": ["tag", "in", "v"], "formats": ["i1", ("<i4", (6,)), ("<f4", (4,))],
                              "offsets": [0, 4, 32], "itemsize": o.dtype.itemsize})  # fmt: skip
    mismatches: list[tuple[str, int, Any]] = [
        (f"numpy's packed layout ({packed.itemsize} bytes) for Pt ({p.dtype.itemsize} bytes)", 0, packed),
        ("Outer with its array of structs flattened to int32[6]", 1, flattened),
        ("float3 elements as an (N, 3) float32 array", 3, np.zeros((_N, 3), np.float32)),
        ("a float64 array for a union of int and float", 4, np.zeros(_N, np.float64)),
        ("a structured array for a float* output", 5, np.zeros(_N, u.dtype)),
    ]
    domain = ctx.target.fixtures[0].domain if ctx.target.fixtures else MemoryDomain.HOST
    package = pack_module(LAYOUT_SOURCE.encode(), global_size=_N)
    problems = layout_problems(session, context, queue, package, arrays, {5: expected}, mismatches, domain)
    session.destroy_queue(queue)
    session.destroy_context(context)
    ctx.check(not problems, "; ".join(problems))
