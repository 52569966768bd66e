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
from accelcore.kernels.package import KernelPackage


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
    pipelines: dict[Any, Any] = field(default_factory=dict)
    """Live :class:`~accel_vulkan.pipeline.SharedPipeline` objects by their key (programs share them)."""
    pipelines_created: int = 0
    """How many compute pipelines this context has created (``vkCreateComputePipelines`` calls that succeeded)."""
    uniform_usage: bool | None = None
    """Whether buffers get ``VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT`` too (decided at the first allocation)."""
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
    can_uniform: bool = False
    """Created with ``VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT``: it may be bound as a uniform buffer."""
    events: int = 0
    state: HandleState = HandleState.LIVE

    def __repr__(self) -> str:
        return (
            f"VulkanBuffer({self.state.value}, {self.desc.bytes} bytes, {self.desc.domain.name}, events={self.events})"
        )


@dataclass(eq=False)
class VulkanProgram:
    """A loaded package: a reference to a (possibly shared) compute pipeline plus what it passes.

    ``shared`` is the :class:`~accel_vulkan.pipeline.SharedPipeline` (pipeline, layout, set layouts)
    this program holds one reference to; ``pipeline`` / ``pipeline_layout`` are its handles.
    """

    context: VulkanContext
    package: KernelPackage
    shared: Any
    pipeline: Any
    pipeline_layout: Any
    resident_bytes: int
    access: dict[int, AccessMode]
    """slot → declared access (the package's binding table)."""
    native_index: dict[int, int]
    """slot → descriptor binding (in the slot's set)."""
    set_of: dict[int, int] = field(default_factory=dict)
    """slot → descriptor set."""
    uniform: dict[int, int] = field(default_factory=dict)
    """slot → the uniform block's size in bytes (0 when not computable), for the slots bound as uniform buffers."""
    sets: tuple[int, ...] = ()
    """The descriptor sets a submission allocates and binds (those with at least one binding), ascending."""
    push: bytes = b""
    """The push-constant bytes of every dispatch (the package's block, or 4 bytes for a v1 count); empty: none."""
    push_count: bool = False
    """The element count overwrites ``push[0:4]`` on each dispatch."""
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
