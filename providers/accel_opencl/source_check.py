"""Checks on build options (and OpenCL C source) before any driver sees them.

Promise: :func:`check_build_options` accepts only build options that both drivers
here take without taking the process down, and returns what they name (the
``-I`` folders). Anything else is INVALID_ARGUMENT naming the offending byte or
option and its position, and saying what is valid.

Why (measured 2026-12-01, Mesa 22.3.6 rusticl): rusticl aborts the process with
a Rust panic on a control byte (``"\\x7f"``, ``"\\x01"``), segfaults on any
option word that does not start with ``-`` (clang takes it for an input file:
``"abc"``, ``"-DX=1 foo"``, ``"\\u00e9"``), and panics on ``"-D X"`` (a ``-D``
apart from its name) and on quotes (``-DX="a"``). PoCL 3.1 takes all of these
or refuses them with ``CL_INVALID_BUILD_OPTIONS``.

The accepted grammar: printable ASCII (0x20-0x7E) without ``"``, ``'`` or
``\\``; words separated by spaces; each word one of ``-D<name>`` /
``-D<name>=<value>`` (``<name>`` a C identifier), ``-I<dir>`` or ``-I <dir>``,
``-w``, ``-Werror``, ``-g``, or ``-cl-<option>`` / ``-cl-<option>=<value>``
(every OpenCL-defined option and the drivers' ``-cl-`` extensions). Options
that make the compiler read, write or load other files (``-include``,
``-imacros``, ``-o``, ``-Xclang``, ...) are therefore refused.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

from accelcore import BackendError, ErrorKind
from accelcore.kernels.opencl_includes import include_directives
from accelcore.support.files import read_regular_file

__all__ = [
    "INCLUDE_ROOTS_ENV",
    "VALID_OPTIONS",
    "BuildOptions",
    "check_build_options",
    "check_includes",
    "include_directives",
    "include_roots",
]

VALID_OPTIONS = "-D<name>[=<value>], -I<dir> or -I <dir>, -w, -Werror, -g, -cl-<option>[=<value>]"
"""What :func:`check_build_options` accepts, as said in its refusals."""

_DEFINE = re.compile(r"-D[A-Za-z_][A-Za-z0-9_]*(=\S*)?")
_CL_OPTION = re.compile(r"-cl-[a-z0-9][a-z0-9_-]*(=[A-Za-z0-9_.,+-]+)?")
_FLAGS = frozenset({"-w", "-Werror", "-g"})
_QUOTES = "\"'\\"


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """Checked build options: the text as given and the ``-I`` folders it names, in order."""

    text: str
    include_dirs: tuple[str, ...]


def _refuse(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"build options refused before the driver saw them: {message}")


def check_build_options(options: str) -> BuildOptions:
    """``options`` checked against the grammar above; INVALID_ARGUMENT naming what is wrong and where."""
    raw = options.encode("utf-8")
    for position, byte in enumerate(raw):
        if not 0x20 <= byte <= 0x7E:
            raise _refuse(
                f"byte 0x{byte:02X} at position {position} is not printable ASCII "
                "(build options take bytes 0x20-0x7E; rusticl aborts the process on control bytes)"
            )
        if chr(byte) in _QUOTES:
            raise _refuse(
                f"{chr(byte)!r} at position {position}: quotes and backslashes are refused "
                '(the drivers split quoted options differently; rusticl aborts the process on -DX="a")'
            )
    include_dirs: list[str] = []
    words = [(match.start(), match.group()) for match in re.finditer(r"[^ ]+", options)]
    index = 0
    while index < len(words):
        position, word = words[index]
        index += 1
        if word == "-I":
            if index == len(words):
                raise _refuse(f"-I at position {position} names no folder (valid: {VALID_OPTIONS})")
            include_dirs.append(words[index][1])
            index += 1
        elif word.startswith("-I"):
            include_dirs.append(word[2:])
        elif word == "-D":
            raise _refuse(
                f"-D at position {position} is apart from its name: write -DNAME or -DNAME=VALUE "
                "(rusticl aborts the process on '-D NAME')"
            )
        elif not (_DEFINE.fullmatch(word) or _CL_OPTION.fullmatch(word) or word in _FLAGS):
            raise _refuse(f"option {word!r} at position {position} is not accepted (valid: {VALID_OPTIONS})")
    return BuildOptions(options, tuple(include_dirs))


# --------------------------------------------------------------------------- #include


INCLUDE_ROOTS_ENV = "ACCELCORE_OPENCL_INCLUDE_ROOTS"
"""os.pathsep-separated folders inside which ``-I`` folders may lie; unset or empty: none."""
MAX_INCLUDED_FILES = 256
MAX_INCLUDED_BYTES = 64 << 20


def _refuse_include(where: str, line: int, message: str) -> BackendError:
    return BackendError(
        ErrorKind.INVALID_ARGUMENT, f"#include refused before the driver saw the source: {where} line {line}: {message}"
    )


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def include_roots() -> tuple[str, ...]:
    """The real paths named by ``ACCELCORE_OPENCL_INCLUDE_ROOTS`` (empty when unset)."""
    value = os.environ.get(INCLUDE_ROOTS_ENV, "")
    return tuple(os.path.realpath(part) for part in value.split(os.pathsep) if part.strip())


def _include_folders(options: BuildOptions) -> list[str]:
    """The real paths of the ``-I`` folders; INVALID_ARGUMENT unless each lies inside an include root."""
    roots = include_roots()
    folders: list[str] = []
    for folder in options.include_dirs:
        real = os.path.realpath(folder)
        if not any(_within(real, root) for root in roots):
            named = os.environ.get(INCLUDE_ROOTS_ENV)
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"#include refused before the driver saw the source: the -I folder {folder!r} ({real}) is not "
                f"inside a folder of {INCLUDE_ROOTS_ENV} (now {named!r}; it lists, {os.pathsep!r}-separated, "
                "the folders whose files an OpenCL C source may include)",
            )
        if not os.path.isdir(real):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"#include refused before the driver saw the source: the -I folder {folder!r} is not a folder",
            )
        folders.append(real)
    return folders


def check_includes(source: str, options: BuildOptions) -> bytes:
    """Refuse, before any driver sees ``source``, an include the compiler could read outside the ``-I`` folders.

    Every ``#include`` / ``#import`` / ``#embed`` (also in the included files) must have a plain
    ``"name"`` or ``<name>`` operand that is relative, has no ``..`` leaving its folder and is a
    regular file inside an ``-I`` folder, wherever the compiler may look for it: the including
    file's folder, the current folder (rusticl reads "name" from there, PoCL both forms) and every
    ``-I`` folder. Each ``-I`` folder must lie inside a folder of ``ACCELCORE_OPENCL_INCLUDE_ROOTS``
    (unset: none, so no include is accepted). ``#include_next`` is refused (it searches past the
    ``-I`` folders). INVALID_ARGUMENT names the include, the file and the line.

    Returns SHA-256 over the included files' paths and contents (empty bytes without includes):
    part of the binary cache key, so a changed header is a new build.
    """
    if not include_directives(source):
        return b""
    folders = _include_folders(options)
    contents = hashlib.sha256()
    pending: list[tuple[str, str, str | None]] = [("the source", source, None)]
    seen: set[str] = set()
    total = 0
    while pending:
        where, text, own_folder = pending.pop()
        for line, directive, name, operand in include_directives(text):
            written = f"#{directive} {operand}"
            if name is None:
                raise _refuse_include(
                    where,
                    line,
                    f'{written!r}: the operand is not a plain "name" or <name> '
                    "(a macro or computed include could name any file)",
                )
            if directive == "include_next":
                raise _refuse_include(where, line, f"{written!r}: #include_next searches past the -I folders")
            if name.startswith("/"):
                raise _refuse_include(where, line, f"{written!r} names an absolute path")
            if os.path.normpath(name).split(os.sep)[0] == "..":
                raise _refuse_include(where, line, f"{written!r}: '..' leaves the include folder")
            cwd = os.getcwd()
            search = dict.fromkeys([*([own_folder] if own_folder else []), cwd, *folders])
            hits = [os.path.join(folder, name) for folder in search if os.path.lexists(os.path.join(folder, name))]
            if not hits:
                raise _refuse_include(
                    where,
                    line,
                    f"{written!r} is not found in the -I folders {list(options.include_dirs)} "
                    f"(the folders an include may name: -I folders inside {INCLUDE_ROOTS_ENV})",
                )
            for hit in hits:
                real = os.path.realpath(hit)
                if not any(_within(real, folder) for folder in folders):
                    raise _refuse_include(
                        where,
                        line,
                        f"{written!r} could be read from {real}, which is not inside an -I folder "
                        f"{list(options.include_dirs)}"
                        + (" (the drivers search the current folder first)" if hit.startswith(cwd + os.sep) else ""),
                    )
                if not os.path.isfile(real):
                    raise _refuse_include(where, line, f"{written!r} names {real}, which is not a regular file")
                if real in seen:
                    continue
                seen.add(real)
                try:
                    raw = read_regular_file(real, MAX_INCLUDED_BYTES + 1 - total)
                except OSError as exc:
                    raise _refuse_include(where, line, f"{written!r}: {real} cannot be read ({exc.strerror})") from None
                total += len(raw)
                if total > MAX_INCLUDED_BYTES or len(seen) > MAX_INCLUDED_FILES:
                    raise _refuse_include(
                        where,
                        line,
                        f"the included files exceed {MAX_INCLUDED_FILES} files or {MAX_INCLUDED_BYTES} bytes",
                    )
                for part in (real.encode("utf-8", "surrogateescape"), raw):
                    contents.update(len(part).to_bytes(8, "little") + part)
                pending.append((real, raw.decode("utf-8", "replace"), os.path.dirname(real)))
    return contents.digest()
