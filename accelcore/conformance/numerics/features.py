"""Feature cases of the numerics suite: the per-operation denormal report (``numerics.denormals.f32``) and
subgroups (``numerics.subgroup-size``, ``numerics.subgroup-reduce-add.u32``, ``numerics.subgroup-broadcast.u32``).

Denormals (docs/numerics.md "Denormals"): one launch of ``numerics_denorm`` applies add, sub, mul, div,
sqrt, fma and a plain copy to hand-made operands, in two kinds of probe per operation: subnormal
*inputs* whose exact result is normal (``s + 2^-126``, ``s * 2^24``, ``sqrt(s)``...: a device that flushes
inputs gives the result of the flushed operands) and normal inputs whose exact result is *subnormal*
(``k·2^-119 * 2^-30 = k·2^-149``...: a device that flushes results gives ±0). Every expected value is
exact; each value is ``kept`` (within the operation's limit of the exact value: bit-equal for the
correctly rounded ones), ``flushed`` (the flushed reading) or ``wrong`` (neither: always a failure).
OpenCL: a device that reports CL_FP_DENORM in CL_DEVICE_SINGLE_FP_CONFIG must keep every subnormal
(OpenCL C 3.0 §7.4: flushing is allowed only without it); Vulkan: without a float-controls execution
mode either reading is allowed ("Precision and Operation of SPIR-V Instructions"); a second module with
``OpExecutionMode DenormPreserve 32`` runs where the device reports shaderDenormPreserveFloat32, and
there every subnormal must be kept.

Subgroups (docs/numerics.md "Subgroups"): work-groups of 64; the device's ids and sizes must partition
each work-group and agree with what the device claims (Vulkan: ``gl_SubgroupSize`` equals
VkPhysicalDeviceSubgroupProperties.subgroupSize for a SPIR-V 1.3 module without varying-size flags;
OpenCL: at most CL_DEVICE_MAX_NUM_SUB_GROUPS sub-groups); sums and broadcasts must equal numpy's over
the same groups exactly. A device that does not claim subgroups skips naming the missing claim; one
that claims them and fails to build or run the kernel fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..case import CaseContext, ConformanceCase, describe_exception
from . import kernels
from .functions import fma_exact, function
from .judge import describe_f32
from .limits import Limit
from .ulp import bits_f32, flush_subnormals, is_subnormal, ulp_error

__all__ = [
    "DENORM_OPS",
    "DenormReport",
    "Probes",
    "SubgroupCheck",
    "check_subgroup_ids",
    "check_subgroup_values",
    "denormal_probes",
    "feature_cases",
    "judge_denormals",
]

F32 = npt.NDArray[np.float32]
U32 = npt.NDArray[np.uint32]

DENORM_OPS = ("add", "sub", "mul", "div", "sqrt", "fma", "copy")
"""The operations of ``numerics_denorm`` in the order of their op codes (0..6)."""
_NO_RESULT_PROBE = {"sqrt": "sqrt of a normal is normal", "copy": "a copy of a normal is normal"}
OPENCL_DENORM_SECTION = (
    "OpenCL C 3.0 §7.4 (denormals may be flushed only without CL_FP_DENORM); OpenCL 3.0 API §4.2 "
    "CL_DEVICE_SINGLE_FP_CONFIG"
)
VULKAN_DENORM_SECTION = (
    "Vulkan 1.3 §Precision and Operation of SPIR-V Instructions (denormals may be flushed to zero without "
    "DenormPreserve); SPV_KHR_float_controls DenormPreserve"
)
SUBGROUP_SECTION = {
    kernels.OPENCL: "OpenCL C 3.0 Subgroup Functions; OpenCL 3.0 API §4.2 CL_DEVICE_MAX_NUM_SUB_GROUPS",
    kernels.VULKAN: "Vulkan 1.3 §Subgroups, SubgroupSize built-in; VkPhysicalDeviceSubgroupProperties",
}
WORKGROUP = 64
"""The local size of every subgroup kernel (reqd_work_group_size / local_size_x)."""


# --------------------------------------------------------------------------------------------- denormals


@dataclass(frozen=True)
class Probes:
    """Operands for one launch of ``numerics_denorm``: per value the op code, a, b, c, which probe it belongs
    to (``inputs`` or ``results``), the exact float32 result and the result of a device that flushes."""

    op: npt.NDArray[np.int32]
    a: F32
    b: F32
    c: F32
    kind: npt.NDArray[np.str_]
    exact: F32
    flushed: F32

    def __len__(self) -> int:
        return int(self.op.size)


def _subnormals() -> F32:
    """64 subnormal float32 (both signs): the smallest, the largest, powers of two and seeded others."""
    rng = np.random.default_rng(0xDE40)
    fixed = [1, 2, 3, 0x7FFFFF, 0x7FFFFE, 0x400000, 0x400001, 0x123456, 0x000100, 0x0FFFFF]
    ks = np.concatenate([np.array(fixed, dtype=np.int64), rng.integers(1, 1 << 23, 32 - len(fixed))])
    magnitude = ks.astype(np.float64) * 2.0**-149
    return np.concatenate([magnitude, -magnitude]).astype(np.float32)


def _exact(op: str, a: F32, b: F32, c: F32) -> F32:
    wide = [x.astype(np.float64) for x in (a, b, c)]
    with np.errstate(all="ignore"):
        if op == "fma":
            return fma_exact(*wide).astype(np.float32)
        x, y = wide[0], wide[1]
        if op == "add":
            value = x + y
        elif op == "sub":
            value = x - y
        elif op == "mul":
            value = x * y
        elif op == "div":
            value = x / y
        elif op == "sqrt":
            value = np.sqrt(x)
        else:
            value = x
        return value.astype(np.float32)


def denormal_probes() -> Probes:
    """The operands of every probe (deterministic; ~1,200 values)."""
    s = _subnormals()
    n = s.size
    one, zero = np.ones(n, np.float32), np.zeros(n, np.float32)
    tiny = np.copysign(np.float32(2.0**-126), s).astype(np.float32)  # the smallest normal, sign of s
    pow2 = np.float32
    inputs: dict[str, list[tuple[F32, F32, F32]]] = {
        "add": [(s, tiny, zero), (tiny, s, zero)],  # |s| + 2^-126: normal
        "sub": [(s, -tiny, zero), (2 * tiny, s, zero)],  # 2^-125 - |s| >= 2^-126: normal
        "mul": [(s, one * pow2(2.0**24), zero), (one * pow2(2.0**24), s, zero)],
        "div": [(s, one * pow2(2.0**-24), zero)],
        "sqrt": [(np.abs(s), zero, zero)],
        "fma": [(s, one * pow2(2.0**24), zero), (one * pow2(2.0**24), s, zero), (tiny, one, s)],
        "copy": [(s, zero, zero)],
    }
    scaled = (s.astype(np.float64) * 2.0**30).astype(np.float32)  # normal, exact
    shifted = (s.astype(np.float64) + tiny.astype(np.float64)).astype(np.float32)  # normal, exact
    results: dict[str, list[tuple[F32, F32, F32]]] = {
        "add": [(shifted, -tiny, zero)],
        "sub": [(shifted, tiny, zero)],
        "mul": [(scaled, one * pow2(2.0**-30), zero)],
        "div": [(scaled, one * pow2(2.0**30), zero)],
        "fma": [(scaled, one * pow2(2.0**-30), zero), (shifted, one, -tiny)],
    }
    rows: list[tuple[int, F32, F32, F32, str, F32, F32]] = []
    for kind, table in (("inputs", inputs), ("results", results)):
        for op, triples in table.items():
            for a, b, c in triples:
                exact = _exact(op, a, b, c)
                if kind == "inputs":
                    assert op == "copy" or not is_subnormal(exact).any(), op
                    fa, fb, fc = (flush_subnormals(x) for x in (a, b, c))
                    flushed = _exact(op, fa, fb, fc)
                    flushed = flush_subnormals(flushed)
                else:
                    assert is_subnormal(exact).all() and not any(is_subnormal(x).any() for x in (a, b, c)), op
                    flushed = np.copysign(np.float32(0), exact).astype(np.float32)
                rows.append((DENORM_OPS.index(op), a, b, c, kind, exact, flushed))
    count = sum(r[1].size for r in rows)
    padded = -count % WORKGROUP
    ops = np.concatenate([np.full(r[1].size, r[0], np.int32) for r in rows] + [np.full(padded, 6, np.int32)])

    def column(index: int, fill: float) -> F32:
        parts: list[Any] = [r[index] for r in rows] + [np.full(padded, fill, np.float32)]
        return np.concatenate(parts).astype(np.float32)

    kinds = np.concatenate([np.full(r[1].size, r[4]) for r in rows] + [np.full(padded, "pad")])
    return Probes(ops, column(1, 1.0), column(2, 0.0), column(3, 0.0), kinds, column(5, 1.0), column(6, 1.0))


def _limit(api: str, op: str) -> Limit | None:
    """The op's promise on ``api`` (the f32 cases' limits); None for copy (bit-equal)."""
    if op == "copy":
        return None
    fn = function(op)
    return fn.opencl if api == kernels.OPENCL else fn.vulkan


def _within(api: str, op: str, got: F32, want: F32, a: F32, b: F32, c: F32) -> npt.NDArray[np.bool_]:
    """``got`` meets the op's limit of the exact value ``want`` (cr: bit-equal, ±0 alike)."""
    limit = _limit(api, op)
    equal = (bits_f32(got) == bits_f32(want)) | ((got == 0) & (want == 0))
    if limit is None or limit.cr:
        return np.asarray(equal)
    wide = [x.astype(np.float64) for x in (a, b, c)]
    exact = want.astype(np.float64)
    with np.errstate(all="ignore"):
        bound = limit.bound(wide, exact)
        return np.asarray(equal | (ulp_error(got, exact) <= bound))


