"""Measure what gating costs: ``python -m accel_opencl.measure [--count N] [--json]``.

For every OpenCL device, with one small kernel (1024 u32 items):

* ``raw_ungated_us``: pyopencl enqueue of N kernels, then one finish (per kernel);
* ``raw_gated_us``: the same, each kernel behind a user event that is set
  complete right after the enqueue (plus the flushes the provider does);
* ``raw_sync_ungated_us`` / ``raw_sync_gated_us``: enqueue one kernel (without /
  with a gate opened right away) and poll its status until complete, repeated;
* ``provider_pipelined_us``: N ``submit`` calls, then poll all to Complete;
* ``provider_sync_us``: submit, poll to Complete, repeat (no queue depth);
* ``callbacks``: how many CL_COMPLETE callbacks the driver window armed in the
  pipelined run (each costs one pyopencl thread).

Numbers are wall-clock means on whatever machine runs this; they are for
docs/opencl.md, not for tests.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from accelcore.devices.environment import apply_defaults

KERNEL = """
__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i < count) { dst[i] = src[i] * 2u + 1u; }
}
"""
ITEMS = 1024


def _raw(device: Any, count: int) -> tuple[float, float, float, float]:
    import numpy as np
    import pyopencl as cl
    from pyopencl import _cl

    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    program = _cl._Program(context, KERNEL)
    program._build(options=b"", devices=[device])
    kernel = _cl.Kernel(program, "twice")
    src = cl.Buffer(context, cl.mem_flags.READ_WRITE, ITEMS * 4)
    dst = cl.Buffer(context, cl.mem_flags.READ_WRITE, ITEMS * 4)
    kernel.set_arg(0, src)
    kernel.set_arg(1, dst)
    kernel.set_arg(2, np.uint32(ITEMS))
    size = (ITEMS, 1, 1)
    local = (64, 1, 1)
    for _ in range(20):
        cl.enqueue_nd_range_kernel(queue, kernel, size, local)
    queue.finish()
    start = time.perf_counter()
    for _ in range(count):
        cl.enqueue_nd_range_kernel(queue, kernel, size, local)
    queue.finish()
    ungated = (time.perf_counter() - start) / count
    start = time.perf_counter()
    for _ in range(count):
        gate = cl.UserEvent(context)
        cl.enqueue_nd_range_kernel(queue, kernel, size, local, wait_for=[gate])
        queue.flush()
        gate.set_status(0)
        queue.flush()
    queue.finish()
    gated = (time.perf_counter() - start) / count

    def wait(event: Any) -> None:
        queue.flush()  # rusticl starts nothing on an unflushed queue
        while int(event.command_execution_status) > 0:
            time.sleep(0)

    start = time.perf_counter()
    for _ in range(count):
        wait(cl.enqueue_nd_range_kernel(queue, kernel, size, local))
    sync_ungated = (time.perf_counter() - start) / count
    start = time.perf_counter()
    for _ in range(count):
        gate = cl.UserEvent(context)
        event = cl.enqueue_nd_range_kernel(queue, kernel, size, local, wait_for=[gate])
        queue.flush()
        gate.set_status(0)
        queue.flush()
        wait(event)
    sync_gated = (time.perf_counter() - start) / count
    src.release()
    dst.release()
    return ungated * 1e6, gated * 1e6, sync_ungated * 1e6, sync_gated * 1e6


def _provider(entry: Any, count: int) -> tuple[float, float, int]:
    import numpy as np

    from accelcore import (
        AccessMode,
        BindingRef,
        BufferDesc,
        BufferRange,
        BufferUsage,
        ContextDesc,
        MemoryDomain,
        MemorySource,
        QueueDesc,
        Timeout,
    )
    from accelcore.kernels.package import Dispatch, DispatchKind, KernelPackage, ModuleKind, PackageBinding

    from .family import provider_family

    accel = provider_family.open(entry)
    context = accel.create_context(ContextDesc())
    queue = accel.create_queue(context, QueueDesc())
    package = KernelPackage(
        ModuleKind.OPENCL_SOURCE,
        "twice",
        (64, 1, 1),
        (PackageBinding(0, 0, AccessMode.READ), PackageBinding(1, 1, AccessMode.WRITE)),
        Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=2),
        KERNEL.encode(),
    )
    program = accel.load_package(context, package, 64 << 20)
    usage = BufferUsage.TRANSFER_DESTINATION | BufferUsage.TRANSFER_SOURCE
    src = accel.allocate_buffer(
        context, BufferDesc(ITEMS * 4, 16, MemoryDomain.DEVICE, usage | BufferUsage.PROGRAM_INPUT)
    ).buffer
    dst = accel.allocate_buffer(
        context, BufferDesc(ITEMS * 4, 16, MemoryDomain.DEVICE, usage | BufferUsage.PROGRAM_OUTPUT)
    ).buffer
    accel.write_buffer(src, 0, MemorySource(np.arange(ITEMS, dtype=np.uint32).tobytes()))
    whole = BufferRange(0, ITEMS * 4)
    bindings = [BindingRef(0, src, whole, AccessMode.READ), BindingRef(1, dst, whole, AccessMode.WRITE)]

    def drain(events: list[Any]) -> None:
        for event in events:
            while not accel.poll_event(event).is_terminal:
                time.sleep(0)
            accel.destroy_event(event)

    drain([accel.submit(queue, program, bindings, Timeout.INFINITE) for _ in range(20)])
    start = time.perf_counter()
    drain([accel.submit(queue, program, bindings, Timeout.INFINITE) for _ in range(count)])
    pipelined = (time.perf_counter() - start) / count
    callbacks = queue.gates.callbacks_armed
    start = time.perf_counter()
    for _ in range(count):
        drain([accel.submit(queue, program, bindings, Timeout.INFINITE)])
    sync = (time.perf_counter() - start) / count
    accel.free_buffer(src)
    accel.free_buffer(dst)
    accel.unload_program(program)
    accel.destroy_queue(queue)
    accel.destroy_context(context)
    return pipelined * 1e6, sync * 1e6, callbacks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    apply_defaults()  # before the first enumeration (RUSTICL_ENABLE, the checkout's OCL_ICD_VENDORS)
    from .discovery import find_device
    from .family import provider_family

    rows = []
    for entry in provider_family.discover():
        device = find_device(entry).device
        ungated, gated, sync_ungated, sync_gated = _raw(device, args.count)
        pipelined, sync, callbacks = _provider(entry, args.count)
        rows.append(
            {
                "device": f"{entry.device_id}-{entry.native.get('tag')}",
                "name": entry.name,
                "count": args.count,
                "raw_ungated_us": round(ungated, 1),
                "raw_gated_us": round(gated, 1),
                "raw_sync_ungated_us": round(sync_ungated, 1),
                "raw_sync_gated_us": round(sync_gated, 1),
                "provider_pipelined_us": round(pipelined, 1),
                "provider_sync_us": round(sync, 1),
                "callbacks": callbacks,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(" ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
