"""Queries pyopencl has no name for, asked of the ICD loader itself, and where each platform's ICD lives.

pyopencl answers ``get_info`` only for the parameters it knows, and refuses the others with
``INVALID_VALUE`` without asking the driver (``CL_DEVICE_SUB_GROUP_SIZES_INTEL``,
``CL_DEVICE_UUID_KHR``, ``CL_PLATFORM_ICD_SUFFIX_KHR``). Here they go to ``clGetDeviceInfo`` /
``clGetPlatformInfo`` of the ICD loader already loaded in the process (pyopencl's), through
ctypes, with the handles pyopencl holds (``int_ptr``): every ICD object starts with its driver's
dispatch table (``cl_khr_icd``), so any loader dispatches it to the driver that made it.

Where a platform's driver library lives is the dynamic linker's answer (``dladdr``) for its
``clGetPlatformInfo`` entry in that dispatch table; the ``.icd`` file naming that library is
looked up in the loader's vendors folder. ocl-icd's ``clGetICDLoaderInfoOCLICD`` (found, as clinfo
finds it, with ``clGetExtensionFunctionAddress``) names the loader.

Failure: every function returns :class:`Answer`: a value, or None with the reason (the CL status
name, or why the question cannot be asked here); nothing raises for a driver's or a platform's
lack. Linux (glibc) only for the library paths; elsewhere they are not reported, saying so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from accelcore.contract.errors import BackendError
from accelcore.support.files import read_file

__all__ = [
    "Answer",
    "device_bytes",
    "device_sizes",
    "device_text",
    "device_uint",
    "icd_file",
    "icd_library",
    "loader_info",
    "platform_text",
    "status_name",
]

VENDORS_DIR = "/etc/OpenCL/vendors"
"""Where ocl-icd and the Khronos loader look for ``.icd`` files unless ``OCL_ICD_VENDORS`` says otherwise."""

_CL_ICDL_INFO = {"ocl_version": 1, "version": 2, "name": 3, "vendor": 4}
"""ocl-icd's ``cl_icdl_info`` (``CL_ICDL_OCL_VERSION`` .. ``CL_ICDL_VENDOR``)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A query's value, or None and why."""

    value: Any
    reason: str = ""


@cache
def _status_names() -> dict[int, str]:
    try:
        import pyopencl

        codes = pyopencl.status_code
    except ImportError:
        return {}
    return {int(getattr(codes, n)): f"CL_{n}" for n in dir(codes) if n.isupper()}


def status_name(code: int) -> str:
    """``CL_INVALID_VALUE`` for -30 (the names pyopencl knows), else the number."""
    return _status_names().get(code, f"CL status {code}")


def _mapped_loader() -> str | None:
    """The path of the ``libOpenCL`` already mapped into this process (pyopencl's), from /proc/self/maps."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if os.path.basename(path).startswith("libOpenCL"):
                    return path
    except OSError:
        return None
    return None


@cache
def _loader() -> tuple[Any, str] | tuple[None, str]:
    """(the loader's ctypes library, its path) or (None, why there is none)."""
    path = _mapped_loader() or ctypes.util.find_library("OpenCL")
    if not path:
        return None, "no OpenCL ICD loader (libOpenCL) is loaded or installed"
    try:
        library = ctypes.CDLL(path)
    except OSError as exc:
        return None, f"the ICD loader {path} cannot be loaded ({exc})"
    for name in ("clGetDeviceInfo", "clGetPlatformInfo"):
        function = getattr(library, name)
        function.restype = ctypes.c_int32
        function.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
    return library, path


def _info_bytes(call: str, handle: int, param: int, name: str) -> Answer:
    """The raw bytes clGet<call>Info returns for ``param`` (two calls: size, then value)."""
    library, why = _loader()
    if library is None:
        return Answer(None, why)
    function = getattr(library, call)
    size = ctypes.c_size_t(0)
    status = function(handle, param, 0, None, ctypes.byref(size))
    if status != 0:
        return Answer(None, f"{call}({name}) returned {status_name(status)}")
    buffer = ctypes.create_string_buffer(max(size.value, 1))
    status = function(handle, param, size.value, buffer, None)
    if status != 0:
        return Answer(None, f"{call}({name}) returned {status_name(status)}")
    return Answer(buffer.raw[: size.value])


def device_bytes(device: Any, param: int, name: str) -> Answer:
    """clGetDeviceInfo's bytes for ``param`` of a pyopencl device."""
    return _info_bytes("clGetDeviceInfo", int(device.int_ptr), param, name)


def device_text(device: Any, param: int, name: str) -> Answer:
    """A ``char[]`` device query, without its NUL and surrounding blanks."""
    answer = device_bytes(device, param, name)
    if answer.value is None:
        return answer
    return Answer(bytes(answer.value).split(b"\0", 1)[0].decode("utf-8", "replace").strip())


def device_uint(device: Any, param: int, name: str) -> Answer:
    """A ``cl_uint`` device query."""
    answer = device_bytes(device, param, name)
    if answer.value is None:
        return answer
    raw = bytes(answer.value)
    if len(raw) != 4:
        return Answer(None, f"clGetDeviceInfo({name}) returned {len(raw)} bytes, not a cl_uint")
    return Answer(int.from_bytes(raw, sys.byteorder))


def device_sizes(device: Any, param: int, name: str) -> Answer:
    """A ``size_t[]`` device query, as a list of ints."""
    answer = device_bytes(device, param, name)
    if answer.value is None:
        return answer
    raw = bytes(answer.value)
    width = ctypes.sizeof(ctypes.c_size_t)
    if len(raw) % width:
        return Answer(None, f"clGetDeviceInfo({name}) returned {len(raw)} bytes, not a size_t array")
    return Answer(list((ctypes.c_size_t * (len(raw) // width)).from_buffer_copy(raw)))


def platform_text(platform: Any, param: int, name: str) -> Answer:
    """A ``char[]`` platform query of a pyopencl platform."""
    answer = _info_bytes("clGetPlatformInfo", int(platform.int_ptr), param, name)
    if answer.value is None:
        return answer
    return Answer(bytes(answer.value).split(b"\0", 1)[0].decode("utf-8", "replace").strip())


class _DlInfo(ctypes.Structure):
    _fields_ = (
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    )


def icd_library(platform: Any) -> Answer:
    """The path of the driver library implementing ``platform``: the dynamic linker's ``dladdr`` for the
    ``clGetPlatformInfo`` entry of the platform's ICD dispatch table."""
    try:
        libc = ctypes.CDLL(None)
        dladdr = libc.dladdr
    except (OSError, AttributeError):
        return Answer(None, "this C library has no dladdr (only glibc-like systems say which library holds code)")
    dladdr.restype = ctypes.c_int
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    handle = int(platform.int_ptr)
    table = ctypes.c_void_p.from_address(handle).value if handle else None
    entry = ctypes.c_void_p.from_address(table + ctypes.sizeof(ctypes.c_void_p)).value if table else None
    if not entry:
        return Answer(None, "the platform's ICD dispatch table has no clGetPlatformInfo entry")
    found = _DlInfo()
    if not dladdr(entry, ctypes.byref(found)) or not found.dli_fname:
        return Answer(None, "dladdr does not know the library of the platform's clGetPlatformInfo")
    return Answer(os.fsdecode(found.dli_fname))


def _vendors_dir() -> Path:
    configured = os.environ.get("OCL_ICD_VENDORS", "").strip()
    if configured:
        path = Path(configured)
        return path if path.is_dir() else path.parent
    return Path(VENDORS_DIR)


_ICD_FILE_BYTES = 4096
"""An .icd file holds one library path."""


def icd_file(library: str) -> Answer:
    """The ``.icd`` file of the vendors folder that names ``library`` (by path or by file name)."""
    folder = _vendors_dir()
    try:
        candidates = sorted(folder.glob("*.icd"))
    except OSError as exc:
        return Answer(None, f"the vendors folder {folder} cannot be read ({exc})")
    real = os.path.realpath(library)
    for candidate in candidates:
        try:  # a regular file of at most a path's length: a FIFO or /dev/zero named *.icd cannot hold this up
            named = read_file(candidate, "ICD file", _ICD_FILE_BYTES).decode("utf-8", "replace").strip()
        except BackendError:
            continue
        if not named:
            continue
        if os.path.isabs(named):
            if os.path.realpath(named) == real:
                return Answer(str(candidate))
        elif named in (os.path.basename(library), os.path.basename(real)):
            return Answer(str(candidate))
    return Answer(None, f"no .icd file in {folder} names {os.path.basename(library)}")


def loader_info() -> dict[str, Answer]:
    """The ICD loader's path, and its name, vendor, version and OpenCL version where it is ocl-icd
    (``clGetICDLoaderInfoOCLICD``)."""
    library, where = _loader()
    if library is None:
        return {key: Answer(None, where) for key in ("path", *_CL_ICDL_INFO)}
    answers: dict[str, Answer] = {"path": Answer(where)}
    lookup = library.clGetExtensionFunctionAddress
    lookup.restype = ctypes.c_void_p
    lookup.argtypes = [ctypes.c_char_p]
    address = lookup(b"clGetICDLoaderInfoOCLICD")
    if not address:
        missing = f"the ICD loader {os.path.basename(where)} has no clGetICDLoaderInfoOCLICD (it is not ocl-icd)"
        answers.update({key: Answer(None, missing) for key in _CL_ICDL_INFO})
        return answers
    prototype = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p)
    query = prototype(address)
    for key, param in _CL_ICDL_INFO.items():
        size = ctypes.c_size_t(0)
        status = query(param, 0, None, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(max(size.value, 1))
        if status == 0:
            status = query(param, size.value, buffer, None)
        if status != 0:
            answers[key] = Answer(None, f"clGetICDLoaderInfoOCLICD({param}) returned {status_name(status)}")
        else:
            answers[key] = Answer(buffer.value.decode("utf-8", "replace").strip())
    return answers
