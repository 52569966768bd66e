"""The CL status → ErrorKind table and the boundary translator."""

from __future__ import annotations

from typing import Any

import pytest
from accel_opencl.errors import CL_STATUS_KINDS, OPENCL_ERROR_DOMAIN, cl_call, error_from_status

from accelcore import BackendError, ErrorKind


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (-4, ErrorKind.OUT_OF_MEMORY),
        (-5, ErrorKind.OUT_OF_MEMORY),
        (-11, ErrorKind.INVALID_ARGUMENT),
        (-13, ErrorKind.INCOMPATIBLE),
        (-42, ErrorKind.INCOMPATIBLE),
        (-46, ErrorKind.INVALID_ARGUMENT),
        (-54, ErrorKind.INCOMPATIBLE),
        (-61, ErrorKind.RESOURCE_LIMIT),
        (-2, ErrorKind.DEVICE_LOST),
    ],
)
def test_table_rows(status: int, kind: ErrorKind) -> None:
    error = error_from_status(status, "clSomething", "doing a thing")
    assert error.kind is kind
    assert error.native_call == "clSomething"
    assert error.native_code == status
    assert "doing a thing" in error.message


def test_unmapped_status_is_external_with_the_code() -> None:
    error = error_from_status(-9999, "clEnqueueNDRangeKernel", "running")
    assert error.kind is ErrorKind.EXTERNAL
    assert error.domain == OPENCL_ERROR_DOMAIN
    assert error.code == -9999
    assert error.native_code == -9999


def test_every_row_is_negative_and_not_success() -> None:
    assert CL_STATUS_KINDS
    assert all(status < 0 for status in CL_STATUS_KINDS)


def test_cl_call_translates_a_real_driver_error(entry: Any) -> None:
    import pyopencl as cl
    from accel_opencl.discovery import find_device

    native = find_device(entry)
    context = cl.Context([native.device])
    with pytest.raises(BackendError) as info, cl_call("clCreateBuffer", "allocating zero bytes"):
        cl.Buffer(context, cl.mem_flags.READ_WRITE, 0)
    assert info.value.kind is ErrorKind.RESOURCE_LIMIT  # CL_INVALID_BUFFER_SIZE
    assert info.value.native_code == -61
    assert info.value.native_call == "clCreateBuffer"


def test_cl_call_passes_backend_errors_through() -> None:
    original = BackendError(ErrorKind.BUSY, "busy")
    with pytest.raises(BackendError) as info, cl_call("clFlush", "x"):
        raise original
    assert info.value is original
