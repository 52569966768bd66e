"""The numerics suite's bit-exact cases: integer operations, float->int conversions, atomics under
contention and work-group barriers (accelcore.conformance.numerics.integer / .atomics).

Host tests check the numpy references against Python integers and the conversion rules, and that the
judges flag fabricated wrong results; device tests run every case on the first OpenCL and the first
Vulkan device (each passes, skips saying why, or is a dated expected failure) and feed deliberately
wrong kernels that the suite must flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_cli.expectations import DEFAULT_EXPECTATIONS, load_expectations, match_expectation
from accel_cli.inventory import discover

from accelcore.conformance.numerics import kernels, numerics_cases
from accelcore.conformance.numerics.atomics import (
    ADDRESSES,
    ATOMIC_OPS,
    AtomicOp,
    address_members,
    atomic_inputs,
    barrier_reference,
    check_atomic,
)
from accelcore.conformance.numerics.exact import compare_exact, hex32
from accelcore.conformance.numerics.integer import (
    CONVERSIONS,
    EDGE_WORDS,
    INT_OPS,
    Conversion,
    conversion_reference,
    conversion_sweep,
    int_sweep,
    out_of_range_behaviour,
)
from accelcore.conformance.report import CaseStatus
from accelcore.conformance.suite import run

from .conftest import run_wrong_glsl

EXPECTED = load_expectations(DEFAULT_EXPECTATIONS)
M = 0xFFFFFFFF
MINE: tuple[str, ...] = ("numerics.mul_hi", "numerics.rotate", "numerics.clz", "numerics.popcount")
MINE += ("numerics.add_sat", "numerics.convert-", "numerics.atomic-", "numerics.barrier-")


def _s(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


# --------------------------------------------------------------------------- references (host)

PYTHON = {
    ("mul_hi", "u32"): lambda a, b: (a * b) >> 32,
    ("mul_hi", "i32"): lambda a, b: ((_s(a) * _s(b)) >> 32) & M,
    ("rotate", "u32"): lambda a, b: ((a << (b % 32)) | (a >> (32 - b % 32))) & M,
    ("clz", "u32"): lambda a, b: 32 - a.bit_length(),
    ("popcount", "u32"): lambda a, b: bin(a).count("1"),
    ("add_sat", "u32"): lambda a, b: min(a + b, M),
    ("add_sat", "i32"): lambda a, b: max(-(1 << 31), min((1 << 31) - 1, _s(a) + _s(b))) & M,
}


@pytest.mark.parametrize("op", INT_OPS, ids=lambda op: op.case_id)
def test_integer_references_match_python_integers(op: Any) -> None:
    a, b = int_sweep(op.case_id, op.arity)
    pick = np.concatenate([np.arange(0, a.size, 7), np.arange(a.size - 2000, a.size)])  # edges and random words
    got = op.reference(a, b)
    python = PYTHON[(op.name, op.type)]
    for i in pick:
        assert int(got[i]) == python(int(a[i]), int(b[i])), (op.case_id, hex32(a[i]), hex32(b[i]))


def test_integer_sweeps_are_large_deterministic_and_hold_the_edges() -> None:
    for op in INT_OPS:
        a, b = int_sweep(op.case_id, op.arity)
        again = int_sweep(op.case_id, op.arity)
        assert a.size >= 1 << 16 and a.size % 256 == 0 and a.dtype == np.uint32
        assert np.array_equal(a, again[0]) and np.array_equal(b, again[1])
        for edge in (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 20, (1 << 20) - 1, (-(1 << 20)) & M):
            assert edge in set(a.tolist()), (op.case_id, hex32(edge))
    a, _ = int_sweep("numerics.clz.u32", 1)
    assert set(INT_OPS[3].reference(a, a).tolist()) == set(range(33))  # every clz value, 0..32
    pairs = int_sweep("numerics.add_sat.i32", 2)
    assert EDGE_WORDS.size**2 <= pairs[0].size  # every pair of edge words


def _cvt(target: str, rounding: str, saturate: bool) -> Conversion:
    return next(c for c in CONVERSIONS if (c.target, c.rounding, c.saturate) == (target, rounding, saturate))


def test_conversion_rules() -> None:
    x = np.array(
        [2.5, 3.5, -2.5, -1.5, 0.49999997, -0.99999994, 2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0,
         4294967040.0, 4294967296.0, np.nan, np.inf, -np.inf, -1e10, 1e10],
        dtype=np.float32,
    )  # fmt: skip
    rtz, in_rtz = conversion_reference(x, _cvt("i32", "rtz", False))
    assert [_s(int(v)) for v in rtz[:6]] == [2, 3, -2, -1, 0, 0]
    rte, _ = conversion_reference(x, _cvt("i32", "rte", False))
    assert [_s(int(v)) for v in rte[:6]] == [2, 4, -2, -2, 0, -1]  # ties to even
    assert in_rtz.tolist()[6:10] == [True, False, True, False]  # 2^31 - 128 fits, 2^31 does not, -2^31 does
    sat, _ = conversion_reference(x, _cvt("i32", "rtz", True))
    assert [_s(int(v)) for v in sat[12:]] == [0, (1 << 31) - 1, -(1 << 31), -(1 << 31), (1 << 31) - 1]  # NaN -> 0
    u, in_u = conversion_reference(x, _cvt("u32", "rtz", False))
    assert in_u.tolist()[5] and int(u[5]) == 0  # trunc(-0.99999994) = 0 fits an unsigned int
    assert in_u.tolist()[10:12] == [True, False] and int(u[10]) == 4294967040
    usat, _ = conversion_reference(x, _cvt("u32", "rte", True))
    assert [int(v) for v in usat[12:]] == [0, M, 0, 0, M]
    assert not in_u[12:].any()


def test_conversion_sweep_has_the_boundaries() -> None:
    x = conversion_sweep("numerics.convert-f32-i32.f32")
    assert x.size >= 1 << 16 and x.size % 256 == 0 and x.dtype == np.float32
    have = set(x[np.isfinite(x)].tolist())
    for value in (2147483648.0, 2147483520.0, -2147483648.0, -2147483904.0, 4294967296.0, 4294967040.0, 2.5, -0.5):
        assert value in have, value
    assert np.isnan(x).any() and np.isinf(x).any()
    finite = x[np.isfinite(x)]
    assert np.count_nonzero(finite == np.floor(finite) + 0.5) > 10_000  # halves for the rte cases


def test_exact_comparison_names_the_wrong_value() -> None:
    expected = np.arange(70_000, dtype=np.uint32)
    got = expected.copy()
    got[12_345] ^= 0x10
    got[60_000] = 0
    result = compare_exact(
        "numerics.x.u32",
        "opencl",
        promise="p",
        section="s",
        expected=expected,
        got=got,
        describe_inputs=lambda i: (str(i),),
    )
    assert not result.passed and result.mismatches == 2 and result.cell == "2 of 70000 wrong"
    assert result.first_index == 12_345 and result.worst_index == 60_000 and result.worst_distance == 60_000
    assert "12345" in result.summary() and "0x0000ea60" in result.summary()
    judged = np.ones(expected.size, dtype=bool)
    judged[[12_345, 60_000]] = False
    fine = compare_exact(
        "numerics.x.u32", "opencl", promise="p", section="s", expected=expected, got=got,
        describe_inputs=lambda i: (str(i),), judged=judged,
    )  # fmt: skip
    assert fine.passed and fine.cell == "exact" and fine.judged == expected.size - 2
    nothing = compare_exact(
        "numerics.x.u32", "opencl", promise="p", section="s", expected=expected, got=got,
        describe_inputs=lambda i: (str(i),), judged=np.zeros(expected.size, dtype=bool),
    )  # fmt: skip
    assert not nothing.passed and nothing.cell == "nothing judged (70000 values)"
    assert "NOTHING JUDGED" in nothing.summary()


def test_out_of_range_behaviour_is_described_not_judged() -> None:
    conversion = _cvt("i32", "rtz", False)
    x = np.array([1.0, np.nan, 3e9, -3e9, np.inf], dtype=np.float32)
    expected, judged = conversion_reference(x, conversion)
    got = expected.copy()
    got[~judged] = 0x80000000
    report = out_of_range_behaviour(x, got, conversion, judged)
    assert {k: v["behaviour"] for k, v in report.items()} == {
        "NaN": "0x80000000", "+inf": "0x80000000", "above": "0x80000000", "below": "0x80000000"
    }  # fmt: skip
    got[2] = 0x7FFFFFFF
    assert out_of_range_behaviour(x, got, conversion, judged)["above"]["behaviour"] == "0x7fffffff"


# --------------------------------------------------------------------------- atomics judge (host)


def _serial(op: AtomicOp, init: Any, values: Any, seed: int = 0) -> tuple[Any, Any]:
    """A legitimate outcome: every counter's operations applied in a random serial order."""
    rng = np.random.default_rng(seed)
    olds = np.zeros(2 * values.size, dtype=np.uint32)
    final = init.copy()
    for address, ids in enumerate(address_members(values.size)):
        order = ids[rng.permutation(ids.size)]
        v = values[order].astype(np.int64)
        start = int(init[address])
        if op.name == "add":
            seen = (start + np.concatenate([[0], np.cumsum(v)[:-1]])) & M
            end = (start + int(v.sum())) & M
        elif op.name in ("min", "max"):
            key = (lambda w: w.astype(np.uint32).view(np.int32).astype(np.int64)) if op.signed else (lambda w: w)
            keys = key(np.concatenate([[start], v]).astype(np.uint32))
            running = np.minimum.accumulate(keys) if op.name == "min" else np.maximum.accumulate(keys)
            seen, end = running[:-1] & M, int(running[-1]) & M
        elif op.name == "xchg":
            seen, end = np.concatenate([[start], v[:-1]]), int(v[-1])
        else:
            seen, end = start + np.arange(ids.size), start + ids.size
        slot = 2 * order + (0 if address == 0 else 1)
        olds[slot] = np.asarray(seen, dtype=np.int64).astype(np.uint32)
        final[address] = end
    return final, olds


