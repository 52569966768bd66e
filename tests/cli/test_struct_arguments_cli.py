"""``accel run`` / ``accel pack`` with a by-value OpenCL struct: ``--arg p.MEMBER=VALUE`` member-wise and
``--arg p=@FILE`` raw bytes (docs/cli.md), on every real OpenCL device against numpy; and the refusals."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .test_real_drivers import _devices

_spec = importlib.util.spec_from_file_location(
    "struct_affine", Path(__file__).parent.parent / "python" / "data" / "struct_affine.py"
)
assert _spec is not None and _spec.loader is not None
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
STRUCT_CL: bytes = _shared.SOURCE
PARAMS: np.dtype[Any] = _shared.PARAMS
MEMBER_FLAGS = "--arg p.scale=1.5 --arg p.n=200 --arg p.bias=0.25,-7,3,0.5 --arg p.step=6 --arg p.tail=-0.125"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "affine.cl").write_bytes(STRUCT_CL)
    np.save(tmp_path / "x.npy", np.random.default_rng(2).integers(-16, 16, 256).astype(np.float32))
    np.save(tmp_path / "y.npy", np.full(256, 99.0, np.float32))
    value = np.zeros((), PARAMS)
    value["scale"], value["n"], value["bias"], value["step"], value["tail"] = 1.5, 200, (0.25, -7, 3, 0.5), 6, -0.125
    (tmp_path / "params.bin").write_bytes(value.tobytes())
    (tmp_path / "short.bin").write_bytes(value.tobytes()[:40])
    return tmp_path


def _expected(x: np.ndarray) -> np.ndarray:
    f = np.float32
    out = np.full(256, 99.0, np.float32)
    out[:200] = x[:200] * f(1.5) + f(0.25) + f(0.5) * f(6) + f(-0.125)  # exact in f32
    return out


def test_run_with_a_struct_member_wise_and_from_a_file(accel, work: Path) -> None:
    x = np.load(work / "x.npy")
    for device in _devices(accel, "opencl"):
        for flags in (MEMBER_FLAGS, "--arg p=@params.bin"):
            line = f"run {device} affine.cl {flags} --bind x=x.npy --bind y=y.npy:rw --global 256 --out y=out.npy"
            proc = accel(line.split(), providers=["opencl"], cwd=work)
            assert proc.returncode == 0, proc.stderr
            np.testing.assert_array_equal(np.load(work / "out.npy"), _expected(x), err_msg=f"{device} {flags}")


def test_pack_records_the_struct_bytes(accel, work: Path) -> None:
    proc = accel(f"pack affine.cl -o a.kpkg {MEMBER_FLAGS} --global 256".split(), providers=["opencl"], cwd=work)
    assert proc.returncode == 0, proc.stderr
    proc = accel(["inspect", "a.kpkg", "--json"], providers=["opencl"], cwd=work)
    assert proc.returncode == 0, proc.stderr
    (argument,) = json.loads(proc.stdout)["package"]["arguments"]
    assert argument["name"] == "p" and argument["type"] == "bytes" and argument["bytes"] == 48
    assert bytes.fromhex(argument["value"]) == (work / "params.bin").read_bytes()


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (MEMBER_FLAGS + " --arg p.nope=1", "has no member 'nope'"),
        ("--arg p.scale=1.5 --arg p.n=200", "have no value"),
        ("--arg p=@short.bin", "takes exactly 48 bytes but was given bytes of 40 bytes"),
        ("--arg p=@missing.bin", "cannot read the file"),
        ("--arg p=@params.bin --arg p.n=3", "given both whole and member-wise"),
        ("--arg p=1.5", "was given str '1.5'"),
    ],
    ids=["unknown-member", "missing-member", "short-file", "missing-file", "both", "text"],
)
def test_pack_refuses_a_wrong_struct_value(accel, work: Path, flags: str, words: str) -> None:
    proc = accel(f"pack affine.cl -o a.kpkg {flags} --global 256".split(), providers=["opencl"], cwd=work)
    assert proc.returncode != 0
    assert words in proc.stderr
    assert not (work / "a.kpkg").exists()
