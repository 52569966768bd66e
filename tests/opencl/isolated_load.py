"""Run one risky OpenCL program load in this process (started as a child by the tests).

A load the provider fails to guard could take the whole process down (a driver SIGSEGV or
abort) or block it; the tests run it here so a regression fails the test instead of killing
pytest. Usage: ``python isolated_load.py spec.json`` where the spec holds ``device`` (the
discovery index), ``source``, ``options``, ``entry`` and optionally ``loads`` (how many times
to load, default 1), ``kind`` (``source`` or ``binary``; a binary spec gives ``module_hex``),
``run`` (run each loaded program as the tests' ``twice`` kernel over 64 items), ``interrupted``
(``{"source", "options", "after_s"}``: before the loads, a load of that source that a
KeyboardInterrupt raised from a SIGALRM handler after ``after_s`` seconds stops, as Ctrl-C
would). The last line of stdout is JSON: per load ``{"kind": ErrorKind name or null, "message",
"from_cache", "output": [...] or null}``, plus ``"children"`` (isolated builds started),
``"processes"`` (build workers started) and ``"interrupted"`` (whether the interrupt landed).
"""

from __future__ import annotations

import json
import os
import signal
import sys

os.environ.setdefault("RUSTICL_ENABLE", "swrast")

import numpy as np
from accel_opencl import provider_family

from accelcore import (
    AccessMode,
    BackendError,
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    ContextDesc,
    MemoryDomain,
    MemorySink,
    MemorySource,
    QueueDesc,
    Timeout,
)
from accelcore.contract.waiting import poll_until_terminal
from accelcore.kernels.package import Dispatch, DispatchKind, KernelPackage, ModuleKind, PackageBinding

N = 64


def package(spec: dict) -> KernelPackage:
    binary = spec.get("kind") == "binary"
    accel_target = spec.get("target")
    kwargs = {}
    if binary:
        from accelcore import TargetIdentity

        kwargs["target"] = TargetIdentity(tuple(accel_target))
    return KernelPackage(
        module_kind=ModuleKind.OPENCL_BINARY if binary else ModuleKind.OPENCL_SOURCE,
        entry_point=spec.get("entry", "twice"),
        local_size=(16, 1, 1),
        bindings=(PackageBinding(0, 0, AccessMode.READ), PackageBinding(1, 1, AccessMode.WRITE)),
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=2),
        module=bytes.fromhex(spec["module_hex"]) if binary else spec["source"].encode("utf-8"),
        build_options=spec.get("options", ""),
        **kwargs,
    )


def run(accel, context, program) -> list[int]:
    usage = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
    src = np.arange(N, dtype=np.uint32) * 3
    a = accel.allocate_buffer(context, BufferDesc(4 * N, 16, MemoryDomain.HOST, usage | BufferUsage.PROGRAM_INPUT))
    b = accel.allocate_buffer(context, BufferDesc(4 * N, 16, MemoryDomain.HOST, usage | BufferUsage.PROGRAM_OUTPUT))
    accel.write_buffer(a.buffer, 0, MemorySource(src.tobytes()))
    accel.write_buffer(b.buffer, 0, MemorySource(bytes(4 * N)))
    queue = accel.create_queue(context, QueueDesc())
    bindings = [
        BindingRef(0, a.buffer, BufferRange(0, 4 * N), AccessMode.READ),
        BindingRef(1, b.buffer, BufferRange(0, 4 * N), AccessMode.WRITE),
    ]
    event = accel.submit(queue, program, bindings, Timeout.INFINITE)
    state = poll_until_terminal(lambda: accel.poll_event(event), 60.0)
    assert state is not None and str(state) == "Complete", state
    out = bytearray(4 * N)
    accel.read_buffer(b.buffer, 0, MemorySink(out))
    accel.destroy_event(event)
    accel.destroy_queue(queue)
    accel.free_buffer(a.buffer)
    accel.free_buffer(b.buffer)
    return [int(v) for v in np.frombuffer(bytes(out), dtype=np.uint32)]


def interrupted_load(accel, context, spec: dict) -> bool:
    """Load ``spec``'s source with a KeyboardInterrupt raised after ``after_s``; True when it landed."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, float(spec["after_s"]))
        program = accel.load_package(context, package(spec), 64 << 20)
        signal.setitimer(signal.ITIMER_REAL, 0)
        accel.unload_program(program)
        return False
    except KeyboardInterrupt:
        return True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def main() -> int:
    with open(sys.argv[1]) as handle:
        spec = json.load(handle)
    accel = provider_family.open(provider_family.discover()[spec["device"]])
    context = accel.create_context(ContextDesc())
    interrupted = None
    if "interrupted" in spec:
        interrupted = interrupted_load(accel, context, {**spec, **spec["interrupted"]})
    results = []
    for _ in range(int(spec.get("loads", 1))):
        try:
            program = accel.load_package(context, package(spec), 64 << 20)
        except BackendError as exc:
            results.append({"kind": exc.kind.name, "message": exc.message, "from_cache": None, "output": None})
            continue
        output = run(accel, context, program) if spec.get("run") else None
        results.append({"kind": None, "message": "", "from_cache": program.from_cache, "output": output})
        accel.unload_program(program)
    accel.destroy_context(context)
    try:
        from accel_opencl import isolation

        children, processes = isolation.children_started(), isolation.processes_started()
    except (ImportError, AttributeError):
        children = processes = -1
    print(json.dumps({"loads": results, "children": children, "processes": processes, "interrupted": interrupted}))
    return 0


def load_isolated(device: int, *, timeout: float = 240.0, env: dict[str, str] | None = None, **spec: object) -> dict:
    """Run this script as a child for ``spec`` on ``device``; the child must exit 0 (no crash, no hang).

    The child's stdin is a pipe that stays open (a source that reads ``/dev/stdin`` would block).
    """
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"device": device, **spec}, handle)
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-P", os.path.abspath(__file__), handle.name],
            stdin=read_end,
            capture_output=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
            check=False,
        )
    finally:
        os.close(read_end)
        os.close(write_end)
        os.unlink(handle.name)
    tail = done.stderr.decode("utf-8", "replace")[-1500:]
    assert done.returncode == 0, f"the load took the process down (exit status {done.returncode}): {tail}"
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main())
