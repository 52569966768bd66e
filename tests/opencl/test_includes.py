"""#include in OpenCL C is checked before any driver sees the source.

Without the check, ``#include "/dev/stdin"`` blocks the load (the compiler reads the process's
stdin) and ``#include "/etc/shadow"`` is read by the compiler, its lines echoed in the build log.
The risky loads run in a child (``isolated_load.py``) whose stdin stays open.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_opencl.source_check import INCLUDE_ROOTS_ENV, check_build_options, check_includes, include_directives

from accelcore import ErrorKind

from .isolated_load import load_isolated

KERNEL = """
__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i < count) { dst[i] = src[i] * 2u + ADD; }
}
"""


def _source(*lines: str) -> str:
    return "\n".join(lines) + "\n#ifndef ADD\n#define ADD 1u\n#endif\n" + KERNEL


@pytest.mark.parametrize(
    ("include", "needle"),
    [
        ('#include "/dev/stdin"', "names an absolute path"),
        ('#include "/etc/shadow"', "names an absolute path"),
        ("#include </etc/passwd>", "names an absolute path"),
    ],
    ids=["dev-stdin", "etc-shadow", "etc-passwd-angled"],
)
def test_absolute_includes_are_refused_and_the_load_never_blocks(entry: Any, include: str, needle: str) -> None:
    answer = load_isolated(entry.index, source=_source("// a comment", include), timeout=60)["loads"][0]
    assert answer["kind"] == "INVALID_ARGUMENT", answer
    message = answer["message"]
    assert "before the driver saw the source" in message and "line 2" in message, message
    assert include in message and needle in message, message
    assert "root:" not in message  # nothing of /etc/shadow or /etc/passwd reached the build log


def test_a_macro_include_is_refused(rig: Any, make_package: Any, raises_kind: Any) -> None:
    source = _source('#define WHERE "/etc/hostname"', "#include WHERE")
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        rig.load(make_package(source=source))
    assert "line 2" in info.value.message and "not a plain" in info.value.message


@pytest.fixture
def include_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/root/inc with add.h (ADD 5u via more.h), a secret next to the folder, and the root allowed."""
    root = tmp_path / "root"
    inc = root / "inc"
    inc.mkdir(parents=True)
    (inc / "add.h").write_text('#include "more.h"\n#define ADD FIVE\n')
    (inc / "more.h").write_text("#define FIVE 5u\n")
    (root / "secret.h").write_text("#define ADD 9u\n")
    monkeypatch.setenv(INCLUDE_ROOTS_ENV, str(root))
    return inc


def _run(rig: Any, program: Any) -> np.ndarray:
    src = np.arange(32, dtype=np.uint32)
    a, b = rig.buffer(src, "r"), rig.buffer(np.zeros(32, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (a, "r"), 1: (b, "w")}))) == "Complete"
    return np.frombuffer(rig.read(b), dtype=np.uint32) - src * 2


def test_an_include_inside_an_allowed_folder_builds(rig: Any, make_package: Any, include_tree: Path) -> None:
    program = rig.load(make_package(source=_source('#include "add.h"'), options=f"-I{include_tree}"))
    assert set(_run(rig, program).tolist()) == {5}
    angled = rig.load(make_package(source=_source("#include <add.h>"), options=f"-I {include_tree} -DX"))
    assert set(_run(rig, angled).tolist()) == {5}


