"""The OpenCL C signature reader (Clang's front end in a bounded child) ends every source in bounded
time: a large source is read, a macro bomb ends in a contained BackendError or unknown types — never a
hang, a crash of this process or a guessed type. Hang guards with wide margins, not speed measurements."""

from __future__ import annotations

import time

import pytest

from accelcore import BackendError, ErrorKind
from accelcore.kernels.opencl_signature import TIMEOUT_ENV, opencl_kernels
from accelcore.kernels.values import ScalarType, ValueType

LIMIT_S = 30.0


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
"""Each macro names the previous one eight times: a full expansion of A9 is 8^9 words."""


def test_exponential_macro_chains_end_in_bounded_time_and_are_never_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, "8")
    members = " ".join(f"A9 m{j};" for j in range(50))
    source = CHAIN + f"struct S {{ {members} }};\n__kernel void k(__global int *p, struct S s, A9 v) {{ p[0] = 1; }}\n"
    started = time.monotonic()
    try:
        kernels = opencl_kernels(source)
    except BackendError as exc:
        assert exc.kind in (ErrorKind.RESOURCE_LIMIT, ErrorKind.INVALID_ARGUMENT), exc
    else:
        _, s, v = kernels[0].parameters
        assert s.unknown and v.unknown  # a layout Clang could not finish is never believed
    assert time.monotonic() - started < LIMIT_S


def test_a_long_macro_used_many_times_is_bounded() -> None:
    members = " ".join(f"B m{j};" for j in range(2000))
    source = (
        f"#define B {'x' * 100_000}\nstruct S {{ {members} }};\n__kernel void k(__global int *p, struct S s) {{ }}\n"
    )
    started = time.monotonic()
    (kernel,) = opencl_kernels(source)
    assert time.monotonic() - started < LIMIT_S
    assert kernel.parameters[1].unknown and kernel.parameters[1].aggregate_bytes is None  # 'x...' names no type


def test_ordinary_macros_still_expand() -> None:
    source = "#define REAL float\n#define N 2\ntypedef struct { REAL a; REAL b[N]; } P;\n"
    source += "__kernel void k(__global REAL *p, P s, REAL c) { p[0] = c; }\n"
    (kernel,) = opencl_kernels(source)
    p, s, c = kernel.parameters
    assert s.aggregate_bytes == 12 and [m.count for m in s.aggregate_members] == [1, 2]
    assert c.value_type == ValueType(ScalarType.F32) == p.value_type and p.address_space == "global"
