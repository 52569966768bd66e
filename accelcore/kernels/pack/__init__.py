"""Wrap a raw module (``.spv``, ``.cl`` or an OpenCL device binary) into a kernel package.

Promise: :func:`pack_module` fills what the module itself says — kind,
entry point, local size, binding table, argument names and types — and
checks what the caller gives against it: by-value and ``__local`` OpenCL
arguments, push-constant members and specialization constants are matched by
name or index and typed from their declarations (:mod:`accelcore.kernels.arguments`);
a mismatch, an unknown name or a declared argument left without a value is
INVALID_ARGUMENT naming it (specialization constants may keep the module's
default). What the module cannot say (the dispatch rule; everything for a
device binary) must be passed; a missing option raises INVALID_ARGUMENT
naming the keyword. A by-value OpenCL struct/union is recorded as its raw bytes in the
OpenCL C layout the source declares (:func:`accelcore.kernels.arguments.encode_aggregate`: bytes of
the exact size, a numpy structured scalar with matching fields and offsets, or a dict of
members); one whose layout the source does not let us compute is INVALID_ARGUMENT. Modules
using what a package cannot express (images, samplers) raise UNSUPPORTED. The returned
package has passed :func:`accelcore.kernels.package_codec.validate_package`.
The module bytes are copied once into the package.

The package, a module per part (import the public names from the package; an underscore name is internal
to it):

* ``module_kind``: :func:`detect_module_kind`: SPIR-V of either flavour, an OpenCL device binary, or
  OpenCL C source.
* ``options``: the options every kind shares (``entry_point=``, ``local_size=``, ``dispatch=`` or
  ``global_size=``, ``coverage=``) and the ``pack:`` wording of every error.
* ``opencl``: OpenCL arguments, from the source, OpenCL SPIR-V or (by index) a device binary: the binding
  table, the count argument, by-value and ``__local`` values.
* ``vulkan``: Vulkan descriptors, the push-constant block and the specialization constants.
* ``wrap``: :func:`pack_module`, which puts those together and validates the package.
* ``build``: :func:`build_package`, a package made only to build an OpenCL C program once.
* ``names``: :func:`argument_names` and :func:`binding_names`, the names a caller may use.

``options`` imports none of them; ``module_kind``, ``opencl`` and ``vulkan`` import ``options``; ``wrap`` imports
those four; ``build`` imports ``wrap``; ``names`` none.

:class:`TypedValue` and the OpenCL C front end's :func:`opencl_kernels`, :class:`OpenCLKernel` and
:class:`OpenCLParameter` are re-exported for callers of :func:`pack_module`.
"""

from __future__ import annotations

from ..arguments import TypedValue
from ..opencl_signature import OpenCLKernel, OpenCLParameter, opencl_kernels
from .build import build_package
from .module_kind import ELF_MAGIC, POCL_BINARY_PREFIX, detect_module_kind
from .names import argument_names, binding_names
from .wrap import pack_module

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
