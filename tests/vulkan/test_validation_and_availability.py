"""The validation log really sees layer messages (negative control); a missing binding or loader is reported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from accelcore import ContextDesc, QueueDesc
from accelcore.devices.registry import DeviceEntry

from .conftest import VALIDATION, VUID_ZERO_SIZE, provoke_validation_error


def test_validation_log_catches_an_invalid_call(entry: DeviceEntry) -> None:
    """Negative control: the same log the tests rely on records a deliberate VUID violation."""
    from accel_vulkan import provider_family

    if not VALIDATION:
        pytest.skip("ACCEL_VULKAN_VALIDATION=0: this run does not use the validation layer")

    accel = provider_family.open(entry, validation=True)
    try:
        assert accel.validation_enabled
        provoke_validation_error(accel)
    finally:
        accel.close()
    ids = [m.message_id for m in accel.validation_messages]
    assert VUID_ZERO_SIZE in ids, ids


def test_validation_follows_the_environment(entry: DeviceEntry, monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_vulkan import provider_family

    if not VALIDATION:
        pytest.skip("ACCEL_VULKAN_VALIDATION=0: this run does not use the validation layer")

    monkeypatch.setenv("ACCEL_VULKAN_VALIDATION", "1")
    on = provider_family.open(entry)
    monkeypatch.setenv("ACCEL_VULKAN_VALIDATION", "0")
    off = provider_family.open(entry)
    try:
        assert on.validation_enabled and not off.validation_enabled
        assert off.validation_messages == []
    finally:
        on.close()
        off.close()
    assert on.validation_messages == []


def _discover_with_fake_binding(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "vulkan"
    fake.mkdir()
    (fake / "__init__.py").write_text(body)
    code = textwrap.dedent(
        """
        from accel_vulkan import provider_family
        from accelcore.devices.registry import ProviderUnavailable
        try:
            provider_family.discover()
        except ProviderUnavailable as exc:
            print("UNAVAILABLE:", exc.reason)
        """
    )
    env_path = f"{tmp_path}"
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {env_path!r})\n{code}"],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("raise ImportError('No module named _cffi_backend')", "pip install 'accelcore[vulkan]'"),
        ("raise OSError('Cannot find Vulkan SDK version')", "libvulkan1"),
    ],
    ids=["binding-missing", "loader-missing"],
)
def test_missing_binding_or_loader_is_provider_unavailable(tmp_path: Path, body: str, fragment: str) -> None:
    """A stand-in ``vulkan`` package that fails the way the real one does when it or libvulkan is absent."""
    done = _discover_with_fake_binding(tmp_path, body)
    assert done.returncode == 0, done.stderr
    assert "UNAVAILABLE:" in done.stdout and fragment in done.stdout, done.stdout


def test_closed_instance_refuses_calls(accel: Any) -> None:
    from accelcore import BackendError

    ctx = accel.create_context(ContextDesc())
    accel.close()
    with pytest.raises(BackendError):
        accel.create_queue(ctx, QueueDesc())
    assert {k: v for k, v in accel.live_resources().items() if v} == {}
