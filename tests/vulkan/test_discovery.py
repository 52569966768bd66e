"""Discovery, DeviceInfo from the device's own answers, the baseline, and the family entry point."""

from __future__ import annotations

from typing import Any

import pytest
import vulkan as vk
from accel_vulkan.device_info import MAX_BINDINGS

from accelcore import AcceleratorClass, Capabilities
from accelcore.devices.registry import DeviceEntry, load_families


def test_family_is_registered_and_lists_the_device(entry: DeviceEntry) -> None:
    family = load_families(["vulkan"])["vulkan"]
    assert not isinstance(family, Exception), family
    found = {e.uuid: e for e in family.discover()}
    assert entry.uuid in found
    assert found[entry.uuid].index == entry.index
    assert entry.provider == "vulkan"
    assert entry.native["api_version"].startswith("1.")


def test_device_info_comes_from_the_device(accel: Any) -> None:
    info = accel.device_info()
    info.validate()
    d = accel.description
    props = vk.vkGetPhysicalDeviceProperties(accel._physical)
    assert info.identity.vendor_id == props.vendorID
    assert info.identity.device_id == props.deviceID
    assert info.identity.uuid == d.uuid and len(d.uuid) == 16 and any(d.uuid)
    gpu = props.deviceType in (
        vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU,
        vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
        vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU,
    )
    assert info.identity.class_ == (AcceleratorClass.GPU if gpu else AcceleratorClass.OTHER)
    limits = props.limits
    assert info.limits.max_buffer_bytes == min(limits.maxStorageBufferRange, d.max_memory_allocation_size)
    assert info.limits.max_bindings_per_submission == min(
        MAX_BINDINGS,
        limits.maxPerStageDescriptorStorageBuffers,
        limits.maxDescriptorSetStorageBuffers,
        limits.maxPerStageResources,
    )
    assert info.limits.max_buffers_per_context == min(0xFFFFFFFF, limits.maxMemoryAllocationCount - 1)
    assert info.has(Capabilities.EVENT_CANCELLATION)


def test_memory_domains_follow_the_memory_types(accel: Any) -> None:
    info = accel.device_info()
    memory = vk.vkGetPhysicalDeviceMemoryProperties(accel._physical)
    flags = [memory.memoryTypes[i].propertyFlags for i in range(memory.memoryTypeCount)]
    visible, coherent, local = (
        vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
        vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
    )
    assert info.has(Capabilities.HOST_VISIBLE_MEMORY) == any(
        f & (visible | coherent) == visible | coherent for f in flags
    )
    assert info.has(Capabilities.DEVICE_LOCAL_MEMORY) == any(f & local for f in flags)
    assert info.has(Capabilities.SHARED_MEMORY) == any(f & (visible | local) == visible | local for f in flags)


def test_device_info_is_stable_and_identical_across_instances(make_accel: Any) -> None:
    first, second = make_accel(), make_accel()
    assert first.device_info() is first.device_info()
    assert first.device_info() == second.device_info()


@pytest.mark.parametrize(
    ("api", "timeline", "compute", "memory", "expected"),
    [
        ((1 << 22) | (2 << 12), True, True, True, []),
        ((1 << 22) | (1 << 12) | 105, True, True, True, ["below the 1.2 baseline"]),
        ((1 << 22) | (3 << 12), False, True, True, ["timelineSemaphore"]),
        ((1 << 22) | (3 << 12), True, False, True, ["VK_QUEUE_COMPUTE_BIT"]),
        ((1 << 22) | (3 << 12), True, True, False, ["no memory types"]),
    ],
    ids=["ok", "vulkan-1.1", "no-timeline", "no-compute", "no-memory"],
)
def test_baseline_reasons_name_what_is_missing(
    api: int, timeline: bool, compute: bool, memory: bool, expected: list[str]
) -> None:
    from accel_vulkan.instance import baseline_problems

    reasons = baseline_problems(api, timeline, compute, memory)
    assert len(reasons) == len(expected)
    for reason, fragment in zip(reasons, expected, strict=True):
        assert fragment in reason
    if api < (1 << 22) | (2 << 12):
        assert "1.1.105" in reasons[0]


def test_opening_an_unknown_device_is_a_clear_error(raises_kind: Any) -> None:
    from accel_vulkan import VulkanAccelerator

    from accelcore import ErrorKind

    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        VulkanAccelerator(b"\xff" * 16)
    assert "no Vulkan physical device" in info.value.message


def test_importing_the_package_does_not_import_the_binding() -> None:
    import subprocess
    import sys

    code = "import sys, accel_vulkan; assert 'vulkan' not in sys.modules, 'binding imported eagerly'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
