"""GLSL compute shaders compiled to Vulkan SPIR-V with ``glslangValidator`` (Debian: glslang-tools).

Promise: :func:`compile_glsl` runs the compiler in a bounded subprocess on a
temporary copy of the source and returns the SPIR-V bytes; a compile error is
INVALID_ARGUMENT carrying the compiler's messages with line numbers, a missing
compiler is UNSUPPORTED naming the Debian package, a compiler that runs past
the time limit is RESOURCE_LIMIT. :func:`looks_like_glsl` recognises GLSL
text (a ``#version`` line and no ``__kernel``). :func:`glsl_with_includes`
inlines a shader file's ``#include "name"`` (``GL_GOOGLE_include_directive``)
on the host under the same checks as OpenCL C includes
(:mod:`accelcore.opencl_includes`: next to the file; no absolute names, no
``..`` or symlink leaving the folder, bounded), with ``#line`` directives so a
compile error names the header and its line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .errors import BackendError, ErrorKind

__all__ = ["COMPILER", "GLSL_SUFFIXES", "compile_glsl", "glsl_with_includes", "looks_like_glsl"]

COMPILER = "glslangValidator"
GLSL_SUFFIXES = (".comp", ".glsl")
DEFAULT_TARGET_ENV = "vulkan1.1"
"""SPIR-V 1.3, which every Vulkan 1.1+ device takes (the corpus is built the same way)."""
COMPILE_TIMEOUT_S = 60.0

_VERSION = re.compile(rb"^[ \t]*#[ \t]*version[ \t]+\d+", re.MULTILINE)
_SHADER = re.compile(rb"\blayout\s*\(|\bvoid\s+main\s*\(|\bgl_(GlobalInvocationID|LocalInvocationID|WorkGroupID)\b")


def glsl_with_includes(path: str | Path, data: bytes) -> bytes:
    """``data`` read from the shader file ``path`` with its quoted includes inlined (see the module docstring);
    text without includes as it is. Raises what :func:`accelcore.opencl_includes.inline_includes` raises."""
    from .opencl_includes import include_directives, inline_includes

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    if b"\0" in data or not include_directives(text):
        return data
    lines = inline_includes(text, path).split("\n")
    if lines and lines[0].startswith("#line 1 "):
        lines.pop(0)  # #version must come first in GLSL
    version = next((i for i, line in enumerate(lines) if _VERSION.match(line.encode("utf-8"))), None)
    if version is None:
        return "\n".join(lines).encode("utf-8")
    shown = str(path).replace("\\", "\\\\").replace('"', '\\"')
    lines[version + 1 : version + 1] = [
        "#extension GL_GOOGLE_cpp_style_line_directive : enable",
        f'#line {version + 2} "{shown}"',
    ]
    return "\n".join(lines).encode("utf-8")


def looks_like_glsl(data: bytes) -> bool:
    """Whether ``data`` is GLSL shader text: a ``#version N`` directive and a ``layout(``, ``main`` or ``gl_``
    built-in, with no NUL and no OpenCL ``__kernel`` / ``kernel void``."""
    if b"\0" in data[:4096] or b"__kernel" in data or b"kernel void" in data:
        return False
    return bool(_VERSION.search(data)) and bool(_SHADER.search(data))


def compile_glsl(source: bytes, *, name: str = "shader.comp", target_env: str = DEFAULT_TARGET_ENV) -> bytes:
    """SPIR-V for the compute shader ``source`` (see the module docstring)."""
    compiler = shutil.which(COMPILER)
    if compiler is None:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"cannot compile GLSL {name}: {COMPILER} is not installed (Debian package glslang-tools; make setup "
            "installs it)",
        )
    if not re.fullmatch(r"vulkan1\.[0-4]", target_env):
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"target env {target_env!r} is not vulkan1.0 .. vulkan1.4")
    with tempfile.TemporaryDirectory(prefix="accelcore-glsl-") as folder:
        stem = Path(name).stem or "shader"
        source_path = Path(folder) / f"{stem}.comp"
        out_path = Path(folder) / f"{stem}.spv"
        source_path.write_bytes(source)
        try:
            done = subprocess.run(
                [compiler, "-V", "--target-env", target_env, "-S", "comp", "-o", str(out_path), str(source_path)],
                capture_output=True,
                timeout=COMPILE_TIMEOUT_S,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT, f"{COMPILER} ran past {COMPILE_TIMEOUT_S:g} s compiling {name}"
            ) from None
        messages = (done.stdout + done.stderr).decode("utf-8", errors="replace")
        messages = messages.replace(str(source_path), name)
        lines = [line.rstrip() for line in messages.splitlines()]
        messages = "\n".join(line for line in lines if line and line != name)
        if done.returncode != 0 or not out_path.exists():
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"GLSL {name} does not compile:\n{messages[-4000:]}")
        return out_path.read_bytes()
