"""Fixtures every test folder shares, and the environment every test process starts from.

Every test process starts with the environment ``accel`` and ``accelcore.devices()`` set up
(:func:`accelcore.devices.environment.apply_defaults`: RUSTICL_ENABLE, XDG_RUNTIME_DIR, and OCL_ICD_VENDORS
naming this checkout's vendors folder, which holds Intel's CPU runtime), before any test module is collected:
the OpenCL ICD loader reads its folder once per process, at the first enumeration, and some modules enumerate
at import (tests/artifacts).

The terminal's size is not part of that environment: pytest-xdist sets ``COLUMNS``/``LINES`` in its workers
(80 x 24), and a shell may export them, which would narrow every table the CLI prints in-process. Tests that
care about the width set ``COLUMNS`` themselves."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore import ErrorKind, MemorySink, MemorySource
from accelcore.conformance.corpus import corpus_root
from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import RaisesKind
from accelcore.testing.pytest_support import raises_kind as expect_kind

apply_defaults()
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)


@pytest.fixture
def raises_kind() -> RaisesKind:
    """``with raises_kind(ErrorKind.X[, match="regex"]): ...`` asserts a BackendError of exactly that kind."""
    return expect_kind


class CorpusSaxpy:
    """The corpus SAXPY kernels: OpenCL ``saxpy_args.cl`` ``(float a, x, y, int n)``, GLSL ``saxpy_pc.comp`` with
    push constants ``{ float a; uint n; }``, each picked by the device's provider."""

    opencl = corpus_root() / "src" / "opencl" / "saxpy_args.cl"
    glsl = corpus_root() / "src" / "glsl" / "saxpy_pc.comp"

    @staticmethod
    def _is_opencl(dev: ac.Device) -> bool:
        return dev.entry is not None and dev.entry.provider == "opencl"

    def kernel(self, dev: ac.Device) -> ac.Kernel:
        return dev.kernel(self.opencl if self._is_opencl(dev) else self.glsl)

    def count(self, dev: ac.Device, n: int) -> np.integer[Any]:
        """``n`` typed as each kernel declares it (int on OpenCL, uint on Vulkan)."""
        return np.int32(n) if self._is_opencl(dev) else np.uint32(n)


@pytest.fixture(scope="session")
def corpus_saxpy() -> CorpusSaxpy:
    """The corpus SAXPY on a device, with ``n`` typed as its kernel declares it (:class:`CorpusSaxpy`)."""
    return CorpusSaxpy()


def _check_transfer_rules(accel: Any, source_only: Any, destination_only: Any) -> None:
    """The transfer rules on two 64-byte buffers of ``accel``: ``source_only`` has TRANSFER_SOURCE but not
    TRANSFER_DESTINATION, ``destination_only`` the reverse. A write to the first and a read of the second are
    PERMISSION_DENIED; a transfer that starts at or runs past the end is OUT_OF_BOUNDS."""
    with expect_kind(ErrorKind.PERMISSION_DENIED):
        accel.write_buffer(source_only, 0, MemorySource(b"x"))
    with expect_kind(ErrorKind.PERMISSION_DENIED):
        accel.read_buffer(destination_only, 0, MemorySink(bytearray(1)))
    with expect_kind(ErrorKind.OUT_OF_BOUNDS):
        accel.write_buffer(destination_only, 64, MemorySource(b"x"))
    with expect_kind(ErrorKind.OUT_OF_BOUNDS):
        accel.write_buffer(destination_only, 60, MemorySource(b"12345"))
    with expect_kind(ErrorKind.OUT_OF_BOUNDS):
        accel.read_buffer(source_only, 63, MemorySink(bytearray(2)))
    with expect_kind(ErrorKind.OUT_OF_BOUNDS):
        accel.read_buffer(source_only, 64, MemorySink(bytearray(1)))


@pytest.fixture(scope="session")
def check_transfer_rules() -> Callable[[Any, Any, Any], None]:
    """``check_transfer_rules(accel, source_only, destination_only)``: the permission and bounds rules of
    ``write_buffer``/``read_buffer``, one copy for every provider's tests."""
    return _check_transfer_rules
