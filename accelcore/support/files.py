"""Reading a file someone names, and replacing one, without following into special files.

Promise: :func:`read_file` (and :func:`open_file`, :func:`read_regular_file`) reads regular files only,
never more than a cap the caller chooses for the kind of file, and never blocks: the path is checked
with ``stat``, opened with ``O_NONBLOCK`` (a FIFO never stalls the open), checked again with
``fstat`` on what was opened (a file swapped in between is caught), its size compared with the cap
before a byte is read, and at most the cap read (a file that grows while read is refused). A FIFO, a
character or block device (``/dev/zero``), a socket, a directory, a symlink to any of them, and a
(sparse) file over the cap are refused at once: ``BackendError(INVALID_ARGUMENT)`` naming what the
file is for, its path and what it is. A missing file is the ``FileNotFoundError`` ``open`` raises,
for the caller to word (``accelcore.contract.errors.MissingFileError`` in the Python layer, ``no such file``
in the CLI).

Every file the project reads from a path someone else chose goes through here: kernels and packages
(``Device.kernel``, ``accel inspect``/``pack``/``run``), ``#include`` d headers, ``.npy`` arrays,
the CLI's option files (expectations, caselists, skips, reports), and the OpenCL provider's binary
cache entries and build verdicts.

:func:`replace_file` writes a file whole or not at all: into a temporary file in the target's
folder, then renamed over the target; on any failure the temporary file is removed, so a full or
odd folder is left as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable
from typing import BinaryIO

from ..contract.errors import BackendError, ErrorKind

__all__ = [
    "KERNEL_FILE_BYTES",
    "describe_file",
    "describe_mode",
    "open_file",
    "read_file",
    "read_regular_file",
    "replace_file",
    "special_file_problem",
    "write_regular_file",
]

KERNEL_FILE_BYTES = 1 << 30
"""The most a kernel file (OpenCL C, SPIR-V, GLSL, a device binary, a kernel package) may hold."""

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symlink"),
)


def describe_mode(mode: int) -> str:
    """What a ``st_mode`` is, for a message: ``a FIFO (named pipe)``, ``a character device``, ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


class _NotRegular(OSError):
    """What was opened is not a regular file (``strerror`` says what it is)."""


def describe_file(path: str | os.PathLike[str], mode: int) -> str:
    """What ``path`` (whose ``st_mode`` is ``mode``) is, naming a symlink's target: ``a character device
    (through a symlink to /dev/zero)``."""
    kind = describe_mode(mode)
    if os.path.islink(path):
        kind += f" (through a symlink to {os.path.realpath(path)})"
    return kind


def _open_regular(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(file descriptor, size) of the regular file ``path``; _NotRegular, or what ``open`` raises."""
    before = os.stat(path)  # a device is refused without opening it
    if not stat.S_ISREG(before.st_mode):
        raise _NotRegular(errno.EINVAL, f"is {describe_file(path, before.st_mode)}, not a regular file", str(path))
    fd = os.open(path, _OPEN_FLAGS)
    try:
        opened = os.fstat(fd)  # what was opened, not what the name pointed to a moment before
        if not stat.S_ISREG(opened.st_mode):
            raise _NotRegular(errno.EINVAL, f"is {describe_file(path, opened.st_mode)}, not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, opened.st_size


def read_regular_file(path: str | os.PathLike[str], most: int) -> bytes:
    """At most ``most`` bytes of ``path``; OSError unless it is a regular file (never blocks on a FIFO,
    never reads a device). For callers with their own wording; :func:`read_file` words the refusal."""
    fd, _ = _open_regular(path)
    try:
        return _read_at_most(fd, most)
    finally:
        os.close(fd)


def _read_at_most(fd: int, most: int) -> bytes:
    """Up to ``most`` bytes from ``fd``, in chunks (no buffer of ``most`` bytes is allocated up front)."""
    chunks: list[bytes] = []
    while most > 0 and (chunk := os.read(fd, min(most, 1 << 20))):
        chunks.append(chunk)
        most -= len(chunk)
    return b"".join(chunks)


def _refused(what: str, path: str | os.PathLike[str], exc: OSError) -> BackendError:
    if isinstance(exc, _NotRegular):
        return BackendError(ErrorKind.INVALID_ARGUMENT, f"{what} {os.fspath(path)} {exc.strerror}")
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENXIO:  # opening a socket
        with contextlib.suppress(OSError):
            reason = f"it is {describe_mode(os.stat(path).st_mode)}"
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"{what} {os.fspath(path)} cannot be read ({reason})")


def _too_large(what: str, path: str | os.PathLike[str], size: int, limit: int) -> BackendError:
    return BackendError(
        ErrorKind.INVALID_ARGUMENT, f"{what} {os.fspath(path)} holds {size} bytes, more than the {limit} it may hold"
    )


def open_file(path: str | os.PathLike[str], what: str, limit: int) -> BinaryIO:
    """The regular file ``path`` open for reading (binary, blocking), its size checked against ``limit``.

    ``what`` names the file in a refusal (``"kernel file"``, ``"--bind file"``): BackendError(INVALID_ARGUMENT)
    for anything but a regular file of at most ``limit`` bytes or a file that cannot be opened;
    FileNotFoundError when there is none. The caller reads at most ``limit`` bytes (the size can change)."""
    try:
        fd, size = _open_regular(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _refused(what, path, exc) from None
    if size > limit:
        os.close(fd)
        raise _too_large(what, path, size, limit)
    return os.fdopen(fd, "rb")


def read_file(path: str | os.PathLike[str], what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: see :func:`open_file`."""
    with open_file(path, what, limit) as handle:
        try:
            data = _read_at_most(handle.fileno(), limit + 1)
        except OSError as exc:
            raise _refused(what, path, exc) from None
    if len(data) > limit:  # it grew while it was read
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT, f"{what} {os.fspath(path)} grew past the {limit} bytes it may hold while read"
        )
    return data


def replace_file(
    path: str | os.PathLike[str], write: Callable[[BinaryIO], object], *, prefix: str = ".tmp-", mode: int | None = None
) -> None:
    """``path`` replaced by what ``write`` writes to an open binary file, whole or not at all.

    ``write`` writes into a new temporary file (named ``prefix`` + random, in ``path``'s folder, created with
    ``mode``, else 0600), which is then renamed over ``path``. Whatever fails — creating it, ``write``, the rename
    (a folder in the way, a full disk) — removes the temporary file and raises what failed."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            write(handle)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_regular_file(path: str | os.PathLike[str], data: bytes) -> None:
    """``data`` written to exactly ``path``, whole or not at all (:func:`replace_file`, the umask's permissions);
    OSError naming the path when it exists as something other than a regular file (a FIFO would block the
    writer, a device would swallow the bytes) - through symlinks too."""
    problem = special_file_problem(path)
    if problem is not None:
        raise OSError(problem)
    mask = os.umask(0o022)
    os.umask(mask)
    replace_file(os.path.realpath(path), lambda handle: handle.write(data), mode=0o666 & ~mask)


def special_file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be written as a file (it exists as a FIFO, device, socket or folder, through symlinks
    too), or None: checked before long work whose result goes there."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # missing (to be made) or unreadable: the write says why
    if stat.S_ISREG(mode):
        return None
    return f"{os.fspath(path)} is {describe_file(path, mode)}, not a regular file"
