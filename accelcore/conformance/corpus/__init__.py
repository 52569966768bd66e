"""The kernel corpus in ``artifacts/``: specs, committed packages and numpy references.

Every corpus kernel follows one convention (docs/artifact-format.md): slot N
is Vulkan binding N in set 0 and OpenCL kernel argument N; when the kernel
takes an element count it is the OpenCL ``uint`` argument right after the
buffers and, on Vulkan, a 4-byte push constant at offset 0.

Besides those (:data:`KERNELS`, shipped for every kind in :data:`SHIPPED_KINDS`)
the corpus holds :data:`ARGUMENT_KERNELS`: kernels written the way real projects
write them — by-value and ``__local`` OpenCL arguments, push constants,
specialization constants, uniform buffers, descriptor set 1, 2-D global sizes —
each for the one API it was written for (:attr:`ArgumentKernelSpec.kinds`). Their
packages carry argument values, so :func:`argument_package` packs one for any
values (the committed package is the one for :attr:`ArgumentKernelSpec.defaults`)
and :func:`argument_case` builds the matching inputs and numpy expectation.

Promise: :func:`load_package` returns the committed bytes of one package (a
fresh copy; nothing is cached). :func:`make_case` builds inputs and the numpy
expectation for one kernel deterministically from ``seed``; :func:`compare`
checks a device result against it with the kernel's stated ulp tolerance.
Failures: an unknown kernel, or argument values a kernel does not take →
INVALID_ARGUMENT naming the known ones; a missing corpus or a kind the corpus
does not ship → UNSUPPORTED.

Modules, each importing only those listed before it:

- :mod:`.kernel_case`: :class:`KernelCase` (a run's inputs and expectation), :data:`SENTINEL`,
  :func:`compare`.
- :mod:`.argument_kernels`: the table of :data:`ARGUMENT_KERNELS` — knobs, packers and numpy
  references per kernel.
- :mod:`.table`: the table of :data:`KERNELS` (:class:`KernelSpec`) and the lookups of both
  tables by name, :func:`kernel_spec` and :func:`argument_spec`.
- :mod:`.files`: where the corpus lives (:func:`corpus_root`, ``$ACCELCORE_ARTIFACTS``) and its
  committed files (:func:`module_path`, :func:`package_path`, :func:`load_module`,
  :func:`load_package`, :data:`SHIPPED_KINDS`).
- :mod:`.cases`: :func:`make_case`, :func:`spin_case` and :func:`standard_target` for the kernels
  of :data:`KERNELS`.
- :mod:`.argument_cases`: :func:`argument_values`, :func:`argument_package` and
  :func:`argument_case` for the kernels of :data:`ARGUMENT_KERNELS`.

This package re-exports the names callers use; import them from here.
"""

from __future__ import annotations

from .argument_cases import argument_case, argument_package, argument_values
from .argument_kernels import (
    ARGUMENT_KERNELS,
    ArgumentKernelSpec,
    ArgumentValue,
    gemm_ulp_tolerance,
    particles_ulp_tolerance,
)
from .cases import (
    SPIN_MAX_ITERATIONS,
    STANDARD_RESIDENT_BYTES,
    make_case,
    matmul_shape,
    spin_affine,
    spin_case,
    standard_target,
)
from .files import ARTIFACTS_ENV, SHIPPED_KINDS, corpus_root, load_module, load_package, module_path, package_path
from .kernel_case import SENTINEL, KernelCase, compare
from .table import KERNELS, KernelSpec, argument_spec, kernel_spec

__all__ = [
    "ARGUMENT_KERNELS",
    "ARTIFACTS_ENV",
    "KERNELS",
    "SENTINEL",
    "SHIPPED_KINDS",
    "SPIN_MAX_ITERATIONS",
    "STANDARD_RESIDENT_BYTES",
    "ArgumentKernelSpec",
    "ArgumentValue",
    "KernelCase",
    "KernelSpec",
    "argument_case",
    "argument_package",
    "argument_spec",
    "argument_values",
    "compare",
    "corpus_root",
    "gemm_ulp_tolerance",
    "kernel_spec",
    "load_module",
    "load_package",
    "make_case",
    "matmul_shape",
    "module_path",
    "package_path",
    "particles_ulp_tolerance",
    "spin_affine",
    "spin_case",
    "standard_target",
]
