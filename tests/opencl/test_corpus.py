"""Every corpus kernel (OpenCL C packages) against its numpy reference.

Integers are compared bit-exactly; float kernels within the ulp bound the
corpus states per kernel (saxpy: 1 ulp, because a driver may contract
a*x+y into an FMA; matmul: exact by construction of its inputs).
"""

from __future__ import annotations

from typing import Any

import pytest

from accelcore import ArtifactRef, MemorySource, TargetIdentity
from accelcore.corpus import KERNELS, compare, kernel_spec, load_package, make_case
from accelcore.package import ModuleKind, format_for

ACCESS = {1: "r", 2: "w", 3: "rw"}


@pytest.mark.parametrize("elements", [1000, 4096], ids=["n1000", "n4096"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_corpus_kernel_matches_numpy(rig: Any, kernel: str, elements: int) -> None:
    spec = kernel_spec(kernel)
    case = make_case(kernel, elements, seed=elements)
    raw = load_package(kernel, ModuleKind.OPENCL_SOURCE)
    ref = ArtifactRef(format_for(ModuleKind.OPENCL_SOURCE), TargetIdentity.any(), MemorySource(raw), 64 << 20)
    program = rig.accel.load_program(rig.context, ref)
    rig.programs.append(program)
    slots = {}
    for row in spec.bindings:
        access = ACCESS[int(row.access)]
        slots[row.slot] = (rig.buffer(case.initial[row.slot], access), access)
    event = rig.submit(program, slots)
    assert str(rig.wait(event)) == "Complete"
    for slot in case.expected:
        problem = compare(case, slot, rig.read(slots[slot][0]))
        assert problem is None, problem
