"""Hostile files: /dev/zero, FIFOs, sockets, huge sparse files and symlinks to them where the Python layer
and the OpenCL provider read a file (``Device.kernel``, ``ac.compare``, the binary cache, build verdicts).

Each must end at once in ``BackendError(INVALID_ARGUMENT)`` naming the path and what it is (or, for a cache
entry, in a miss that rebuilds), never read until memory runs out or block forever; writing a cache entry
into a full or odd folder leaves no ``.tmp-*`` file. Every test has a timeout: a regression fails, it does
not hang. (The CLI's side of the same issue: tests/cli/test_hostile_cli.py.)
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import accelcore as ac
from accelcore import BackendError, ErrorKind
from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import device_params

apply_defaults()

SOURCE = "__kernel void twice(__global float *x) { size_t i = get_global_id(0); x[i] = 2.0f * x[i]; }\n"


def _opencl() -> list[Any]:
    return [e for e in ac.devices() if e.provider == "opencl"]


OPENCL, OPENCL_IDS = device_params(_opencl, "OpenCL")


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[dict[str, tuple[Path, str]]]:
    """Each hostile file and the words its refusal must hold."""
    fifo = tmp_path / "fifo.cl"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.spv"
    with open(sparse, "wb") as handle:
        handle.truncate(8 << 30)
    zero_link = tmp_path / "zero.cl"
    zero_link.symlink_to("/dev/zero")
    fifo_link = tmp_path / "fifo-link.cl"
    fifo_link.symlink_to(fifo)
    listening = socket.socket(socket.AF_UNIX)
    # A socket's path must be short; tmp_path can be long.
    sock = Path(f"/tmp/accel-hostile-{os.getpid()}.sock")
    sock.unlink(missing_ok=True)
    listening.bind(str(sock))
    try:
        yield {
            "dev-zero": (Path("/dev/zero"), "is a character device"),
            "fifo": (fifo, "is a FIFO"),
            "sparse-8g": (sparse, f"holds {8 << 30} bytes, more than"),
            "symlink-to-dev-zero": (zero_link, "a character device (through a symlink to /dev/zero)"),
            "symlink-to-fifo": (fifo_link, "a FIFO (named pipe) (through a symlink to"),
            "socket": (sock, "is a socket"),
            "directory": (tmp_path, "is a directory"),
        }
    finally:
        listening.close()
        sock.unlink(missing_ok=True)


NAMES = ["dev-zero", "fifo", "sparse-8g", "symlink-to-dev-zero", "symlink-to-fifo", "socket", "directory"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", NAMES)
def test_device_kernel_refuses_a_file_that_is_not_a_regular_one_at_once(
    hostile: dict[str, tuple[Path, str]], name: str
) -> None:
    path, words = hostile[name]
    with ac.open("reference:0") as dev:
        started = time.monotonic()
        with pytest.raises(BackendError) as info:
            dev.kernel(path)
        assert time.monotonic() - started < 1.0
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT
    assert f"kernel file {path} " in info.value.message and words in info.value.message, info.value.message


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["dev-zero", "fifo", "symlink-to-dev-zero"])
def test_compare_refuses_it_before_choosing_devices(hostile: dict[str, tuple[Path, str]], name: str) -> None:
    path, words = hostile[name]
    with pytest.raises(BackendError) as info:
        ac.compare(path)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT and words in info.value.message


@pytest.mark.timeout(30)
def test_a_missing_kernel_file_is_still_missing(tmp_path: Path) -> None:
    with ac.open("reference:0") as dev, pytest.raises(ac.MissingFileError):
        dev.kernel(tmp_path / "nothing.cl")


def test_read_regular_file_is_one_implementation() -> None:
    from accel_opencl import source_check

    from accelcore.kernels import opencl_includes
    from accelcore.support import files

    assert opencl_includes.read_regular_file is files.read_regular_file
    assert source_check.read_regular_file is files.read_regular_file


@pytest.mark.timeout(30)
def test_read_file_refuses_a_file_that_grows_past_its_cap(tmp_path: Path) -> None:
    from accelcore.support.files import read_file, read_regular_file

    path = tmp_path / "small"
    path.write_bytes(b"x" * 100)
    assert read_file(path, "test file", 100) == b"x" * 100
    with pytest.raises(BackendError, match=r"test file .*small holds 100 bytes, more than the 99 it may hold"):
        read_file(path, "test file", 99)
    assert read_regular_file(path, 10) == b"x" * 10
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="FIFO"):
        read_regular_file(fifo, 10)


# --------------------------------------------------------------------------- the OpenCL binary cache


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ACCELCORE_CACHE_DIR", str(folder))
    return folder


def _key() -> Any:
    return (b"source and options", (1, 2, 3))


def _replace_by(path: Path, what: str) -> None:
    path.unlink()
    if what == "fifo":
        os.mkfifo(path)
    elif what == "symlink-to-dev-zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as handle:
            handle.truncate(8 << 30)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("what", ["fifo", "symlink-to-dev-zero", "sparse-8g"])
def test_a_cache_entry_that_is_no_regular_file_is_a_miss_and_removed(cache_dir: Path, what: str) -> None:
    from accel_opencl import binary_cache

    key = _key()
    binary_cache.put(key, b"a device binary")
    binary_cache.clear_memory()
    (entry,) = (cache_dir / "opencl").glob("*.bin")
    _replace_by(entry, what)
    started = time.monotonic()
    assert binary_cache.get(key) is None
    assert time.monotonic() - started < 1.0
    assert not os.path.lexists(entry)  # removed: the next put writes a fresh entry
    binary_cache.put(key, b"a device binary")
    binary_cache.clear_memory()
    assert binary_cache.get(key) == b"a device binary"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("what", ["fifo", "symlink-to-dev-zero", "sparse-8g"])
def test_a_verdict_that_is_no_regular_file_is_forgotten(cache_dir: Path, what: str) -> None:
    from accel_opencl import isolation

    name = b"\x01" * 32
    path = Path(str(isolation._disk_file(name)))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"key": name.hex(), "ok": True, "binary_sha256": None}))
    assert isolation._read_disk(name) is not None
    _replace_by(path, what)
    started = time.monotonic()
    assert isolation._read_disk(name) is None
    assert time.monotonic() - started < 1.0
    assert not os.path.lexists(path)


@pytest.mark.timeout(30)
def test_a_deeply_nested_verdict_is_forgotten(cache_dir: Path) -> None:
    from accel_opencl import isolation

    name = b"\x02" * 32
    path = Path(str(isolation._disk_file(name)))
    path.parent.mkdir(parents=True)
    path.write_text("[" * 100000 + "]" * 100000)
    assert isolation._read_disk(name) is None and not path.exists()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".tmp-*"))


@pytest.mark.timeout(30)
def test_writing_into_an_odd_cache_folder_leaves_no_temporary_file(cache_dir: Path) -> None:
    """A folder where the entry should be: the rename fails, on every load; nothing may pile up."""
    from accel_opencl import binary_cache, isolation

    key = _key()
    entry = cache_dir / "opencl" / f"{binary_cache.key_digest(key).hex()}.bin"
    (entry / "in-the-way").mkdir(parents=True)
    verdict = isolation.with_binary(isolation.Verdict(True, lasting=True, key=isolation._name(key)), b"binary")
    (Path(str(isolation._disk_file(isolation._name(key)))) / "in-the-way").mkdir(parents=True)
    for _ in range(3):
        binary_cache.put(key, b"a device binary")
        isolation.remember(key, verdict)
    assert _leftovers(cache_dir) == []


@pytest.mark.timeout(30)
def test_writing_into_a_full_cache_folder_leaves_no_temporary_file(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accel_opencl import binary_cache, isolation

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    key = _key()
    verdict = isolation.with_binary(isolation.Verdict(True, lasting=True, key=isolation._name(key)), b"binary")
    monkeypatch.setattr(os, "replace", full)
    binary_cache.put(key, b"a device binary")
    isolation.remember(key, verdict)
    monkeypatch.undo()
    assert (cache_dir / "opencl").is_dir()
    assert _leftovers(cache_dir) == []


_LOAD = """
import sys, numpy as np, accelcore as ac
from accelcore.devices.environment import apply_defaults
apply_defaults()
with ac.open(sys.argv[1]) as dev:
    x = np.arange(8, dtype=np.float32)
    dev.kernel(sys.argv[2])(x, global_size=8)
    assert x.tolist() == [2.0 * i for i in range(8)], x
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("what", ["fifo", "symlink-to-dev-zero"])
@pytest.mark.parametrize("entry", OPENCL, ids=OPENCL_IDS)
def test_a_kernel_loads_when_its_cache_entry_and_verdict_were_replaced(
    entry: Any, what: str, cache_dir: Path, tmp_path: Path
) -> None:
    """The defect: a FIFO in place of a cache entry or verdict made every load of that kernel hang."""
    source = tmp_path / "twice.cl"
    source.write_text(SOURCE)
    env = {**os.environ, "ACCELCORE_CACHE_DIR": str(cache_dir)}
    command = [sys.executable, "-c", _LOAD, entry.device_id, str(source)]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert first.returncode == 0, first.stderr
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert {p.suffix for p in files} == {".bin", ".json"}, files
    for path in files:
        _replace_by(path, what)
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 0, again.stderr
