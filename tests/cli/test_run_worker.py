"""``accel run`` runs its kernel in a worker process (docs/cli.md).

A kernel the device cannot stop ends at ``--timeout`` (the worker's engine ends it, or the parent
kills the worker ``GRACE_S`` later), a driver crash ends only the worker, both exit 4 naming the
deadline or the signal, and ``--out`` files are written only on success. ``--in-process`` keeps the
old single-process run; normal runs give the same outputs and ``--json`` document either way.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from accel_cli.runworker import GRACE_S
from accel_cli.schemas import validate

from accelcore.conformance.corpus import SPIN_MAX_ITERATIONS, load_package, spin_case
from accelcore.kernels.package import ModuleKind
from accelcore.testing.programs import encode_program


@pytest.fixture
def add_files(tmp_path: Path) -> Path:
    (tmp_path / "add.acrp").write_bytes(encode_program("add_u32"))
    rng = np.random.default_rng(3)
    np.save(tmp_path / "a.npy", rng.integers(0, 2**31, 100, dtype=np.uint32))
    np.save(tmp_path / "b.npy", rng.integers(0, 2**31, 100, dtype=np.uint32))
    np.save(tmp_path / "o.npy", np.zeros(100, dtype=np.uint32))
    return tmp_path


def _add_args(files: Path, out: Path) -> list[str]:
    return [
        str(files / "add.acrp"),
        "--bind",
        f"0={files / 'a.npy'}",
        "--bind",
        f"1={files / 'b.npy'}",
        "--bind",
        f"2={files / 'o.npy'}",
        "--out",
        f"2={out}",
    ]


def test_worker_and_in_process_give_the_same_outputs_and_document(accel, add_files: Path) -> None:
    documents = {}
    for mode in ("worker", "in-process"):
        out = add_files / f"{mode}.npy"
        extra = ["--in-process"] if mode == "in-process" else []
        proc = accel(["run", "reference:0", *_add_args(add_files, out), "--json", *extra], providers=["reference"])
        assert proc.returncode == 0, proc.stderr
        document = json.loads(proc.stdout)
        validate("run", document)
        expected = np.load(add_files / "a.npy") + np.load(add_files / "b.npy")
        assert np.array_equal(np.load(out), expected)
        documents[mode] = {k: v for k, v in document.items() if k != "timings_s"}
        documents[mode]["slots"] = [{**s, "output": Path(s["output"] or "").name} for s in document["slots"]]
        documents[mode]["slots"][2]["output"] = "out"
    assert documents["worker"] == documents["in-process"]


def test_a_stuck_driver_call_is_killed_at_the_deadline_with_its_process_group(
    accel, add_files: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    out = tmp_path / "never.npy"
    started = time.perf_counter()
    proc = accel(
        ["run", "hanging:0", *_add_args(add_files, out), "--timeout", "1s", "--json"],
        providers=["hanging"],
        env={"ACCEL_TEST_HANG_PIDFILE": str(pidfile)},
        timeout=60,
    )
    elapsed = time.perf_counter() - started
    assert proc.returncode == 4, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["argument"] == "--timeout" and error["backend_error"] == "DEADLINE_EXPIRED"
    assert "ran past its deadline" in error["message"] and "SIGKILL" in error["message"]
    assert f"1 s (--timeout) + {GRACE_S:g} s grace" in error["message"]
    assert elapsed < 1 + GRACE_S + 15, elapsed  # not the 10-minute --wait
    assert not out.exists(), "--out is written only on success"
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the worker's process group must be killed with it"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not yet reaped by init) is dead for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_setup_failures_in_the_worker_still_read_as_before(accel, add_files: Path) -> None:
    proc = accel(["run", "badmeta:0", *_add_args(add_files, add_files / "x.npy")], providers=["badmeta"])
    assert proc.returncode == 4, proc.stderr
    assert "invalid device metadata" in proc.stderr and "ReservedCapabilities" in proc.stderr


# ----------------------------------------------------------------------------- PoCL


def _pocl(accel) -> str:
    proc = accel(["devices", "--json"], providers=["opencl"])
    assert proc.returncode == 0, proc.stderr
    for device in json.loads(proc.stdout)["devices"]:
        if "Portable Computing Language" in str(device.get("native", {}).get("platform", "")):
            return str(device["id"])
    pytest.skip("no PoCL device here")


@pytest.mark.opencl
def test_a_runaway_spin_kernel_on_pocl_exits_4_at_its_deadline(accel, tmp_path: Path) -> None:
    device = _pocl(accel)
    (tmp_path / "spin.kpkg").write_bytes(load_package("spin", ModuleKind.OPENCL_SOURCE))
    case = spin_case(1 << 16, SPIN_MAX_ITERATIONS)  # 2**40 LCG steps: minutes on a CPU
    for slot, array in case.initial.items():
        np.save(tmp_path / f"s{slot}.npy", array)
    out = tmp_path / "out.npy"
    binds = ["--bind", f"0={tmp_path / 's0.npy'}", "--bind", f"1={tmp_path / 's1.npy'}", "--out", f"1={out}"]
    started = time.perf_counter()
    proc = accel(["run", device, tmp_path / "spin.kpkg", *binds, "--timeout", "1s", "--json"], providers=["opencl"])
    elapsed = time.perf_counter() - started
    assert proc.returncode == 4, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["backend_error"] == "DEADLINE_EXPIRED" and error["argument"] == "--timeout", error
    assert "ran past its deadline of 1 s and the device could not stop it" in error["message"]
    assert elapsed < 20, f"{elapsed:.1f} s: the run must end at --timeout, not at the end of the kernel"
    assert not out.exists()


@pytest.mark.opencl
def test_a_kernel_that_crashes_pocl_ends_only_the_worker(accel, tmp_path: Path) -> None:
    device = _pocl(accel)
    source = tmp_path / "oob.cl"
    # A write 4 TiB past the buffer: PoCL faults (SIGSEGV) on the first work-item.
    source.write_text(
        "__kernel void oob(__global uint *out) {\n"
        "    size_t i = get_global_id(0);\n"
        "    out[i + ((size_t)1 << 40)] = 1u;\n"
        "}\n"
    )
    np.save(tmp_path / "o.npy", np.zeros(1024, dtype=np.uint32))
    out = tmp_path / "out.npy"
    args = ["run", device, source, "--bind", f"0={tmp_path / 'o.npy'}", "--out", f"0={out}", "--global", "1024"]
    proc = accel([*args, "--json"], providers=["opencl"])
    assert proc.returncode == 4, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert "killed by SIGSEGV during execute" in error["message"], error
    assert not out.exists()
