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

import re
from dataclasses import dataclass

from accelcore import BackendError, ErrorKind

__all__ = ["VALID_OPTIONS", "BuildOptions", "check_build_options"]

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
