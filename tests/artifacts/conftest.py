"""Shared helpers for the artifact tests: kind-checking raises and tool discovery."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from accelcore import BackendError, ErrorKind

RaisesKind = Callable[..., AbstractContextManager[pytest.ExceptionInfo[BackendError]]]


@contextmanager
def _raises_kind(kind: ErrorKind, match: str | None = None) -> Iterator[pytest.ExceptionInfo[BackendError]]:
    with pytest.raises(BackendError, match=match) as info:
        yield info
    assert info.value.kind is kind, f"expected {kind.name}, got {info.value}"


@pytest.fixture
def raises_kind() -> RaisesKind:
    """``with raises_kind(ErrorKind.X, match="regex"): ...`` asserts a BackendError of exactly that kind."""
    return _raises_kind


def _tool(name: str) -> str:
    """Path of a command-line tool, or skip the test naming the Debian package that provides it."""
    packages = {
        "glslangValidator": "glslang-tools",
        "spirv-val": "spirv-tools",
        "spirv-as": "spirv-tools",
        "clang-15": "clang-15",
        "llvm-spirv-15": "llvm-spirv-15",
    }
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian package {packages.get(name, name)})")
    return path


def run_tool(*command: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}"
    return done


@pytest.fixture
def tool() -> Callable[[str], str]:
    """``tool("spirv-val")``: the tool's path, or skip naming its Debian package."""
    return _tool
