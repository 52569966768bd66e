"""``#include`` in OpenCL C the user names on disk: found, checked and inlined on the host at pack time.

Promise: :func:`source_with_includes` is what every path that turns a user's file into a package
calls (``Device.kernel(path)``, ``accel pack``/``run``/``compile``): for OpenCL C text with
``#include`` directives it returns the source with each include replaced by the included file's
text, framed by ``#line`` directives so compiler messages name the included file and its line and
then the includer's next line. The package is then self-contained, and the provider's own check
(``accel_opencl.source_check.check_includes``) still refuses any ``#include`` in a package from
elsewhere. Anything else (SPIR-V, binaries, packages, text without includes) comes back as it is.

What may be included: ``"name"`` is looked up in the including file's folder, then in each ``-I``
folder the user passes in the build options (relative to the current folder); ``<name>`` in the
``-I`` folders only. The file found must be, after every symlink, inside the source file's folder or
an ``-I`` folder, and a regular file; an absolute name, ``..`` leaving those folders, a symlink out
of them, a device, FIFO or folder, a macro or computed operand, ``#include_next``, ``#import`` and
``#embed``, a header that is not UTF-8, and more than :data:`MAX_INCLUDE_DEPTH` nesting levels,
:data:`MAX_INCLUDED_FILES` files, :data:`MAX_INCLUSIONS` inclusions or :data:`MAX_INLINED_CHARS`
characters of result are refused: ``BackendError(INVALID_ARGUMENT)`` (RESOURCE_LIMIT for the
bounds) naming the include, the file and its line. Files are opened without blocking (a FIFO never
stalls the call) and each is read once.

Include guards work as usual (the preprocessor sees them); ``#pragma once`` is applied here (a file
with it is inlined the first time only, and the pragma line is blanked, since inlined text is the
main file to the compiler). A file that includes a file on its own include chain gets nothing for
that include, as an include guard would make it.

Directives are found as the provider's check finds them (after trigraphs, digraphs, line splicing
and comments, conservatively: one inside ``#if 0`` counts): :func:`include_directives`.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..contract.errors import BackendError, ErrorKind
from ..support.files import read_regular_file
from .spirv import is_spirv

__all__ = [
    "MAX_INCLUDED_FILES",
    "MAX_INCLUDE_DEPTH",
    "MAX_INCLUSIONS",
    "MAX_INLINED_CHARS",
    "IncludeDirective",
    "include_directives",
    "inline_includes",
    "named_source",
    "option_include_dirs",
    "read_regular_file",
    "source_with_includes",
]

MAX_INCLUDE_DEPTH = 32
MAX_INCLUDED_FILES = 256
MAX_INCLUSIONS = 4096
MAX_INLINED_CHARS = 16 << 20
MAX_HEADER_BYTES = 16 << 20

_INCLUDE_DIRECTIVES = frozenset({"include", "include_next", "import", "embed"})
_SPLICE = re.compile(r"\\[ \t\f\v]*(?:\r\n|\r|\n)")
_MAYBE_INCLUDE = re.compile(r"include|import|embed")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIGNIFICANT = re.compile(r"/\*|//|\"|'")
_PRAGMA_ONCE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*pragma[ \t]+once[ \t]*(?://.*)?$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class IncludeDirective:
    """One ``#include``-like directive: physical lines ``first``..``last`` (1-based; more than one when the line
    is spliced), ``name`` the plain operand (None for a macro or computed one), ``angled`` for ``<name>``,
    ``operand`` as written and ``tail`` the rest of the logical line after the operand."""

    first: int
    last: int
    directive: str
    name: str | None
    angled: bool
    operand: str
    tail: str = ""

    @property
    def written(self) -> str:
        return f"#{self.directive} {self.operand}"


def _logical_lines(text: str) -> list[tuple[int, int, str]]:
    """(first physical line, last physical line, text) of every line after trigraphs ??= ??/ and splicing."""
    text = text.replace("??=", "#").replace("??/", "\\")
    lines: list[tuple[int, int, str]] = []
    start = 1
    pending: list[str] = []
    number = 0
    for number, physical in enumerate(_NEWLINE.split(text), start=1):
        stripped = physical.rstrip(" \t\f\v")
        if stripped.endswith("\\"):
            if not pending:
                start = number
            pending.append(stripped[:-1])
            continue
        if pending:
            pending.append(physical)
            lines.append((start, number, "".join(pending)))
            pending = []
        else:
            lines.append((number, number, physical))
    if pending:
        lines.append((start, number, "".join(pending)))
    return lines


def _skip_blank(line: str, pos: int, in_comment: bool) -> tuple[int, bool]:
    """Skip white space and comments from ``pos``; (new position, inside an unclosed /* comment)."""
    end = len(line)
    while pos < end:
        if in_comment:
            close = line.find("*/", pos)
            if close < 0:
                return end, True
            pos, in_comment = close + 2, False
        elif line[pos] in " \t\f\v":
            pos += 1
        elif line.startswith("/*", pos):
            pos, in_comment = pos + 2, True
        elif line.startswith("//", pos):
            return end, False
        else:
            break
    return pos, in_comment


def _rest_state(line: str, pos: int, in_comment: bool) -> bool:
    """Scan the rest of ``line`` for comments (skipping string and character literals); the comment state at its end."""
    end = len(line)
    while pos < end:
        if in_comment:
            close = line.find("*/", pos)
            if close < 0:
                return True
            pos, in_comment = close + 2, False
            continue
        match = _SIGNIFICANT.search(line, pos)
        if match is None:
            return False
        token = match.group()
        if token == "//":
            return False
        if token == "/*":
            pos, in_comment = match.end(), True
            continue
        pos = match.end()  # a literal: runs to its closing quote (backslash escapes) or the end of the line
        while pos < end and line[pos] != token:
            pos += 2 if line[pos] == "\\" else 1
        pos += 1
    return in_comment


def _directives(text: str) -> tuple[list[IncludeDirective], bool]:
    """Every include-like directive of ``text`` and whether the text ends inside a ``/*`` comment."""
    found: list[IncludeDirective] = []
    in_comment = False
    for first, last, line in _logical_lines(text):
        pos, in_comment = _skip_blank(line, 0, in_comment)
        if line.startswith("#", pos) or line.startswith("%:", pos):
            pos, in_comment = _skip_blank(line, pos + (1 if line[pos] == "#" else 2), in_comment)
            match = _IDENTIFIER.match(line, pos)
            if match and match.group() in _INCLUDE_DIRECTIVES:
                directive = match.group()
                pos, in_comment = _skip_blank(line, match.end(), in_comment)
                operand = line[pos:].strip()
                closing = {'"': '"', "<": ">"}.get(line[pos : pos + 1])
                close = line.find(closing, pos + 1) if closing else -1
                if closing and close > pos + 1:
                    name = line[pos + 1 : close]
                    found.append(
                        IncludeDirective(first, last, directive, name, closing == ">", operand, line[close + 1 :])
                    )
                    pos = close + 1
                else:
                    found.append(IncludeDirective(first, last, directive, None, False, operand))
                    pos = len(line)
        in_comment = _rest_state(line, pos, in_comment)
    return found, in_comment


def _may_include(text: str) -> bool:
    """A cheap test that ``text`` cannot hold an include-like directive (false positives are fine)."""
    return bool(_MAYBE_INCLUDE.search(_SPLICE.sub("", text.replace("??/", "\\"))))


def include_directives(text: str) -> list[tuple[int, str, str | None, str]]:
    """Every #include-like directive of ``text``: (line, directive, plain name or None, operand as written).

    Conservative: a directive inside ``#if 0`` counts, and a ``#`` that follows a comment spanning
    lines counts as the start of a line.
    """
    if not _may_include(text):
        return []
    return [(d.first, d.directive, d.name, d.operand) for d in _directives(text)[0]]


def option_include_dirs(build_options: str) -> tuple[str, ...]:
    """The folders of ``-I DIR`` / ``-IDIR`` in OpenCL build options, in order."""
    try:
        words = shlex.split(build_options)
    except ValueError:
        words = build_options.split()
    folders: list[str] = []
    for position, word in enumerate(words):
        if word == "-I" and position + 1 < len(words):
            folders.append(words[position + 1])
        elif word.startswith("-I") and len(word) > 2:
            folders.append(word[2:])
    return tuple(folders)


def _refuse(where: str, line: int, message: str, kind: ErrorKind = ErrorKind.INVALID_ARGUMENT) -> BackendError:
    return BackendError(kind, f"#include refused: {where} line {line}: {message}")


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _line_name(shown: str) -> str:
    """``shown`` as the string of a ``#line`` directive."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in shown):
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"#include: the path {shown!r} has a control character")
    return '"' + shown.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Inliner:
    def __init__(self, origin: str, include_dirs: Sequence[str]) -> None:
        self.allowed = [os.path.realpath(os.path.dirname(os.path.abspath(origin)))]
        self.dirs: list[tuple[str, str]] = []  # (as given, real path)
        for folder in include_dirs:
            real = os.path.realpath(folder)
            if not os.path.isdir(real):
                raise BackendError(ErrorKind.INVALID_ARGUMENT, f"#include: the -I folder {folder!r} is not a folder")
            self.dirs.append((folder, real))
            self.allowed.append(real)
        self.texts: dict[str, str] = {}
        self.once: set[str] = set()
        self.inclusions = 0
        self.chars = 0

    def _find(self, where: str, own_shown: str, own_real: str, d: IncludeDirective) -> tuple[str, str]:
        """(real path, path as shown) of what ``d`` (in the file ``own_shown``, at ``own_real``) names, checked."""
        name = d.name
        assert name is not None
        if name.startswith("/") or os.path.isabs(name):
            raise _refuse(where, d.first, f"{d.written!r} names an absolute path")
        candidates = [] if d.angled else [(os.path.dirname(own_shown), os.path.dirname(own_real))]
        candidates += [(shown, real) for shown, real in self.dirs]
        for shown_folder, folder in candidates:
            path = os.path.join(folder, name)
            if not os.path.lexists(path):
                continue
            real = os.path.realpath(path)
            if not any(_within(real, allowed) for allowed in self.allowed):
                escape = "'..' leaves" if ".." in Path(name).parts else "it resolves to " + real + ", outside"
                raise _refuse(
                    where,
                    d.first,
                    f"{d.written!r}: {escape} the source file's folder and the -I folders {[s for s, _ in self.dirs]}",
                )
            if not os.path.isfile(real):
                raise _refuse(where, d.first, f"{d.written!r} names {real}, which is not a regular file")
            return real, os.path.join(shown_folder, name) if shown_folder else name
        looked = "the -I folders" if d.angled else "the including file's folder and the -I folders"
        raise _refuse(where, d.first, f"{d.written!r} is not found in {looked} {[s for s, _ in self.dirs]}")

    def _text(self, where: str, d: IncludeDirective, real: str) -> str:
        cached = self.texts.get(real)
        if cached is not None:
            return cached
        if len(self.texts) >= MAX_INCLUDED_FILES:
            raise _refuse(where, d.first, f"more than {MAX_INCLUDED_FILES} files", ErrorKind.RESOURCE_LIMIT)
        try:
            raw = read_regular_file(real, MAX_HEADER_BYTES + 1)
        except OSError as exc:
            raise _refuse(where, d.first, f"{d.written!r}: {real} cannot be read ({exc.strerror})") from None
        if len(raw) > MAX_HEADER_BYTES:
            raise _refuse(where, d.first, f"{real} is larger than {MAX_HEADER_BYTES} bytes", ErrorKind.RESOURCE_LIMIT)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _refuse(where, d.first, f"{d.written!r}: {real} is not UTF-8 text") from None
        self.texts[real] = text
        return text

    def expand(self, text: str, shown: str, real: str, chain: tuple[str, ...]) -> str:
        """``text`` (of the file ``shown`` / ``real``) with its includes inlined."""
        if not _may_include(text):
            return text
        directives, open_comment = _directives(text)
        if open_comment and chain:
            raise _refuse(shown, text.count("\n") + 1, "the file ends inside a /* comment")
        if not directives:
            return text
        lines = _NEWLINE.split(text)
        out: list[str] = []
        done = 0  # physical lines copied
        for d in directives:
            if d.name is None:
                raise _refuse(
                    shown,
                    d.first,
                    f'{d.written!r}: the operand is not a plain "name" or <name> (a macro could name any file)',
                )
            if d.directive != "include":
                raise _refuse(shown, d.first, f"{d.written!r}: #{d.directive} is not supported (use #include)")
            found, found_shown = self._find(shown, shown, real, d)
            if len(chain) >= MAX_INCLUDE_DEPTH:
                raise _refuse(
                    shown, d.first, f"includes nest deeper than {MAX_INCLUDE_DEPTH}", ErrorKind.RESOURCE_LIMIT
                )
            self.inclusions += 1
            if self.inclusions > MAX_INCLUSIONS:
                raise _refuse(shown, d.first, f"more than {MAX_INCLUSIONS} inclusions", ErrorKind.RESOURCE_LIMIT)
            out.extend(lines[done : d.first - 1])
            done = d.last
            if found in chain or found == real or found in self.once:
                body = ""  # as its include guard (or #pragma once) would make it
            else:
                header = self._text(shown, d, found)
                if _PRAGMA_ONCE.search(header):
                    self.once.add(found)
                    header = _PRAGMA_ONCE.sub("", header)
                body = self.expand(header, found_shown, found, (*chain, real))
            if body:
                out.append(f"#line 1 {_line_name(found_shown)}")
                out.append(body)
                out.append("")  # a splice ending the file joins this empty line, not the #line after it
            out.append(f"#line {d.last + 1} {_line_name(shown)}{' ' + d.tail if d.tail.strip() else ''}")
            self.chars += len(body)
            if self.chars > MAX_INLINED_CHARS:
                raise _refuse(
                    shown,
                    d.first,
                    f"the inlined source exceeds {MAX_INLINED_CHARS} characters",
                    ErrorKind.RESOURCE_LIMIT,
                )
        out.extend(lines[done:])
        return "\n".join(out)


def inline_includes(text: str, origin: str | Path, include_dirs: Sequence[str] = ()) -> str:
    """``text``, the OpenCL C of the file ``origin``, with its includes inlined (see the module docstring)."""
    shown = str(origin)
    inliner = _Inliner(shown, include_dirs)
    if not include_directives(text):
        return text
    expanded = inliner.expand(text, shown, os.path.abspath(shown), ())
    return f"#line 1 {_line_name(shown)}\n{expanded}"


def _source_text(data: bytes) -> str | None:
    """``data`` as OpenCL C text, or None where it cannot be: empty, with a NUL byte, SPIR-V, or not UTF-8."""
    if not data or b"\0" in data or is_spirv(data):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def source_with_includes(path: str | Path, data: bytes, build_options: str = "") -> bytes:
    """``data`` read from the user's file ``path`` with the includes of OpenCL C text inlined; other bytes (and
    text without includes) as they are. Raises what :func:`inline_includes` raises."""
    text = _source_text(data)
    if text is None or not include_directives(text):
        return data
    return inline_includes(text, path, option_include_dirs(build_options)).encode("utf-8")


def named_source(path: str | Path, data: bytes) -> bytes:
    """OpenCL C text of the user's file ``path`` (its includes inlined already) with ``#line 1 "path"`` first,
    so the driver's compiler messages name that file and its lines rather than the temporary copy it compiles
    (PoCL ``/root/.cache/pocl/kcache/tempfile_….cl:4:37``, Intel ``1:4:37``, rusticl ``input.cl:4:37``). Text
    that starts with a ``#line 1`` already (:func:`inline_includes` puts one there) and anything that is not
    UTF-8 text (SPIR-V, binaries, packages) come back as they are.

    The path becomes part of the source, so the provider's binary cache keys a file by the path it was given
    as too (the same file named two ways is compiled once for each). Used where a file is only built, not
    kept (``Device.kernel``, ``accel run``, ``accel compile``); ``accel pack`` writes the text as it is."""
    text = _source_text(data)
    if text is None or text.startswith("#line 1 ") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in str(path)):
        return data  # (a path with a control character cannot be a #line name: the driver's name stays)
    return f"#line 1 {_line_name(str(path))}\n{text}".encode()
