"""The OpenCL C signature reader's work grows with the source, not with its square: a source of
100,000 struct definitions (2.6 MB) is read in seconds (it took minutes while the repeated-name check
counted every name against the whole list). A hang guard with a wide margin, not a speed measurement."""

from __future__ import annotations

import time

from accelcore.opencl_signature import opencl_kernels
from accelcore.values import ScalarType, ValueType

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


CHAIN = "#define A0 int\n" + "".join(f"#define A{i} " + " ".join([f"A{i - 1}"] * 8) + "\n" for i in range(1, 10))
"""Each macro names the previous one eight times: a full expansion of A9 is 8^9 words (it hung)."""


def test_exponential_macro_chains_are_abandoned_and_stay_unknown() -> None:
    members = " ".join(f"A9 m{j};" for j in range(50))
    source = CHAIN + f"struct S {{ {members} }};\n__kernel void k(__global int *p, struct S s, A9 v) {{ p[0] = 1; }}\n"
    started = time.monotonic()
    (kernel,) = opencl_kernels(source)
    assert time.monotonic() - started < LIMIT_S
    _, s, v = kernel.parameters
    assert s.aggregate and s.aggregate_bytes is None  # layout unknown: a value for it is refused, not guessed
    assert v.value_type is None


def test_a_long_macro_used_many_times_is_abandoned_in_one_round() -> None:
    members = " ".join(f"B m{j};" for j in range(2000))
    source = (
        f"#define B {'x' * 100_000}\nstruct S {{ {members} }};\n__kernel void k(__global int *p, struct S s) {{ }}\n"
    )
    started = time.monotonic()
    (kernel,) = opencl_kernels(source)
    assert time.monotonic() - started < LIMIT_S  # one full round would build a 200 MB string
    assert kernel.parameters[1].aggregate_bytes is None


def test_ordinary_macros_still_expand() -> None:
    source = "#define REAL float\n#define N 2\ntypedef struct { REAL a; REAL b[N]; } P;\n"
    source += "__kernel void k(__global REAL *p, P s, REAL c) { p[0] = c; }\n"
    (kernel,) = opencl_kernels(source)
    p, s, c = kernel.parameters
    assert s.aggregate_bytes == 12 and [m.count for m in s.aggregate_members] == [1, 2]
    assert c.value_type == ValueType(ScalarType.F32) == p.value_type and p.address_space == "global"
