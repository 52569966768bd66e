"""Does a process that loads a kernel again on every call grow? Per OpenCL device, four ways of doing it.

Each mode runs ``--warmup`` cycles, then ``--calls`` more, in a fresh child process, and reports what grew
over those: the bytes glibc's allocator has handed out and not got back (``mallinfo2``: uordblks + hblkhd,
every arena; exact to the byte, whatever pages the allocator keeps) and resident memory
(``/proc/self/statm``; paged, and blind to growth that lands in heap the allocator already holds):

    driver-program  the OpenCL calls alone (ctypes, no binding): clCreateProgramWithBinary + clBuildProgram
                    + clCreateKernel, then clReleaseKernel + clReleaseProgram, per cycle
    driver-kernel   the same without the program: clCreateKernel + clReleaseKernel on one built program
    pyopencl        a reload per call as a PyOpenCL user writes it: Program(ctx, [dev], [binary]).build(),
                    Kernel, set_args with a new scalar, enqueue, wait, read back
    accelcore-values  ``k(x, a=float(i), global_size=64)`` on one Kernel: a new scalar value per call is a new
                    package, so a program load (the Kernel keeps its last 8), the result checked
    accelcore       ``dev.kernel(SOURCE)(x, a=float(i), global_size=64)``: a new Kernel per call as well

Run: ``RUSTICL_ENABLE=swrast python tools/repro/opencl_program_memory.py [--device opencl:0] [--mode ...]
[--calls 4000] [--warmup 1000] [--json]``. ``--json`` prints one JSON object per (device, mode);
tests/opencl/test_program_memory.py runs the ``accelcore`` mode and bounds its growth.

Measured 2026-12-04 (Debian 12, glibc 2.36, 2 cores; PoCL 3.1, Intel CPU runtime 2026.2, Mesa 22.3.6 rusticl;
1,000 warm-up cycles, then 4,000), bytes per cycle the allocator kept ("before": the code before the fix):

    device    driver-program  driver-kernel  pyopencl  accelcore-values      accelcore
                                                       before    after       before*          after
    PoCL            69             0            70       69       0.1        2.2 MB            0.0
    Intel          133             0           133      129       0.3        0.45 MB           -0.3
    rusticl         80             0            81       82       1.0        0.17 MB           -0.3

    * 200 warm-up cycles, then 800 (RSS +101, +350, +41 MiB): call 1,025 is RESOURCE_LIMIT
      max_programs_per_context, each dropped Kernel's program having stayed loaded.

Every driver keeps some memory for each program it builds and releases, whoever calls it (Intel's for a program
a kernel was made on: a program alone keeps nothing there), and none for a kernel made and released on a kept
program: the growth a new scalar value per call showed is the drivers',
and PyOpenCL's loop has it to the byte (its RSS looked flat, +0.04 to +0.52 MiB over the 4,000 calls, only
because the growth first fills heap the allocator already holds). Now the Python layer unloads the programs
of a dropped Kernel, and the OpenCL provider keeps the last built native programs
(``accel_opencl.programs.NATIVE_PROGRAMS_KEPT``), so a load of a module it built lately makes a kernel only
(also faster: 2.4 / 1.7 / 3.2 ms per accelcore-values call after, 3.6 / 3.6 / 4.1 before). docs/opencl.md,
"Program memory".
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("RUSTICL_ENABLE", "swrast")

MODES = ("driver-program", "driver-kernel", "pyopencl", "accelcore-values", "accelcore")
SOURCE = "__kernel void scale(__global float *x, const float a) { x[get_global_id(0)] = a * x[get_global_id(0)]; }\n"
ITEMS = 64
PAGE = os.sysconf("SC_PAGE_SIZE")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def malloc_in_use() -> int | None:
    """Bytes glibc's malloc has handed out and not got back (all arenas); None without ``mallinfo2``."""
    try:
        function = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return None
    function.restype = _Mallinfo2
    info = function()
    return int(info.uordblks + info.hblkhd)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def _opencl_library(cl: Any) -> Any:
    """The ICD loader PyOpenCL itself loaded (its wheel's own), else the system's."""
    found = sorted(glob.glob(os.path.join(os.path.dirname(cl.__file__), ".libs", "libOpenCL*.so*")))
    library = ctypes.CDLL(found[0] if found else "libOpenCL.so.1")
    pointer, status = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32)
    library.clCreateKernel.argtypes, library.clCreateKernel.restype = (pointer, ctypes.c_char_p, status), pointer
    library.clCreateProgramWithBinary.argtypes = (
        pointer,
        ctypes.c_uint32,
        ctypes.POINTER(pointer),
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_char_p),
        pointer,
        status,
    )
    library.clCreateProgramWithBinary.restype = pointer
    library.clBuildProgram.argtypes = (
        pointer,
        ctypes.c_uint32,
        ctypes.POINTER(pointer),
        ctypes.c_char_p,
        pointer,
        pointer,
    )
    library.clReleaseKernel.argtypes = library.clReleaseProgram.argtypes = (pointer,)
    return library