@pytest.mark.parametrize("op", ATOMIC_OPS, ids=lambda op: op.case_id)
def test_atomic_judge_accepts_a_serial_order_and_flags_a_broken_one(op: AtomicOp) -> None:
    items = 4096  # the judge at a smaller size (the cases run ITEMS)
    init, values = atomic_inputs(op, items)
    final, olds = _serial(op, init, values)
    ok = check_atomic(op, init, values, final, olds)
    assert ok.wrong == 0, ok.problems
    bad_final = final.copy()
    bad_final[0] ^= 1
    flagged = check_atomic(op, init, values, bad_final, olds)
    assert flagged.finals_wrong >= 1 or flagged.returned_wrong >= 1
    assert flagged.first["counter"] == "0" and "counter 0" in flagged.problems[0]
    corrupt = olds.copy()
    if op.name in ("min", "max"):
        # a value beyond the extremum never was in the counter
        beyond = int(final[0]) + (-1 if op.name == "min" else 1)
        corrupt[2 * 7] = beyond & M
    else:
        corrupt[2 * 7] = corrupt[2 * 8]  # an operation that saw what another one saw (lost update, ticket twice)
    lost = check_atomic(op, init, values, final, corrupt)
    assert lost.returned_wrong >= 1 and "counter 0" in lost.problems[0], (op.case_id, lost.problems)


