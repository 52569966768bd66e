"""One family of the hostile-input corpus on one device, in this process (started by test_hostile_corpus.py).

Usage: ``python -P corpus_child.py DEVICE FAMILY FOLDER CASE...``. FOLDER holds what the family's cases read,
written there by the test from the per-defect tests' own kernels and files (the kernel files are named by the
API they are for: ``saxpy.cl`` / ``saxpy.comp``, ...; ``hostile.json`` maps each hostile file's name to its path
and the words its refusal must hold). Each CASE prints one line, ``CASE <name> <seconds> <verdict>``:

    RAN                         it ran, and what it computed is right
    WRONG <what>                it ran and computed something else (or took too long to refuse)
    REFUSED <KIND>: <message>   a BackendError
    ESCAPED <Type>: <message>   any other exception: the contract promises BackendError

The process then ends with ``os._exit(0)`` (no driver destructor may wait behind a kernel that still runs).
A crash, a hang and memory past the test's cap end it otherwise; the test tells those apart. Only numpy and
accelcore are imported, so a case costs the start of one interpreter and one device.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import accelcore as ac
from accelcore import BackendError, ErrorKind

F32_MAX = float(np.finfo(np.float32).max)
FORK_REFUSAL = "a forked child must open its own"


def report(name: str, call: Callable[[], str | None]) -> None:
    """Run one case: ``call`` returns None when what it computed is right, else what was wrong."""
    started = time.monotonic()
    try:
        wrong = call()
    except BackendError as exc:
        verdict = f"REFUSED {exc.kind.name}: {exc}"
    except Exception as exc:
        verdict = f"ESCAPED {type(exc).__name__}: {exc}"
    else:
        verdict = "RAN" if wrong is None else f"WRONG {wrong}"
    print(f"CASE {name} {time.monotonic() - started:.2f} {' '.join(verdict.split())}", flush=True)


def expect(got: Any, wanted: Any) -> str | None:
    return None if np.array_equal(np.asarray(got), np.asarray(wanted)) else f"{np.asarray(got)[:4]} where {wanted}"


class Saxpy:
    """The corpus SAXPY the threads test runs (tests/python/test_threads.py) on this device: ``y = a * x + y``;
    ``n`` goes as a Python int, which the OpenCL ``int n`` and the GLSL ``uint n`` both take."""

    def __init__(self, dev: ac.Device, folder: Path, provider: str) -> None:
        self.kernel = dev.kernel(folder / ("saxpy.comp" if provider == "vulkan" else "saxpy.cl"))

    def __call__(self, a: Any, x: Any, y: Any, **options: Any) -> Any:
        n = len(x) if hasattr(x, "__len__") else 64
        return self.kernel(a=a, x=x, y=y, n=n, global_size=n, **options)


# --------------------------------------------------------------------------- device limits


def limits(dev: ac.Device, folder: Path, provider: str) -> dict[str, Callable[[], str | None]]:
    info = dev.engine.info
    total, largest = info.limits.total_memory_bytes, info.limits.max_buffer_bytes

    def live_buffers_past_global_memory() -> str | None:
        # Two buffers that each fit, past the global memory in all: the device is said to have 1 MiB (as
        # tests/python/test_memory_limits.py does; the real one is gigabytes). rusticl took 6 GiB on its 2.
        small = dataclasses.replace(info.limits, total_memory_bytes=1 << 20)
        dev.engine._info = dataclasses.replace(info, limits=small)
        first = dev.empty(600 << 10, np.uint8)
        try:
            dev.empty(600 << 10, np.uint8)
        except BackendError as exc:
            if "ACCELCORE_MEMORY_OVERCOMMIT" not in exc.message:
                return f"refused without naming the override: {exc}"
            raise
        finally:
            first.free()
            dev.engine._info = info
        return "1,200 KiB of live buffers taken on a device of 1 MiB"

    cases: dict[str, Callable[[], str | None]] = {
        "buffer-past-max-buffer-bytes": lambda: expect(dev.empty(largest + 1, np.uint8).shape, "refused"),
        "buffer-past-global-memory": lambda: expect(dev.empty(int(total or 0) + 1, np.uint8).shape, "refused"),
        "live-buffers-past-global-memory": live_buffers_past_global_memory,
    }
    if provider == "opencl":
        x, out = np.ones(256, np.float32), np.zeros(64, np.float32)

        def reduce(nbytes: int) -> str | None:
            sums = np.zeros(4, np.float32)
            dev.kernel(folder / "reduce.cl", local_size=64)(x, sums, ac.local_memory(nbytes), global_size=256)
            return expect(sums, [64.0] * 4)

        cases["local-scratch-4-bytes"] = lambda: reduce(4)
        cases["local-scratch-255-bytes"] = lambda: reduce(255)
        cases["local-scratch-enough"] = lambda: reduce(256)
        cases["local-variables-16MiB"] = lambda: dev.kernel(folder / "big_local.cl")(out, global_size=64)
        cases["private-array-8MiB"] = lambda: dev.kernel(folder / "big_private.cl")(out, global_size=64)
    if provider == "vulkan":

        def shared(spec: dict[int, int]) -> str | None:
            out = dev.kernel(folder / "shared.comp", spec=spec or None)(np.zeros(64, np.float32), global_size=64)
            return expect(out[:3], [1.0, 2.0, 3.0])

        cases["shared-default"] = lambda: shared({})
        cases["shared-length-0"] = lambda: shared({3: 0})
        cases["shared-length-u32-max"] = lambda: shared({3: 0xFFFFFFFF})
        cases["shared-64MiB"] = lambda: shared({3: 1 << 24})
    return cases


# --------------------------------------------------------------------------- numbers


def numbers(dev: ac.Device, folder: Path, provider: str) -> dict[str, Callable[[], str | None]]:
    cases: dict[str, Callable[[], str | None]] = {}
    if provider == "opencl":
        scale, member = dev.kernel(folder / "scale.cl"), dev.kernel(folder / "member.cl")

        def scaled(value: object) -> str | None:
            x = np.zeros(4, np.float32)
            scale(x, a=value, global_size=4)
            return expect(x, [F32_MAX] * 4)

        def struct(value: object) -> str | None:
            x = np.zeros(4, np.float32)
            member(x, p={"a": value, "n": 0}, global_size=4)
            return expect(x, [F32_MAX] * 4)

        for name, value in NUMBERS.items():
            cases[f"value-{name}"] = lambda value=value: scaled(value)
        cases["struct-member-1e999"] = lambda: struct("1e999")
        cases["struct-member-10^400"] = lambda: struct(10**400)
        cases["struct-member-f32-max"] = lambda: struct(3.4028235e38)
    if provider == "vulkan":

        def specialised(value: object) -> str | None:
            v = dev.kernel(folder / "spec.comp", spec={"A": value})(np.zeros(4, np.float32), global_size=4)
            return expect(v, [F32_MAX] * 4)

        for name, value in NUMBERS.items():
            cases[f"spec-{name}"] = lambda value=value: specialised(value)
        saxpy = Saxpy(dev, folder, provider)
        x = np.ones(64, np.float32)
        cases["push-1e999"] = lambda: expect(saxpy("1e999", x, np.zeros(64, np.float32)), "refused")
        cases["push-f32-max"] = lambda: expect(saxpy("3.4028235e38", x, np.zeros(64, np.float32)), [F32_MAX] * 64)
    return cases


NUMBERS: dict[str, object] = {
    "1e999": "1e999",
    "f32:1e999": "f32:1e999",
    "-1e999": "-1e999",
    "400-digits": "1" * 400,
    "int-10^400": 10**400,
    "f32-max-text": "3.4028235e38",  # numpy's repr of float32 max: taken, exactly
}


# --------------------------------------------------------------------------- special files


def special_files(dev: ac.Device, folder: Path, provider: str) -> dict[str, Callable[[], str | None]]:
    hostile = json.loads((folder / "hostile.json").read_text())
    cases: dict[str, Callable[[], str | None]] = {}

    def load(path: str, words: str) -> str | None:
        started = time.monotonic()
        try:
            dev.kernel(Path(path))
        except BackendError as exc:
            if words not in exc.message or time.monotonic() - started > 1.0:
                return f"refused after {time.monotonic() - started:.1f} s without {words!r}: {exc}"
            raise
        return "loaded"

    for name, (path, words) in hostile.items():
        cases[f"kernel-file-{name}"] = lambda path=path, words=words: load(path, words)
    return cases


# --------------------------------------------------------------------------- threads


THREADS = 6
CALLS = 25


def _in_threads(work: Callable[[int], None]) -> list[str]:
    """Run ``work(thread)`` on THREADS threads at once; what went wrong, as text."""
    problems: list[str] = []
    start = threading.Barrier(THREADS)

    def run(thread: int) -> None:
        start.wait()
        try:
            work(thread)
        except BackendError as exc:
            problems.append(f"thread {thread}: REFUSED {exc.kind.name}: {exc}")
        except Exception as exc:
            problems.append(f"thread {thread}: ESCAPED {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return problems


def _one_call(dev: ac.Device, saxpy: Saxpy | None, thread: int, call: int) -> str | None:
    """A call whose right result only this thread and call can have (None when right)."""
    x = np.full(64 + 16 * (call % 4), thread + 1, np.float32)
    if saxpy is None:  # the reference device runs no kernel through the Python layer: a device array round trip
        array = dev.array(x * (call + 1))
        back = array.numpy()
        array.free()
        return expect(back, x * (call + 1))
    return expect(saxpy(np.float32(2), x, np.full(len(x), call, np.float32)), 2 * x + call)


def threads(dev: ac.Device, folder: Path, provider: str) -> dict[str, Callable[[], str | None]]:
    saxpy = None if provider == "reference" else Saxpy(dev, folder, provider)

    def concurrent() -> str | None:
        wrong: list[str] = []

        def work(thread: int) -> None:
            for call in range(CALLS):
                problem = _one_call(dev, saxpy, thread, call)
                if problem is not None:
                    wrong.append(f"thread {thread} call {call}: {problem}")

        problems = _in_threads(work)
        if problems:
            raise RuntimeError(problems[0])  # every call must succeed here: reported as ESCAPED
        return wrong[0] if wrong else None

    def close_while_calling() -> str | None:
        outcomes = {"result": 0, "refused": 0}
        wrong: list[str] = []
        escaped: list[str] = []

        def work(thread: int) -> None:
            for call in range(200):
                try:
                    problem = _one_call(dev, saxpy, thread, call)
                except BackendError:
                    outcomes["refused"] += 1
                    continue
                except Exception as exc:
                    escaped.append(f"{type(exc).__name__}: {exc}")
                    continue
                outcomes["result"] += 1
                if problem is not None:
                    wrong.append(problem)

        closer = threading.Timer(0.05, dev.close)
        closer.start()
        _in_threads(work)
        closer.join()
        print(f"NOTE close-while-calling: {outcomes['result']} results, {outcomes['refused']} refused", flush=True)
        if escaped:
            raise RuntimeError(f"{len(escaped)} escaped; first: {escaped[0]}")
        return wrong[0] if wrong else None

    return {"concurrent-calls": concurrent, "close-while-calling": close_while_calling}


# --------------------------------------------------------------------------- fork


def fork(dev: ac.Device, folder: Path, provider: str) -> dict[str, Callable[[], str | None]]:
    saxpy = None if provider == "reference" else Saxpy(dev, folder, provider)

    def calls_in_a_forked_child() -> str | None:
        resident = dev.array(np.ones(64, np.float32))
        calls: dict[str, Callable[[], object]] = {
            "array": lambda: dev.array(np.ones(4, np.float32)),
            "empty": lambda: dev.empty(4, np.float32),
            "numpy": resident.numpy,
        }
        if saxpy is not None:
            calls["kernel call"] = lambda: saxpy(np.float32(2), np.ones(64, np.float32), np.zeros(64, np.float32))
            calls["run wait"] = lambda: saxpy.kernel.submit(
                a=np.float32(1), x=resident, y=np.zeros(64, np.float32), n=np.int32(64), global_size=64
            ).wait(timeout=5)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: every call refuses, at once; a hang ends at its own alarm (not inherited)
            os.close(read_end)
            signal.alarm(20)
            found = []
            for what, call in calls.items():
                try:
                    call()
                    found.append(f"{what}: did not refuse")
                except BackendError as exc:
                    if exc.kind is not ErrorKind.INVALID_ARGUMENT or FORK_REFUSAL not in exc.message:
                        found.append(f"{what}: {exc.kind.name} {exc}")
                except Exception as exc:
                    found.append(f"{what}: ESCAPED {type(exc).__name__}: {exc}")
            dev.close()  # touches nothing native
            os.write(write_end, "\n".join(found).encode())
            os._exit(0)
        os.close(write_end)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read_end, "rb") as answer:
            found = answer.read().decode()
        if os.waitstatus_to_exitcode(status) != 0:
            return f"the forked child ended with status {os.waitstatus_to_exitcode(status)} (-14: it hung)"
        if found:
            return f"in the forked child: {found}"
        return _one_call(dev, saxpy, 0, 1) or expect(resident.numpy(), np.ones(64, np.float32))  # parent unharmed

    return {"calls-in-a-forked-child": calls_in_a_forked_child}


# --------------------------------------------------------------------------- escapes


OBJECT_FIELD = np.dtype([("a", "O"), ("b", "<f4")])


def escapes(dev: ac.Device, folder: Path, provider: str) -> dict[str, Callable[[], str | None]]:
    cases: dict[str, Callable[[], str | None]] = {
        "empty-object": lambda: expect(dev.empty(4, object).numpy(), "refused"),
        "empty-object-field": lambda: expect(dev.empty(4, OBJECT_FIELD).shape, "refused"),
        "empty-negative-shape": lambda: expect(dev.empty((-2, -2), np.float32).shape, "refused"),
        "empty-wrapping-size": lambda: expect(dev.empty((2**62 + 1, 4), np.uint8).shape, "refused"),
        "array-masked": lambda: expect(dev.array(np.ma.array([1.0, 2.0], mask=[False, True])).numpy(), "refused"),
        "array-objects": lambda: expect(dev.array(np.array([1, None, "x"], dtype=object)).numpy(), "refused"),
        "array-ragged": lambda: expect(dev.array([[1, 2], [3]]).numpy(), "refused"),
    }
    if provider != "reference":
        saxpy = Saxpy(dev, folder, provider)
        x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
        for name, timeout in (("inf", math.inf), ("nan", math.nan), ("1e300", 1e300), ("10^400", 10**400)):
            cases[f"timeout-{name}"] = lambda timeout=timeout: expect(saxpy(1.0, x, y, timeout=timeout), "refused")
        sizes: dict[str, dict[str, object]] = {
            "global-size-text": {"global_size": "64"},
            "global-size-float": {"global_size": 64.0},
            "groups-float": {"groups": 2.5},
            "global-size-negative": {"global_size": -64},
        }
        for name, size in sizes.items():
            cases[name] = lambda size=size: expect(
                saxpy.kernel(a=1.0, x=x, y=y.copy(), n=np.int32(64), **size), "refused"
            )
        cases["kernel-object-array"] = lambda: expect(saxpy(1.0, np.array([None] * 64, dtype=object), y), "refused")
        cases["kernel-masked-array"] = lambda: expect(saxpy(1.0, np.ma.array(x, mask=[0] * 64), y), "refused")
    return cases


FAMILIES: dict[str, Callable[[ac.Device, Path, str], dict[str, Callable[[], str | None]]]] = {
    "limits": limits,
    "numbers": numbers,
    "special-files": special_files,
    "threads": threads,
    "fork": fork,
    "escapes": escapes,
}


def main() -> None:
    device_id, family, folder, wanted = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4:]
    try:
        dev = ac.open(device_id)
        cases = FAMILIES[family](dev, folder, device_id.split(":")[0])
    except BackendError as exc:
        print(f"SETUP REFUSED {exc.kind.name}: {exc}", flush=True)
        os._exit(0)
    for name in wanted:
        if name in cases:
            report(name, cases[name])
        else:
            print(f"CASE {name} 0 UNKNOWN (this device's {family} has: {', '.join(cases)})", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
