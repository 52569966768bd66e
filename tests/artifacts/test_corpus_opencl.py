"""The corpus references agree with real OpenCL drivers, run directly through pyopencl.

Independent of accel_opencl: it proves the OpenCL C kernels, their package
tables and the numpy references describe the same computation, so a provider
failure points at the provider, not at the corpus.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from accelcore.conformance.corpus import KERNELS, compare, kernel_spec, load_package, make_case, spin_case
from accelcore.kernels.pack import detect_module_kind, pack_module
from accelcore.kernels.package import NO_COUNT_ARGUMENT, KernelPackage, ModuleKind, opencl_target_identity
from accelcore.kernels.package_codec import parse_package, write_package

from .conftest import opencl_devices

pytestmark = pytest.mark.opencl


DEVICES = opencl_devices()


def run(device: Any, pkg: KernelPackage, initial: dict[int, np.ndarray]) -> dict[int, bytes]:
    import pyopencl as cl

    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # build logs surface as CompilerWarning
        program = cl.Program(context, pkg.module.decode()).build(options=pkg.build_options)
    kernel = cl.Kernel(program, pkg.entry_point)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    buffers = {slot: cl.Buffer(context, flags, hostbuf=array) for slot, array in initial.items()}
    for binding in pkg.bindings:
        kernel.set_arg(binding.native_index, buffers[binding.slot])
    row = pkg.binding_for_slot(pkg.dispatch.slot)
    assert row is not None
    elements, groups = pkg.dispatch.elements_and_groups(pkg.local_size, initial[row.slot].nbytes, row.element_size)
    if pkg.dispatch.count_argument != NO_COUNT_ARGUMENT:
        kernel.set_arg(pkg.dispatch.count_argument, np.uint32(elements))
    global_size = tuple(g * local for g, local in zip(groups, pkg.local_size, strict=True))
    cl.enqueue_nd_range_kernel(queue, kernel, global_size, pkg.local_size)
    out = {}
    for slot, array in initial.items():
        host = np.empty_like(array)
        cl.enqueue_copy(queue, host, buffers[slot])
        out[slot] = host.tobytes()
    queue.finish()
    return out


@pytest.mark.skipif(
    not DEVICES, reason="no OpenCL device (install pocl-opencl-icd; rusticl needs RUSTICL_ENABLE=swrast)"
)
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: f"{d.platform.name}:{d.name}".replace(" ", "_"))
@pytest.mark.parametrize("kernel", KERNELS)
def test_opencl_source_package_matches_reference(device: Any, kernel: str) -> None:
    pkg = parse_package(load_package(kernel, ModuleKind.OPENCL_SOURCE))
    for elements in (1000, 64, 1):
        case = make_case(kernel, elements, seed=11)
        outputs = run(device, pkg, dict(case.initial))
        for slot in case.expected:
            assert compare(case, slot, outputs[slot]) is None, (
                f"{kernel} n={elements}: {compare(case, slot, outputs[slot])}"
            )


@pytest.mark.skipif(
    not DEVICES, reason="no OpenCL device (install pocl-opencl-icd; rusticl needs RUSTICL_ENABLE=swrast)"
)
@pytest.mark.parametrize("device", DEVICES[:1], ids=lambda d: d.name.replace(" ", "_"))
def test_spin_iterations_follow_the_parameter_buffer(device: Any) -> None:
    pkg = parse_package(load_package("spin", ModuleKind.OPENCL_SOURCE))
    for iterations in (0, 1, 5000):
        case = spin_case(128, iterations)
        outputs = run(device, pkg, dict(case.initial))
        assert compare(case, 1, outputs[1]) is None


@pytest.mark.skipif(
    not DEVICES, reason="no OpenCL device (install pocl-opencl-icd; rusticl needs RUSTICL_ENABLE=swrast)"
)
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: f"{d.platform.name}:{d.name}".replace(" ", "_"))
def test_real_device_binaries_are_detected_and_packed(device: Any) -> None:
    import pyopencl as cl

    spec = kernel_spec("conformance")
    source = load_package("conformance", ModuleKind.OPENCL_SOURCE)
    context = cl.Context([device])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = cl.Program(context, parse_package(source).module.decode()).build()
    (binary,) = program.get_info(cl.program_info.BINARIES)
    data = bytes(binary)
    assert detect_module_kind(data) is ModuleKind.OPENCL_BINARY, data[:16]
    target = opencl_target_identity(
        device.platform.name,
        device.name,
        device.driver_version,
        platform_version=device.platform.version,
        device_version=device.version,
        vendor_id=device.vendor_id,
        address_bits=device.address_bits,
    )
    pkg = pack_module(
        data,
        entry_point=spec.opencl_entry,
        bindings=spec.bindings,
        dispatch=spec.dispatch,
        local_size=spec.local_size,
        target=target,
    )
    assert parse_package(write_package(pkg)) == pkg
    assert pkg.module == data
