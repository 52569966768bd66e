"""A kernel remembers the package of a call by its exact scalar values and work size: a repeated call
packs nothing and loads nothing, a call that differs in any bit (-0.0 against 0.0, np.float32 against a
Python float, another size) packs afresh and still computes the right thing."""

from __future__ import annotations

import numpy as np
import pytest

import accelcore as ac
from accelcore.api import device as device_module
from accelcore.api import kernel as kernel_module
from accelcore.api import run as run_module
from accelcore.conformance.corpus import corpus_root
from accelcore.devices.environment import apply_defaults

apply_defaults()

SAXPY_CL = (corpus_root() / "src" / "opencl" / "saxpy_args.cl").read_bytes()
"""The corpus SAXPY (docs/cli.md runs it), given as source bytes."""


def _first_opencl() -> ac.Device:
    entries = [e for e in ac.devices() if e.provider == "opencl"]
    if not entries:
        pytest.skip("no OpenCL device on this machine")
    pocl = [e for e in entries if "pthread" in e.name]
    return ac.open((pocl or entries)[0].device_id)


def test_repeated_calls_pack_once(monkeypatch: pytest.MonkeyPatch) -> None:
    packed: list[dict[str, object]] = []
    real = kernel_module.pack_module

    def counting(*args: object, **kwargs: object) -> object:
        packed.append(dict(kwargs.get("arguments") or {}))
        return real(*args, **kwargs)

    monkeypatch.setattr(kernel_module, "pack_module", counting)
    x = np.arange(64, dtype=np.float32)
    with _first_opencl() as dev:
        kernel = dev.kernel(SAXPY_CL)
        for _ in range(3):
            y = np.ones(64, dtype=np.float32)
            kernel(a=np.float32(2.0), x=x, y=y, n=np.int32(64), global_size=64)
            assert np.array_equal(y, 2 * x + 1)
        assert len(packed) == 1
        programs = len(kernel._programs)
        # Another bit pattern, another type, another size: each packs afresh (and is then remembered).
        for a, n, size in ((np.float32(-0.0), 64, 64), (-0.0, 64, 64), (np.float32(0.0), 64, 64), (2.0, 32, 64)):
            for _ in range(2):
                y = np.ones(64, dtype=np.float32)
                kernel(a=a, x=x, y=y, n=n, global_size=size)
                want = np.ones(64, dtype=np.float32)
                want[:n] += np.float32(a) * x[:n]
                assert np.array_equal(y, want), (a, n)
        assert len(packed) == 5
        assert len(kernel._programs) > programs


def test_remembered_routes_and_bindings_keep_every_check() -> None:
    """The routing of an all-keyword call is remembered by its keyword names and the Bindings of the last
    two arrays per slot are reused: calls that alternate host and device arrays and keyword orders stay
    right, a name that never routed is still refused after good calls, a missing buffer is still named,
    and a dtype or writeability change of a remembered array is still refused."""
    x = np.arange(64, dtype=np.float32)
    with _first_opencl() as dev:
        kernel = dev.kernel(SAXPY_CL)
        dx = dev.array(x)
        dy = dev.array(np.ones(64, dtype=np.float32))
        host_y = np.ones(64, dtype=np.float32)
        want_device, want_host = np.ones(64, np.float32), np.ones(64, np.float32)
        for step in range(6):
            if step % 2:
                kernel(n=np.int32(64), y=dy, x=dx, a=np.float32(2.0), global_size=64)  # another keyword order
                want_device = 2 * x + want_device
                assert np.array_equal(dy.numpy(), want_device), step
            else:
                kernel(a=np.float32(2.0), x=x, y=host_y, n=np.int32(64), global_size=64)
                want_host = 2 * x + want_host
                assert np.array_equal(host_y, want_host), step
        assert len(kernel._bindings[max(kernel._bindings)]) == kernel_module._BINDINGS_PER_SLOT
        with pytest.raises(ac.BackendError, match="has no argument 'b'"):
            kernel(a=np.float32(2.0), x=x, y=host_y, b=np.int32(64), global_size=64)
        with pytest.raises(ac.BackendError, match="buffer argument"):
            kernel(a=np.float32(2.0), x=x, n=np.int32(64), global_size=64)
        with pytest.raises(ac.BackendError, match="argument y"):
            kernel(a=np.float32(2.0), x=x, y=host_y.view(np.int32), n=np.int32(64), global_size=64)
        host_y.flags.writeable = False
        with pytest.raises(ac.BackendError, match="read-only"):
            kernel(a=np.float32(2.0), x=x, y=host_y, n=np.int32(64), global_size=64)


