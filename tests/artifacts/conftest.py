"""Shared helpers for the artifact tests: tool discovery, the OpenCL devices pyopencl offers, and the words of
hand-assembled SPIR-V modules."""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Callable
from typing import Any

import pytest


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


def opencl_devices() -> list[Any]:
    """Every device of every OpenCL platform, straight from pyopencl (none without it): the corpus tests that
    check the kernels against real drivers without accel_opencl."""
    try:
        import pyopencl as cl
    except ImportError:
        return []
    found = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    for platform in platforms:
        try:
            found.extend(platform.get_devices())
        except cl.Error:
            continue  # e.g. Mesa's Clover platform with zero devices
    return found


# --------------------------------------------------------------------------- hand-assembled SPIR-V

SPIRV_MAGIC = 0x07230203


def words(*values: int) -> bytes:
    """Little-endian 32-bit words."""
    return struct.pack(f"<{len(values)}I", *values)


def op(opcode: int, *operands: int) -> list[int]:
    """One instruction: its word count and opcode, then its operands."""
    return [((len(operands) + 1) << 16) | opcode, *operands]


def text(value: str) -> list[int]:
    """A literal string as SPIR-V words: UTF-8, NUL-terminated, zero-padded to a whole word."""
    raw = value.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


def spirv_module(*instructions: list[int], bound: int = 100, version: int = 0x00010300) -> bytes:
    """The five-word header (magic, version, generator 0, ``bound``, schema 0) followed by ``instructions``."""
    body = [w for ins in instructions for w in ins]
    return words(SPIRV_MAGIC, version, 0, bound, 0, *body)
