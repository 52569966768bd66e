"""accelcore: one typed contract for driving a compute device.

The Python realisation of the ``Accelerator`` trait of virtio-accel-core
(protocol 1.0): value types with validating constructors, one error
vocabulary, zero-copy byte ports and the provider protocol. Importing this
package imports no driver binding.
"""

from __future__ import annotations

from .api import Device, DeviceArray, Kernel, LocalMemory, Run, RunCancelled, compare, devices, local_memory, open
from .contract.accelerator import Accelerator
from .contract.buffers import AllocatedBuffer, BufferDesc, BufferInfo, BufferRange, validate_transfer
from .contract.device import ContextDesc, DeviceIdentity, DeviceInfo, DeviceLimits, QueueDesc
from .contract.errors import (
    BackendError,
    DeviceInfoError,
    DeviceInfoErrorKind,
    ErrorKind,
    MissingFileError,
    ReleaseFailure,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitFailure,
    SubmitIndeterminate,
    SubmitRejected,
)
from .contract.flags import (
    AcceleratorClass,
    AccessMode,
    BufferProperties,
    BufferUsage,
    Capabilities,
    ContextFlags,
    MemoryDomain,
    QueueFlags,
)
from .contract.ports import (
    ByteSink,
    ByteSource,
    MemorySink,
    MemorySource,
    PatternSource,
    TransportByteSink,
    TransportByteSource,
    TransportFault,
    TransportFaultKind,
    copy_port,
    sink_of,
    source_of,
)
from .contract.program import ArtifactFormat, ArtifactRef, TargetIdentity
from .contract.submission import (
    BindingRef,
    EventState,
    EventStatus,
    Timeout,
    validate_binding_ranges,
    validate_bindings,
    validate_program_bindings,
)
from .devices.selector import SelectorError

__version__ = "0.1.0"

__all__ = [
    "Accelerator",
    "AcceleratorClass",
    "AccessMode",
    "AllocatedBuffer",
    "ArtifactFormat",
    "ArtifactRef",
    "BackendError",
    "BindingRef",
    "BufferDesc",
    "BufferInfo",
    "BufferProperties",
    "BufferRange",
    "BufferUsage",
    "ByteSink",
    "ByteSource",
    "Capabilities",
    "ContextDesc",
    "ContextFlags",
    "Device",
    "DeviceArray",
    "DeviceIdentity",
    "DeviceInfo",
    "DeviceInfoError",
    "DeviceInfoErrorKind",
    "DeviceLimits",
    "ErrorKind",
    "EventState",
    "EventStatus",
    "Kernel",
    "LocalMemory",
    "MemoryDomain",
    "MemorySink",
    "MemorySource",
    "MissingFileError",
    "PatternSource",
    "QueueDesc",
    "QueueFlags",
    "ReleaseFailure",
    "ReleaseIndeterminate",
    "ReleaseRejected",
    "Run",
    "RunCancelled",
    "SelectorError",
    "SubmitFailure",
    "SubmitIndeterminate",
    "SubmitRejected",
    "TargetIdentity",
    "Timeout",
    "TransportByteSink",
    "TransportByteSource",
    "TransportFault",
    "TransportFaultKind",
    "__version__",
    "compare",
    "copy_port",
    "devices",
    "local_memory",
    "open",
    "sink_of",
    "source_of",
    "validate_binding_ranges",
    "validate_bindings",
    "validate_program_bindings",
    "validate_transfer",
]