@pytest.mark.parametrize("op", [op for op in ATOMIC_OPS if op.name in ("min", "max")], ids=lambda op: op.case_id)
def test_atomic_min_max_judge_flags_a_lost_update_the_old_values_allow(op: AtomicOp) -> None:
    """A non-atomic read-modify-write: operation k read the counter before operation j's new extremum landed
    (k returns what j returned), so j's operand was overwritten unseen. Every old value is still 'the initial
    value or a moving operand' and the final value is right; only the seen-or-final rule catches it."""
    init, values = atomic_inputs(op, 4096)
    final, olds = _serial(op, init, values, seed=5)
    counter0 = olds[0::2].copy()
    signed = op.signed
    key = (lambda w: w.astype(np.uint32).view(np.int32).astype(np.int64)) if signed else (lambda w: w.astype(np.int64))
    moved = key(values) < key(counter0) if op.name == "min" else key(values) > key(counter0)
    # a j that moved the counter, not to the final value, whose operand exactly one operation (k) returned
    for j in np.flatnonzero(moved):
        seen_by = np.flatnonzero(counter0 == values[j])
        if values[j] != final[0] and seen_by.size == 1:
            k = int(seen_by[0])
            break
    else:
        pytest.fail("no moving operation to lose")
    assert check_atomic(op, init, values, final, olds).wrong == 0
    lost = olds.copy()
    lost[2 * k] = olds[2 * j]  # k saw what j saw: j's update was lost
    check = check_atomic(op, init, values, final, lost)
    assert check.finals_wrong == 0 and check.returned_wrong >= 1, check.problems
    assert "a lost update" in check.problems[0] and "counter 0" in check.problems[0]