def _cycle(device_id: str, mode: str) -> Callable[[int], None]:
    """One cycle of ``mode`` on ``device_id`` (set up here, once)."""
    import numpy as np

    if mode.startswith("accelcore"):
        import accelcore as ac

        dev = ac.open(device_id)
        x = np.ones(ITEMS, np.float32)
        one = dev.kernel(SOURCE.encode())

        def call(i: int) -> None:
            x[:] = 1.0
            value = float(i % 100_000)
            (dev.kernel(SOURCE.encode()) if mode == "accelcore" else one)(x, a=value, global_size=ITEMS)
            if x[0] != value:
                raise SystemExit(f"call {i}: {x[0]} where {value} was written")

        return call

    import pyopencl as cl
    from accel_opencl.discovery import find_device

    import accelcore as ac

    (entry,) = [e for e in ac.devices(device_id) if e.provider == "opencl"]
    device = find_device(entry).device
    context = cl.Context([device])
    built = cl.Program(context, SOURCE).build()
    binary = built.get_info(cl.program_info.BINARIES)[0]
    if mode == "pyopencl":
        queue = cl.CommandQueue(context)
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4 * ITEMS)
        x = np.ones(ITEMS, np.float32)

        def call(i: int) -> None:
            kernel = cl.Kernel(cl.Program(context, [device], [binary]).build(), "scale")
            kernel.set_args(buffer, np.float32(i % 100_000))
            cl.enqueue_nd_range_kernel(queue, kernel, (ITEMS,), None).wait()
            cl.enqueue_copy(queue, x, buffer).wait()

        return call
    library = _opencl_library(cl)
    status = ctypes.c_int32()
    device_pointer = ctypes.c_void_p(device.int_ptr)
    lengths = (ctypes.c_size_t * 1)(len(binary))
    binaries = (ctypes.c_char_p * 1)(binary)

    def kernel_of(program: int) -> None:
        kernel = library.clCreateKernel(program, b"scale", ctypes.byref(status))
        if status.value:
            raise SystemExit(f"clCreateKernel: {status.value}")
        library.clReleaseKernel(kernel)

    if mode == "driver-kernel":
        return lambda i: kernel_of(built.int_ptr)

    def program_cycle(i: int) -> None:
        program = library.clCreateProgramWithBinary(
            context.int_ptr, 1, ctypes.byref(device_pointer), lengths, binaries, None, ctypes.byref(status)
        )
        if status.value or library.clBuildProgram(program, 1, ctypes.byref(device_pointer), b"", None, None):
            raise SystemExit(f"clCreateProgramWithBinary/clBuildProgram: {status.value}")
        kernel_of(program)
        library.clReleaseProgram(program)

    return program_cycle


def measure(device_id: str, mode: str, calls: int, warmup: int) -> dict[str, Any]:
    """Run ``mode`` in this process: ``warmup`` cycles, then ``calls`` measured ones."""
    import gc

    cycle = _cycle(device_id, mode)
    for i in range(warmup):
        cycle(i)
    gc.collect()
    heap0, rss0, started = malloc_in_use(), rss_bytes(), time.perf_counter()
    for i in range(warmup, warmup + calls):
        cycle(i)
    seconds = time.perf_counter() - started
    gc.collect()
    heap1 = malloc_in_use()
    return {
        "device": device_id,
        "mode": mode,
        "calls": calls,
        "warmup": warmup,
        "malloc_bytes": None if heap0 is None or heap1 is None else heap1 - heap0,
        "rss_bytes": rss_bytes() - rss0,
        "us_per_call": seconds * 1e6 / calls,
    }


def run_child(device_id: str, mode: str, calls: int, warmup: int, timeout: float = 600) -> dict[str, Any]:
    """:func:`measure` in a fresh ``python -P`` child (a clean heap); its JSON, or RuntimeError with its stderr."""
    done = subprocess.run(
        [sys.executable, "-P", os.path.abspath(__file__), "--child", device_id, mode, str(calls), str(warmup)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode} on {device_id}: exit status {done.returncode}\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _row(result: dict[str, Any]) -> str:
    malloc = result["malloc_bytes"]
    per_call = "n/a" if malloc is None else f"{malloc / result['calls']:8.1f}"
    return (
        f"{result['device']:10s} {result['mode']:15s} {result['calls']:6d} calls  malloc in use {per_call} B/call  "
        f"RSS {result['rss_bytes'] / 2**20:+6.2f} MiB  {result['us_per_call']:7.0f} us/call"
    )


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        device_id, mode, calls, warmup = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(measure(device_id, mode, calls, warmup)), flush=True)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", action="append", help="opencl:N (repeatable; default: every OpenCL device)")
    parser.add_argument("--mode", action="append", choices=MODES, help="repeatable; default: all")
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of the table")
    args = parser.parse_args()
    if args.device:
        devices = args.device
    else:
        import accelcore as ac

        devices = [e.device_id for e in ac.devices() if e.provider == "opencl"]
    for device_id in devices:
        for mode in args.mode or MODES:
            try:
                result = run_child(device_id, mode, args.calls, args.warmup)
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                return 1
            print(json.dumps(result) if args.json else _row(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