def test_a_remembered_binding_uploads_what_the_array_holds_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host array's Binding (and the byte view it writes from) is made once and reused, but every call
    uploads the array's current contents: changes made in place between calls are what the kernel sees.
    The per-size facts of temporaries stay bounded; a run keeps phases and timings only when asked."""
    monkeypatch.setattr(device_module, "_SPECS_KEPT", 4)  # the per-size facts of temporaries
    monkeypatch.setattr(run_module, "_SPECS_KEPT", 4)  # a run's binding specs
    x = np.arange(64, dtype=np.float32)
    with _first_opencl() as dev:
        kernel = dev.kernel(SAXPY_CL)
        sources = []
        for step in range(4):
            x[:] = np.arange(64, dtype=np.float32) * (step + 1)  # the same object, new contents
            y = np.ones(64, dtype=np.float32)
            run = kernel.submit(a=np.float32(2.0), x=x, y=y, n=np.int32(64), global_size=64)
            assert run.progress is None
            run.wait()
            assert np.array_equal(y, 2 * x + 1), step
            sources.append(kernel._bindings[min(kernel._bindings)][0].source)
        assert sources[0] is not None and all(source is sources[0] for source in sources)
        for size in range(1, 12):  # more sizes than _SPECS_KEPT: the remembered facts are cleared, not grown
            y = np.ones(size, dtype=np.float32)
            kernel(a=np.float32(2.0), x=x[:size], y=y, n=np.int32(size), global_size=size)
            assert np.array_equal(y, 2 * x[:size] + 1), size
            assert len(dev._tails) <= 4
        progress = ac.api.Progress()
        y = np.ones(64, dtype=np.float32)
        pkg, data, _ = kernel._packed({"a": np.float32(2.0), "n": np.int32(64)}, 64, None)
        plan = [
            ac.api.Binding("x", 1, ac.AccessMode.READ, x),
            ac.api.Binding("y", 2, ac.AccessMode.READ_WRITE, y),
        ]
        ac.api.Run(dev, kernel._program(pkg, data), plan, None, progress=progress).wait()
        assert np.array_equal(y, 2 * x + 1)
        assert progress.phase == "done"
        assert set(progress.timings) == {"allocate_s", "transfer_in_s", "execute_s", "transfer_out_s"}


def test_a_repeated_call_on_device_arrays_reuses_its_binding_work_and_stays_right() -> None:
    """The very same device arrays and value objects again: the run reuses the previous run's binding specs
    (no routing, no checks to redo: nothing in those objects can change) and computes the right thing every
    time; other objects, another size or a host array take the full path; a freed array is still refused."""
    x = np.arange(64, dtype=np.float32)
    a, n = np.float32(2.0), np.int32(64)
    with _first_opencl() as dev:
        kernel = dev.kernel(SAXPY_CL)
        dx, dy = dev.array(x), dev.array(np.ones(64, dtype=np.float32))
        want = np.ones(64, dtype=np.float32)
        prepared, runs = [], []
        for _ in range(3):
            run = kernel.submit(a=a, x=dx, y=dy, n=n, global_size=64)
            assert run.wait() is dy
            want = 2 * x + want
            assert np.array_equal(dy.numpy(), want)
            prepared.append(run.prepared)
            runs.append(run)
        assert prepared[0] is not None and prepared[1] is prepared[0] and prepared[2] is prepared[0]
        for made in runs:  # one run's outputs are its own: the remembered ones never see a caller's edit
            made.outputs["y"] = "changed by the caller"
        again = kernel.submit(a=a, x=dx, y=dy, n=n, global_size=64)
        assert again.outputs == {"y": dy} and again.wait() is dy
        want = 2 * x + want
        other = dev.array(np.zeros(64, dtype=np.float32))
        run = kernel.submit(a=a, x=dx, y=other, n=n, global_size=64)  # another array: bound afresh
        run.wait()
        assert run.prepared is not prepared[0] and np.array_equal(other.numpy(), 2 * x)
        host = np.ones(64, dtype=np.float32)
        run = kernel.submit(a=a, x=dx, y=host, n=n, global_size=64)  # a host array: never remembered
        run.wait()
        assert run.prepared is None and kernel._last_run is None and np.array_equal(host, 2 * x + 1)
        kernel(a=a, x=dx, y=other, n=n, global_size=64)
        other.free()
        with pytest.raises(ac.BackendError):  # the remembered specs name a freed buffer: refused, not run
            kernel(a=a, x=dx, y=other, n=n, global_size=64)
        kernel(a=a, x=dx, y=dy, n=n, global_size=64)  # and the kernel still works on live arrays
        assert np.array_equal(dy.numpy(), 2 * x + want)