def test_atomic_add_judge_counts_a_single_lost_update() -> None:
    op = ATOMIC_OPS[0]
    init, values = atomic_inputs(op, 4096)
    final, olds = _serial(op, init, values, seed=3)
    final[5] = (int(final[5]) - int(values[4])) & M  # item 4 (counter 5) lost its update
    check = check_atomic(op, init, values, final, olds)
    assert check.finals_wrong == 1 and "counter 5" in check.problems[0]


def test_barrier_reference_matches_a_loop() -> None:
    values = np.random.default_rng(1).integers(0, 1 << 32, 512, dtype=np.uint64).astype(np.uint32)
    neighbours, sums = barrier_reference(values)
    for g in range(4):
        block = [int(v) for v in values[g * 128 : (g + 1) * 128]]
        assert int(sums[g]) == sum(block) & M
        for lid in (0, 1, 64, 127):
            assert int(neighbours[g * 128 + lid]) == block[(lid + 1 + g % 127) % 128]


def test_cases_are_registered_for_both_apis() -> None:
    for api in ("opencl", "vulkan"):
        ids = [c.id for c in numerics_cases(api) if c.id.startswith(MINE)]
        assert len(ids) == len(INT_OPS) + len(CONVERSIONS) + len(ATOMIC_OPS) + 1 == len(set(ids))
        assert {"numerics.mul_hi.i32", "numerics.convert-f32-u32-sat-rte.f32", "numerics.atomic-cmpxchg.u32"} <= set(
            ids
        )
        assert "numerics.barrier-local.u32" in ids and "numerics.atomic-add.u32" in ids
    assert ADDRESSES == 17


# --------------------------------------------------------------------------- devices


def _first(provider: str) -> Any:
    inventory = discover([provider])
    if not inventory.devices:
        pytest.skip(f"no {provider} device here: {[p.reason for p in inventory.providers if not p.available]}")
    return inventory, inventory.devices[0]


def _run(provider: str, select: tuple[str, ...] = MINE) -> tuple[Any, Any]:
    inventory, entry = _first(provider)
    setup = inventory.family_of(entry).conformance(entry)
    cases = [c for c in setup.numerics_cases if c.id.startswith(select)]
    assert cases, f"the family offers none of {select}"
    return entry, run(setup.factory, setup.target, setup.hooks, cases, select=[c.id for c in cases])


@pytest.mark.parametrize("provider", ["opencl", "vulkan"])
def test_every_integer_case_passes_or_is_a_known_finding(provider: str) -> None:
    entry, report = _run(provider)
    assert len(report.cases) == len(INT_OPS) + len(CONVERSIONS) + len(ATOMIC_OPS) + 1
    problems = []
    ran = 0
    for result in report.cases:
        assert result.metrics.get("kind") == "numerics", result.id
        if result.status is CaseStatus.SKIPPED:
            assert provider == "vulkan" and "Kernel capability" in (result.reason or ""), result.id
            assert result.metrics["cell"] == "not in GLSL"
            continue
        ran += 1
        assert result.metrics["values"] >= 1 << 16 and result.metrics["judged"] > 0, result.id
        cell = result.metrics["cell"]
        assert cell.startswith("exact") or " wrong" in cell, cell
        if result.status is not CaseStatus.PASSED and match_expectation(EXPECTED, entry, result.id) is None:
            problems.append(f"{result.id}: {result.status.name} {result.reason}")
    assert ran >= 16
    assert not problems, "\n".join(problems)


