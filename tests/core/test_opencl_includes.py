"""accelcore.kernels.opencl_includes: the includes of a user's OpenCL C file are found next to it (and in -I folders),
checked and inlined with #line directives; everything that could read elsewhere is refused naming the include."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from accelcore.contract.errors import BackendError, ErrorKind
from accelcore.kernels.opencl_includes import (
    MAX_INCLUDE_DEPTH,
    MAX_INCLUSIONS,
    include_directives,
    inline_includes,
    option_include_dirs,
    source_with_includes,
)
from accelcore.kernels.pack import pack_module

KERNEL = "kernel void f(global float* y) { y[get_global_id(0)] = SCALE; }\n"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _inline(path: Path, build_options: str = "") -> str:
    return source_with_includes(path, path.read_bytes(), build_options).decode()


def _refused(path: Path, kind: ErrorKind = ErrorKind.INVALID_ARGUMENT, build_options: str = "") -> str:
    with pytest.raises(BackendError) as info:
        _inline(path, build_options)
    assert info.value.kind is kind, info.value
    return info.value.message


def test_a_quoted_include_next_to_the_file_is_inlined_with_line_directives(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"scale.h": "#define SCALE 2.0f\n", "k.cl": '// k\n#include "scale.h" // tail\n' + KERNEL})
    text = _inline(root / "k.cl")
    main, header = f'"{root / "k.cl"}"', f'"{root / "scale.h"}"'
    assert text.splitlines() == [
        f"#line 1 {main}",
        "// k",
        f"#line 1 {header}",
        "#define SCALE 2.0f",
        "",
        "",
        f"#line 3 {main}  // tail",
        KERNEL.rstrip("\n"),
    ]
    assert include_directives(text) == []  # self-contained: the provider's check has nothing to look up
    pkg = pack_module(text.encode(), global_size=4)
    assert pkg.module == text.encode()


def test_nested_headers_guards_pragma_once_and_cycles(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "a.h": '#pragma once\n#include "sub/b.h"\n#define SCALE (B + 1.0f)\n',
            "sub/b.h": '#ifndef B_H\n#define B_H\n#include "../a.h"\n#define B 1.0f\n#endif\n',
            "k.cl": '#include "a.h"\n#include "a.h"\n' + KERNEL,
        },
    )
    text = _inline(root / "k.cl")
    assert text.count("#define SCALE") == 1  # #pragma once: inlined the first time only
    assert "#pragma once" not in text
    assert text.count("#define B 1.0f") == 1  # the cycle b.h -> a.h gets nothing (a.h is on the chain)
    assert f'#line 1 "{root / "sub" / "b.h"}"' in text
    assert "sub/../a.h" not in text  # '..' inside the folder is fine; the chain cut it


def test_only_the_files_own_folder_and_minus_i_folders(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"src/k.cl": "#include <scale.h>\n" + KERNEL, "inc/scale.h": "#define SCALE 3.0f\n"})
    message = _refused(root / "src/k.cl")
    assert "'#include <scale.h>' is not found in the -I folders []" in message and "k.cl line 1" in message
    text = _inline(root / "src/k.cl", f"-I {root / 'inc'} -DX=1")
    assert "#define SCALE 3.0f" in text
    assert option_include_dirs("-Ia -I b -DX") == ("a", "b")


@pytest.mark.parametrize(
    ("include", "needle"),
    [
        ('#include "../secret.h"', "'..' leaves the source file's folder"),
        ('#include "/etc/hostname"', "names an absolute path"),
        ('#include "/dev/stdin"', "names an absolute path"),
        ("#include </etc/passwd>", "names an absolute path"),
        ("#include WHERE", "not a plain"),
        ('#include_next "scale.h"', "#include_next is not supported"),
        ('#import "scale.h"', "#import is not supported"),
        ('#embed "scale.h"', "#embed is not supported"),
        ('#include "missing.h"', "is not found in the including file's folder"),
        ('#inc\\\nlude "/dev/stdin"', "names an absolute path"),
        ('??=include "/dev/stdin"', "names an absolute path"),
    ],
    ids=[
        "dotdot", "absolute", "dev-stdin", "angled-absolute", "macro", "include-next", "import", "embed", "missing",
        "spliced", "trigraph",
    ],
)  # fmt: skip
def test_escapes_are_refused_naming_the_include(tmp_path: Path, include: str, needle: str) -> None:
    root = _tree(tmp_path, {"secret.h": "#define SCALE 9.0f\n", "src/scale.h": "#define SCALE 1.0f\n"})
    (root / "src/k.cl").write_text(f'#define WHERE "/etc/hostname"\n{include}\n' + KERNEL)
    message = _refused(root / "src/k.cl")
    assert message.startswith("#include refused: ") and "line 2" in message, message
    assert needle in message, message


def test_symlinks_out_and_special_files_are_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"outside.h": "#define SCALE 9.0f\n", "src/k.cl": '#include "link.h"\n' + KERNEL})
    (root / "src/link.h").symlink_to(root / "outside.h")
    message = _refused(root / "src/k.cl")
    assert f"it resolves to {root / 'outside.h'}, outside the source file's folder" in message
    (root / "src/link.h").unlink()
    (root / "src/link.h").symlink_to("/dev/stdin")
    assert "outside the source file's folder" in _refused(root / "src/k.cl")
    (root / "src/link.h").unlink()
    os.mkfifo(root / "src/link.h")  # a FIFO would block a reader forever
    assert "which is not a regular file" in _refused(root / "src/k.cl")
    (root / "src/link.h").unlink()
    (root / "src/link.h").mkdir()
    assert "which is not a regular file" in _refused(root / "src/k.cl")


def test_a_header_that_escapes_is_refused_naming_the_header(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"a.h": '// a\n#include "/dev/zero"\n', "k.cl": '#include "a.h"\n' + KERNEL})
    message = _refused(root / "k.cl")
    assert f"{root / 'a.h'} line 2" in message and "'#include \"/dev/zero\"' names an absolute path" in message


def test_bounds(tmp_path: Path) -> None:
    (tmp_path / "self.h").write_text('#include "next.h"\n')
    (tmp_path / "next.h").write_text('#include "self.h"\n#include "self.h"\n')  # a cycle: nothing, no loop
    (tmp_path / "k.cl").write_text('#include "self.h"\n' + KERNEL)
    assert "#line" in _inline(tmp_path / "k.cl")
    chain = tmp_path / "deep"
    chain.mkdir()
    for level in range(MAX_INCLUDE_DEPTH + 2):
        (chain / f"h{level}.h").write_text(f'#include "h{level + 1}.h"\n')
    (chain / "k.cl").write_text('#include "h0.h"\n' + KERNEL)
    assert f"deeper than {MAX_INCLUDE_DEPTH}" in _refused(chain / "k.cl", ErrorKind.RESOURCE_LIMIT)
    wide = tmp_path / "wide"
    wide.mkdir()
    (wide / "leaf.h").write_text("// leaf\n")
    (wide / "fan.h").write_text('#include "leaf.h"\n' * 64)
    (wide / "k.cl").write_text('#include "fan.h"\n' * (MAX_INCLUSIONS // 64 + 1) + KERNEL)
    assert f"more than {MAX_INCLUSIONS} inclusions" in _refused(wide / "k.cl", ErrorKind.RESOURCE_LIMIT)


def test_what_is_not_opencl_c_text_passes_as_it_is(tmp_path: Path) -> None:
    spirv = bytes.fromhex("03022307") + bytes(16)
    assert source_with_includes(tmp_path / "k.spv", spirv) is spirv
    plain = KERNEL.encode()
    assert source_with_includes(tmp_path / "k.cl", plain) is plain
    assert inline_includes(KERNEL, tmp_path / "k.cl") == KERNEL
    binary = b"\x7fELF" + bytes(8)
    assert source_with_includes(tmp_path / "k.bin", binary) is binary


def test_line_names_are_escaped(tmp_path: Path) -> None:
    folder = tmp_path / 'we"ird'
    _tree(folder, {"s.h": "#define SCALE 1.0f\n", "k.cl": '#include "s.h"\n' + KERNEL})
    text = _inline(folder / "k.cl")
    assert re.search(r'#line 1 ".*we\\"ird/s\.h"', text), text
