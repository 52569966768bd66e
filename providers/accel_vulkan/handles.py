"""Provider-owned handle classes (one per contract object) with explicit lifecycle state.

Handles are plain records owned by one :class:`~accel_vulkan.VulkanAccelerator`;
a handle is usable only while ``state`` is LIVE and only with its owner.
Native objects are created and destroyed by the modules named in each
class's docstring; a handle never destroys anything itself.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from accelcore import AccessMode, BufferDesc, BufferInfo, EventState
from accelcore.package import KernelPackage


class HandleState(enum.Enum):
    LIVE = "live"
    RELEASED = "released"


@dataclass(eq=False)
class VulkanContext:
    """A context: one ``VkDevice`` with its queues, pools and staging (see :mod:`accel_vulkan.context`)."""

    owner: object
    """The owning provider instance's private token."""
    device: Any
    native_queues: list[Any]
    queue_family: int
    command_pool: Any
    descriptor_pool: Any
    descriptor_sets_max: int
    descriptor_sets_live: int = 0
    buffers: int = 0
    programs: int = 0
    queues: int = 0
    events: int = 0
    staging: Any = None
    """A :class:`~accel_vulkan.transfer.Staging` once the first staged transfer needs it."""
    queue_cursor: int = 0
    recordings: Any = None
    """The context's :class:`~accel_vulkan.recording.RecordingCache` of idle recorded dispatches."""
    plans: Any = None
    """The context's :class:`~accel_vulkan.recording.PlanMemo` of binding sets that passed validation."""
    state: HandleState = HandleState.LIVE

    def __repr__(self) -> str:
        return (
            f"VulkanContext({self.state.value}, buffers={self.buffers}, programs={self.programs}, "
            f"queues={self.queues}, events={self.events})"
        )


@dataclass(eq=False)
class VulkanBuffer:
    """One ``VkBuffer`` bound at offset 0 to its own ``VkDeviceMemory`` (see :mod:`accel_vulkan.memory`)."""

    context: VulkanContext
    desc: BufferDesc
    info: BufferInfo
    buffer: Any
    memory: Any
    memory_type: int
    memory_flags: int
    allocation_bytes: int
    mapped: memoryview | None
    """The persistent mapping (whole allocation) when the memory is host-visible and mapped."""
    mapping: Any = None
    address: Any = None
    """A cffi ``char *`` to the start of the persistent mapping (None when not mapped); valid only while mapped."""
    coherent: bool = True
    can_write: bool = False
    """The usage allows ``write_buffer`` (TRANSFER_DESTINATION), precomputed for the transfer fast path."""
    can_read: bool = False
    """The usage allows ``read_buffer`` (TRANSFER_SOURCE)."""
    events: int = 0
    state: HandleState = HandleState.LIVE

    def __repr__(self) -> str:
        return (
            f"VulkanBuffer({self.state.value}, {self.desc.bytes} bytes, {self.desc.domain.name}, events={self.events})"
        )


@dataclass(eq=False)
class VulkanProgram:
    """One compute pipeline with its layouts (see :mod:`accel_vulkan.pipeline`)."""

    context: VulkanContext
    package: KernelPackage
    pipeline: Any
    pipeline_layout: Any
    set_layout: Any
    resident_bytes: int
    access: dict[int, AccessMode]
    """slot → declared access (the package's binding table)."""
    native_index: dict[int, int]
    events: int = 0
    state: HandleState = HandleState.LIVE

    def __repr__(self) -> str:
        return f"VulkanProgram({self.state.value}, entry={self.package.entry_point!r}, events={self.events})"


@dataclass(eq=False)
class VulkanQueue:
    """A contract queue: a host-side gate in front of one ``VkQueue`` and a timeline semaphore.

    ``signalled`` is the last timeline value handed to the device; every
    batch handed over signals the next value. ``held`` are batches kept
    host-side while the gate is closed (cancellable).
    """

    context: VulkanContext
    native_queue: Any
    native_index: int
    semaphore: Any
    counter: Any
    """A preallocated ``uint64_t*`` for reading the semaphore value without allocating."""
    signalled: int = 0
    submit_native: Any = None
    """Prebuilt ``VkSubmitInfo`` and the cells it points to (see :func:`accel_vulkan.submission.create_queue`)."""
    held: deque[VulkanEvent] = field(default_factory=deque)
    gate_closed: bool = False
    events: int = 0
    state: HandleState = HandleState.LIVE

    def __repr__(self) -> str:
        return (
            f"VulkanQueue({self.state.value}, vkqueue={self.native_index}, signalled={self.signalled}, "
            f"held={len(self.held)}, events={self.events}, gate={'closed' if self.gate_closed else 'open'})"
        )


class EventStage(enum.Enum):
    HELD = "held"
    """Recorded and kept host-side; cancellation still wins."""
    ON_DEVICE = "on-device"
    """Handed to vkQueueSubmit; it can no longer be revoked."""
    TERMINAL = "terminal"


@dataclass(eq=False)
class VulkanEvent:
    """One admitted submission: its recording (command buffer + descriptor set) and timeline value."""

    queue: VulkanQueue
    program: VulkanProgram
    buffers: tuple[VulkanBuffer, ...]
    recording: Any
    """The :class:`~accel_vulkan.recording.Recording` this event owns until it is destroyed."""
    deadline_ns: int | None
    value: int = 0
    stage: EventStage = EventStage.HELD
    result: EventState = EventState.PENDING
    state: HandleState = HandleState.LIVE

    def __repr__(self) -> str:
        return f"VulkanEvent({self.state.value}, {self.stage.value}, value={self.value}, {self.result})"
