"""OpenCL provider for accelcore, on pyopencl.

``provider_family`` is the ``accelcore.providers`` entry point (``opencl``);
:class:`OpenCLAccelerator` implements the ``Accelerator`` contract for one
device. Importing this package does not import pyopencl: discovery and
instances do, and say what to install when it is missing (docs/opencl.md).
Nor does it import the provider instance's modules: listing devices needs only
discovery, and ``OpenCLAccelerator`` is loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .family import OpenCLFamily, OpenCLHooks, provider_family

if TYPE_CHECKING:
    from .accelerator import OpenCLAccelerator

__all__ = ["OpenCLAccelerator", "OpenCLFamily", "OpenCLHooks", "provider_family"]


def __getattr__(name: str) -> Any:
    if name == "OpenCLAccelerator":
        from .accelerator import OpenCLAccelerator

        return OpenCLAccelerator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