@pytest.mark.parametrize(
    ("header", "include", "needle"),
    [
        (None, '#include "../secret.h"', "'..' leaves the include folder"),
        (None, '#include "nope.h"', "is not found in the -I folders"),
        (None, '#include_next "add.h"', "#include_next searches past the -I folders"),
        ("link.h", '#include "link.h"', "which is not inside an -I folder"),
        ("null.h", '#include "null.h"', "could be read from /dev/null, which is not inside an -I folder"),
        ("fifo.h", '#include "fifo.h"', "which is not a regular file"),
        ("nested.h", '#include "nested.h"', "nested.h line 2: '#include \"/etc/shadow\"' names an absolute path"),
    ],
    ids=["dotdot", "missing", "include-next", "symlink-out", "device-file", "fifo", "nested-absolute"],
)
def test_includes_that_leave_the_folders_are_refused(
    rig: Any, make_package: Any, raises_kind: Any, include_tree: Path, header: str | None, include: str, needle: str
) -> None:
    if header == "link.h":
        (include_tree / header).symlink_to(include_tree.parent / "secret.h")
    elif header == "null.h":
        (include_tree / header).symlink_to("/dev/null")
    elif header == "fifo.h":
        os.mkfifo(include_tree / header)  # a compiler opening it would block
    elif header == "nested.h":
        (include_tree / header).write_text('#define A 1\n#include "/etc/shadow"\n')
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        rig.load(make_package(source=_source(include), options=f"-I{include_tree}"))
    assert needle in info.value.message


def test_include_folders_must_lie_inside_the_roots(
    rig: Any, make_package: Any, raises_kind: Any, include_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(INCLUDE_ROOTS_ENV)
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:  # -I/etc would make "shadow" a plain include
        rig.load(make_package(source=_source('#include "shadow"'), options="-I/etc"))
    assert INCLUDE_ROOTS_ENV in info.value.message and "'/etc'" in info.value.message
    monkeypatch.setenv(INCLUDE_ROOTS_ENV, str(include_tree / "elsewhere"))
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        rig.load(make_package(source=_source('#include "add.h"'), options=f"-I{include_tree}"))


def test_a_name_in_the_current_folder_outside_the_folders_is_refused(
    rig: Any, make_package: Any, raises_kind: Any, include_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "add.h").write_text("#define ADD 7u\n")  # rusticl and PoCL would read this one
    monkeypatch.chdir(elsewhere)
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        rig.load(make_package(source=_source('#include "add.h"'), options=f"-I{include_tree}"))
    assert "search the current folder first" in info.value.message


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('#include "x"', 2),
        ('  #  include "x"', 2),
        ('# /* c */ include "x"', 2),
        ('#inc\\\nlude "x"', 2),
        ('#include \\\n "x"', 2),
        ('%:include "x"', 2),
        ('??=include "x"', 2),
        ('/* a\n */ #include "x"', 3),
        ('#import "x"', 2),
        ('#embed "x"', 2),
    ],
)
def test_every_spelling_of_an_include_is_found(text: str, line: int) -> None:
    found = include_directives("int a;\n" + text + "\nint b;\n")
    assert [(number, name) for number, _, name, _ in found] == [(line, "x")], found


@pytest.mark.parametrize(
    "text",
    [
        '// #include "x"',
        '/* #include "x" */',
        'const char *s = "#include \\"x\\"";',
        "int include = 1;",
        "#define include 1",
    ],
)
def test_what_is_not_an_include_is_not_refused(text: str) -> None:
    assert include_directives(text + "\n") == []
    check_includes(text + "\n", check_build_options(""))


def test_a_block_comment_does_not_hide_a_later_include() -> None:
    text = '/* one\n two */ int a; /* three */\n#include "x"\nconst char *s = "/*";\n#include <y>\n'
    assert [(line, name) for line, _, name, _ in include_directives(text)] == [(3, "x"), (5, "y")]


def test_a_changed_header_is_a_new_build(rig: Any, make_package: Any, include_tree: Path) -> None:
    package = make_package(source=_source('#include "add.h"'), options=f"-I{include_tree} -DHEADER_CHANGE")
    first = rig.load(package)
    assert rig.load(package).from_cache  # nothing changed
    (include_tree / "more.h").write_text("#define FIVE 6u\n")  # a header the source includes through add.h
    changed = rig.load(package)
    assert not changed.from_cache
    assert set(_run(rig, first).tolist()) == {5} and set(_run(rig, changed).tolist()) == {6}
