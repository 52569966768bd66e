"""``accel pack`` of OpenCL C with ``#include "common.h"`` next to it: the package holds the inlined source
(self-contained, no include left for a driver to look up); an escape is refused with exit 3 naming it."""

from __future__ import annotations

import json
from pathlib import Path

from accelcore.kernels.opencl_includes import include_directives
from accelcore.kernels.package_codec import parse_package

KERNEL = '#include "common.h"\nkernel void k(global float* y) { y[get_global_id(0)] = VALUE; }\n'


def test_pack_inlines_the_includes_of_the_named_file(accel, tmp_path: Path) -> None:
    (tmp_path / "common.h").write_text("#define VALUE 7.0f\n")
    (tmp_path / "k.cl").write_text(KERNEL)
    out = tmp_path / "k.kpkg"
    proc = accel(["pack", tmp_path / "k.cl", "-o", out, "--global", "16", "--json"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    source = parse_package(out.read_bytes()).module.decode()
    assert "#define VALUE 7.0f" in source and include_directives(source) == []
    assert f'#line 1 "{tmp_path / "common.h"}"' in source
    assert json.loads(proc.stdout)["coverage"] == {"stated": [], "inferred": []}  # a #define'd body: not inferred

    (tmp_path / "k.cl").write_text(KERNEL.replace("common.h", "/etc/hostname"))
    proc = accel(["pack", tmp_path / "k.cl", "-o", out, "--global", "16"], cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "k.cl line 1: '#include \"/etc/hostname\"' names an absolute path" in proc.stderr
