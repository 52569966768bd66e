"""Layer 6, api: the numpy-first layer that Python users and the ``accel`` CLI both call.

Owns: opening devices (``device``), their buffer pools, guard tails and device arrays (``memory``), kernels
(``kernel``) and their parameters (``parameters``), runs (``run``), one lock per device and the fork check
(``serial``), ``compare`` across devices, and the keywords and wording Python callers meet (``keywords``).
``import accelcore as ac`` re-exports its public names (``ac.open``, ``ac.Device`` ...).

May import: every layer below - contract, support, kernels, engine, devices (docs/architecture.md).

Open a device by selector, load a kernel from a file, call it on arrays::

    import numpy as np, accelcore as ac
    dev = ac.open("opencl:*pocl*")
    saxpy = dev.kernel("saxpy.cl")
    saxpy(a=np.float32(2.5), x=x, y=y, n=np.int32(x.size), global_size=x.size)   # y updated in place

Promise: everything goes through the command engine
(:class:`~accelcore.engine.CommandEngine`), so every host-side check of the
contract applies. Arguments are matched to the kernel's declarations by name
(or position: OpenCL parameter order, Vulkan descriptors in (set, binding)
order) before anything runs: scalars are typed from their declarations
(:mod:`accelcore.kernels.pack`), arrays must have the declared element dtype, be
C-contiguous, and be writable where the kernel writes — a mismatch raises
``BackendError(INVALID_ARGUMENT)`` naming the argument, the declaration and
what was given. Arrays the kernel writes are read back into the caller's
arrays (no intermediate copy) and returned. Scalars belong to the program
(docs/contract.md, trap 14): a call with new values loads the package again,
which the providers make cheap, and the loaded programs are remembered (a
few per kernel); a call with the same exact values and work size as an earlier
one packs nothing (its package is remembered too). :class:`DeviceArray` stays on the device: passing one binds
it without a transfer. Resources are released child before parent on
:meth:`Device.close` (also on errors; ``with ac.open(...) as dev:``).
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
