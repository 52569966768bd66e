"""32-bit atomics under contention and work-group barriers (``numerics.atomic-<op>.<type>``,
``numerics.barrier-local.u32``).

Atomics: one launch of :data:`ITEMS` work-items; work-item i applies the operation to counter 0 (every
work-item hammers it) and to counter 1 + i % 16 (1/16 of them share each), and stores what both calls
returned (OpenCL C 1.2 ``atomic_add`` / ``atomic_min`` / ``atomic_max`` / ``atomic_xchg`` /
``atomic_cmpxchg`` on ``__global`` uint or int; GLSL ``atomicAdd`` / ``atomicMin`` / ``atomicMax`` /
``atomicExchange`` / ``atomicCompSwap`` on a storage buffer). Judged exactly per counter
(:func:`check_atomic`): the final value, and that the returned old values are the ones some serial
order of the operations would return:

- add: final = initial + Σ operands (mod 2^32); the old values, sorted by their distance from the
  initial value, form one chain (each = the previous + that operation's operand) — a lost or doubled
  update breaks it;
- min / max: final = the extremum of the initial value and the operands; every old value is the initial
  value or an operand that lowered (raised) the counter, some operation saw the initial value, and every
  operand that lowered (raised) it was returned by some operation or is the final value (else a later
  operation overwrote it unseen: a lost update);
- xchg: the old values plus the final value are a permutation of the operands plus the initial value;
- cmpxchg: a compare-and-swap loop takes a ticket (the value it incremented): the tickets are exactly
  initial, initial + 1, …, initial + n - 1 (each caller one, none twice) and the final value is initial + n.

Barrier: work-groups of 128; each work-item writes its input to local/shared memory, and after a
barrier reads a neighbour's, s[(lid + k) % 128] with k = 1 + group % 127 (a missing barrier reads a
stale value); after another barrier the group sums s by a tree reduction with a barrier between steps
(OpenCL ``barrier(CLK_LOCAL_MEM_FENCE)``; GLSL ``memoryBarrierShared(); barrier();``). Every read value
and every group's sum (mod 2^32) judged exactly against numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ..case import CaseContext, ConformanceCase
from .exact import MASK, U32, ExactResult, compare_exact, hex32, rng_for, run_once, words
from .kernels import OPENCL, conclude

__all__ = [
    "ADDRESSES",
    "ATOMIC_OPS",
    "BARRIER_GROUP",
    "ITEMS",
    "AtomicCheck",
    "AtomicOp",
    "atomic_cases",
    "atomic_inputs",
    "barrier_cases",
    "barrier_reference",
    "check_atomic",
]

ITEMS = 1 << 18
"""Work-items of one atomic launch (each does two atomic operations)."""
ADDRESSES = 17
"""Counter 0 (all work-items) and counters 1..16 (1/16 of them each)."""
BARRIER_GROUP = 128
BARRIER_ITEMS = 1 << 16
_GOLDEN = 0x9E3779B1
I64 = npt.NDArray[np.int64]

OPENCL_ATOMIC_SECTION = "OpenCL C 1.2 §6.12.11 Atomic Functions (32-bit, __global)"
VULKAN_ATOMIC_SECTION = "GLSL 4.50 §8.11 Atomic Memory Functions (OpAtomic*, storage buffer)"
OPENCL_BARRIER_SECTION = "OpenCL C 1.2 §6.12.8 Synchronization Functions (barrier, CLK_LOCAL_MEM_FENCE)"
VULKAN_BARRIER_SECTION = (
    "GLSL 4.50 §8.16 Shader Invocation Control / §8.17 Shader Memory Control (barrier, memoryBarrierShared)"
)


@dataclass(frozen=True)
class AtomicOp:
    name: str
    type: str
    kernel: str
    """OpenCL kernel in numerics_atomic.cl."""
    selector: int
    """GLSL FN in numerics_atomic.comp."""
    promise: str

    @property
    def case_id(self) -> str:
        return f"numerics.atomic-{self.name}.{self.type}"

    @property
    def signed(self) -> bool:
        return self.type == "i32"


_SERIAL = "old values from a serial order"
ATOMIC_OPS: tuple[AtomicOp, ...] = (
    AtomicOp("add", "u32", "atomic_add_u32", 0, "final = initial + sum of operands (mod 2^32); old values: one chain"),
    AtomicOp("min", "u32", "atomic_min_u32", 1, f"final = min(initial, operands); {_SERIAL}"),
    AtomicOp("max", "u32", "atomic_max_u32", 2, f"final = max(initial, operands); {_SERIAL}"),
    AtomicOp("min", "i32", "atomic_min_i32", 3, f"final = min(initial, operands), signed; {_SERIAL}"),
    AtomicOp("max", "i32", "atomic_max_i32", 4, f"final = max(initial, operands), signed; {_SERIAL}"),
    AtomicOp("xchg", "u32", "atomic_xchg_u32", 5, "old values + final = a permutation of operands + initial"),
    AtomicOp("cmpxchg", "u32", "atomic_cmpxchg_u32", 6, "CAS tickets initial ... initial + n - 1 once each; final + n"),
)


def address_members(items: int = ITEMS) -> list[npt.NDArray[np.int64]]:
    """The work-items operating on each counter: all of them on 0, i % 16 == k - 1 on counter k."""
    ids = np.arange(items, dtype=np.int64)
    return [ids] + [ids[(ids & 15) == k] for k in range(16)]


def atomic_inputs(op: AtomicOp, items: int = ITEMS) -> tuple[U32, U32]:
    """(initial counters, operands), deterministic from the case id. For min (max) counter 0 starts at the
    type's maximum (minimum), so its final value is the operands' extremum; the others start random."""
    rng = rng_for(op.case_id)
    init = rng.integers(0, 1 << 32, ADDRESSES, dtype=np.uint64).astype(np.uint32)
    if op.name == "add":
        values = rng.integers(1, 4097, items, dtype=np.uint64).astype(np.uint32)
        init[0] = 0xF8000000 + int(rng.integers(0, 1 << 20))  # the sum (~2^27) wraps past 2^32
    elif op.name in ("min", "max"):
        values = rng.integers(0, 1 << 32, items, dtype=np.uint64).astype(np.uint32)
        extreme = {("min", "u32"): MASK, ("max", "u32"): 0, ("min", "i32"): 0x7FFFFFFF, ("max", "i32"): 0x80000000}
        init[0] = extreme[(op.name, op.type)]
    elif op.name == "xchg":
        offset = int(rng.integers(0, 1 << 32))
        ids = np.arange(items + ADDRESSES, dtype=np.uint64)
        distinct = ((ids * np.uint64(_GOLDEN) + np.uint64(offset)) & np.uint64(MASK)).astype(np.uint32)
        values, init = distinct[:items], distinct[items:]  # all different (an odd multiplier is a bijection)
    else:
        values = np.zeros(items, dtype=np.uint32)
        init = rng.integers(1, 1 << 31, ADDRESSES, dtype=np.uint64).astype(np.uint32)
    return init.astype(np.uint32), values.astype(np.uint32)


@dataclass
class AtomicCheck:
    """What :func:`check_atomic` found: counts and the first problem, per counter."""

    finals_wrong: int = 0
    returned_wrong: int = 0
    problems: list[str] = field(default_factory=list)
    first: dict[str, str] = field(default_factory=dict)
    serialization_breaks: int | None = None
    """Counter 0 (add, cmpxchg): how often consecutive operations in the serial order came from work-items
    that are not consecutive — evidence that the launch interleaved (not judged)."""

    @property
    def wrong(self) -> int:
        return self.finals_wrong + self.returned_wrong

    def _problem(self, text: str, address: int, expected: str, got: str) -> None:
        self.problems.append(text)
        if not self.first:
            self.first = {"counter": str(address), "expected": expected, "got": got, "problem": text}


def _key(values: U32, signed: bool) -> I64:
    v = np.asarray(values, dtype=np.uint32)
    return v.view(np.int32).astype(np.int64) if signed else v.astype(np.int64)


def _breaks(order_ids: npt.NDArray[np.int64]) -> int:
    return int(np.count_nonzero(np.diff(order_ids) != 1))


def check_atomic(op: AtomicOp, init: U32, values: U32, final: U32, olds: U32) -> AtomicCheck:
    """Judge one launch: ``init``/``final`` the 17 counters before/after, ``values`` each work-item's operand,
    ``olds`` the two returned values of each work-item (counter 0, then its own counter)."""
    check = AtomicCheck()
    members = address_members(values.size)
    returned = [olds[0::2], olds[1::2]]
    for address, ids in enumerate(members):
        old = (returned[0] if address == 0 else returned[1][ids]).astype(np.uint32)
        operand = values[ids]
        start, end = int(init[address]), int(final[address])
        n = ids.size
        where = f"counter {address} ({n} operations)"
        if op.name == "add":
            want = (start + int(operand.astype(np.int64).sum())) & MASK
            relative = (old.astype(np.int64) - start) & MASK
            order = np.argsort(relative, kind="stable")
            chain = relative[order]
            steps = operand[order].astype(np.int64)
            broken = int(chain[0] != 0) + int(np.count_nonzero(chain[1:] != chain[:-1] + steps[:-1]))
            if broken:
                at = int(np.flatnonzero(np.concatenate([[chain[0] != 0], chain[1:] != chain[:-1] + steps[:-1]]))[0])
                expected_old = 0 if at == 0 else int(chain[at - 1] + steps[at - 1])
                check.returned_wrong += broken
                want_old, got_old = hex32(start + expected_old), hex32(start + int(chain[at]))
                check._problem(
                    f"{where}: the returned old values break the chain {broken} times (a lost or doubled update); "
                    f"first at position {at}: expected {want_old}, got {got_old}",
                    address,
                    want_old,
                    got_old,
                )
            if address == 0:
                check.serialization_breaks = _breaks(ids[order])
        elif op.name in ("min", "max"):
            keys = _key(np.concatenate([[start], operand]).astype(np.uint32), op.signed)
            want_key = int(keys.min() if op.name == "min" else keys.max())
            want = want_key & MASK
            old_keys, operand_keys = _key(old, op.signed), keys[1:]
            moved = operand_keys < old_keys if op.name == "min" else operand_keys > old_keys
            allowed = np.concatenate([[keys[0]], operand_keys[moved]])
            bad = ~np.isin(old_keys, allowed)
            unseen_start = not bool(np.any(old_keys == keys[0]))
            # in a serial order an operation that moved the counter left its operand there: the next
            # operation returned it, or it is the final value; one nobody saw was overwritten (lost update)
            lost = np.unique(operand_keys[moved])
            lost = lost[~np.isin(lost, old_keys) & (lost != want_key)]
            if lost.size:
                check.returned_wrong += int(lost.size)
                check._problem(
                    f"{where}: {lost.size} operands {'lowered' if op.name == 'min' else 'raised'} the counter but "
                    "no operation returned them and the final value is not one of them (a lost update); first "
                    f"{hex32(int(lost[0]))}",
                    address,
                    f"{hex32(int(lost[0]))} returned by the next operation",
                    "never returned",
                )
            if bad.any() or unseen_start:
                count = int(bad.sum()) + int(unseen_start)
                check.returned_wrong += count
                got = hex32(old[int(np.flatnonzero(bad)[0])]) if bad.any() else "no operation saw it"
                check._problem(
                    f"{where}: {int(bad.sum())} returned values are neither the initial value nor an operand that "
                    f"{'lowered' if op.name == 'min' else 'raised'} the counter"
                    + ("; no operation returned the initial value" if unseen_start else ""),
                    address,
                    f"initial {hex32(start)} or a moving operand",
                    got,
                )
        elif op.name == "xchg":
            written = np.sort(np.concatenate([operand, [start]]).astype(np.uint32))
            seen = np.sort(np.concatenate([old, [end]]).astype(np.uint32))
            differ = int(np.count_nonzero(written != seen))
            if differ:
                at = int(np.flatnonzero(written != seen)[0])
                check.returned_wrong += differ
                check._problem(
                    f"{where}: the old values and the final value are not a permutation of the operands and the "
                    f"initial value ({differ} positions differ after sorting)",
                    address,
                    hex32(written[at]),
                    hex32(seen[at]),
                )
            # the final value is the last operation's operand (some operand; the initial value if none ran)
            want = end if bool(np.any(operand == end)) or (n == 0 and end == start) else -1
        else:
            want = (start + n) & MASK
            tickets = np.sort(old.astype(np.int64))
            expected_tickets = start + np.arange(n, dtype=np.int64)
            differ = int(np.count_nonzero(tickets != expected_tickets))
            if differ:
                at = int(np.flatnonzero(tickets != expected_tickets)[0])
                duplicates = n - np.unique(old).size
                check.returned_wrong += differ
                check._problem(
                    f"{where}: the compare-and-swap tickets are not {hex32(start)} … {hex32(start + n - 1)} once each "
                    f"({differ} differ after sorting, {duplicates} duplicated)",
                    address,
                    hex32(expected_tickets[at]),
                    hex32(tickets[at]),
                )
            if address == 0:
                check.serialization_breaks = _breaks(ids[np.argsort(old.astype(np.int64), kind="stable")])
        if end != want:
            wanted = "one of the operands" if want < 0 else hex32(want)
            check.finals_wrong += 1
            check._problem(f"{where}: final value {hex32(end)}, expected {wanted}", address, wanted, hex32(end))
    return check


def _atomic_case(op: AtomicOp, api: str) -> ConformanceCase:
    def body(ctx: CaseContext) -> None:
        init, values = atomic_inputs(op, ITEMS)
        zeros = np.zeros(ADDRESSES, dtype=np.uint32)
        counters, signed_counters = (zeros, init) if op.signed else (init, zeros)
        out = run_once(
            ctx,
            api,
            "atomic",
            entry=op.kernel,
            selector=op.selector,
            global_size=ITEMS,
            buffers=[counters, signed_counters, values, np.zeros(2 * ITEMS, np.uint32)],
            what=f"{op.kernel} x {ITEMS}",
        )
        final = words(out[1] if op.signed else out[0])
        untouched = words(out[0] if op.signed else out[1])
        check = check_atomic(op, init, values, final, words(out[3]))
        result = ExactResult(
            op.case_id,
            api,
            promise=op.promise,
            section=OPENCL_ATOMIC_SECTION if api == OPENCL else VULKAN_ATOMIC_SECTION,
            values=2 * ITEMS + ADDRESSES,
            judged=2 * ITEMS + ADDRESSES,
            mismatches=check.wrong,
        )
        if check.first:
            result.first_index = result.worst_index = int(check.first["counter"])
            result.first_inputs = result.worst_inputs = (f"counter {check.first['counter']}",)
            result.first_expected = result.worst_expected = check.first["expected"]
            result.first_got = result.worst_got = check.first["got"]
        result.notes.extend(check.problems[:3])
        if np.any(untouched != 0):
            result.mismatches += 1
            result.notes.append("the other counter buffer (not operated on) changed")
        result.extra.update(
            {
                "type": op.type,
                "work_items": ITEMS,
                "counters": ADDRESSES,
                "finals_wrong": check.finals_wrong,
                "returned_wrong": check.returned_wrong,
                "final": hex32(final[0]),
            }
        )
        if check.serialization_breaks is not None:
            result.extra["serialization_breaks"] = check.serialization_breaks
            result.notes.append(
                f"counter 0's serial order switched work-items {check.serialization_breaks} times (interleaving; "
                "not judged)"
                if check.serialization_breaks
                else "counter 0's operations ran in work-item order (no interleaving seen; not judged)"
            )
        conclude(ctx, result)

    return ConformanceCase(
        op.case_id,
        body,
        mandatory=False,
        description=f"atomic {op.name} on {op.type}, {ITEMS} work-items on 1 and 16 counters, exact",
    )


def atomic_cases(api: str) -> tuple[ConformanceCase, ...]:
    return tuple(_atomic_case(op, api) for op in ATOMIC_OPS)


# --------------------------------------------------------------------------- barrier


def barrier_reference(values: U32, group: int = BARRIER_GROUP) -> tuple[U32, U32]:
    """(neighbour read by each work-item, each group's sum mod 2^32) of the barrier kernel."""
    count = values.size
    ids = np.arange(count, dtype=np.int64)
    groups, lids = ids // group, ids % group
    neighbour = groups * group + (lids + 1 + groups % (group - 1)) % group
    sums = values.astype(np.uint64).reshape(-1, group).sum(axis=1) & np.uint64(MASK)
    return values[neighbour].astype(np.uint32), sums.astype(np.uint32)


def _barrier_case(api: str) -> ConformanceCase:
    case_id = "numerics.barrier-local.u32"

    def body(ctx: CaseContext) -> None:
        values = rng_for(case_id).integers(0, 1 << 32, BARRIER_ITEMS, dtype=np.uint64).astype(np.uint32)
        groups = BARRIER_ITEMS // BARRIER_GROUP
        out = run_once(
            ctx,
            api,
            "barrier",
            entry="barrier_local_u32",
            selector=None,
            global_size=BARRIER_ITEMS,
            buffers=[values, np.zeros(BARRIER_ITEMS, np.uint32), np.zeros(groups, np.uint32)],
            what=f"barrier_local_u32 x {BARRIER_ITEMS}",
        )
        neighbours, sums = barrier_reference(values)
        got = np.concatenate([words(out[1]), words(out[2])])

        def inputs(i: int) -> tuple[str, ...]:
            if i < BARRIER_ITEMS:
                g, lid = divmod(i, BARRIER_GROUP)
                return (f"work-item {i} (group {g}, lid {lid}) reading lid {(lid + 1 + g % 127) % BARRIER_GROUP}",)
            return (f"group {i - BARRIER_ITEMS}'s sum",)

        result = compare_exact(
            case_id,
            api,
            promise="every neighbour read after the barrier and every group's tree-reduced sum exact",
            section=OPENCL_BARRIER_SECTION if api == OPENCL else VULKAN_BARRIER_SECTION,
            expected=np.concatenate([neighbours, sums]),
            got=got,
            describe_inputs=inputs,
        )
        wrong_reads = int(np.count_nonzero(got[:BARRIER_ITEMS] != neighbours))
        result.extra.update(
            {
                "type": "u32",
                "work_items": BARRIER_ITEMS,
                "group_size": BARRIER_GROUP,
                "groups": groups,
                "wrong_reads": wrong_reads,
                "wrong_sums": result.mismatches - wrong_reads,
            }
        )
        conclude(ctx, result)

    return ConformanceCase(
        case_id,
        body,
        mandatory=False,
        description="local/shared memory with work-group barriers: neighbour reads and tree-reduced sums, exact",
    )


def barrier_cases(api: str) -> tuple[ConformanceCase, ...]:
    return (_barrier_case(api),)
