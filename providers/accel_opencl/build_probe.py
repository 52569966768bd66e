"""Child process: compile one OpenCL C source on one device, within limits, and report as JSON.

Usage: ``python -m accel_opencl.build_probe INDEX UUID_HEX ENTRY OPTIONS MEMORY_BYTES CPU_SECONDS < source``.
Before anything else the child limits itself: no core file, ``RLIMIT_AS`` = MEMORY_BYTES and
``RLIMIT_CPU`` = CPU_SECONDS (the parent also stops it after its wall-clock limit). It then builds
the source, creates the kernel (rusticl crashes only there on some sources), reads the binary and
loads that binary the same way, so the parent may trust it. The last stdout line is JSON:
``{"ok": true, "binary": base64 or null}`` (null: the binary did not load again; the parent
compiles) or ``{"ok": false, "status": n, "call": ..., "log": ...}`` for a CL error while
building. A CL error creating the kernel is not a verdict (the parent makes the kernel itself and
reports it). A driver crash shows as the signal the parent sees.
"""

from __future__ import annotations

import base64
import json
import resource
import sys
from typing import Any


def _limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value if hard == resource.RLIM_INFINITY else hard))


def main(argv: list[str]) -> int:
    index, uuid_hex, entry_point, options = int(argv[0]), argv[1], argv[2], argv[3]
    memory_bytes, cpu_seconds = int(argv[4]), int(argv[5])
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_CPU, cpu_seconds)
    _limit(resource.RLIMIT_AS, memory_bytes)
    source = sys.stdin.buffer.read().decode("utf-8")
    import pyopencl as cl
    from pyopencl import _cl

    from .discovery import list_devices

    matches = [d for d in list_devices() if d.index == index and d.uuid.hex() == uuid_hex]
    if not matches:
        print(json.dumps({"ok": False, "call": "", "log": f"device {index} ({uuid_hex}) not found in the child"}))
        return 0
    device = matches[0].device
    context = cl.Context([device])
    program = _cl._Program(context, source)
    try:
        program._build(options=options.encode("utf-8"), devices=[device])
    except cl.Error as exc:
        try:
            log = str(program.get_build_info(device, cl.program_build_info.LOG)).strip()
        except cl.Error:
            log = "(no build log)"
        print(json.dumps({"ok": False, "status": int(exc.code), "call": "clBuildProgram", "log": log[-4000:]}))
        return 0
    try:
        _cl.Kernel(program, entry_point)
    except cl.Error:
        pass  # a missing entry point: the parent's clCreateKernel says so, with the kernel names
    blobs: Any = program.get_info(cl.program_info.BINARIES)
    binary = bytes(blobs[0])
    try:
        reloaded = _cl._Program(context, [device], [binary])
        reloaded._build(options=options.encode("utf-8"), devices=[device])
    except cl.Error:  # the source is fine; the parent compiles it itself
        print(json.dumps({"ok": True, "binary": None}))
        return 0
    try:
        _cl.Kernel(reloaded, entry_point)
    except cl.Error:
        pass
    print(json.dumps({"ok": True, "binary": base64.b64encode(binary).decode("ascii")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
