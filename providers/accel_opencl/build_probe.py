"""Child process: compile OpenCL C sources on request, within limits, and answer each as JSON.

Usage: ``python -m accel_opencl.build_probe`` (started by :mod:`.isolation`, which watches its
resident memory and time). Before anything else the child turns off core files. Requests arrive on stdin, one JSON line
``{"id", "index", "uuid", "entry", "options", "size", "cpu_s"}`` followed by ``size`` bytes of source;
for each the child sets ``RLIMIT_CPU`` to what it has used plus ``cpu_s``, builds the source,
creates the kernel (rusticl crashes only there on some sources), reads the binary and loads that
binary the same way, so the parent may trust it. Each answer is one JSON line on the original
stdout (driver output goes to stderr): ``{"ok": true, "binary": base64 or null}`` (null: the
binary did not load again; the parent compiles) or ``{"ok": false, "status": n, "call": ...,
"log": ...}`` for a CL error while building. Every answer also carries the request's ``id`` and
the :func:`request_digest` of what this child read and built, so the parent never takes one
request's answer for another's. A CL error creating the kernel is not a verdict (the
parent makes the kernel itself and reports it). A driver crash shows as the end of the process.
The child exits at the end of stdin or after :data:`IDLE_S` seconds without a request.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import resource
import select
import sys
from typing import Any

from accelcore.support.child import die_with_parent

IDLE_S = 30.0


def request_digest(index: int, uuid_hex: str, entry_point: str, options: str, source: bytes) -> str:
    """SHA-256 (hex) of one build request: device index and UUID, entry point, options and source."""
    h = hashlib.sha256()
    for part in (str(index).encode(), uuid_hex.encode(), entry_point.encode(), options.encode(), source):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def _limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, hard))


class _Input:
    """Lines and exact byte counts from a file descriptor, waiting at most ``IDLE_S`` for more."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()

    def _fill(self) -> bool:
        ready, _, _ = select.select([self._fd], [], [], IDLE_S)
        chunk = os.read(self._fd, 1 << 20) if ready else b""
        self._buffer += chunk
        return bool(chunk)

    def line(self) -> bytes | None:
        while b"\n" not in self._buffer:
            if not self._fill():
                return None
        end = self._buffer.index(b"\n") + 1
        line = bytes(self._buffer[:end])
        del self._buffer[:end]
        return line

    def exactly(self, size: int) -> bytes | None:
        while len(self._buffer) < size:
            if not self._fill():
                return None
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


def _build(cl: Any, device: Any, context: Any, source: str, entry_point: str, options: str) -> dict[str, Any]:
    from pyopencl import _cl

    program = _cl._Program(context, source)
    try:
        program._build(options=options.encode("utf-8"), devices=[device])
    except cl.Error as exc:
        try:
            log = str(program.get_build_info(device, cl.program_build_info.LOG)).strip()
        except cl.Error:
            log = "(no build log)"
        return {
            "ok": False,
            "status": int(exc.code),
            "call": "clBuildProgram",
            "log": log if len(log) <= 4000 else log[:3000] + "\n[...]\n" + log[-1000:],
        }
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
        return {"ok": True, "binary": None}
    try:
        _cl.Kernel(reloaded, entry_point)
    except cl.Error:
        pass
    return {"ok": True, "binary": base64.b64encode(binary).decode("ascii")}


def main(argv: list[str]) -> int:
    die_with_parent()  # never outlives the process whose builds it serves
    _limit(resource.RLIMIT_CORE, 0)
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever a driver prints goes to stderr, never into the answers
    requests = _Input(0)
    import pyopencl as cl

    from .discovery import list_devices

    devices: dict[tuple[int, str], tuple[Any, Any]] = {}
    while True:
        line = requests.line()
        if line is None:
            return 0
        request = json.loads(line)
        raw = requests.exactly(int(request["size"]))
        if raw is None:
            return 0
        used = resource.getrusage(resource.RUSAGE_SELF)
        _limit(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime + float(request["cpu_s"])) + 1)
        where = (int(request["index"]), str(request["uuid"]))
        entry_point, options = str(request["entry"]), str(request["options"])
        # What this answer belongs to, from what was read here: the parent checks both before using it.
        belongs = {"id": request.get("id"), "digest": request_digest(*where, entry_point, options, raw)}
        if where not in devices:
            matches = [d for d in list_devices() if d.index == where[0] and d.uuid.hex() == where[1]]
            if not matches:
                answer: dict[str, Any] = {"ok": False, "call": "", "log": f"device {where} not found in the child"}
                answers.write(json.dumps({**answer, **belongs}) + "\n")
                answers.flush()
                continue
            devices[where] = (matches[0].device, cl.Context([matches[0].device]))
        device, context = devices[where]
        answer = _build(cl, device, context, raw.decode("utf-8"), entry_point, options)
        answers.write(json.dumps({**answer, **belongs}) + "\n")
        answers.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
