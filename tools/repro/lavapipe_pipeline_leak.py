"""Raw reproducer: does the Vulkan driver keep memory per compute pipeline created and destroyed?

Uses the ``vulkan`` binding alone (no accelcore provider code): one instance, one device, then
``cycles`` times create + destroy a shader module, a descriptor-set layout, a pipeline layout and a
compute pipeline for the SPIR-V inside a kernel package (``accelcore.kernels.package_codec.parse_package`` is
only used to pull the SPIR-V, entry point and binding table out of the file). It prints RSS
(``/proc/self/statm``) every ``--every`` cycles, after destroying the device and after destroying the
instance. ``--stage`` stops each cycle early, to find which object keeps the memory:

    module    shader module only
    layouts   shader module + descriptor-set layout + pipeline layout
    pipeline  all of the above + compute pipeline (what accelcore's load/unload does)
    cache     pipeline, created through a fresh VkPipelineCache that is destroyed too

``--flush`` submits one empty batch (``vkQueueSubmit`` of a ``VkSubmitInfo`` with nothing in it) after
each cycle: lavapipe frees destroyed pipelines only in its queue-submit path or at ``vkDestroyDevice``,
so with it RSS stays flat (accel_vulkan does the same after every unload on lavapipe).

Run: ``XDG_RUNTIME_DIR=/tmp python tools/repro/lavapipe_pipeline_leak.py [--stage pipeline] [--cycles 1000]``.

Measured 2026-12-01 on Mesa 22.3.6 lavapipe (LLVM 15.0.6, Debian 12, 2 cores), conformance kernel
(2,156 bytes of SPIR-V), 1,000 cycles; "in use" is glibc's mallinfo2 (uordblks + hblkhd):

    stage               RSS after 1,000        malloc in use       after vkDestroyDevice    after malloc_trim
    module              +0.0 MiB               12.7 -> 12.7 MiB    in use 9.6 MiB           RSS 93 MiB
    layouts             +0.0 MiB               12.7 -> 12.7 MiB    in use 9.6 MiB           RSS 93 MiB
    pipeline            +129.4 MiB (132 KiB)   12.7 -> 474.7 MiB   in use 9.7, RSS +129     RSS 94 MiB
    cache               +128.7 MiB (132 KiB)   12.7 -> 474.7 MiB   in use 9.7, RSS +129     RSS 94 MiB
    pipeline --flush    +3.4 MiB               12.7 -> 12.7 MiB    in use 9.6 MiB           RSS 93 MiB
    (--flush, 10,000)   +7.5 MiB               12.7 -> 12.8 MiB    in use 9.7 MiB           RSS 93 MiB

So the driver keeps every destroyed compute pipeline (about 475 KiB allocated, 132 KiB of it touched)
until its next queue submission or ``vkDestroyDevice``; what ``vkDestroyDevice`` frees stays resident
(glibc keeps freed heap pages) until ``malloc_trim``. With the empty submission nothing stays allocated;
the few MiB of RSS left are heap pages the allocator has not returned. docs/vulkan.md, "Pipeline memory
on lavapipe", has the story and the provider's workaround.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys

import vulkan as vk  # type: ignore[import-untyped]

from accelcore.kernels.package_codec import parse_package

PAGE = os.sysconf("SC_PAGE_SIZE")
STAGES = ("module", "layouts", "pipeline", "cache")


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def malloc_in_use_mib() -> float | None:
    """Bytes glibc malloc has handed out and not got back (mallinfo2: uordblks + hblkhd), or None."""
    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return float(info.uordblks + info.hblkhd) / 2**20


def memory() -> str:
    heap = malloc_in_use_mib()
    return f"rss {rss_mib():8.1f} MiB" + ("" if heap is None else f"  malloc in use {heap:8.1f} MiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="artifacts/packages/conformance.vk.spv.kpkg")
    parser.add_argument("--stage", choices=STAGES, default="pipeline")
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--device", type=int, default=0, help="physical device index")
    parser.add_argument("--flush", action="store_true", help="one empty vkQueueSubmit after each cycle")
    args = parser.parse_args(argv)
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

    with open(args.package, "rb") as f:
        package = parse_package(f.read())
    code = package.module

    app = vk.VkApplicationInfo(apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
    instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
    physical = vk.vkEnumeratePhysicalDevices(instance)[args.device]
    name = vk.vkGetPhysicalDeviceProperties(physical).deviceName
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
    family = next(i for i, p in enumerate(families) if p.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
    queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family, queueCount=1, pQueuePriorities=[1.0])
    device = vk.vkCreateDevice(physical, vk.VkDeviceCreateInfo(pQueueCreateInfos=[queue_info]), None)
    queue = vk.vkGetDeviceQueue(device, family, 0)
    empty = [vk.VkSubmitInfo()]

    compute = vk.VK_SHADER_STAGE_COMPUTE_BIT
    layout_bindings = [
        vk.VkDescriptorSetLayoutBinding(
            binding=row.native_index,
            descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            descriptorCount=1,
            stageFlags=compute,
        )
        for row in package.bindings
    ]
    push = [vk.VkPushConstantRange(stageFlags=compute, offset=0, size=4)]
    level = STAGES.index(args.stage)
    flush = "; empty submit after each" if args.flush else ""
    print(f"device {name}; stage {args.stage}; {args.cycles} cycles{flush}; SPIR-V {len(code)} bytes", flush=True)
    start = rss_mib()
    print(f"{0:6d} cycles  {memory()}", flush=True)
    for i in range(1, args.cycles + 1):
        shader = vk.vkCreateShaderModule(device, vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code), None)
        if level >= 1:
            set_layout = vk.vkCreateDescriptorSetLayout(
                device, vk.VkDescriptorSetLayoutCreateInfo(pBindings=layout_bindings), None
            )
            layout = vk.vkCreatePipelineLayout(
                device, vk.VkPipelineLayoutCreateInfo(pSetLayouts=[set_layout], pPushConstantRanges=push), None
            )
        if level >= 2:
            cache = vk.vkCreatePipelineCache(device, vk.VkPipelineCacheCreateInfo(), None) if level >= 3 else None
            stage = vk.VkPipelineShaderStageCreateInfo(stage=compute, module=shader, pName=package.entry_point)
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout, basePipelineIndex=-1)
            pipeline = vk.vkCreateComputePipelines(device, cache, 1, [info], None)[0]
            vk.vkDestroyPipeline(device, pipeline, None)
            if cache is not None:
                vk.vkDestroyPipelineCache(device, cache, None)
        if level >= 1:
            vk.vkDestroyPipelineLayout(device, layout, None)
            vk.vkDestroyDescriptorSetLayout(device, set_layout, None)
        vk.vkDestroyShaderModule(device, shader, None)
        if args.flush:
            vk.vkQueueSubmit(queue, 1, empty, None)
        if i % args.every == 0:
            grown = rss_mib() - start
            print(f"{i:6d} cycles  {memory()}  (rss +{grown:.1f}; {grown * 1024 / i:.1f} KiB/cycle)", flush=True)
    vk.vkQueueWaitIdle(queue)
    vk.vkDestroyDevice(device, None)
    print(f"device destroyed    {memory()}")
    vk.vkDestroyInstance(instance, None)
    print(f"instance destroyed  {memory()}")
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        print(f"after malloc_trim   {memory()}")
    except (OSError, AttributeError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
