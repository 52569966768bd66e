"""The one mapping from binding exceptions (VkError and VkException families) to ErrorKind."""

from __future__ import annotations

from typing import Any

import pytest
import vulkan as vk
from accel_vulkan.errors import VULKAN_ERROR_DOMAIN, call, native, translate

from accelcore import BackendError, ErrorKind


@pytest.mark.parametrize(
    ("exception", "kind", "code"),
    [
        (vk.VkNotReady, ErrorKind.BUSY, 1),
        (vk.VkTimeout, ErrorKind.DEADLINE_EXPIRED, 2),
        (vk.VkIncomplete, ErrorKind.EXTERNAL, 5),
        (vk.VkErrorOutOfHostMemory, ErrorKind.OUT_OF_MEMORY, -1),
        (vk.VkErrorOutOfDeviceMemory, ErrorKind.OUT_OF_MEMORY, -2),
        (vk.VkErrorDeviceLost, ErrorKind.DEVICE_LOST, -4),
        (vk.VkErrorFeatureNotPresent, ErrorKind.UNSUPPORTED, -8),
        (vk.VkErrorTooManyObjects, ErrorKind.RESOURCE_LIMIT, -10),
        (vk.VkErrorUnknown, ErrorKind.EXTERNAL, -13),
        (vk.VkErrorOutOfPoolMemory, ErrorKind.RESOURCE_LIMIT, -1000069000),
    ],
)
def test_binding_exception_maps_to_kind_with_native_code(
    exception: type[Exception], kind: ErrorKind, code: int
) -> None:
    def fail() -> None:
        raise exception

    with pytest.raises(BackendError) as info:
        call("vkSomething", fail)
    error = info.value
    assert error.kind is kind
    assert error.native_call == "vkSomething"
    assert error.native_code == code
    if kind is ErrorKind.EXTERNAL:
        assert error.domain == VULKAN_ERROR_DOMAIN and error.code == code


def test_both_families_are_covered() -> None:
    assert not issubclass(vk.VkNotReady, vk.VkError)
    not_ready = translate(vk.VkNotReady(), "vkX")
    lost = translate(vk.VkErrorDeviceLost(), "vkX")
    assert not_ready is not None and not_ready.kind is ErrorKind.BUSY and not_ready.native_code == 1
    assert lost is not None and lost.kind is ErrorKind.DEVICE_LOST and lost.native_code == -4


def test_unknown_result_from_the_binding_keyerror() -> None:
    # The binding's table has VK_ERROR_OUT_OF_POOL_MEMORY with the wrong sign: the real result escapes as KeyError.
    error = translate(KeyError(-1000069000), "vkAllocateDescriptorSets")
    assert error is not None and error.kind is ErrorKind.RESOURCE_LIMIT
    error = translate(KeyError(-123456), "vkX")
    assert error is not None and error.kind is ErrorKind.EXTERNAL and error.native_code == -123456


def test_programming_errors_are_not_translated() -> None:
    def broken() -> None:
        raise TypeError("bad argument")

    with pytest.raises(TypeError):
        call("vkX", broken)


def test_a_real_timeout_from_the_driver(rig: Any) -> None:
    """vkWaitSemaphores on a value nobody signals, with a zero timeout: the driver's VK_TIMEOUT → DEADLINE_EXPIRED."""
    queue = rig.queue
    info = vk.VkSemaphoreWaitInfo(semaphoreCount=1, pSemaphores=[queue.semaphore], pValues=[queue.signalled + 1])
    with pytest.raises(BackendError) as caught:
        native("vkWaitSemaphores", rig.context.device, info, 0)
    assert caught.value.kind is ErrorKind.DEADLINE_EXPIRED
    assert caught.value.native_call == "vkWaitSemaphores" and caught.value.native_code == 2
