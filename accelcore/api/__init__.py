"""Layer 6, api: the numpy-first layer that Python users and the ``accel`` CLI both call.

Owns: opening devices and their buffer pools, kernels and their parameters, runs, device arrays,
``compare`` across devices, and the keywords Python callers write. ``import accelcore as ac`` re-exports
its public names (``ac.open``, ``ac.Device`` ...).

May import: every layer below - contract, support, kernels, engine, devices (docs/architecture.md).
"""

from .compare import compare
from .device import Device, devices, open
from .kernel import Kernel, LocalMemory, local_memory
from .memory import DeviceArray, TemporaryPool, choose_domain, guard_pattern
from .parameters import Parameter, check_buffer_array, declared_elements
from .run import Binding, Progress, Run, RunCancelled

__all__ = [
    "Binding",
    "Device",
    "DeviceArray",
    "Kernel",
    "LocalMemory",
    "Parameter",
    "Progress",
    "Run",
    "RunCancelled",
    "TemporaryPool",
    "check_buffer_array",
    "choose_domain",
    "compare",
    "declared_elements",
    "devices",
    "guard_pattern",
    "local_memory",
    "open",
]
