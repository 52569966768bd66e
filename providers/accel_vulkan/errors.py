"""The one mapping from the binding's ``VkResult`` exceptions to :class:`~accelcore.ErrorKind`.

The binding raises a *class* per non-success ``VkResult``: the ``VkError``
family for negative results and the ``VkException`` family (``VkNotReady``,
``VkTimeout``, ...) for positive ones — the two are unrelated. A result it
does not know (it carries a wrong sign for ``VK_ERROR_OUT_OF_POOL_MEMORY``)
escapes as ``KeyError(result)``. :func:`call` runs one native call and
translates all of these to a :class:`BackendError` that keeps the call name
and the numeric ``VkResult`` (``native_call`` / ``native_code``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from accelcore import BackendError, ErrorKind

from ._binding import vk

T = TypeVar("T")

VULKAN_ERROR_DOMAIN = 0x564B0001
"""EXTERNAL ``domain`` of Vulkan results without a standard kind ("VK" + 1); ``code`` is the VkResult."""

# VkResult name → (numeric value, kind). Values are the Vulkan registry's.
_RESULTS: dict[str, tuple[int, ErrorKind]] = {
    "VK_NOT_READY": (1, ErrorKind.BUSY),
    "VK_TIMEOUT": (2, ErrorKind.DEADLINE_EXPIRED),
    "VK_EVENT_SET": (3, ErrorKind.EXTERNAL),
    "VK_EVENT_RESET": (4, ErrorKind.EXTERNAL),
    "VK_INCOMPLETE": (5, ErrorKind.EXTERNAL),
    "VK_ERROR_OUT_OF_HOST_MEMORY": (-1, ErrorKind.OUT_OF_MEMORY),
    "VK_ERROR_OUT_OF_DEVICE_MEMORY": (-2, ErrorKind.OUT_OF_MEMORY),
    "VK_ERROR_INITIALIZATION_FAILED": (-3, ErrorKind.EXTERNAL),
    "VK_ERROR_DEVICE_LOST": (-4, ErrorKind.DEVICE_LOST),
    "VK_ERROR_MEMORY_MAP_FAILED": (-5, ErrorKind.OUT_OF_MEMORY),
    "VK_ERROR_LAYER_NOT_PRESENT": (-6, ErrorKind.UNSUPPORTED),
    "VK_ERROR_EXTENSION_NOT_PRESENT": (-7, ErrorKind.UNSUPPORTED),
    "VK_ERROR_FEATURE_NOT_PRESENT": (-8, ErrorKind.UNSUPPORTED),
    "VK_ERROR_INCOMPATIBLE_DRIVER": (-9, ErrorKind.UNSUPPORTED),
    "VK_ERROR_TOO_MANY_OBJECTS": (-10, ErrorKind.RESOURCE_LIMIT),
    "VK_ERROR_FORMAT_NOT_SUPPORTED": (-11, ErrorKind.UNSUPPORTED),
    "VK_ERROR_FRAGMENTED_POOL": (-12, ErrorKind.RESOURCE_LIMIT),
    "VK_ERROR_UNKNOWN": (-13, ErrorKind.EXTERNAL),
    "VK_ERROR_OUT_OF_POOL_MEMORY": (-1000069000, ErrorKind.RESOURCE_LIMIT),
    "VK_ERROR_INVALID_EXTERNAL_HANDLE": (-1000072003, ErrorKind.INVALID_ARGUMENT),
    "VK_ERROR_FRAGMENTATION": (-1000161000, ErrorKind.OUT_OF_MEMORY),
    "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS": (-1000257000, ErrorKind.INVALID_ARGUMENT),
    "VK_PIPELINE_COMPILE_REQUIRED": (1000297000, ErrorKind.EXTERNAL),
    "VK_ERROR_INVALID_SHADER_NV": (-1000012000, ErrorKind.INVALID_ARGUMENT),
}
_BY_CODE = {code: (name, kind) for name, (code, kind) in _RESULTS.items()}


def _class_name_to_result(class_name: str) -> str:
    """``VkErrorOutOfPoolMemory`` → ``VK_ERROR_OUT_OF_POOL_MEMORY``."""
    out: list[str] = []
    for ch in class_name:
        if ch.isupper() and out:
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


def _describe(result_name: str, code: int | None) -> tuple[int | None, ErrorKind]:
    if result_name in _RESULTS:
        return _RESULTS[result_name]
    return code, ErrorKind.EXTERNAL


def translate(exc: BaseException, call_name: str, what: str = "") -> BackendError | None:
    """The BackendError for ``exc`` raised by native call ``call_name``; None if it is not a native failure."""
    binding = vk()
    prefix = f"{what}: " if what else ""
    if isinstance(exc, binding.VkError | binding.VkException):
        name = _class_name_to_result(type(exc).__name__)
        code, kind = _describe(name, None)
    elif isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], int):
        code = exc.args[0]
        name, kind = _BY_CODE.get(code, (f"VkResult {code}", ErrorKind.EXTERNAL))
    elif type(exc).__name__ in ("ProcedureNotFoundError", "ExtensionNotSupportedError"):
        return BackendError(
            ErrorKind.UNSUPPORTED,
            f"{prefix}{call_name} is not available from this driver or binding ({type(exc).__name__})",
            native_call=call_name,
        )
    else:
        return None
    message = f"{prefix}{call_name} failed with {name}"
    if kind is ErrorKind.EXTERNAL:
        value = code if code is not None else 0
        error = BackendError.external(VULKAN_ERROR_DOMAIN, value, message)
        error.native_call = call_name
        error.native_code = code
        return error
    return BackendError(kind, message, native_call=call_name, native_code=code)


def call(call_name: str, fn: Callable[..., T], *args: Any, what: str = "") -> T:
    """Run ``fn(*args)`` (a binding function named ``call_name``); native failures → BackendError.

    The caller keeps every cffi structure in ``args`` referenced until this returns.
    """
    try:
        return fn(*args)
    except Exception as exc:
        error = translate(exc, call_name, what)
        if error is None:
            raise
        raise error from exc


def native(call_name: str, *args: Any, what: str = "") -> Any:
    """``call`` for the binding's function of that name (``native("vkCreateBuffer", device, info, None)``)."""
    return call(call_name, getattr(vk(), call_name), *args, what=what)


def check(result: int, call_name: str, what: str = "") -> None:
    """Raise the BackendError for a non-success ``VkResult`` returned by a raw ``lib`` call (the hot paths).

    Same kinds, message and ``native_code`` as :func:`call` gives for the binding's wrappers.
    """
    if result == 0:
        return
    prefix = f"{what}: " if what else ""
    name, kind = _BY_CODE.get(result, (f"VkResult {result}", ErrorKind.EXTERNAL))
    message = f"{prefix}{call_name} failed with {name}"
    if kind is ErrorKind.EXTERNAL:
        error = BackendError.external(VULKAN_ERROR_DOMAIN, result, message)
        error.native_call = call_name
        error.native_code = result
        raise error
    raise BackendError(kind, message, native_call=call_name, native_code=result)
