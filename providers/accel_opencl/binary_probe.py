"""Child process: try one device binary on one device and report as JSON.

Usage: ``python -m accel_opencl.binary_probe INDEX UUID_HEX ENTRY OPTIONS < binary``.
Prints one JSON line: ``{"ok": true}`` or ``{"ok": false, "status": n,
"call": ..., "message": ...}``. If the driver crashes, the parent sees the
signal instead (see :mod:`accel_opencl.binaries`).
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    index, uuid_hex, entry_point, options = int(argv[0]), argv[1], argv[2], argv[3]
    binary = sys.stdin.buffer.read()
    import pyopencl as cl
    from pyopencl import _cl

    from .discovery import list_devices

    matches = [d for d in list_devices() if d.index == index and d.uuid.hex() == uuid_hex]
    if not matches:
        print(json.dumps({"ok": False, "message": f"device {index} ({uuid_hex}) not found in the probe"}))
        return 0
    device = matches[0].device
    call = "clCreateProgramWithBinary"
    try:
        context = cl.Context([device])
        program = _cl._Program(context, [device], [binary])
        call = "clBuildProgram"
        program._build(options=options.encode("utf-8"), devices=[device])
        call = "clCreateKernel"
        _cl.Kernel(program, entry_point)
    except cl.Error as exc:
        print(json.dumps({"ok": False, "status": int(exc.code), "call": call, "message": str(exc)[:2000]}))
        return 0
    print(json.dumps({"ok": True}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
