"""The binary cache: a source build's device binary, keyed by source and device target.

Key: SHA-256 over (source, build options, entry point) and the device's
``TargetIdentity`` words. Two levels:

* in-process: an LRU of :data:`MEMORY_ENTRIES` binaries;
* on disk (best effort): ``$ACCELCORE_CACHE_DIR/opencl`` if that variable is
  set (empty or ``off`` disables it), else ``$XDG_CACHE_HOME/accelcore/opencl``
  or ``~/.cache/accelcore/opencl``. A file holds a magic, the binary's SHA-256
  and the binary; it is written atomically (temporary file + rename) and a file
  whose hash does not match is ignored and removed. Disk errors never fail a load.

A binary read back from either level is marked trusted (:mod:`.binaries`):
the process, or an earlier one on this machine, produced it from source. The
cache directory therefore has the same trust as the Python environment.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from . import binaries

__all__ = ["MEMORY_ENTRIES", "CacheKey", "clear_memory", "disk_dir", "get", "memory_size", "put"]

MEMORY_ENTRIES = 128
_MAGIC = b"ACLBIN1\0"

CacheKey = tuple[bytes, tuple[int, ...]]

_memory: OrderedDict[CacheKey, bytes] = OrderedDict()
_lock = threading.Lock()


def clear_memory() -> None:
    with _lock:
        _memory.clear()


def memory_size() -> int:
    with _lock:
        return len(_memory)


def disk_dir() -> Path | None:
    """The on-disk cache directory, or None when disabled."""
    override = os.environ.get("ACCELCORE_CACHE_DIR")
    if override is not None:
        if override.strip() in ("", "off", "0"):
            return None
        return Path(override) / "opencl"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "accelcore" / "opencl"


def _file_for(key: CacheKey) -> Path | None:
    directory = disk_dir()
    if directory is None:
        return None
    target = hashlib.sha256(b"".join(word.to_bytes(4, "little") for word in key[1])).hexdigest()[:16]
    return directory / f"{key[0].hex()}-{target}.bin"


def get(key: CacheKey) -> bytes | None:
    """The cached binary for ``key`` (memory, then disk), marked trusted; None on a miss."""
    with _lock:
        binary = _memory.get(key)
        if binary is not None:
            _memory.move_to_end(key)
            return binary
    path = _file_for(key)
    if path is None:
        return None
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    header = len(_MAGIC) + 32
    if len(raw) <= header or raw[: len(_MAGIC)] != _MAGIC or hashlib.sha256(raw[header:]).digest() != raw[8:header]:
        try:
            path.unlink()
        except OSError:
            pass
        return None
    binary = raw[header:]
    binaries.trust(binary)
    _remember(key, binary)
    return binary


def put(key: CacheKey, binary: bytes) -> None:
    """Store ``binary`` under ``key`` in memory and (best effort) on disk."""
    _remember(key, binary)
    path = _file_for(key)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False) as handle:
            handle.write(_MAGIC + hashlib.sha256(binary).digest() + binary)
            temporary = handle.name
        os.replace(temporary, path)
    except OSError:
        pass


def _remember(key: CacheKey, binary: bytes) -> None:
    with _lock:
        _memory[key] = binary
        _memory.move_to_end(key)
        while len(_memory) > MEMORY_ENTRIES:
            _memory.popitem(last=False)
