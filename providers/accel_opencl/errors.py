"""The one mapping from OpenCL status codes to :class:`~accelcore.ErrorKind`.

Every native call of the provider goes through :func:`cl_call` (a context
manager) or :func:`error_from_status`; both keep the CL call name and the
status code on ``BackendError.native_call`` / ``native_code``. A status that
is not in :data:`CL_STATUS_KINDS` becomes an EXTERNAL error in
:data:`OPENCL_ERROR_DOMAIN` with the status as its code.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from accelcore import BackendError, ErrorKind

__all__ = [
    "CL_STATUS_KINDS",
    "CL_STATUS_NAMES",
    "OPENCL_ERROR_DOMAIN",
    "cl_call",
    "cl_error",
    "error_from_status",
    "native_errors",
]

OPENCL_ERROR_DOMAIN = 0x4F434C00
"""EXTERNAL domain of unmapped CL statuses: ASCII "OCL" + 0."""

_U = ErrorKind.UNSUPPORTED
_C = ErrorKind.INCOMPATIBLE
_I = ErrorKind.INVALID_ARGUMENT
_M = ErrorKind.OUT_OF_MEMORY
_L = ErrorKind.RESOURCE_LIMIT
_D = ErrorKind.DEVICE_LOST

# status: (name, kind). Reasoning for the non-obvious rows is in docs/opencl.md.
_TABLE: dict[int, tuple[str, ErrorKind]] = {
    -1: ("CL_DEVICE_NOT_FOUND", _D),
    -2: ("CL_DEVICE_NOT_AVAILABLE", _D),
    -3: ("CL_COMPILER_NOT_AVAILABLE", _U),
    -4: ("CL_MEM_OBJECT_ALLOCATION_FAILURE", _M),
    -5: ("CL_OUT_OF_RESOURCES", _M),
    -6: ("CL_OUT_OF_HOST_MEMORY", _M),
    -7: ("CL_PROFILING_INFO_NOT_AVAILABLE", _U),
    -8: ("CL_MEM_COPY_OVERLAP", _I),
    -9: ("CL_IMAGE_FORMAT_MISMATCH", _C),
    -10: ("CL_IMAGE_FORMAT_NOT_SUPPORTED", _U),
    -11: ("CL_BUILD_PROGRAM_FAILURE", _I),
    -12: ("CL_MAP_FAILURE", _M),
    -13: ("CL_MISALIGNED_SUB_BUFFER_OFFSET", _C),
    -15: ("CL_COMPILE_PROGRAM_FAILURE", _I),
    -16: ("CL_LINKER_NOT_AVAILABLE", _U),
    -17: ("CL_LINK_PROGRAM_FAILURE", _I),
    -18: ("CL_DEVICE_PARTITION_FAILED", _U),
    -19: ("CL_KERNEL_ARG_INFO_NOT_AVAILABLE", _U),
    -30: ("CL_INVALID_VALUE", _I),
    -31: ("CL_INVALID_DEVICE_TYPE", _I),
    -32: ("CL_INVALID_PLATFORM", _I),
    -33: ("CL_INVALID_DEVICE", _I),
    -34: ("CL_INVALID_CONTEXT", _I),
    -35: ("CL_INVALID_QUEUE_PROPERTIES", _U),
    -36: ("CL_INVALID_COMMAND_QUEUE", _I),
    -37: ("CL_INVALID_HOST_PTR", _I),
    -38: ("CL_INVALID_MEM_OBJECT", _I),
    -39: ("CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", _I),
    -40: ("CL_INVALID_IMAGE_SIZE", _L),
    -41: ("CL_INVALID_SAMPLER", _I),
    -42: ("CL_INVALID_BINARY", _C),
    -43: ("CL_INVALID_BUILD_OPTIONS", _I),
    -44: ("CL_INVALID_PROGRAM", _I),
    -45: ("CL_INVALID_PROGRAM_EXECUTABLE", _I),
    -46: ("CL_INVALID_KERNEL_NAME", _I),
    -47: ("CL_INVALID_KERNEL_DEFINITION", _C),
    -48: ("CL_INVALID_KERNEL", _I),
    -49: ("CL_INVALID_ARG_INDEX", _C),
    -50: ("CL_INVALID_ARG_VALUE", _C),
    -51: ("CL_INVALID_ARG_SIZE", _C),
    -52: ("CL_INVALID_KERNEL_ARGS", _C),
    -53: ("CL_INVALID_WORK_DIMENSION", _C),
    -54: ("CL_INVALID_WORK_GROUP_SIZE", _C),
    -55: ("CL_INVALID_WORK_ITEM_SIZE", _C),
    -56: ("CL_INVALID_GLOBAL_OFFSET", _I),
    -57: ("CL_INVALID_EVENT_WAIT_LIST", _I),
    -58: ("CL_INVALID_EVENT", _I),
    -59: ("CL_INVALID_OPERATION", _I),
    -60: ("CL_INVALID_GL_OBJECT", _I),
    -61: ("CL_INVALID_BUFFER_SIZE", _L),
    -62: ("CL_INVALID_MIP_LEVEL", _I),
    -63: ("CL_INVALID_GLOBAL_WORK_SIZE", _L),
    -64: ("CL_INVALID_PROPERTY", _U),
    -65: ("CL_INVALID_IMAGE_DESCRIPTOR", _I),
    -66: ("CL_INVALID_COMPILER_OPTIONS", _I),
    -67: ("CL_INVALID_LINKER_OPTIONS", _I),
    -68: ("CL_INVALID_DEVICE_PARTITION_COUNT", _I),
    -69: ("CL_INVALID_PIPE_SIZE", _I),
    -70: ("CL_INVALID_DEVICE_QUEUE", _I),
    -71: ("CL_INVALID_SPEC_ID", _I),
    -72: ("CL_MAX_SIZE_RESTRICTION_EXCEEDED", _L),
    -1001: ("CL_PLATFORM_NOT_FOUND_KHR", _U),
}

CL_STATUS_KINDS: dict[int, ErrorKind] = {status: kind for status, (_, kind) in _TABLE.items()}
"""CL status code → ErrorKind. Anything else → EXTERNAL(OPENCL_ERROR_DOMAIN, status)."""

CL_STATUS_NAMES: dict[int, str] = {status: name for status, (name, _) in _TABLE.items()}


def status_name(status: int) -> str:
    """The CL name of ``status`` (``CL_...``) or ``CL status <n>``."""
    return CL_STATUS_NAMES.get(status, f"CL status {status}")


def error_from_status(status: int, call: str, message: str) -> BackendError:
    """The BackendError for a CL ``status`` returned by ``call``, message first."""
    kind = CL_STATUS_KINDS.get(status)
    text = f"{message} ({call} returned {status_name(status)})"
    if kind is None:
        error = BackendError.external(OPENCL_ERROR_DOMAIN, status, text)
        error.native_call = call
        error.native_code = status
        return error
    return BackendError(kind, text, native_call=call, native_code=status)


def _translate(exc: BaseException, call: str, what: str) -> BackendError:
    import pyopencl as cl

    if isinstance(exc, cl.Error):
        # str(exc) is pyopencl's "<routine> failed: <STATUS>" plus any build log it adds.
        return error_from_status(int(exc.code), call, f"{what}: {exc}")
    # pyopencl raises plain Python errors for argument problems it catches itself.
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"{what}: {exc}", native_call=call)


def cl_error(exc: BaseException, call: str, what: str) -> BackendError:
    """The BackendError for a pyopencl failure ``exc`` of ``call`` (a :data:`native_errors` instance).

    For hot paths that catch :func:`native_errors` themselves and build ``what`` only on failure.
    """
    return _translate(exc, call, what)


_native: tuple[type[BaseException], ...] = ()


def native_errors() -> tuple[type[BaseException], ...]:
    """The exception types :func:`cl_call` translates: ``pyopencl.Error``, ``TypeError``, ``ValueError``."""
    global _native
    if not _native:
        import pyopencl as cl

        _native = (cl.Error, TypeError, ValueError)
    return _native


class _ClCall:
    """The context manager :func:`cl_call` returns (a plain class: no generator per call)."""

    __slots__ = ("call", "what")

    def __init__(self, call: str, what: str) -> None:
        self.call = call
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is not None and not isinstance(exc, BackendError) and isinstance(exc, native_errors()):
            raise _translate(exc, self.call, self.what) from exc


def cl_call(call: str, what: str) -> AbstractContextManager[None]:
    """Translate any pyopencl failure inside the block into a BackendError.

    ``call`` names the CL entry point (kept on the error), ``what`` says in
    words what the provider was doing. BackendErrors pass through untouched.
    Hot paths (submit, poll, transfers) catch :func:`native_errors` directly
    and build ``what`` only when a call fails (:func:`cl_error`).
    """
    return _ClCall(call, what)
