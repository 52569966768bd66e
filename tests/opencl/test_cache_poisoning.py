"""A poisoned on-disk binary cache gives correct results or a BackendError, never a crash.

Each case fills a cache in a temporary ``ACCELCORE_CACHE_DIR`` (in a child), poisons the entry
the way an attacker with write access to that folder could, and loads the same source again in
a fresh child (``isolated_load.py``). Before the cache checked its entries, a cached binary skipped the header check and
the probe: a body with a recomputed hash segfaulted PoCL, a truncated one aborted it, and another
kernel's binary loaded silently and computed the wrong thing.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .isolated_load import load_isolated

KERNEL = """
__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i < count) { dst[i] = src[i] * MUL + 1u; }
}
"""
OPTIONS = f"-DMUL=2u -DPOISON={time.monotonic_ns()}"
OTHER_OPTIONS = f"-DMUL=3u -DPOISON={time.monotonic_ns()}"  # another kernel, the same signature
EXPECTED = [v * 3 * 2 + 1 for v in range(64)]  # isolated_load runs it over src = 3 * arange(64)


def _layout(raw: bytes) -> tuple[int, int]:
    """(offset of the binary's SHA-256, offset of the binary) in a cache file, by its magic."""
    if raw.startswith(b"ACLBIN2\0"):  # magic, key SHA-256, binary SHA-256, binary
        return 40, 72
    assert raw.startswith(b"ACLBIN1\0"), raw[:8]  # the older format: magic, binary SHA-256, binary
    return 8, 40


def _rewrite(path: Path, binary: bytes) -> None:
    """``path`` holding ``binary`` instead, with its hash recomputed (what the cache checks)."""
    raw = path.read_bytes()
    hashed, body = _layout(raw)
    path.write_bytes(raw[:hashed] + hashlib.sha256(binary).digest() + raw[hashed + 32 : body] + binary)


def _binary(path: Path) -> bytes:
    raw = path.read_bytes()
    return raw[_layout(raw)[1] :]


def _only_entry(folder: Path) -> Path:
    files = list((folder / "opencl").glob("*.bin"))
    assert len(files) == 1, files
    return files[0]


@pytest.fixture(scope="module")
def caches(entry: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two filled caches: this kernel's, and another kernel's with the same signature."""
    made = []
    for options in (OPTIONS, OTHER_OPTIONS):
        folder = tmp_path_factory.mktemp("cache")
        answer = load_isolated(
            entry.index, env={"ACCELCORE_CACHE_DIR": str(folder)}, source=KERNEL, options=options, run=True
        )["loads"][0]
        assert answer["kind"] is None, answer
        made.append(folder)
    return made[0], made[1]


def _garbage(entry_file: Path, other: Path) -> None:
    binary = bytearray(_binary(entry_file))
    for offset in range(64, len(binary), 7):  # the header stays intact, the body is garbage
        binary[offset] ^= 0xA5
    _rewrite(entry_file, bytes(binary))


def _truncated(entry_file: Path, other: Path) -> None:
    binary = _binary(entry_file)
    _rewrite(entry_file, binary[: max(100, len(binary) // 3)])


def _swapped(entry_file: Path, other: Path) -> None:
    shutil.copyfile(_only_entry(other), entry_file)  # another entry's file under this entry's name


def _forged(entry_file: Path, other: Path) -> None:
    _rewrite(entry_file, _binary(_only_entry(other)))  # another kernel's binary, this entry's key


POISONS: dict[str, Callable[[Path, Path], None]] = {
    "garbage": _garbage,
    "truncated": _truncated,
    "swapped": _swapped,
    "forged": _forged,
}


@pytest.mark.parametrize("verdicts", ["with-verdicts", "without-verdicts"])
@pytest.mark.parametrize("poison", list(POISONS))
def test_a_poisoned_cache_entry_is_dropped_and_rebuilt(
    entry: Any, caches: tuple[Path, Path], tmp_path: Path, poison: str, verdicts: str
) -> None:
    folder = tmp_path / "cache"
    shutil.copytree(caches[0], folder)
    if verdicts == "without-verdicts":  # e.g. an older cache: the probe must do
        shutil.rmtree(folder / "opencl" / "verdicts", ignore_errors=True)
    entry_file = _only_entry(folder)
    POISONS[poison](entry_file, caches[1])
    poisoned = entry_file.read_bytes()
    answer = load_isolated(
        entry.index, env={"ACCELCORE_CACHE_DIR": str(folder)}, source=KERNEL, options=OPTIONS, run=True
    )["loads"][0]
    assert answer["kind"] is None, answer
    assert answer["output"] == EXPECTED, "the poisoned entry computed something else"
    assert answer["from_cache"] is False  # dropped and built again
    assert entry_file.read_bytes() != poisoned  # and stored again