def _patched_opencl(monkeypatch: pytest.MonkeyPatch, old: str, new: str) -> None:
    real = kernels.module_bytes

    def wrong(api: str, name: str) -> bytes:
        data = real(api, name)
        if api != "opencl" or old.encode() not in data:
            return data
        return data.replace(old.encode(), new.encode())

    assert old.encode() in real("opencl", "int") + real("opencl", "atomic") + real("opencl", "barrier")
    monkeypatch.setattr(kernels, "module_bytes", wrong)


def _failed_with_patched_opencl(monkeypatch: pytest.MonkeyPatch, case_id: str, old: str, new: str) -> Any:
    """Runs the one OpenCL case ``case_id`` with ``old`` replaced by ``new`` in its kernel source and returns
    its result, which must be FAILED: the wrong kernel is flagged, not passed."""
    _patched_opencl(monkeypatch, old, new)
    _, report = _run("opencl", (case_id,))
    (result,) = report.cases
    assert result.status is CaseStatus.FAILED, (result.status, result.reason)
    return result


def test_a_wrong_opencl_clz_of_zero_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _failed_with_patched_opencl(
        monkeypatch, "numerics.clz.u32", "r[i] = clz(a[i]);", "r[i] = a[i] == 0u ? 31u : clz(a[i]);"
    )
    assert "WRONG" in (result.reason or "")
    assert result.metrics["first"]["inputs"] == ["0x00000000 (0)"] and result.metrics["first"]["got"].startswith(
        "0x0000001f"
    )
    assert result.metrics["cell"].endswith("wrong")


def test_a_truncating_opencl_sat_rte_conversion_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _failed_with_patched_opencl(
        monkeypatch,
        "numerics.convert-f32-i32-sat-rte.f32",
        "r[i] = as_uint(convert_int_sat_rte(as_float(a[i])));",
        "r[i] = as_uint(convert_int_sat(as_float(a[i])));",
    )
    assert result.metrics["wrong_by_input"]["in range"] > 10_000  # every half (and more) rounds the wrong way


def test_an_opencl_atomic_add_with_one_extra_increment_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _failed_with_patched_opencl(
        monkeypatch,
        "numerics.atomic-add.u32",
        "o[2 * i] = atomic_add(&c[0], v[i]);",
        "o[2 * i] = atomic_add(&c[0], v[i] + (i == 4097 ? 1u : 0u));",
    )
    assert result.metrics["finals_wrong"] == 1 and result.metrics["returned_wrong"] >= 1
    assert "counter 0" in (result.reason or "")


def test_an_opencl_kernel_without_its_barriers_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    # without barrier() a work-item reads its neighbour's slot before the neighbour wrote it and the tree
    # steps race: on PoCL, Intel's CPU runtime and rusticl every group's sum and ~80 % of the reads are wrong
    result = _failed_with_patched_opencl(monkeypatch, "numerics.barrier-local.u32", "barrier(CLK_LOCAL_MEM_FENCE);", "")
    assert result.metrics["wrong_sums"] > result.metrics["groups"] // 2 and result.metrics["wrong_reads"] > 1000


def test_a_wrong_glsl_clz_is_flagged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # clz(0) = 0
    run_wrong_glsl(monkeypatch, tmp_path, "int", "v = uint(31 - findMSB(x));", "v = uint(31 - findMSB(x)) & 31u;")
    _, report = _run("vulkan", ("numerics.clz.u32",))
    (result,) = report.cases
    assert result.status is CaseStatus.FAILED and result.metrics["first"]["inputs"] == ["0x00000000 (0)"]
