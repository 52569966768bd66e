"""The OpenCL C signature reader's work grows with the source, not with its square: a source of
100,000 struct definitions (2.6 MB) is read in seconds (it took minutes while the repeated-name check
counted every name against the whole list). A hang guard with a wide margin, not a speed measurement."""

from __future__ import annotations

import time

from accelcore.opencl_signature import opencl_kernels

LIMIT_S = 30.0  # linear: ~2 s on the 2-core build machine; quadratic: ~4 min


def test_many_struct_definitions_are_read_in_bounded_time() -> None:
    structs = "".join(f"struct S{i} {{ int a; float b; }};\n" for i in range(100_000))
    source = (
        structs
        + "typedef struct { int a; float b; } S1;\n__kernel void k(__global int *x, struct S7 s) { x[0] = s.a; }\n"
    )
    started = time.monotonic()
    (kernel,) = opencl_kernels(source)
    elapsed = time.monotonic() - started
    assert elapsed < LIMIT_S, f"{elapsed:.1f} s for {len(source)} characters"
    _, s = kernel.parameters
    assert s.aggregate and s.aggregate_bytes == 8 and [m.name for m in s.aggregate_members] == ["a", "b"]
