"""Khronos validation layer support: enable the layer and collect its messages.

Promise: :class:`ValidationLog` receives every WARNING or ERROR message of a
``VK_EXT_debug_utils`` messenger (chained into instance creation too, so
messages of ``vkCreateInstance`` / ``vkDestroyInstance`` are caught). The
callback never raises into the driver; it only appends to the log.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from accelcore import BackendError, ErrorKind

from ._binding import ffi, vk

LAYER = "VK_LAYER_KHRONOS_validation"
EXTENSION = "VK_EXT_debug_utils"

_SEVERITY_NAMES = {0x1: "VERBOSE", 0x10: "INFO", 0x100: "WARNING", 0x1000: "ERROR"}


@dataclass(frozen=True, slots=True)
class ValidationMessage:
    """One message of the validation layer (or another debug-utils source)."""

    severity: str
    types: int
    message_id: str
    text: str

    def __str__(self) -> str:
        return f"[{self.severity}] {self.message_id}: {self.text}"


class ValidationLog:
    """Messages collected from one instance's messenger, in arrival order (thread-safe, append-only).

    The instance is shared by every accelerator of its validation mode in the process; each one reads
    the :meth:`window` between the log lengths it marked at open and at close.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[ValidationMessage] = []

    def add(self, message: ValidationMessage) -> None:
        with self._lock:
            self._messages.append(message)

    @property
    def messages(self) -> list[ValidationMessage]:
        with self._lock:
            return list(self._messages)

    def window(self, start: int, end: int | None = None) -> list[ValidationMessage]:
        """Messages ``start`` (inclusive) to ``end`` (exclusive; None: up to now) in arrival order."""
        with self._lock:
            return self._messages[start:end]

    def __len__(self) -> int:
        with self._lock:
            return len(self._messages)


_callback: Any = None


def _on_message(severity: int, types: int, data: Any, user: Any) -> int:
    try:
        log = ffi().from_handle(user)
        c_ffi = ffi()
        text = c_ffi.string(data.pMessage).decode("utf-8", "replace") if data.pMessage else ""
        ident = c_ffi.string(data.pMessageIdName).decode("utf-8", "replace") if data.pMessageIdName else ""
        log.add(ValidationMessage(_SEVERITY_NAMES.get(int(severity), str(severity)), int(types), ident, text))
    except Exception:  # never unwind into the driver
        pass
    return 0


def callback() -> Any:
    """The one process-wide C callback; it routes each message by ``pUserData`` to its log."""
    global _callback
    if _callback is None:
        _callback = ffi().callback("PFN_vkDebugUtilsMessengerCallbackEXT", _on_message)
    return _callback


def layer_available() -> bool:
    binding = vk()
    try:
        layers = binding.vkEnumerateInstanceLayerProperties()
    except Exception:
        return False
    return any(_text(layer.layerName) == LAYER for layer in layers)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return str(ffi().string(value).decode("utf-8", "replace"))


def messenger_info(handle: Any) -> Any:
    """A ``VkDebugUtilsMessengerCreateInfoEXT`` (cffi struct) routing to the log behind ``handle``.

    The caller keeps ``handle`` (from ``ffi.new_handle``) alive as long as the messenger.
    """
    binding = vk()
    info = ffi().new("VkDebugUtilsMessengerCreateInfoEXT*")
    info.sType = binding.VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT
    info.messageSeverity = (
        binding.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | binding.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
    )
    info.messageType = (
        binding.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
        | binding.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
        | binding.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT
    )
    info.pfnUserCallback = callback()
    info.pUserData = handle
    return info


def require_layer() -> None:
    if not layer_available():
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"validation requested but {LAYER} is not installed (Debian: vulkan-validationlayers)",
        )