@dataclass
class OpState:
    """What one operation did with one kind of probe: counts of kept, flushed and wrong values."""

    values: int = 0
    kept: int = 0
    flushed: int = 0
    wrong: int = 0
    example: str = ""
    """The first flushed or wrong value, as ``inputs: expected E, got G``."""

    @property
    def text(self) -> str:
        if not self.values:
            return "n/a"
        if self.wrong:
            return f"wrong ({self.wrong} of {self.values})"
        if self.flushed == self.values:
            return "flushed"
        if self.flushed:
            return f"partly flushed ({self.flushed} of {self.values})"
        return "kept"

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.text,
            "values": self.values,
            "kept": self.kept,
            "flushed": self.flushed,
            "wrong": self.wrong,
            "example": self.example,
        }


@dataclass
class DenormReport:
    """The per-operation report of one launch and its verdict on one API."""

    api: str
    module: str
    must_keep: bool
    why: str
    ops: dict[str, dict[str, OpState]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def flushing(self) -> dict[str, list[str]]:
        """op → the probe kinds (``inputs``, ``results``) with a flushed value."""
        out: dict[str, list[str]] = {}
        for op, kinds in self.ops.items():
            found = [kind for kind, state in kinds.items() if state.flushed]
            if found:
                out[op] = found
        return out

    @property
    def cell(self) -> str:
        """``kept``, or ``FTZ (mul, div; inputs and results)``, grouped by what flushed."""
        wrong = [op for op, kinds in self.ops.items() if any(s.wrong for s in kinds.values())]
        flushing = self.flushing()
        if not flushing and not wrong:
            return "kept"
        groups: dict[str, list[str]] = {}
        for op, kinds in flushing.items():
            groups.setdefault(" and ".join(kinds), []).append(op)
        parts = [f"{', '.join(ops)}; {kinds}" for kinds, ops in groups.items()]
        text = f"FTZ ({' | '.join(parts)})" if parts else ""
        if wrong:
            text = (text + ", " if text else "") + f"wrong: {', '.join(wrong)}"
        if flushing and self.must_keep:
            text += " — must keep"
        elif flushing:
            text += " allowed" if self.api == kernels.VULKAN else ", no CL_FP_DENORM"
        return text

    def summary(self) -> str:
        lines = [
            f"{self.module}: "
            + "; ".join(
                f"{op} inputs {kinds['inputs'].text}, results {kinds['results'].text}" for op, kinds in self.ops.items()
            )
        ]
        lines.append(self.why)
        return ". ".join(lines + self.problems)

    def metrics(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "must_keep": self.must_keep,
            "ops": {op: {kind: state.to_json() for kind, state in kinds.items()} for op, kinds in self.ops.items()},
            "failures": len(self.problems),
        }


def judge_denormals(
    api: str, probes: Probes, got: F32, *, must_keep: bool, why: str, module: str = "numerics_denorm"
) -> DenormReport:
    """Classify every value of ``got`` (one float32 per probe value) and judge: a wrong value always fails;
    a flushed one fails when ``must_keep`` (OpenCL with CL_FP_DENORM; Vulkan with DenormPreserve)."""
    got = np.asarray(got, dtype=np.float32)
    if got.size != len(probes):
        raise ValueError(f"{got.size} results for {len(probes)} probe values")
    report = DenormReport(api, module, must_keep, why)
    for code, op in enumerate(DENORM_OPS):
        report.ops[op] = {}
        for kind in ("inputs", "results"):
            mask = (probes.op == code) & (probes.kind == kind)
            state = OpState(values=int(mask.sum()))
            report.ops[op][kind] = state
            if not state.values:
                continue
            a, b, c = probes.a[mask], probes.b[mask], probes.c[mask]
            g, exact, flushed = got[mask], probes.exact[mask], probes.flushed[mask]
            kept = _within(api, op, g, exact, a, b, c)
            fl = ~kept & (_within(api, op, g, flushed, flush_subnormals(a), flush_subnormals(b), flush_subnormals(c)))
            wrong = ~kept & ~fl
            state.kept, state.flushed, state.wrong = int(kept.sum()), int(fl.sum()), int(wrong.sum())
            shown = np.flatnonzero(wrong if wrong.any() else fl)
            if shown.size:
                j = int(shown[0])
                operands = ", ".join(
                    describe_f32(x[j])
                    for x in (a, b, c)[: 3 if op == "fma" else 2 if op in ("add", "sub", "mul", "div") else 1]
                )
                state.example = f"{op}({operands}): expected {describe_f32(exact[j])}, got {describe_f32(g[j])}"
            if state.wrong:
                report.problems.append(
                    f"{op} with subnormal {kind}: {state.wrong} of {state.values} values neither kept nor flushed "
                    f"(e.g. {state.example})"
                )
            elif state.flushed and must_keep:
                report.problems.append(
                    f"{op} flushes subnormal {kind} ({state.flushed} of {state.values} values, e.g. {state.example}) "
                    f"although {why.split(':')[0]}"
                )
    return report


def _denormals_case(api: str, claims: Mapping[str, Any]) -> ConformanceCase:
    section = OPENCL_DENORM_SECTION if api == kernels.OPENCL else VULKAN_DENORM_SECTION

    def body(ctx: CaseContext) -> None:
        probes = denormal_probes()
        buffers: list[npt.NDArray[Any]] = [probes.op, probes.a, probes.b, probes.c, np.zeros(len(probes), np.float32)]
        session = ctx.open()
        context = session.create_context()
        queue = session.create_queue(context)

        def run(module: str) -> F32:
            pkg = kernels.package_for(api, module, entry="denorm_ops", global_size=len(probes))
            out = kernels.launch(ctx, session, context, queue, pkg, buffers, f"denorm_ops x {len(probes)}")
            return np.frombuffer(out[4], dtype=np.float32).copy()

        metrics: dict[str, Any] = {
            "kind": "numerics",
            "function": "denormals",
            "api": api,
            "section": section,
            "correctly_rounded": True,
            "values": len(probes),
            "judged": int((probes.kind != "pad").sum()),
        }
        if api == kernels.OPENCL:
            keep = bool(claims.get("f32_denormals"))
            why = (
                "device reports CL_FP_DENORM: subnormals must be kept"
                if keep
                else "device does not report CL_FP_DENORM: flushing allowed"
            )
            report = judge_denormals(api, probes, run("denorm"), must_keep=keep, why=why)
            metrics["claims"] = {"CL_FP_DENORM": keep}
            preserve = None
        else:
            report = judge_denormals(
                api,
                probes,
                run("denorm"),
                must_keep=False,
                why="no float-controls execution mode: Vulkan allows flushing",
            )
            controls = {
                k: claims.get(k)
                for k in (
                    "shader_denorm_preserve_f32",
                    "shader_denorm_flush_to_zero_f32",
                    "denorm_behavior_independence",
                )
            }
            metrics["claims"] = controls
            preserve = None
            if claims.get("shader_denorm_preserve_f32"):
                try:
                    result = run("denorm_preserve")
                except Exception as exc:  # a refused module on a device that claims the mode fails the case
                    words = describe_exception(exc).splitlines()[0][:300]
                    report.problems.append(
                        f"device reports shaderDenormPreserveFloat32 but the DenormPreserve module did not run: {words}"
                    )
                else:
                    preserve = judge_denormals(
                        api,
                        probes,
                        result,
                        must_keep=True,
                        module="numerics_denorm_preserve",
                        why="device reports shaderDenormPreserveFloat32: DenormPreserve 32 must keep subnormals",
                    )
                    report.problems.extend(preserve.problems)
            else:
                report.why += (
                    "; DenormPreserve module not run (device does not report shaderDenormPreserveFloat32"
                    + ("" if "shader_denorm_preserve_f32" in claims else ": float-controls properties not read")
                    + ")"
                )
        session.destroy_queue(queue)
        session.destroy_context(context)
        cell = report.cell + (f"; DenormPreserve: {preserve.cell}" if preserve is not None else "")
        metrics.update(report.metrics())
        metrics["failures"] = len(report.problems)
        metrics["cell"] = cell
        metrics["limit"] = "keep" if report.must_keep else "keep or flush"
        if preserve is not None:
            metrics["preserve"] = preserve.metrics()
        ctx.record(metrics)
        summary = report.summary() + (f". {preserve.summary()}" if preserve is not None else "")
        ctx.check(not report.problems, summary)
        ctx.note(summary)

    return ConformanceCase(
        "numerics.denormals.f32",
        body,
        mandatory=False,
        description=f"float32 subnormal inputs and results per operation on {api}: kept or flushed",
    )


# --------------------------------------------------------------------------------------------- subgroups


@dataclass
class SubgroupCheck:
    """What a subgroup launch showed: problems (empty: right), the sizes seen and the cell text."""

    problems: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    groups: int = 0
    cell: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def _subgroup_claim(api: str, claims: Mapping[str, Any], operation: str) -> str | None:
    """None when the device claims what ``operation`` (basic, arithmetic, ballot) needs, else the skip reason."""
    if api == kernels.OPENCL:
        if not claims.get("subgroups"):
            return (
                "device does not claim cl_khr_subgroups (CL_DEVICE_EXTENSIONS) or __opencl_c_subgroups "
                f"(CL_DEVICE_OPENCL_C_FEATURES; {claims.get('opencl_c_version') or 'OpenCL C version unknown'})"
            )
        return None
    if "subgroup_operations" not in claims:
        return "VkPhysicalDeviceSubgroupProperties could not be read for this device"
    if not claims.get("subgroup_compute"):
        return "device does not claim subgroups in compute shaders (supportedStages lacks VK_SHADER_STAGE_COMPUTE_BIT)"
    if operation not in claims.get("subgroup_operations", []):
        bit = f"VK_SUBGROUP_FEATURE_{operation.upper()}_BIT"
        return f"device does not claim subgroup {operation} ({bit} not in supportedOperations)"
    return None


def check_subgroup_ids(api: str, ids: U32, claims: Mapping[str, Any]) -> SubgroupCheck:
    """Judge the ``sg_ids`` output (5 uints per work-item: size, max size, count, subgroup id, local id)."""
    check = SubgroupCheck()
    rows = ids.reshape(-1, 5).astype(np.int64)
    claimed = claims.get("subgroup_size") if api == kernels.VULKAN else None
    limit = int(claims.get("max_num_sub_groups") or 0) if api == kernels.OPENCL else 0
    for group in range(rows.shape[0] // WORKGROUP):
        block = rows[group * WORKGROUP : (group + 1) * WORKGROUP]
        size, largest, count, sg, lane = (block[:, k] for k in range(5))
        where = f"work-group {group}"
        if len(set(largest.tolist())) != 1 or len(set(count.tolist())) != 1:
            check.problems.append(
                f"{where}: max sub-group size {sorted(set(largest.tolist()))} and count "
                f"{sorted(set(count.tolist()))} differ between work-items"
            )
            continue
        largest_n, count_n = int(largest[0]), int(count[0])
        members = {int(k): np.flatnonzero(sg == k) for k in np.unique(sg)}
        if sorted(members) != list(range(count_n)):
            check.problems.append(f"{where}: sub-group ids {sorted(members)} are not 0..{count_n - 1}")
        for k, index in members.items():
            lanes = sorted(lane[index].tolist())
            sizes = set(size[index].tolist())
            # GLSL's size field is gl_SubgroupSize: every subgroup of 64 is full below 64 and the one
            # subgroup is partial above it (64 active invocations of a larger subgroup)
            reported = {largest_n} if api == kernels.VULKAN else {len(index)}
            members_ok = api != kernels.VULKAN or len(index) == min(largest_n, WORKGROUP)
            if lanes != list(range(len(index))) or sizes != reported or not members_ok:
                check.problems.append(
                    f"{where}, sub-group {k}: {len(index)} work-items report sizes {sorted(sizes)} and local ids "
                    f"{lanes[:8]}{'...' if len(lanes) > 8 else ''} (want size {sorted(reported)[0]}, "
                    f"ids 0..{len(index) - 1}, {min(largest_n, WORKGROUP)} members)"
                )
            if len(index) > largest_n:
                check.problems.append(f"{where}, sub-group {k}: {len(index)} work-items, more than the max {largest_n}")
            if group == 0:
                check.sizes.append(len(index))
        if count_n < -(-WORKGROUP // max(largest_n, 1)):
            check.problems.append(f"{where}: {count_n} sub-groups of at most {largest_n} cannot hold {WORKGROUP}")
        if limit and count_n > limit:
            check.problems.append(f"{where}: {count_n} sub-groups, more than CL_DEVICE_MAX_NUM_SUB_GROUPS {limit}")
        if claimed is not None and largest_n != int(claimed):
            check.problems.append(
                f"{where}: gl_SubgroupSize {largest_n}, but the device claims subgroupSize {claimed} "
                "(a SPIR-V 1.3 pipeline without varying-size flags must see subgroupSize)"
            )
        if group == 0:
            check.details = {"max_size": largest_n, "subgroups_per_workgroup": count_n}
    check.groups = rows.shape[0] // WORKGROUP
    biggest = check.details.get("max_size", 0)
    count_0 = check.details.get("subgroups_per_workgroup", 0)
    if api == kernels.VULKAN:
        check.cell = (
            f"{biggest} = subgroupSize {claimed}" if biggest == claimed else f"{biggest} ≠ subgroupSize {claimed}"
        )
    else:
        check.cell = f"{biggest} ({count_0} per {WORKGROUP})"
    if check.problems:
        check.cell += f" ({len(check.problems)} problems)"
    return check


def check_subgroup_values(operation: str, a: U32, out: U32, api: str = kernels.OPENCL) -> SubgroupCheck:
    """Judge ``sg_add`` / ``sg_broadcast`` output (4 uints per work-item: value, value 2, subgroup id, local id)
    against numpy over the groups the device formed (wrapping uint32 arithmetic)."""
    check = SubgroupCheck()
    rows = out.reshape(-1, 4).astype(np.uint64)
    values = a.astype(np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    wrong = 0
    first = ""
    for group in range(rows.shape[0] // WORKGROUP):
        base = group * WORKGROUP
        block = rows[base : base + WORKGROUP]
        for k in np.unique(block[:, 2]):
            index = np.flatnonzero(block[:, 2] == k)
            order = index[np.argsort(block[index, 3], kind="stable")]
            lanes = block[order, 3].tolist()
            if lanes != list(range(len(order))):
                check.problems.append(f"work-group {group}, sub-group {int(k)}: local ids {lanes[:8]} are not 0..n-1")
                continue
            x = values[base + order]
            if operation == "reduce-add":
                want = [np.full(len(order), x.sum() & mask), np.cumsum(x) & mask]
                names: tuple[str, ...] = (
                    ("sub_group_reduce_add", "sub_group_scan_inclusive_add")
                    if api == kernels.OPENCL
                    else ("subgroupAdd", "subgroupInclusiveAdd")
                )
            else:
                want = [np.full(len(order), x[0])]
                names = ("sub_group_broadcast(x, 0)" if api == kernels.OPENCL else "subgroupBroadcast(x, 0)",)
            for column, (expected, name) in enumerate(zip(want, names, strict=True)):
                got = block[order, column]
                bad = np.flatnonzero(got != expected)
                wrong += int(bad.size)
                if bad.size and not first:
                    j = int(bad[0])
                    first = (
                        f"{name} in work-group {group}, sub-group {int(k)}, local id {j}: expected "
                        f"{int(expected[j])}, got {int(got[j])}"
                    )
            if group == 0:
                check.sizes.append(len(order))
    check.groups = rows.shape[0] // WORKGROUP
    total = rows.shape[0] * (2 if operation == "reduce-add" else 1)
    if wrong:
        check.problems.append(f"{wrong} of {total} results differ from numpy; first: {first}")
    check.details = {"values": total, "wrong": wrong}
    size_text = "/".join(str(s) for s in sorted(set(check.sizes))) or "?"
    check.cell = (
        f"exact ({total} values, size {size_text})"
        if not check.problems
        else (f"{wrong} of {total} wrong" if wrong else "bad ids")
    )
    return check


_SUBGROUP_KERNELS = {
    "size": ("sg_ids", "subgroup", "basic"),
    "reduce-add": ("sg_add", "subgroup_arith", "arithmetic"),
    "broadcast": ("sg_broadcast", "subgroup_ballot", "ballot"),
}


def _subgroup_case(api: str, claims: Mapping[str, Any], operation: str) -> ConformanceCase:
    entry, glsl_module, needs = _SUBGROUP_KERNELS[operation]
    case_id = "numerics.subgroup-size" if operation == "size" else f"numerics.subgroup-{operation}.u32"
    section = SUBGROUP_SECTION[api]

    def body(ctx: CaseContext) -> None:
        base = {
            "kind": "numerics",
            "function": f"subgroup-{operation}",
            "api": api,
            "section": section,
            "correctly_rounded": True,
        }
        reason = _subgroup_claim(api, claims, needs)
        if reason is not None:
            ctx.record({**base, "cell": "not claimed"})
            ctx.skip(reason)
        groups = 4 if operation == "size" else 16
        count = groups * WORKGROUP
        module = "subgroup" if api == kernels.OPENCL else glsl_module
        options = str(claims.get("subgroup_build_options", "")) if api == kernels.OPENCL else ""
        pkg = kernels.package_for(api, module, entry=entry, global_size=count, build_options=options)
        rng = np.random.default_rng(0x5B6)
        a = rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32)
        a[::7] = 0xFFFFFFFF  # sums wrap
        width = 5 if operation == "size" else 4
        buffers: list[npt.NDArray[Any]] = [np.zeros(count * width, np.uint32)]
        if operation != "size":
            buffers.insert(0, a)
        session = ctx.open()
        context = session.create_context()
        queue = session.create_queue(context)
        out = kernels.launch(ctx, session, context, queue, pkg, buffers, f"{entry} x {count}")
        session.destroy_queue(queue)
        session.destroy_context(context)
        got = np.frombuffer(out[-1], dtype=np.uint32)
        if operation == "size":
            check = check_subgroup_ids(api, got, claims)
        else:
            check = check_subgroup_values(operation, a, got, api)
        claimed = {
            k: claims.get(k)
            for k in (
                "subgroup_size",
                "subgroup_operations",
                "subgroup_source",
                "max_num_sub_groups",
                "subgroup_build_options",
            )
            if k in claims
        }
        ctx.record(
            {
                **base,
                "cell": check.cell,
                "failures": len(check.problems),
                "sizes": check.sizes,
                "workgroups": check.groups,
                "values": count,
                "judged": count,
                "claims": claimed,
                **check.details,
            }
        )
        text = (
            f"{case_id} on {api}: sub-group sizes {check.sizes} in a work-group of {WORKGROUP} "
            f"({check.groups} work-groups); {check.cell}"
        )
        ctx.check(not check.problems, text + "; " + "; ".join(check.problems[:5]))
        ctx.note(text)

    words = {
        "size": "subgroup ids and sizes vs the claim",
        "reduce-add": "subgroup sum and inclusive scan of uint",
        "broadcast": "subgroup broadcast of uint",
    }
    return ConformanceCase(case_id, body, mandatory=False, description=f"{words[operation]} on {api}, exact")


def feature_cases(api: str, claims: Mapping[str, Any]) -> tuple[ConformanceCase, ...]:
    """The denormal and subgroup cases for ``api``."""
    cases: Sequence[ConformanceCase] = (
        _denormals_case(api, claims),
        _subgroup_case(api, claims, "size"),
        _subgroup_case(api, claims, "reduce-add"),
        _subgroup_case(api, claims, "broadcast"),
    )
    return tuple(cases)
