"""spirv-val runs once per module: a warm load skips the subprocess, a failing module is never remembered."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from accel_vulkan import module_check

from accelcore import BackendError, ErrorKind

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def counted_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    if module_check.validator_path() is None:
        pytest.skip("spirv-val is not installed (Debian spirv-tools), so there is no subprocess to cache")
    calls: list[list[str]] = []
    real_run = subprocess.run

    def counting_run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(list(args))
        return real_run(args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(module_check.subprocess, "run", counting_run)
    monkeypatch.setattr(module_check, "_validated", set())
    return calls


def test_a_valid_module_is_validated_once(counted_runs: list[list[str]]) -> None:
    module = (ROOT / "artifacts" / "spirv" / "saxpy.vk.spv").read_bytes()
    module_check._run_validator(module)
    module_check._run_validator(module)
    assert len(counted_runs) == 1


def test_a_failing_module_is_checked_every_time(counted_runs: list[list[str]]) -> None:
    module = bytearray((ROOT / "artifacts" / "spirv" / "saxpy.vk.spv").read_bytes())
    module[12:16] = (1).to_bytes(4, "little")  # id bound 1: every id is out of range
    for _ in range(2):
        with pytest.raises(BackendError) as caught:
            module_check._run_validator(bytes(module))
        assert caught.value.kind is ErrorKind.INVALID_ARGUMENT
    assert len(counted_runs) == 2
