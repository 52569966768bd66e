"""Vulkan compute provider for accelcore, over the ``vulkan`` cffi binding.

``provider_family`` is the registry entry point (``accelcore.providers``:
``vulkan``). Importing this package does not import the binding; the first
discovery or instance does, and a missing binding or loader raises
:class:`~accelcore.devices.registry.ProviderUnavailable` naming the fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .family import VulkanFamily, provider_family

if TYPE_CHECKING:
    from .accelerator import VulkanAccelerator

__all__ = ["VulkanAccelerator", "VulkanFamily", "provider_family"]


def __getattr__(name: str) -> Any:
    if name == "VulkanAccelerator":
        from .accelerator import VulkanAccelerator

        return VulkanAccelerator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
