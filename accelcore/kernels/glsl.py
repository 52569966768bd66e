"""GLSL compute shaders compiled to Vulkan SPIR-V with ``glslangValidator`` (Debian: glslang-tools).

Promise: :func:`compile_glsl` runs the compiler in a bounded subprocess on a
temporary copy of the source and returns the SPIR-V bytes; a compile error is
INVALID_ARGUMENT carrying the compiler's messages with line numbers, a missing
compiler is UNSUPPORTED naming the Debian package, a compiler that runs past
the time limit is RESOURCE_LIMIT. :func:`looks_like_glsl` recognises GLSL
text (a ``#version`` line and no ``__kernel``). :func:`glsl_with_includes`
inlines a shader file's ``#include "name"`` (``GL_GOOGLE_include_directive``)
on the host under the same checks as OpenCL C includes
(:mod:`accelcore.kernels.opencl_includes`: next to the file; no absolute names, no
``..`` or symlink leaving the folder, bounded), with ``#line`` directives so a
compile error names the header and its line.

Build options (:func:`glsl_build_options`; ``Device.kernel(build_options=)``, ``accel run/pack
--build-options``), split as a shell splits them: ``-D NAME[=VALUE]`` / ``-DNAME[=VALUE]``
(``-D NAME`` defines NAME as ``1``, as OpenCL and C compilers do; ``-DNAME=`` defines it empty),
``-U NAME`` / ``-UNAME``, handed to glslangValidator in the order given, and ``-I DIR`` / ``-IDIR``,
an extra folder (relative to the current folder) that :func:`glsl_with_includes` searches after the
shader's own folder, under the same checks. Any other option is INVALID_ARGUMENT naming it: an
option the GLSL compiler does not take is refused, never ignored. A NAME that is not an identifier
and a VALUE with a control character (a newline would add source lines) are refused as well.

Entry point: ``entry="foo"`` compiles the source function ``foo`` as the entry point, named ``foo``
in the SPIR-V too (glslangValidator ``-e foo --source-entrypoint foo``), so the package and a
call's ``entry=`` / ``--entry`` name the same function; a ``main`` beside it is an ordinary
function then. A source without that function is INVALID_ARGUMENT naming it. ``None`` or ``"main"``:
``main``, as GLSL has it.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..contract.errors import BackendError, ErrorKind

__all__ = [
    "ACCEPTED_BUILD_OPTIONS",
    "COMPILER",
    "GLSL_SUFFIXES",
    "GlslBuildOptions",
    "compile_glsl",
    "glsl_build_options",
    "glsl_with_includes",
    "looks_like_glsl",
]

COMPILER = "glslangValidator"
GLSL_SUFFIXES = (".comp", ".glsl")
DEFAULT_TARGET_ENV = "vulkan1.1"
"""SPIR-V 1.3, which every Vulkan 1.1+ device takes (the corpus is built the same way)."""
COMPILE_TIMEOUT_S = 60.0

_VERSION = re.compile(rb"^[ \t]*#[ \t]*version[ \t]+\d+", re.MULTILINE)
_SHADER = re.compile(rb"\blayout\s*\(|\bvoid\s+main\s*\(|\bgl_(GlobalInvocationID|LocalInvocationID|WorkGroupID)\b")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SOURCE_ENTRY_NOTE = 'ERROR: Source entry point must be "main"'
"""What glslang prints (as a note, the compile goes on) for every GLSL ``--source-entrypoint`` other than main."""
ACCEPTED_BUILD_OPTIONS = "-D NAME[=VALUE], -U NAME, -I DIR"
"""The build options GLSL takes (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class GlslBuildOptions:
    """Build options parsed for GLSL: ``macros`` the glslangValidator arguments (``-DNAME=VALUE``, ``-UNAME``)
    in the order given, ``include_dirs`` the ``-I`` folders as given."""

    macros: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()


def _refused(option: str, why: str) -> BackendError:
    return BackendError(
        ErrorKind.INVALID_ARGUMENT, f"GLSL build option {option!r}: {why}; GLSL takes {ACCEPTED_BUILD_OPTIONS}"
    )


def glsl_build_options(build_options: str) -> GlslBuildOptions:
    """``build_options`` split and checked for GLSL (see the module docstring); INVALID_ARGUMENT naming the first
    option that GLSL does not take, or that is malformed."""
    try:
        words = shlex.split(build_options)
    except ValueError as exc:
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"GLSL build options {build_options!r}: {exc}") from None
    macros: list[str] = []
    folders: list[str] = []
    position = 0
    while position < len(words):
        word = words[position]
        position += 1
        flag, operand = word[:2], word[2:]
        if flag not in ("-D", "-U", "-I"):
            raise _refused(word, "not an option the GLSL compiler takes")
        shown = word
        if not operand:
            if position >= len(words):
                raise _refused(word, "needs an operand")
            operand = words[position]
            shown = f"{word} {operand}"
            position += 1
        if flag == "-I":
            folders.append(operand)
            continue
        name, equals, value = operand.partition("=")
        if not _IDENTIFIER.fullmatch(name) or (flag == "-U" and equals):
            raise _refused(shown, f"{operand!r} is not {'NAME[=VALUE]' if flag == '-D' else 'NAME'}")
        if _CONTROL.search(value):
            raise _refused(shown, "the value has a control character")
        macros.append(f"-D{name}={value if equals else 1}" if flag == "-D" else f"-U{name}")
    return GlslBuildOptions(tuple(macros), tuple(folders))


