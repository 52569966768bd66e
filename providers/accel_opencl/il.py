"""``clCreateProgramWithILKHR``: the ``cl_khr_il_program`` path pyopencl does not wrap.

pyopencl calls only the core ``clCreateProgramWithIL`` (OpenCL 2.1+). A
device that offers SPIR-V through the extension alone (an OpenCL 1.2 device
with ``cl_khr_il_program``) is reached through the ICD loader's
``clGetExtensionFunctionAddressForPlatform`` with ctypes, and the returned
``cl_program`` is handed to pyopencl (ownership moves, no extra retain).
Untested on this project's machines: neither PoCL nor rusticl here offers the
extension (2026-11-30).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

from accelcore import BackendError, ErrorKind

from .errors import error_from_status

__all__ = ["create_program_with_il_khr"]

_CREATE = ctypes.CFUNCTYPE(
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int32)
)


def _loader() -> ctypes.CDLL:
    name = ctypes.util.find_library("OpenCL") or "libOpenCL.so.1"
    return ctypes.CDLL(name)


def create_program_with_il_khr(cl: Any, context: Any, platform: Any, module: bytes) -> Any:
    """A pyopencl program created from ``module`` through the extension entry point."""
    try:
        lookup = _loader().clGetExtensionFunctionAddressForPlatform
    except (OSError, AttributeError) as exc:
        raise BackendError(
            ErrorKind.UNSUPPORTED, f"the OpenCL ICD loader has no clGetExtensionFunctionAddressForPlatform ({exc})"
        ) from None
    lookup.restype = ctypes.c_void_p
    lookup.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    address = lookup(ctypes.c_void_p(platform.int_ptr), b"clCreateProgramWithILKHR")
    if not address:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            "the platform lists cl_khr_il_program but does not export clCreateProgramWithILKHR",
        )
    create = _CREATE(address)
    status = ctypes.c_int32(0)
    payload = ctypes.create_string_buffer(module, len(module))  # the driver copies it during the call
    handle = create(ctypes.c_void_p(context.int_ptr), payload, len(module), ctypes.byref(status))
    if status.value != 0 or not handle:
        raise error_from_status(status.value, "clCreateProgramWithILKHR", "creating a program from OpenCL SPIR-V")
    return cl._cl._Program.from_int_ptr(handle, retain=False)
