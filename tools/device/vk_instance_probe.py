"""Probe how many Vulkan instances/devices a driver lets one process create (a device-run diagnostic).

On the NVIDIA H200 run of 2026-11-30 every ``vkCreateInstance`` in the provider
test process started failing with VK_ERROR_INCOMPATIBLE_DRIVER after ~33
instances had been created and destroyed (after ~200 OpenCL accelerators on
the same GPU). This script separates the candidate causes, each in its own
phase, printing one JSON line per observation:

1. raw: ``vkCreateInstance`` + ``vkDestroyInstance`` through the binding alone,
   N times (a per-process instance budget in the driver or loader?);
2. accel: the provider opened and closed N times, with and without the
   validation layer, each accelerator writing and reading back one buffer;
   every line reports ``instances`` (``VkInstance`` objects the provider has
   created in this process: at most one per validation mode since the
   provider shares one instance per process);
3. held: accelerators opened and kept open until one fails or LIMIT is reached
   (a limit on simultaneous devices?);
4. opencl-then-vulkan: 2N OpenCL accelerators on the GPU, each creating and
   destroying one context (a CUDA context underneath), then
   one Vulkan accelerator (do OpenCL contexts starve Vulkan?).

Every phase records the process's open file descriptors and its fd limit.
The raw phase runs in a child process of its own: on NVIDIA it uses up the
process's instance budget, which would fail every later phase.

    python tools/device/vk_instance_probe.py [N] [LIMIT] [PHASE,...]
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def emit(**fields: Any) -> None:
    fields["fds"] = fds()
    print(json.dumps(fields, default=str), flush=True)


def raw_instances(n: int) -> None:
    import vulkan as vk

    app = vk.VkApplicationInfo(apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
    for i in range(n):
        try:
            instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
        except Exception as exc:
            emit(phase="raw", i=i, failed=repr(exc))
            return
        vk.vkDestroyInstance(instance, None)
        if i % 25 == 0:
            emit(phase="raw", i=i, ok=True)
    emit(phase="raw", done=n)


def _round_trip(accel: Any, seed: int) -> None:
    from accelcore import BufferDesc, BufferUsage, ContextDesc, MemoryDomain, MemorySink, MemorySource

    data = bytes((seed + i) % 251 for i in range(256))
    ctx = accel.create_context(ContextDesc())
    usage = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
    buf = accel.allocate_buffer(ctx, BufferDesc(len(data), 16, MemoryDomain.HOST, usage)).buffer
    accel.write_buffer(buf, 0, MemorySource(data))
    out = bytearray(len(data))
    accel.read_buffer(buf, 0, MemorySink(out))
    accel.free_buffer(buf)
    accel.destroy_context(ctx)
    if bytes(out) != data:
        raise AssertionError(f"accelerator {seed}: read back differs")


def accel_cycles(n: int, validation: bool) -> None:
    from accel_vulkan import provider_family
    from accel_vulkan.instance import instances_created

    entry = provider_family.discover()[0]
    for i in range(n):
        try:
            accel = provider_family.open(entry, validation=validation)
            try:
                _round_trip(accel, i)
            finally:
                accel.close()
        except Exception as exc:
            emit(phase="accel", validation=validation, i=i, failed=repr(exc), instances=instances_created())
            return
        del accel
        if i % 25 == 0:
            gc.collect()
            emit(phase="accel", validation=validation, i=i, ok=True, instances=instances_created())
    emit(phase="accel", validation=validation, done=n, instances=instances_created())


def held(limit: int) -> None:
    from accel_vulkan import provider_family

    entry = provider_family.discover()[0]
    kept = []
    try:
        for i in range(limit):
            try:
                kept.append(provider_family.open(entry, validation=False))
            except Exception as exc:
                emit(phase="held", i=i, failed=repr(exc))
                return
            if i % 8 == 0:
                emit(phase="held", i=i, ok=True)
        from accel_vulkan.instance import instances_created

        emit(phase="held", done=limit, instances=instances_created())
    finally:
        for accel in kept:
            accel.close()


def opencl_then_vulkan(n: int) -> None:
    from accel_opencl import provider_family as cl_family
    from accel_vulkan import provider_family as vk_family

    gpu = [e for e in cl_family.discover() if "nvidia" in e.name.lower()] or list(cl_family.discover())
    from accelcore import ContextDesc

    for i in range(n):
        accel = cl_family.open(gpu[0])
        accel.destroy_context(accel.create_context(ContextDesc()))
        del accel
        if i % 50 == 0:
            emit(phase="opencl", i=i, ok=True)
    gc.collect()
    try:
        accel = vk_family.open(vk_family.discover()[0], validation=False)
        accel.close()
        emit(phase="opencl-then-vulkan", opened=n, vulkan="ok")
    except Exception as exc:
        emit(phase="opencl-then-vulkan", opened=n, vulkan=repr(exc))


def raw_in_child(n: int) -> None:
    """The raw phase in a fresh process (its output lines are passed through as they are)."""
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), str(n), "0", "raw-here"], capture_output=True, text=True
    )
    sys.stdout.write(done.stdout)
    sys.stdout.flush()
    if done.returncode:
        emit(phase="raw", child_exit=done.returncode, stderr=done.stderr[-2000:])


PHASES = ("raw", "accel-plain", "accel-validation", "held", "opencl-then-vulkan")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    wanted = sys.argv[3].split(",") if len(sys.argv) > 3 else list(PHASES)
    if wanted == ["raw-here"]:
        raw_instances(n)
        return
    emit(phase="start", rlimit_nofile=resource.getrlimit(resource.RLIMIT_NOFILE), pid=os.getpid())
    started = time.monotonic()
    phases: dict[str, Callable[[], None]] = {
        "raw": lambda: raw_in_child(n),
        "accel-plain": lambda: accel_cycles(n, False),
        "accel-validation": lambda: accel_cycles(n, True),
        "held": lambda: held(limit),
        "opencl-then-vulkan": lambda: opencl_then_vulkan(2 * n),
    }
    for name in wanted:
        if name not in phases:
            emit(phase=name, unknown=f"phases are {', '.join(PHASES)}")
            continue
        try:
            phases[name]()
        except Exception as exc:
            emit(phase=name, crashed=repr(exc))
        emit(phase=name, elapsed_s=round(time.monotonic() - started, 2))


if __name__ == "__main__":
    main()
