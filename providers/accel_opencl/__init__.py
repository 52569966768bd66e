"""OpenCL provider for accelcore, on pyopencl.

``provider_family`` is the ``accelcore.providers`` entry point (``opencl``);
:class:`OpenCLAccelerator` implements the ``Accelerator`` contract for one
device. Importing this package does not import pyopencl: discovery and
instances do, and say what to install when it is missing (docs/opencl.md).
"""

from __future__ import annotations

from .accelerator import OpenCLAccelerator
from .family import OpenCLFamily, OpenCLHooks, provider_family

__all__ = ["OpenCLAccelerator", "OpenCLFamily", "OpenCLHooks", "provider_family"]
