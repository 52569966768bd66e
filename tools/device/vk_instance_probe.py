"""Probe how many Vulkan instances/devices a driver lets one process create (a device-run diagnostic).

On the NVIDIA H200 run of 2026-11-30 every ``vkCreateInstance`` in the provider
test process started failing with VK_ERROR_INCOMPATIBLE_DRIVER after ~33
instances had been created and destroyed (after ~200 OpenCL accelerators on
the same GPU). This script separates the candidate causes, each in its own
phase, printing one JSON line per observation:

1. raw: ``vkCreateInstance`` + ``vkDestroyInstance`` through the binding alone,
   N times (a per-process instance budget in the driver or loader?);
2. accel: the provider opened and closed N times, with and without the
   validation layer (something our provider leaks per instance?);
3. held: accelerators opened and kept open until one fails or LIMIT is reached
   (a limit on simultaneous devices?);
4. opencl-then-vulkan: 2N OpenCL accelerators on the GPU, each creating and
   destroying one context (a CUDA context underneath), then
   one Vulkan accelerator (do OpenCL contexts starve Vulkan?).

Every phase records the process's open file descriptors and its fd limit.

    python tools/device/vk_instance_probe.py [N] [LIMIT]
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time
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


def accel_cycles(n: int, validation: bool) -> None:
    from accel_vulkan import provider_family

    entry = provider_family.discover()[0]
    for i in range(n):
        try:
            accel = provider_family.open(entry, validation=validation)
        except Exception as exc:
            emit(phase="accel", validation=validation, i=i, failed=repr(exc))
            return
        accel.close()
        del accel
        if i % 25 == 0:
            gc.collect()
            emit(phase="accel", validation=validation, i=i, ok=True)
    emit(phase="accel", validation=validation, done=n)


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
        emit(phase="held", done=limit)
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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    emit(phase="start", rlimit_nofile=resource.getrlimit(resource.RLIMIT_NOFILE), pid=os.getpid())
    started = time.monotonic()
    for name, run in (
        ("raw", lambda: raw_instances(n)),
        ("accel-plain", lambda: accel_cycles(n, False)),
        ("accel-validation", lambda: accel_cycles(n, True)),
        ("held", lambda: held(limit)),
        ("opencl-then-vulkan", lambda: opencl_then_vulkan(2 * n)),
    ):
        try:
            run()
        except Exception as exc:
            emit(phase=name, crashed=repr(exc))
        emit(phase=name, elapsed_s=round(time.monotonic() - started, 2))


if __name__ == "__main__":
    main()
