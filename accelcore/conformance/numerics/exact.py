"""Bit-exact judging for the numerics suite's integer, conversion, atomic and barrier cases.

An integer operation has one right answer per input: a result is right when it is bit-equal to the
reference. :func:`compare_exact` counts the values that differ among the judged ones (a mask says
which values the API promises anything for) and names the first and the worst (largest integer
distance) with their inputs, expected and got; :class:`ExactResult` turns that into the case's
metrics (``cell`` ``exact`` or ``3 of 65536 wrong``) and its one-line summary. :func:`run_once` runs
one committed kernel once (one GLOBAL launch over a whole sweep) and returns every buffer's bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..case import CaseContext
from .kernels import launch, package_for

__all__ = ["U32", "ExactResult", "compare_exact", "hex32", "rng_for", "run_once", "words"]

U32 = npt.NDArray[np.uint32]
MASK = 0xFFFFFFFF


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded from ``name`` alone (the same inputs on every machine and run)."""
    return np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))


def hex32(value: Any) -> str:
    return f"0x{int(value) & MASK:08x}"


def words(data: bytes) -> U32:
    """A buffer's bytes as 32-bit words."""
    return np.frombuffer(data, dtype=np.uint32).copy()


def _signed(values: U32) -> npt.NDArray[np.int64]:
    return values.astype(np.uint32).view(np.int32).astype(np.int64)


def describe_word(value: Any, signed: bool) -> str:
    """``0xfffffffe (-2)`` for a signed word, ``0x00000010 (16)`` for an unsigned one."""
    v = int(value) & MASK
    number = v - (1 << 32) if signed and v >= 1 << 31 else v
    return f"0x{v:08x} ({number})"


@dataclass
class ExactResult:
    """What one launch of a bit-exact case measured."""

    case: str
    api: str
    promise: str
    """What the API promises, in a few words (``mul_hi: exact``, ``in-range values exact``)."""
    section: str
    values: int
    judged: int
    mismatches: int
    first_index: int = -1
    first_inputs: tuple[str, ...] = ()
    first_expected: str = ""
    first_got: str = ""
    worst_index: int = -1
    worst_inputs: tuple[str, ...] = ()
    worst_expected: str = ""
    worst_got: str = ""
    worst_distance: int = 0
    cell_suffix: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.mismatches == 0 and self.judged > 0

    @property
    def cell(self) -> str:
        if self.judged == 0:
            return f"nothing judged ({self.values} values)"
        text = "exact" if self.mismatches == 0 else f"{self.mismatches} of {self.judged} wrong"
        return f"{text}; {self.cell_suffix}" if self.cell_suffix else text

    def summary(self) -> str:
        if self.judged == 0:
            verdict = "NOTHING JUDGED (a case that compared no value fails)"
        else:
            verdict = "bit-exact" if self.mismatches == 0 else f"{self.mismatches} WRONG"
        line = (
            f"{self.case} on {self.api}: {verdict} over {self.judged} judged values of {self.values} "
            f"({self.promise}; {self.section})"
        )
        if self.first_index >= 0:
            line += (
                f"; first wrong input {', '.join(self.first_inputs)}: expected {self.first_expected}, "
                f"got {self.first_got}"
            )
            if self.worst_index != self.first_index:
                line += (
                    f"; worst input {', '.join(self.worst_inputs)}: expected {self.worst_expected}, "
                    f"got {self.worst_got} (off by {self.worst_distance})"
                )
        for note in self.notes:
            line += f"; {note}"
        return line

    def metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "numerics",
            "function": self.case.split(".")[1] if "." in self.case else self.case,
            "api": self.api,
            "cell": self.cell,
            "limit": self.promise,
            "section": self.section,
            "values": self.values,
            "judged": self.judged,
            "failures": self.mismatches,
            "mismatches": self.mismatches,
            "bit_exact": True,
        }
        if self.first_index >= 0:
            out["first"] = {
                "index": self.first_index,
                "inputs": list(self.first_inputs),
                "expected": self.first_expected,
                "got": self.first_got,
            }
            out["worst"] = {
                "index": self.worst_index,
                "inputs": list(self.worst_inputs),
                "expected": self.worst_expected,
                "got": self.worst_got,
                "distance": self.worst_distance,
            }
        out.update(self.extra)
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def compare_exact(
    case: str,
    api: str,
    *,
    promise: str,
    section: str,
    expected: U32,
    got: U32,
    describe_inputs: Callable[[int], tuple[str, ...]],
    judged: npt.NDArray[np.bool_] | None = None,
    signed: bool = False,
) -> ExactResult:
    """Compare ``got`` with ``expected`` word for word where ``judged`` (default: everywhere).

    The worst value is the one farthest from its expected value as an integer of the result's
    signedness; ``describe_inputs(index)`` names a value's inputs."""
    expected = np.asarray(expected, dtype=np.uint32)
    got = np.asarray(got, dtype=np.uint32)
    if got.shape != expected.shape:
        raise ValueError(f"{case}: {got.size} results for {expected.size} expected values")
    mask = np.ones(expected.shape, dtype=bool) if judged is None else np.asarray(judged, dtype=bool)
    wrong = np.flatnonzero(mask & (got != expected))
    result = ExactResult(
        case, api, promise, section, values=int(expected.size), judged=int(mask.sum()), mismatches=int(wrong.size)
    )
    if wrong.size:
        if signed:
            distance = np.abs(_signed(got[wrong]) - _signed(expected[wrong]))
        else:
            distance = np.abs(got[wrong].astype(np.int64) - expected[wrong].astype(np.int64))
        first = int(wrong[0])
        worst = int(wrong[int(np.argmax(distance))])
        result.first_index, result.worst_index = first, worst
        result.first_inputs, result.worst_inputs = describe_inputs(first), describe_inputs(worst)
        result.first_expected = describe_word(expected[first], signed)
        result.first_got = describe_word(got[first], signed)
        result.worst_expected = describe_word(expected[worst], signed)
        result.worst_got = describe_word(got[worst], signed)
        result.worst_distance = int(distance.max())
    return result


def run_once(
    ctx: CaseContext,
    api: str,
    module: str,
    *,
    entry: str | None,
    selector: int | None,
    global_size: int,
    buffers: Sequence[npt.NDArray[Any]],
    what: str,
) -> list[bytes]:
    """One GLOBAL launch of kernel ``entry`` (OpenCL) / selector ``selector`` (Vulkan) of the committed
    module ``numerics_<module>`` with ``buffers`` bound in slot order; every buffer's bytes afterwards."""
    pkg = package_for(api, module, entry=entry, selector=selector, global_size=global_size)
    session = ctx.open()
    context = session.create_context()
    queue = session.create_queue(context)
    out = launch(ctx, session, context, queue, pkg, buffers, what)
    session.destroy_queue(queue)
    session.destroy_context(context)
    return out
