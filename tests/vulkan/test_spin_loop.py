"""Long loops run to their end on Vulkan devices — except where the driver is known not to.

Mesa 22.3.6 rusticl (OpenCL on llvmpipe) silently ends every loop after 65535 iterations
(tests/opencl/test_corpus.py keeps a dated strict xfail for it). lavapipe shares llvmpipe and,
checked here on 2026-12-01, does the same: the 100,000-iteration spin kernel returns exactly the
65,535-iteration result, with status Complete and no error. The xfail is strict, so a fixed
driver turns it into a failure that asks for the marker to go.
"""

from __future__ import annotations

from typing import Any

import pytest

from accelcore import AccessMode
from accelcore.corpus import compare, load_package, spin_case
from accelcore.package import ModuleKind

LOOP_CAP_XFAIL = {
    "llvmpipe": (
        "2026-12-01: Mesa 22.3.6 lavapipe (llvmpipe) silently ends every loop after 65535 iterations; "
        "the result equals the 65535-iteration one, status Complete, no error"
    ),
}


@pytest.mark.parametrize("iterations", [65535, 100_000], ids=["at-cap", "past-cap"])
def test_spin_kernel_runs_every_iteration(
    entry: Any, rig: Any, iterations: int, request: pytest.FixtureRequest
) -> None:
    reason = next((why for name, why in LOOP_CAP_XFAIL.items() if name in entry.name.lower()), None)
    if reason is not None and iterations > 65535:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    case = spin_case(64, iterations)
    program = rig.load(load_package("spin", ModuleKind.SPIRV_VULKAN))
    params = rig.buffer(case.initial[0].tobytes(), AccessMode.READ)
    out = rig.buffer(case.initial[1].tobytes(), AccessMode.WRITE)
    event = rig.submit(program, {0: (params, AccessMode.READ), 1: (out, AccessMode.WRITE)})
    assert str(rig.wait(event)) == "Complete"
    problem = compare(case, 1, rig.read(out))
    assert problem is None, problem
