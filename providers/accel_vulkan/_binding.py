"""Lazy access to the ``vulkan`` cffi binding and its FFI.

Promise: importing :mod:`accel_vulkan` never imports the binding; the first
call to :func:`vk` does, and a missing package or a missing ``libvulkan.so.1``
becomes :class:`~accelcore.devices.registry.ProviderUnavailable` naming the fix.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from accelcore.devices.registry import ProviderUnavailable

PROVIDER = "vulkan"


@cache
def vk() -> Any:
    """The imported ``vulkan`` module (raises ProviderUnavailable when it cannot be loaded)."""
    try:
        import vulkan  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ProviderUnavailable(
            PROVIDER, f"the 'vulkan' binding is not installed ({exc}); pip install 'accelcore[vulkan]'"
        ) from exc
    except OSError as exc:  # the binding dlopen()s libvulkan.so.1 at import
        raise ProviderUnavailable(
            PROVIDER, f"libvulkan.so.1 cannot be loaded ({exc}); install the Vulkan loader (Debian: libvulkan1)"
        ) from exc
    return vulkan


def ffi() -> Any:
    """The binding's cffi ``FFI`` (structures passed to the binding must come from it)."""
    return vk().ffi


def version(major: int, minor: int) -> int:
    """VK_MAKE_API_VERSION(0, major, minor, 0)."""
    return (major << 22) | (minor << 12)


def version_text(packed: int) -> str:
    return f"{packed >> 22 & 0x7F}.{packed >> 12 & 0x3FF}.{packed & 0xFFF}"
