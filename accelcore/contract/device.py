"""Device identity, capabilities, limits and the metadata validators."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ._checks import U16_MAX, check_u32, check_u64, check_uint
from .buffers import BufferDesc, BufferInfo
from .errors import BackendError, DeviceInfoError, DeviceInfoErrorKind, ErrorKind
from .flags import AcceleratorClass, Capabilities, ContextFlags, QueueFlags

__all__ = ["ContextDesc", "DeviceIdentity", "DeviceInfo", "DeviceLimits", "QueueDesc"]

_NO_CONTEXT_FLAGS = ContextFlags(0)
_NO_QUEUE_FLAGS = QueueFlags(0)


@dataclass(frozen=True, slots=True)
class DeviceIdentity:
    """``uuid`` (16 bytes), accelerator ``class_`` and u32 vendor/device ids."""

    uuid: bytes
    class_: AcceleratorClass
    vendor_id: int
    device_id: int

    def __post_init__(self) -> None:
        uuid = self.uuid
        if isinstance(uuid, bytearray | memoryview):
            uuid = bytes(uuid)
        if not isinstance(uuid, bytes) or len(uuid) != 16:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"DeviceIdentity.uuid must be 16 bytes, got {self.uuid!r}")
        object.__setattr__(self, "uuid", uuid)
        if not isinstance(self.class_, AcceleratorClass):
            object.__setattr__(
                self, "class_", AcceleratorClass(check_uint("DeviceIdentity.class_", self.class_, U16_MAX))
            )
        check_u32("DeviceIdentity.vendor_id", self.vendor_id)
        check_u32("DeviceIdentity.device_id", self.device_id)

    @property
    def uuid_hex(self) -> str:
        h = self.uuid.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass(frozen=True, slots=True)
class DeviceLimits:
    """Per-device limits: u32 counts and u64 byte sizes. Zero is invalid (ZeroLimit)."""

    max_contexts: int
    max_buffers_per_context: int
    max_programs_per_context: int
    max_queues_per_context: int
    max_events_per_context: int
    max_bindings_per_submission: int
    max_buffer_bytes: int
    max_artifact_bytes: int
    total_memory_bytes: int | None = None
    """The device's reported global memory (OpenCL ``CL_DEVICE_GLOBAL_MEM_SIZE``, Vulkan the largest
    device-local heap): the engine refuses live buffers past it in all (RESOURCE_LIMIT) unless the
    policy allows overcommit (:class:`~accelcore.engine.ResourcePolicy`). None: not reported, no check."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "total_memory_bytes":
                if value is not None:
                    check_u64(f"DeviceLimits.{f.name}", value)
            elif f.name in ("max_buffer_bytes", "max_artifact_bytes"):
                check_u64(f"DeviceLimits.{f.name}", value)
            else:
                check_u32(f"DeviceLimits.{f.name}", value)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True, slots=True)
class ContextDesc:
    """Context intent. Only empty flags are supported."""

    flags: ContextFlags = _NO_CONTEXT_FLAGS

    def __post_init__(self) -> None:
        check_u32("ContextDesc.flags", self.flags)
        object.__setattr__(self, "flags", ContextFlags(int(self.flags)))


@dataclass(frozen=True, slots=True)
class QueueDesc:
    """Execution-queue intent. Only empty flags are supported."""

    flags: QueueFlags = _NO_QUEUE_FLAGS

    def __post_init__(self) -> None:
        check_u32("QueueDesc.flags", self.flags)
        object.__setattr__(self, "flags", QueueFlags(int(self.flags)))


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """Immutable identity, capability and limit metadata of one backend instance."""

    identity: DeviceIdentity
    capabilities: Capabilities
    limits: DeviceLimits

    def __post_init__(self) -> None:
        if not isinstance(self.identity, DeviceIdentity):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"DeviceInfo.identity must be a DeviceIdentity, got {self.identity!r}"
            )
        if not isinstance(self.limits, DeviceLimits):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"DeviceInfo.limits must be a DeviceLimits, got {self.limits!r}"
            )
        check_u64("DeviceInfo.capabilities", self.capabilities)
        object.__setattr__(self, "capabilities", Capabilities(int(self.capabilities)))

    def validate(self) -> None:
        """Raise :class:`DeviceInfoError` for reserved capabilities, no memory domain or a zero limit."""
        reserved = self.capabilities & Capabilities.reserved()
        if reserved:
            raise DeviceInfoError(
                DeviceInfoErrorKind.RESERVED_CAPABILITIES,
                f"reserved capability bits set: {int(reserved):#x}",
            )
        if not self.capabilities & Capabilities.memory_domains():
            raise DeviceInfoError(
                DeviceInfoErrorKind.MISSING_MEMORY_DOMAIN,
                "no memory-domain capability (HOST_VISIBLE_MEMORY, DEVICE_LOCAL_MEMORY or SHARED_MEMORY)",
            )
        for name, value in self.limits.as_dict().items():
            if value == 0:
                raise DeviceInfoError(DeviceInfoErrorKind.ZERO_LIMIT, f"limit {name} is 0", field=name)

    def has(self, capability: Capabilities) -> bool:
        return self.capabilities & capability == capability

    def validate_context_desc(self, desc: ContextDesc) -> None:
        """Non-empty context flags → UNSUPPORTED."""
        if int(desc.flags):
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"context flags {int(desc.flags):#x} are not supported; only empty flags are",
            )

    def validate_queue_desc(self, desc: QueueDesc) -> None:
        """Non-empty queue flags → UNSUPPORTED."""
        if int(desc.flags):
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"queue flags {int(desc.flags):#x} are not supported; only empty flags are",
            )

    def validate_buffer_desc(self, desc: BufferDesc) -> None:
        """Too large → RESOURCE_LIMIT; a domain the device does not advertise → UNSUPPORTED."""
        if desc.bytes > self.limits.max_buffer_bytes:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"buffer of {desc.bytes} bytes exceeds max_buffer_bytes {self.limits.max_buffer_bytes}",
            )
        if not self.capabilities.supports_memory_domain(desc.domain):
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"memory domain {desc.domain.name} is not offered by this device "
                f"(capability {desc.domain.capability.name} absent)",
            )

    def validate_buffer_info(self, requested: BufferDesc, actual: BufferInfo) -> None:
        """The buffer check for ``requested``, then ``actual.desc != requested`` → INCOMPATIBLE."""
        self.validate_buffer_desc(requested)
        if actual.desc != requested:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"allocation reports desc {actual.desc} but {requested} was requested",
            )

    def validate_event_cancellation(self) -> None:
        """Capability EVENT_CANCELLATION absent → UNSUPPORTED."""
        if not self.capabilities & Capabilities.EVENT_CANCELLATION:
            raise BackendError(ErrorKind.UNSUPPORTED, "this device does not advertise EVENT_CANCELLATION")
