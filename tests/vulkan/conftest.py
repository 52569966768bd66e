"""Vulkan provider tests: parametrized over every Vulkan device found, validation layer on.

Every instance a test makes runs with ``VK_LAYER_KHRONOS_validation`` and a
debug-utils messenger; a test fails if the layer reported anything or if a
native object is still live at teardown. ``ACCEL_VULKAN_VALIDATION=0`` runs
them without the layer (for a machine that lacks it; the layer is otherwise
required). Narrow the devices with ``ACCEL_DEVICES``, a comma list of globs
over ids such as ``vulkan:0-llvmpipe``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from accelcore import (
    AccessMode,
    ArtifactRef,
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    ContextDesc,
    EventState,
    MemoryDomain,
    MemorySink,
    MemorySource,
    QueueDesc,
    TargetIdentity,
    Timeout,
)
from accelcore.contract.waiting import poll_until_terminal
from accelcore.devices.registry import DeviceEntry
from accelcore.kernels.package import ModuleKind, format_for
from accelcore.testing.pytest_support import parametrize_entry
from accelcore.testing.selection import device_test_id

TRANSFER = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
VK = ModuleKind.SPIRV_VULKAN
VALIDATION = os.environ.get("ACCEL_VULKAN_VALIDATION", "1").strip().lower() not in ("0", "false", "no", "off")
"""Whether test instances run under the validation layer (default: yes)."""


def device_id(entry: DeviceEntry) -> str:
    return device_test_id(entry)


def _discover() -> Any:
    from accel_vulkan import provider_family

    return provider_family.discover()


pytest_generate_tests = parametrize_entry(_discover, "Vulkan")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.vulkan)


VUID_ZERO_SIZE = "VUID-VkBufferCreateInfo-size-00912"
"""The validation-layer message :func:`provoke_validation_error` causes."""


def provoke_validation_error(accel: Any) -> None:
    """A deliberate VUID violation (a zero-sized buffer) on a fresh context of ``accel``."""
    import vulkan as vk

    ctx = accel.create_context(ContextDesc())
    info = vk.VkBufferCreateInfo(size=0, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)
    try:
        buffer = vk.vkCreateBuffer(ctx.device, info, None)
        vk.vkDestroyBuffer(ctx.device, buffer, None)
    except vk.VkError:
        pass
    accel.destroy_context(ctx)


def assert_clean(instance: Any) -> None:
    """No validation message and no live native object."""
    messages = instance.validation_messages
    assert not messages, f"{len(messages)} validation message(s); first: {messages[0]}"
    live = {k: v for k, v in instance.live_resources().items() if v}
    assert not live, f"live native objects left: {live}"


@pytest.fixture
def make_accel(entry: DeviceEntry) -> Iterator[Callable[..., Any]]:
    """``make_accel(**options)``: fresh validated instances; each is checked clean and closed at teardown."""
    from accel_vulkan import provider_family

    made: list[Any] = []

    def factory(**options: Any) -> Any:
        instance = provider_family.open(entry, validation=VALIDATION, **options)
        made.append(instance)
        return instance

    yield factory
    try:
        for instance in made:
            assert_clean(instance)
    finally:
        for instance in made:
            instance.close()
    for instance in made:
        messages = instance.validation_messages
        assert not messages, f"validation message(s) during teardown; first: {messages[0]}"


@pytest.fixture
def accel(make_accel: Callable[..., Any]) -> Any:
    return make_accel()


def artifact(raw: bytes, kind: ModuleKind = VK, resident_bytes: int = 64 << 20) -> ArtifactRef:
    return ArtifactRef(format_for(kind), TargetIdentity.any(), MemorySource(raw), resident_bytes)


class Rig:
    """A context and queue on one instance, with helpers; ``close()`` releases all it made, child first."""

    def __init__(self, accel: Any, domain: MemoryDomain = MemoryDomain.HOST) -> None:
        self.accel = accel
        self.domain = domain
        self.context = accel.create_context(ContextDesc())
        self.queue = accel.create_queue(self.context, QueueDesc())
        self.queues = [self.queue]
        self.buffers: list[Any] = []
        self.programs: list[Any] = []
        self.events: list[Any] = []

    def buffer(self, data: bytes, access: AccessMode = AccessMode.READ, domain: MemoryDomain | None = None) -> Any:
        desc = BufferDesc(len(data), 16, domain or self.domain, TRANSFER | BufferUsage.for_access(access))
        handle = self.accel.allocate_buffer(self.context, desc).buffer
        self.accel.write_buffer(handle, 0, MemorySource(data))
        self.buffers.append(handle)
        return handle

    def read(self, buffer: Any) -> bytes:
        out = bytearray(buffer.desc.bytes)
        self.accel.read_buffer(buffer, 0, MemorySink(out))
        return bytes(out)

    def load(self, raw: bytes, resident_bytes: int = 64 << 20) -> Any:
        program = self.accel.load_program(self.context, artifact(raw, resident_bytes=resident_bytes))
        self.programs.append(program)
        return program

    def new_queue(self) -> Any:
        queue = self.accel.create_queue(self.context, QueueDesc())
        self.queues.append(queue)
        return queue

    def bind(self, slots: dict[int, tuple[Any, AccessMode]]) -> list[BindingRef[Any]]:
        return [BindingRef(slot, buf, BufferRange(0, buf.desc.bytes), access) for slot, (buf, access) in slots.items()]

    def submit(
        self,
        program: Any,
        slots: dict[int, tuple[Any, AccessMode]],
        timeout: Timeout = Timeout.INFINITE,
        queue: Any = None,
    ) -> Any:
        event = self.accel.submit(queue or self.queue, program, self.bind(slots), timeout)
        self.events.append(event)
        return event

    def wait(self, event: Any, limit_s: float = 60.0) -> EventState:
        state = poll_until_terminal(lambda: self.accel.poll_event(event), limit_s)
        assert state is not None, f"event still pending after {limit_s}s"
        return state

    def close(self) -> None:
        self.accel.release()
        for event in self.events:
            if event.state.value == "live":
                self.wait(event)
                self.accel.destroy_event(event)
        for program in self.programs:
            self.accel.unload_program(program)
        for buffer in self.buffers:
            self.accel.free_buffer(buffer)
        for queue in self.queues:
            self.accel.destroy_queue(queue)
        self.accel.destroy_context(self.context)


@pytest.fixture
def rig(accel: Any) -> Iterator[Rig]:
    r = Rig(accel)
    yield r
    r.close()
