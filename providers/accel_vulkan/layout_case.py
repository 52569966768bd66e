"""``vulkan.argument-layouts``: std430 and std140 blocks laid out as the module says run as numpy says.

One shader reads a std430 buffer of ``struct { vec3 pos; float scale; Inner inner[2]; }`` (a vec3
followed by a float in its padding, an array of structs) and a std140 uniform block with a
``float[3]`` (each element on a 16-byte stride), a ``uvec2`` and a ``vec4``, and writes one float per
invocation. The arrays are built from the layouts the module's decorations give
(:meth:`ElementLayout.numpy_dtype`); the case checks that they pass the host check, that the
mistakes users make (``(N, 3)`` rows, the struct without its padding, a float64 or tightly packed
uniform block) are refused, and that the device's answer is numpy's bit for bit (small integers).
Skipped, with the reason, without glslangValidator (the shader is compiled at run time).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accelcore.api import declared_elements
from accelcore.conformance.case import CaseContext
from accelcore.conformance.layouts import layout_problems
from accelcore.contract.flags import MemoryDomain
from accelcore.kernels.pack import pack_module

from . import argument_kernels

__all__ = ["LAYOUT_SHADER", "argument_layouts"]

LAYOUT_SHADER = """#version 450
layout(local_size_x = 16) in;
struct Inner { int x; float y; };
struct Particle { vec3 pos; float scale; Inner inner[2]; };
layout(std430, binding = 0) readonly buffer Particles { Particle particles[]; };
layout(std140, binding = 1) uniform Params { float w[3]; uvec2 shift; vec4 bias; };
layout(std430, binding = 2) writeonly buffer Result { float result[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    Particle p = particles[i];
    result[i] = p.pos.x + p.pos.y * w[0] + p.pos.z * w[1] + p.scale * w[2] + float(p.inner[1].x) + p.inner[0].y
              + float(shift.y) + bias.w;
}
"""
_N = 64


def argument_layouts(ctx: CaseContext) -> None:
    if argument_kernels.glslang_path() is None:
        ctx.skip("glslangValidator is not installed (Debian: glslang-tools); the shader is compiled at run time")
    package = pack_module(argument_kernels.compile_glsl(LAYOUT_SHADER), global_size=_N)
    declared = declared_elements(package)
    dtypes = {
        slot: param.element_layout.numpy_dtype() if param.element_layout else None for slot, param in declared.items()
    }
    if any(d is None for d in dtypes.values()):
        ctx.check(False, f"a block has no numpy dtype: { {s: p.element_layout for s, p in declared.items()} }")
        return
    rng = np.random.default_rng(25)
    f = np.float32
    particles = np.zeros(_N, dtypes[0])
    particles["pos"] = rng.integers(-8, 8, (_N, 3))
    particles["scale"] = rng.integers(-8, 8, _N)
    particles["inner"]["x"] = rng.integers(-8, 8, (_N, 2))
    particles["inner"]["y"] = rng.integers(-8, 8, (_N, 2))
    params = np.zeros(1, dtypes[1])
    weights = np.array([2, -1, 3], f)
    params["w"]["v"][0] = weights
    params["shift"], params["bias"] = (5, 7), (1, 2, 3, 4)
    pos = particles["pos"]
    terms = [
        pos[:, 0], pos[:, 1] * weights[0], pos[:, 2] * weights[1], particles["scale"] * weights[2],
        particles["inner"]["x"][:, 1].astype(f), particles["inner"]["y"][:, 0], np.full(_N, 7, f), np.full(_N, 4, f),
    ]  # fmt: skip
    expected = np.zeros(_N, f)
    for term in terms:
        expected = (expected + term.astype(f)).astype(f)
    tight = np.zeros(1, [("w", "<f4", 3), ("shift", "<u4", 2), ("bias", "<f4", 4)])
    mismatches: list[tuple[str, int, Any]] = [
        ("Particle rows as an (N, 3) float32 array", 0, np.zeros((_N, 3), np.float32)),
        ("Particle without its padding (vec3 then the array of structs at 12)",
         0, np.zeros(_N, {"names": ["pos", "scale"], "formats": [("<f4", (3,)), "<f4"], "offsets": [0, 12]})),
        ("the std140 block packed tightly (w[3] on a 4-byte stride)", 1, tight),
        ("the std140 block as float64 values", 1, np.zeros(params.itemsize // 8, np.float64)),
    ]  # fmt: skip
    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    domain = (
        MemoryDomain.HOST if ctx.info.capabilities.supports_memory_domain(MemoryDomain.HOST) else MemoryDomain.DEVICE
    )
    arrays = {0: particles, 1: params, 2: np.zeros(_N, f)}
    problems = layout_problems(session, context, queue, package, arrays, {2: expected}, mismatches, domain)
    session.destroy_queue(queue)
    session.destroy_context(context)
    ctx.check(not problems, "; ".join(problems))
