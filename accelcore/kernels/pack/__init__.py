"""Wrap a raw module (``.spv``, ``.cl`` or an OpenCL device binary) into a kernel package.

The module docstring of :mod:`accelcore.kernels.pack.wrap` states the promise.
"""

from __future__ import annotations

from .wrap import (
    ELF_MAGIC,
    POCL_BINARY_PREFIX,
    OpenCLKernel,
    OpenCLParameter,
    TypedValue,
    argument_names,
    binding_names,
    build_package,
    detect_module_kind,
    opencl_kernels,
    pack_module,
)

__all__ = [
    "ELF_MAGIC",
    "POCL_BINARY_PREFIX",
    "OpenCLKernel",
    "OpenCLParameter",
    "TypedValue",
    "argument_names",
    "binding_names",
    "build_package",
    "detect_module_kind",
    "opencl_kernels",
    "pack_module",
]