def glsl_with_includes(path: str | Path, data: bytes, build_options: str = "") -> bytes:
    """``data`` read from the shader file ``path`` with its includes inlined from its folder and the ``-I``
    folders of ``build_options`` (see the module docstring); text without includes as it is. Raises what
    :func:`glsl_build_options` and :func:`accelcore.kernels.opencl_includes.inline_includes` raise."""
    from .opencl_includes import include_directives, inline_includes

    include_dirs = glsl_build_options(build_options).include_dirs
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    if b"\0" in data or not include_directives(text):
        return data
    lines = inline_includes(text, path, include_dirs).split("\n")
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


def compile_glsl(
    source: bytes,
    *,
    name: str = "shader.comp",
    target_env: str = DEFAULT_TARGET_ENV,
    build_options: str = "",
    entry: str | None = None,
) -> bytes:
    """SPIR-V for the compute shader ``source`` with the macros of ``build_options`` and the entry point
    ``entry`` (see the module docstring). ``source`` has its includes inlined already
    (:func:`glsl_with_includes`): ``-I`` with include directives left (GLSL given as bytes, which has no
    folder) is INVALID_ARGUMENT."""
    from .opencl_includes import include_directives

    options = glsl_build_options(build_options)
    if options.include_dirs and include_directives(source.decode("utf-8", errors="replace")):
        raise _refused(
            f"-I {options.include_dirs[0]}",
            f"the includes of {name} are inlined only from a shader file (its folder, then the -I folders); "
            "pass the file's path, or inline them",
        )
    if entry is not None and not _IDENTIFIER.fullmatch(entry):
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"entry {entry!r} is not a GLSL function name")
    renamed = ["-e", entry, "--source-entrypoint", entry] if entry not in (None, "main") else []
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
                [
                    compiler,
                    "-V",
                    "--target-env",
                    target_env,
                    "-S",
                    "comp",
                    *options.macros,
                    *renamed,
                    "-o",
                    str(out_path),
                    str(source_path),
                ],
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
        messages = "\n".join(line for line in lines if line and line not in (name, _SOURCE_ENTRY_NOTE))
        if done.returncode != 0 or not out_path.exists():
            if renamed and "Missing entry point" in messages and "compilation error" not in messages:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT,
                    f"GLSL {name} has no function named {entry!r}, the entry point asked for",
                )
            built = f" with build options {build_options!r}" if build_options.strip() else ""
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"GLSL {name} does not compile{built}:\n{messages[-4000:]}")
        return out_path.read_bytes()
