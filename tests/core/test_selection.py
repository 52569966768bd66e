"""accelcore.testing.selection: one test-id scheme and one ACCEL_DEVICES filter for every suite."""

from __future__ import annotations

import pytest

from accelcore.devices.registry import DeviceEntry
from accelcore.testing.selection import device_test_id, is_wanted, wanted_globs

POCL = DeviceEntry("opencl", 0, "pthread-skylake-avx512", bytes(16), {"tag": "pocl"})
RUSTICL = DeviceEntry("opencl", 1, "llvmpipe (LLVM 15.0.6, 256 bits)", bytes(16), {"tag": "rusticl"})
LAVAPIPE = DeviceEntry("vulkan", 0, "llvmpipe (LLVM 15.0.6, 256 bits)", bytes(16))
NAMELESS = DeviceEntry("vulkan", 1, "!!!", bytes(16))


def test_ids_use_the_provider_tag_else_the_first_word_of_the_name() -> None:
    assert [device_test_id(e) for e in (POCL, RUSTICL, LAVAPIPE, NAMELESS)] == [
        "opencl:0-pocl",
        "opencl:1-rusticl",
        "vulkan:0-llvmpipe",
        "vulkan:1-device",
    ]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("", ["opencl:0", "opencl:1", "vulkan:0"]),
        ("opencl:0", ["opencl:0"]),
        ("opencl:0-pocl", ["opencl:0"]),
        ("*rusticl", ["opencl:1"]),
        (" *llvmpipe , opencl:0 ", ["opencl:0", "vulkan:0"]),
        ("vulkan:*", ["vulkan:0"]),
        ("cuda:*", []),
    ],
)
def test_accel_devices_globs_match_test_ids_or_plain_ids(text: str, kept: list[str]) -> None:
    globs = wanted_globs({"ACCEL_DEVICES": text})
    assert [e.device_id for e in (POCL, RUSTICL, LAVAPIPE) if is_wanted(e, globs)] == kept


def test_device_params_filter_and_explain_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelcore.devices.registry import ProviderUnavailable
    from accelcore.testing.pytest_support import device_params

    monkeypatch.setenv("ACCEL_DEVICES", "*rusticl")
    assert device_params(lambda: [POCL, RUSTICL], "OpenCL") == ([RUSTICL], ["opencl:1-rusticl"])
    (skip,), ids = device_params(lambda: [POCL], "OpenCL")
    assert ids == ["none"] and "no OpenCL device found matching ACCEL_DEVICES=['*rusticl']" in str(skip.marks)

    def unavailable() -> list[DeviceEntry]:
        raise ProviderUnavailable("vulkan", "libvulkan.so.1 missing")

    (skip,), _ = device_params(unavailable, "Vulkan")
    assert "Vulkan unavailable: libvulkan.so.1 missing" in str(skip.marks)


def test_raises_kind_insists_on_the_kind() -> None:
    from accelcore import BackendError, ErrorKind
    from accelcore.testing.pytest_support import raises_kind

    with raises_kind(ErrorKind.BUSY):
        raise BackendError(ErrorKind.BUSY, "x")
    with pytest.raises(AssertionError, match="expected BUSY"), raises_kind(ErrorKind.BUSY):
        raise BackendError(ErrorKind.OUT_OF_BOUNDS, "y")
