"""Every corpus kernel (OpenCL C packages) against its numpy reference.

Integers are compared bit-exactly; float kernels within the ulp bound the
corpus states per kernel (saxpy: 1 ulp, because a driver may contract
a*x+y into an FMA; matmul: exact by construction of its inputs).
"""

from __future__ import annotations

from typing import Any

import pytest

from accelcore import ArtifactRef, ErrorKind, MemorySource, TargetIdentity
from accelcore.conformance.corpus import KERNELS, compare, load_package, make_case
from accelcore.kernels.package import ModuleKind, format_for


@pytest.mark.parametrize("kind", [ModuleKind.OPENCL_SOURCE, ModuleKind.SPIRV_OPENCL], ids=["cl", "cl.spv"])
@pytest.mark.parametrize("elements", [1000, 4096], ids=["n1000", "n4096"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_corpus_kernel_matches_numpy(rig: Any, raises_kind: Any, kernel: str, elements: int, kind: ModuleKind) -> None:
    """OpenCL C everywhere; the committed ``*.cl.spv.kpkg`` packages where the device takes SPIR-V
    (Intel's CPU runtime here), and a device without IL refuses them naming CL_DEVICE_IL_VERSION."""
    case = make_case(kernel, elements, seed=elements)
    raw = load_package(kernel, kind)
    ref = ArtifactRef(format_for(kind), TargetIdentity.any(), MemorySource(raw), 64 << 20)
    if format_for(kind) not in rig.accel.artifact_formats:
        with raises_kind(ErrorKind.UNSUPPORTED) as info:
            rig.accel.load_program(rig.context, ref)
        assert "CL_DEVICE_IL_VERSION" in info.value.message
        return
    program = rig.accel.load_program(rig.context, ref)
    rig.programs.append(program)
    rig.run_corpus(program, kernel, case)


LOOP_CAP_XFAIL = {
    "rusticl": (
        "2026-11-30: Mesa 22.3.6 rusticl on llvmpipe silently ends every loop after 65535 iterations "
        "(llvmpipe's loop limit); results past that are wrong, with no error"
    ),
}


@pytest.mark.parametrize("iterations", [65535, 100_000], ids=["at-cap", "past-cap"])
def test_spin_kernel_beyond_65535_iterations(
    entry: Any, rig: Any, iterations: int, request: pytest.FixtureRequest
) -> None:
    from accelcore.conformance.corpus import spin_case

    reason = LOOP_CAP_XFAIL.get(entry.native.get("tag", ""))
    if reason is not None and iterations > 65535:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    case = spin_case(64, iterations)
    raw = load_package("spin", ModuleKind.OPENCL_SOURCE)
    ref = ArtifactRef(format_for(ModuleKind.OPENCL_SOURCE), TargetIdentity.any(), MemorySource(raw), 64 << 20)
    program = rig.accel.load_program(rig.context, ref)
    rig.programs.append(program)
    params = rig.buffer(case.initial[0], "r")
    out = rig.buffer(case.initial[1], "w")
    event = rig.submit(program, {0: (params, "r"), 1: (out, "w")})
    assert str(rig.wait(event)) == "Complete"
    problem = compare(case, 1, rig.read(out))
    assert problem is None, problem
