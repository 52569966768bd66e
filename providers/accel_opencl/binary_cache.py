"""The binary cache: a source build's device binary, keyed by source, options, entry point and device.

Key: SHA-256 over (source, build options, entry point, device UUID) and the device's
``TargetIdentity`` words (``ProgramLoader._source_key``). Two levels:

* in-process: an LRU of :data:`MEMORY_ENTRIES` binaries;
* on disk (best effort): ``$ACCELCORE_CACHE_DIR/opencl`` if that variable is
  set (empty or ``off`` disables it), else ``$XDG_CACHE_HOME/accelcore/opencl``
  or ``~/.cache/accelcore/opencl``. A file is named by the key's SHA-256 and
  holds a magic, that key hash (so a file copied over another entry's name is
  detected), the binary's SHA-256 and the binary; it is written atomically
  (temporary file + rename; the temporary file is removed when either fails).
  Only a regular file of at most a kernel file's size is read
  (:mod:`accelcore.support.files`): a FIFO, a device or a symlink to one in its place
  is a miss, never a hang. A file whose magic, key or hash does not match, or
  that is not such a file, is ignored and removed. Disk errors never fail a load.

Nothing read back here is trusted: ``ProgramLoader`` gives a cached binary the
checks a given binary gets (header check, then trust by the binary's own hash:
the digest the isolated build recorded for this key, or a probe in a child) and
discards an entry that fails any of them (:func:`discard`), then builds again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

from accelcore.contract.errors import BackendError
from accelcore.support.files import KERNEL_FILE_BYTES, read_file, replace_file
from accelcore.support.recent import keep_recent

__all__ = [
    "MEMORY_ENTRIES",
    "CacheKey",
    "clear_memory",
    "discard",
    "disk_dir",
    "get",
    "key_digest",
    "memory_size",
    "put",
]

MEMORY_ENTRIES = 128
_MAGIC = b"ACLBIN2\0"
_HEADER = len(_MAGIC) + 32 + 32

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


def key_digest(key: CacheKey) -> bytes:
    """SHA-256 of the whole key: the file name and what the file records."""
    return hashlib.sha256(key[0] + b"".join(word.to_bytes(4, "little") for word in key[1])).digest()


def _file_for(key: CacheKey) -> Path | None:
    directory = disk_dir()
    if directory is None:
        return None
    return directory / f"{key_digest(key).hex()}.bin"


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def get(key: CacheKey) -> bytes | None:
    """The cached binary for ``key`` (memory, then disk); None on a miss. Not trusted: check it."""
    with _lock:
        binary = _memory.get(key)
        if binary is not None:
            _memory.move_to_end(key)
            return binary
    path = _file_for(key)
    if path is None:
        return None
    try:  # a regular file only: a FIFO put there never blocks the load, /dev/zero is never read
        raw = read_file(path, "binary cache entry", _HEADER + KERNEL_FILE_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, BackendError):
        _unlink(path)  # not a regular file, or unreadable: a miss, and the next put writes a fresh entry
        return None
    magic, recorded, digest = raw[: len(_MAGIC)], raw[len(_MAGIC) : len(_MAGIC) + 32], raw[len(_MAGIC) + 32 : _HEADER]
    binary = raw[_HEADER:]
    if not binary or magic != _MAGIC or recorded != key_digest(key) or hashlib.sha256(binary).digest() != digest:
        _unlink(path)
        return None
    _remember(key, binary)
    return binary


def discard(key: CacheKey) -> None:
    """Forget ``key`` in memory and on disk (an entry that failed a check)."""
    with _lock:
        _memory.pop(key, None)
    path = _file_for(key)
    if path is not None:
        _unlink(path)


def put(key: CacheKey, binary: bytes) -> None:
    """Store ``binary`` under ``key`` in memory and (best effort) on disk."""
    _remember(key, binary)
    path = _file_for(key)
    if path is None:
        return
    record = _MAGIC + key_digest(key) + hashlib.sha256(binary).digest() + binary
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, lambda handle: handle.write(record))  # no .tmp-* is left when this fails
    except OSError:
        pass


def _remember(key: CacheKey, binary: bytes) -> None:
    with _lock:
        keep_recent(_memory, key, binary, MEMORY_ENTRIES)
