"""Threads on one device (docs/python.md, "Threads"): concurrent calls each get their own result, and a
close() while other threads call ends every call in a result or a BackendError, never a crash."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import accelcore as ac
from accelcore import BackendError
from accelcore.conformance.corpus import corpus_root
from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import provider_device_params

apply_defaults()

SAXPY_CL = corpus_root() / "src" / "opencl" / "saxpy_args.cl"
SAXPY_GLSL = corpus_root() / "src" / "glsl" / "saxpy_pc.comp"
"""The corpus SAXPY kernels: OpenCL ``(float a, x, y, int n)``, GLSL push constants ``{ float a; uint n; }``
(``n`` goes as a Python int, which either declaration takes)."""
THREADS = 8
CALLS = 40

ALL, ALL_IDS = provider_device_params()


def _source(entry: object) -> Path:
    return SAXPY_GLSL if entry.provider == "vulkan" else SAXPY_CL  # type: ignore[attr-defined]


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_concurrent_calls_each_get_their_own_result(entry) -> None:
    source = _source(entry)
    failures: list[str] = []
    with ac.open(entry.device_id) as dev:
        saxpy = dev.kernel(source)
        shared = dev.array(np.arange(256, dtype=np.float32))

        def worker(thread: int) -> None:
            rng = np.random.default_rng(thread)
            try:
                for call in range(CALLS):
                    n = 64 + 16 * ((thread + call) % 8)  # several sizes: pool keys and temporaries differ
                    a = np.float32(thread + 1)
                    x = rng.uniform(0, 1, n).astype(np.float32)
                    y = np.full(n, thread * 1000 + call, dtype=np.float32)
                    expected = a * x + y
                    out = saxpy(a=a, x=x, y=y, n=n, global_size=n)
                    if not np.allclose(out, expected, rtol=1e-6):
                        failures.append(f"thread {thread} call {call}: another result")
                    if call % 10 == 0:  # device arrays from every thread too
                        arr = dev.array(x)
                        back = arr.numpy()
                        arr.free()
                        if not np.array_equal(back, x):
                            failures.append(f"thread {thread} call {call}: array round trip")
                        if not np.array_equal(shared.numpy(), np.arange(256, dtype=np.float32)):
                            failures.append(f"thread {thread} call {call}: shared array")
            except BaseException as exc:
                failures.append(f"thread {thread}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures, failures[:5]


_CLOSE_CHILD = """
import sys, threading, numpy as np, accelcore as ac
from accelcore import BackendError
from accelcore.devices.environment import apply_defaults
apply_defaults()
device_id, source = sys.argv[1], sys.argv[2]
dev = ac.open(device_id)
saxpy = dev.kernel(source)
outcomes = {"result": 0, "refused": 0}
other = []
started = threading.Barrier(7)
def worker(thread):
    started.wait()
    for call in range(200):
        n = 128
        x = np.full(n, thread, np.float32)
        y = np.full(n, call, np.float32)
        try:
            out = saxpy(a=np.float32(2), x=x, y=y, n=n, global_size=n)
            assert np.array_equal(out, 2 * x + call), "wrong result"
            outcomes["result"] += 1
        except BackendError:
            outcomes["refused"] += 1
        except BaseException as exc:
            other.append(f"{type(exc).__name__}: {exc}")
threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
for t in threads:
    t.start()
started.wait()
import time; time.sleep(0.05)
dev.close()
for t in threads:
    t.join()
print("OUTCOMES", outcomes["result"], outcomes["refused"], len(other))
for line in other[:5]:
    print("OTHER", line)
sys.exit(1 if other else 0)
"""


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_close_while_threads_call_refuses_cleanly(entry) -> None:
    source = _source(entry)
    done = subprocess.run(
        [sys.executable, "-c", _CLOSE_CHILD, entry.device_id, str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    line = next(line for line in done.stdout.splitlines() if line.startswith("OUTCOMES"))
    results, refused, other = (int(word) for word in line.split()[1:])
    assert other == 0
    assert results + refused == 6 * 200
    assert refused > 0  # the close came while they called


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_a_call_after_close_is_a_backend_error(entry) -> None:
    dev = ac.open(entry.device_id)
    saxpy = dev.kernel(_source(entry))
    arr = dev.array(np.ones(4, np.float32))
    dev.close()
    x = np.ones(64, np.float32)
    with pytest.raises(BackendError, match="closed"):
        saxpy(a=np.float32(1), x=x, y=x.copy(), n=64, global_size=64)
    with pytest.raises(BackendError, match="closed"):
        arr.numpy()
    with pytest.raises(BackendError, match="closed"):
        dev.empty(4, np.float32)
