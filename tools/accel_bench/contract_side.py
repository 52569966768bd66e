"""Our side: the tiny kernel and transfers through the accelcore contract.

:class:`ContractSession` drives anything with the ``Accelerator`` call shape —
a provider directly (``provider-direct``, used to subtract the provider's own
cost) or the :class:`~accelcore.engine.CommandEngine` over it (``ours``) —
through a small adapter, so both are timed with identical code. Ports and
binding lists are built once, outside the timed region, as a user holds them.
Round trips poll busily over ``poll_event``; the sustained drain waits with the engine's ``wait``
(blocking in the driver where the provider can) or, provider-direct, polls with sleeps.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeAlias, cast

import numpy as np
from typing_extensions import Buffer

from accelcore import (
    Accelerator,
    AccessMode,
    ArtifactRef,
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    ByteSink,
    ByteSource,
    ContextDesc,
    DeviceInfo,
    EventState,
    EventStatus,
    MemoryDomain,
    MemorySink,
    MemorySource,
    QueueDesc,
    TargetIdentity,
    Timeout,
)
from accelcore.contract.waiting import poll_until_terminal
from accelcore.kernels.package import Dispatch, DispatchKind, KernelPackage, ModuleKind, PackageBinding
from accelcore.kernels.package_codec import write_package

from . import kernels
from .sides import NotMeasured

__all__ = ["ContractApi", "ContractSession", "ProviderApi", "artifact_of", "tiny_package"]

_DOMAIN = {"host": MemoryDomain.HOST, "device": MemoryDomain.DEVICE, "shared": MemoryDomain.SHARED}
_TRANSFER = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
TINY_RESIDENT_BYTES = 64 << 20


Handle: TypeAlias = Any
"""A context, buffer, program, queue or event: a native handle (provider-direct) or an object ID (engine).
The session only hands these back to the calls that made them, so the harness stays generic over both."""


class ContractApi(Protocol):
    """The calls a session needs; handles are whatever the wrapped object uses (native handles or IDs)."""

    def device_info(self) -> DeviceInfo: ...
    def create_context(self, desc: ContextDesc) -> Handle: ...
    def destroy_context(self, context: Handle) -> None: ...
    def allocate_buffer(self, context: Handle, desc: BufferDesc) -> Handle: ...
    def write_buffer(self, buffer: Handle, offset: int, data: ByteSource) -> None: ...
    def read_buffer(self, buffer: Handle, offset: int, data: ByteSink) -> None: ...
    def free_buffer(self, buffer: Handle) -> None: ...
    def load_program(self, context: Handle, artifact: ArtifactRef) -> Handle: ...
    def unload_program(self, program: Handle) -> None: ...
    def create_queue(self, context: Handle, desc: QueueDesc) -> Handle: ...
    def destroy_queue(self, queue: Handle) -> None: ...
    def submit(
        self, queue: Handle, program: Handle, bindings: Sequence[BindingRef[Handle]], timeout: Timeout
    ) -> Handle: ...
    def poll_event(self, event: Handle) -> EventState: ...
    def destroy_event(self, event: Handle) -> None: ...


def tiny_package(module_kind: ModuleKind, module: bytes | None = None, target: TargetIdentity | None = None) -> bytes:
    """The tiny kernel as a kernel package of ``module_kind`` (OpenCL C source, OpenCL binary or Vulkan SPIR-V)."""
    if module is None:
        module = kernels.CL_SOURCE.encode() if module_kind is ModuleKind.OPENCL_SOURCE else kernels.tiny_spirv()
    entry = kernels.SPIRV_ENTRY if module_kind is ModuleKind.SPIRV_VULKAN else kernels.CL_ENTRY
    package = KernelPackage(
        module_kind=module_kind,
        entry_point=entry,
        local_size=(kernels.LOCAL_SIZE, 1, 1),
        bindings=(PackageBinding(slot=0, native_index=0, access=AccessMode.READ_WRITE, element_size=4),),
        dispatch=Dispatch(DispatchKind.FIXED, (kernels.ELEMENTS // kernels.LOCAL_SIZE, 1, 1)),
        module=module,
        target=target if target is not None else TargetIdentity.any(),
    )
    return write_package(package)


def artifact_of(package: bytes) -> ArtifactRef:
    """An ArtifactRef over the package bytes (format and target read from the package)."""
    from accelcore.kernels.package_codec import parse_package

    parsed = parse_package(MemorySource(package))
    return ArtifactRef(parsed.format, parsed.target, MemorySource(package), TINY_RESIDENT_BYTES)


class ContractSession:
    """One context, queue, tiny program and tiny buffer on ``api``; also a TransferSide and DispatchSide."""

    def __init__(self, api: ContractApi, name: str, module_kind: ModuleKind) -> None:
        self.api = api
        self.name = name
        self.module_kind = module_kind
        self.info = api.device_info()
        self.context = api.create_context(ContextDesc())
        self.queue = api.create_queue(self.context, QueueDesc())
        self.program = api.load_program(self.context, artifact_of(tiny_package(module_kind)))
        nbytes = kernels.ELEMENTS * 4
        self.tiny_domain = next(d for d in ("device", "shared", "host") if self.offers(d))
        desc = BufferDesc(nbytes, 64, _DOMAIN[self.tiny_domain], BufferUsage.MUTABLE_STATE | _TRANSFER)
        self.tiny_buffer = api.allocate_buffer(self.context, desc)
        api.write_buffer(self.tiny_buffer, 0, MemorySource(bytes(nbytes)))
        self.bindings = [BindingRef(0, self.tiny_buffer, BufferRange(0, nbytes), AccessMode.READ_WRITE)]
        self.count = 0
        self._buffers: list[Handle] = []

    # ------------------------------------------------------------------ facts
    def offers(self, domain: str) -> bool:
        return bool(self.info.capabilities & _DOMAIN[domain].capability)

    @property
    def max_events(self) -> int:
        return int(self.info.limits.max_events_per_context)

    # ------------------------------------------------------------------ TransferSide
    def open_buffer(self, nbytes: int, domain: str) -> Handle:
        if not self.offers(domain):
            raise NotMeasured(f"the device does not advertise {_DOMAIN[domain].capability.name}")
        if nbytes > self.info.limits.max_buffer_bytes:
            raise NotMeasured(f"{nbytes} bytes exceed max_buffer_bytes {self.info.limits.max_buffer_bytes}")
        return self.api.allocate_buffer(self.context, BufferDesc(nbytes, 64, _DOMAIN[domain], _TRANSFER))

    def writer(self, buffer: Handle, host: np.ndarray) -> Callable[[], None]:
        source, write = MemorySource(cast(Buffer, host)), self.api.write_buffer

        def op() -> None:
            write(buffer, 0, source)

        return op

    def reader(self, buffer: Handle, host: np.ndarray) -> Callable[[], None]:
        sink, read = MemorySink(cast(Buffer, host)), self.api.read_buffer

        def op() -> None:
            read(buffer, 0, sink)

        return op

    def close_buffer(self, buffer: Handle) -> None:
        self.api.free_buffer(buffer)

    # ------------------------------------------------------------------ DispatchSide
    def submit(self) -> Handle:
        return self.api.submit(self.queue, self.program, self.bindings, Timeout.INFINITE)

    def finish(self, event: Handle) -> None:
        """Poll until terminal (busy loop), insist on Complete, destroy the event."""
        poll = self.api.poll_event
        pending = EventStatus.PENDING
        state = poll(event)
        while state.status is pending:
            state = poll(event)
        if state.status is not EventStatus.COMPLETE:
            raise RuntimeError(f"{self.name}: tiny kernel ended {state}")
        self.api.destroy_event(event)

    def round_trip(self) -> None:
        self.finish(self.submit())
        self.count += 1

    def drain(self, event: Handle) -> None:
        """Wait for ``event``, insist on Complete, destroy it: how a throughput-minded caller waits.
        Through the engine: ``CommandEngine.wait`` (it blocks in ``clWaitForEvents`` /
        ``vkWaitSemaphores`` where the provider can, as the raw sides block in ``clWaitForEvents`` /
        ``vkWaitForFences`` here); provider-direct: :func:`accelcore.contract.waiting.poll_until_terminal`
        (polls sleeping in between: a busy poll would take a core from a CPU device's own worker
        threads)."""
        api = self.api
        wait = getattr(api, "wait", None)
        if wait is not None:
            state = wait(event)
        else:
            state = poll_until_terminal(lambda: api.poll_event(event), None)
        if state is None or state.status is not EventStatus.COMPLETE:
            raise RuntimeError(f"{self.name}: tiny kernel ended {state}")
        api.destroy_event(event)

    def sustained(self, submits: int, window: int) -> int:
        window = max(1, min(window, self.max_events - 1 if self.max_events > 1 else 1))
        in_flight: collections.deque[Handle] = collections.deque()
        submit, drain = self.submit, self.drain
        for _ in range(submits):
            if len(in_flight) >= window:
                drain(in_flight.popleft())
            in_flight.append(submit())
        while in_flight:
            drain(in_flight.popleft())
        self.count += submits
        return submits

    def cycles(self, count: int) -> None:
        """``count`` submit + poll-to-terminal + destroy cycles (copy-freedom run)."""
        submit, finish = self.submit, self.finish
        for _ in range(count):
            finish(submit())
        self.count += count

    def values(self) -> np.ndarray:
        out = np.zeros(kernels.ELEMENTS, dtype=np.uint32)
        self.api.read_buffer(self.tiny_buffer, 0, MemorySink(cast(Buffer, out)))
        return out

    def verify(self) -> bool:
        return bool(np.all(self.values() == self.count))

    # ------------------------------------------------------------------ program loads
    def load(self, artifact: ArtifactRef) -> Handle:
        return self.api.load_program(self.context, artifact)

    def unload(self, program: Handle) -> None:
        self.api.unload_program(program)

    def close(self) -> None:
        api = self.api
        api.free_buffer(self.tiny_buffer)
        api.unload_program(self.program)
        api.destroy_queue(self.queue)
        api.destroy_context(self.context)


class ProviderApi:
    """Adapter: a provider called directly (allocate_buffer returns the native handle).

    The provider's bound methods are stored on the instance once, so a timed call is one
    attribute read and the provider's own call, exactly as through :class:`EngineApi`.
    """

    def __init__(self, provider: Accelerator[Any, Any, Any, Any, Any]) -> None:
        self.provider = provider
        self.device_info = provider.device_info
        self.create_context = provider.create_context
        self.destroy_context = provider.destroy_context
        self.write_buffer = provider.write_buffer
        self.read_buffer = provider.read_buffer
        self.free_buffer = provider.free_buffer
        self.load_program = provider.load_program
        self.unload_program = provider.unload_program
        self.create_queue = provider.create_queue
        self.destroy_queue = provider.destroy_queue
        self.submit = provider.submit
        self.poll_event = provider.poll_event
        self.destroy_event = provider.destroy_event

    def allocate_buffer(self, context: Handle, desc: BufferDesc) -> Handle:
        return self.provider.allocate_buffer(context, desc).buffer
