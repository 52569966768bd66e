"""The corpus kernels without arguments (:data:`KERNELS`), and the lookups by name of both tables.

Every corpus kernel follows one convention (docs/artifact-format.md): slot N
is Vulkan binding N in set 0 and OpenCL kernel argument N; when the kernel
takes an element count it is the OpenCL ``uint`` argument right after the
buffers and, on Vulkan, a 4-byte push constant at offset 0. :func:`kernel_spec`
and :func:`argument_spec` find a kernel of either table (:data:`KERNELS`, and
:data:`~.argument_kernels.ARGUMENT_KERNELS`); an unknown name → INVALID_ARGUMENT
naming the known ones (and the other table, where the name is there).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract.errors import BackendError, ErrorKind
from ...contract.flags import AccessMode
from ...kernels.package import NO_COUNT_ARGUMENT, Dispatch, DispatchKind, ModuleKind, PackageBinding
from .argument_kernels import _ARGUMENT_BY_NAME, ARGUMENT_KERNELS, ArgumentKernelSpec

R, W, RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE


@dataclass(frozen=True, slots=True)
class KernelSpec:
    """How a corpus kernel is packaged: the same table for every module kind.

    :meth:`entry_point` names the entry point per module kind (Vulkan: ``main``).
    """

    name: str
    summary: str
    opencl_entry: str
    local_size: tuple[int, int, int]
    bindings: tuple[PackageBinding, ...]
    dispatch: Dispatch

    def entry_point(self, kind: ModuleKind) -> str:
        return "main" if kind is ModuleKind.SPIRV_VULKAN else self.opencl_entry


def _binding(slot: int, access: AccessMode, element_size: int = 4) -> PackageBinding:
    return PackageBinding(slot=slot, native_index=slot, access=access, element_size=element_size)


def _from(slot: int, count_argument: int = NO_COUNT_ARGUMENT) -> Dispatch:
    return Dispatch(DispatchKind.FROM_BINDING, slot=slot, count_argument=count_argument)


_SPECS = (
    KernelSpec(
        "conformance",
        "standard conformance target: out[i] = mix(in[i], i)",
        "conformance",
        (64, 1, 1),
        (_binding(0, R), _binding(1, W)),
        _from(1, count_argument=2),
    ),
    KernelSpec(
        "saxpy",
        "out[i] = a * x[i] + y[i] in f32, a from a parameter buffer",
        "saxpy",
        (64, 1, 1),
        (_binding(0, R), _binding(1, R), _binding(2, W), _binding(3, R)),
        _from(2, count_argument=4),
    ),
    KernelSpec(
        "intops",
        "bit-exact u32 add, mul, xor and shifts: out[4i..4i+3]",
        "intops",
        (64, 1, 1),
        (_binding(0, R), _binding(1, R), _binding(2, W, 16)),
        _from(0, count_argument=3),
    ),
    KernelSpec(
        "reduce",
        "workgroup sum of u32 in shared memory with barriers: one partial sum per 64 inputs",
        "reduce",
        (64, 1, 1),
        (_binding(0, R), _binding(1, W)),
        _from(0, count_argument=2),
    ),
    KernelSpec(
        "histogram",
        "256-bin histogram of (in[i] & 255) with local and global atomics",
        "histogram",
        (64, 1, 1),
        (_binding(0, R), _binding(1, RW)),
        _from(0, count_argument=2),
    ),
    KernelSpec(
        "matmul",
        "tiled f32 C = A B (8x8 tiles in shared memory); sizes M, N, K from a parameter buffer",
        "matmul",
        (64, 1, 1),
        (_binding(0, R), _binding(1, R), _binding(2, W), _binding(3, R)),
        _from(2),
    ),
    KernelSpec(
        "spin",
        "bounded spin: each item runs min(iterations, 2^24) LCG steps; iterations from a parameter buffer",
        "spin",
        (64, 1, 1),
        (_binding(0, R), _binding(1, W)),
        _from(1, count_argument=2),
    ),
)

KERNELS: tuple[str, ...] = tuple(spec.name for spec in _SPECS)
_BY_NAME = {spec.name: spec for spec in _SPECS}


def kernel_spec(kernel: str) -> KernelSpec:
    """The packaging spec of corpus kernel ``kernel``."""
    try:
        return _BY_NAME[kernel]
    except KeyError:
        if kernel in ARGUMENT_KERNELS:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"{kernel} takes kernel arguments: use argument_spec / argument_package / argument_case",
            ) from None
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"no corpus kernel {kernel!r}; known: {', '.join(KERNELS)}; with arguments: {', '.join(ARGUMENT_KERNELS)}",
        ) from None


def argument_spec(kernel: str) -> ArgumentKernelSpec:
    """The spec of argument kernel ``kernel`` (one of :data:`ARGUMENT_KERNELS`)."""
    try:
        return _ARGUMENT_BY_NAME[kernel]
    except KeyError:
        hint = " (it takes no arguments: use kernel_spec / make_case)" if kernel in _BY_NAME else ""
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"no argument kernel {kernel!r}{hint}; known: {', '.join(ARGUMENT_KERNELS)}",
        ) from None
