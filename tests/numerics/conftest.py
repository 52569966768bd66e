"""Shared helpers for the numerics suite's tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from accelcore.conformance.corpus import corpus_root
from accelcore.conformance.numerics import kernels


def run_wrong_glsl(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, old: str, new: str) -> None:
    """Make the suite run ``src/glsl/numerics_NAME.comp`` with ``old`` replaced by ``new`` on Vulkan: compiled here
    with glslangValidator (the test skips without it), then what ``kernels.module_bytes("vulkan", NAME)`` gives."""
    if shutil.which("glslangValidator") is None:
        pytest.skip("glslangValidator is not installed (Debian: glslang-tools)")
    source = (corpus_root() / "src" / "glsl" / f"numerics_{name}.comp").read_text()
    broken = source.replace(old, new)
    assert broken != source
    (tmp_path / "wrong.comp").write_text(broken)
    command = ["glslangValidator", "-V", "--target-env", "vulkan1.1", "-o", str(tmp_path / "wrong.spv")]
    subprocess.run([*command, str(tmp_path / "wrong.comp")], check=True, capture_output=True)
    module = (tmp_path / "wrong.spv").read_bytes()
    real = kernels.module_bytes
    monkeypatch.setattr(
        kernels, "module_bytes", lambda api, file: module if (api, file) == ("vulkan", name) else real(api, file)
    )
