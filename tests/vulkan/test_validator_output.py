"""spirv-val's output is bytes: a diagnostic that echoes non-UTF-8 bytes from the module is still a BackendError.

spirv-val (SPIRV-Tools 2023.1) prints the offending instruction under each error, string
literals byte for byte. accelcore's inspector decodes OpName, OpMemberName, OpExtension and
entry-point names (and refuses invalid UTF-8 there), not ``OpSourceExtension``; one whose text is
invalid UTF-8, placed after the first OpName (an invalid layout section), passes the inspector
and fails the validator with those bytes in the diagnostic.
"""

from __future__ import annotations

import struct
import subprocess
from typing import Any

import pytest
from accel_vulkan import module_check

from accelcore import BackendError, ErrorKind
from accelcore.conformance.corpus import kernel_spec, load_module
from accelcore.kernels.package import KernelPackage
from accelcore.kernels.package_codec import write_package
from accelcore.kernels.spirv import inspect_spirv

from .conftest import VK

BAD_NAME = b"bad\xff\xfename"
"""Not UTF-8: 0xFF and 0xFE never occur in UTF-8."""

_OP_NAME = 5
_OP_SOURCE_EXTENSION = 4


def _words(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def _with_bad_debug_string(module: bytes) -> bytes:
    """Insert ``OpSourceExtension "bad\\xff\\xfename"`` right after the first OpName (out of layout order)."""
    words = _words(module)
    index = 5
    while words[index] & 0xFFFF != _OP_NAME:
        index += words[index] >> 16
    index += words[index] >> 16
    literal = BAD_NAME + b"\0" * (4 - len(BAD_NAME) % 4)
    words[index:index] = [((1 + len(literal) // 4) << 16) | _OP_SOURCE_EXTENSION, *_words(literal)]
    return struct.pack(f"<{len(words)}I", *words)


@pytest.fixture
def bad_module() -> bytes:
    if module_check.validator_path() is None:
        pytest.fail("spirv-val is not installed (make setup installs Debian spirv-tools)")
    module = _with_bad_debug_string(load_module("conformance", VK))
    inspect_spirv(module)  # it must reach the validator: accelcore's own walk accepts it
    return module


def test_the_validator_really_prints_the_non_utf8_bytes(bad_module: bytes, tmp_path: Any) -> None:
    path = tmp_path / "bad.spv"
    path.write_bytes(bad_module)
    validator = module_check.validator_path()
    assert validator is not None
    done = subprocess.run([validator, "--target-env", "vulkan1.2", str(path)], capture_output=True, check=False)
    assert done.returncode != 0
    output = done.stderr + done.stdout
    assert BAD_NAME in output, output
    with pytest.raises(UnicodeDecodeError):
        output.decode("utf-8")


def test_non_utf8_validator_output_is_invalid_argument(bad_module: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module_check, "_validated", set())
    with pytest.raises(BackendError) as caught:
        module_check._run_validator(bad_module)
    assert caught.value.kind is ErrorKind.INVALID_ARGUMENT
    assert "fails spirv-val" in caught.value.message and "invalid layout section" in caught.value.message


def test_load_program_refuses_the_module_with_a_backend_error(rig: Any, raises_kind: Any, bad_module: bytes) -> None:
    spec = kernel_spec("conformance")
    package = KernelPackage(VK, spec.entry_point(VK), spec.local_size, spec.bindings, spec.dispatch, bad_module)
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        rig.load(write_package(package))
    assert "fails spirv-val" in info.value.message
    assert rig.accel.live_resources().get("VkPipeline", 0) == 0
