""".npy files the CLI reads (``--bind``, ``--expect-output``) and writes (``--out``).

Reading (:func:`load_array`): the file must be a regular file (:mod:`accelcore.support.files`: never a FIFO, a
device or a symlink to one) starting with the ``\\x93NUMPY`` magic, so ``np.load`` never reads a pickle
(and never advises loading one "unsafely"). Its header is read first with numpy's own format functions
and checked against the file before any array is allocated: a header longer than numpy reads without
trusting the file, an object dtype, a negative dimension, or a shape whose bytes the file does not hold
(a header claiming 4 TiB in a 100-byte file) is refused, naming the path and what is wrong, as is an
array larger than this machine's memory. Failure: :class:`ArrayFileError`.

Writing (:func:`save_array`): ``--out FILE`` writes exactly ``FILE`` (numpy adds no ``.npy`` to a name
given as an open file), whole or not at all: into a temporary file in the same folder, renamed over
``FILE`` (a symlink's target) once complete; on failure the temporary file is removed and any earlier
``FILE`` is left as it was. :func:`output_problem` refuses a special file (``/dev/full``, a FIFO, a
directory) as a target before anything runs.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt
from numpy.lib import format as npy_format

from accelcore.contract.errors import BackendError
from accelcore.support.files import describe_file, open_file, replace_file

__all__ = ["ArrayFileError", "load_array", "output_problem", "save_array"]

NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
MAX_HEADER_CHARS = 10000
"""numpy's own bound on a header it parses without ``allow_pickle`` (``max_header_size``)."""


class ArrayFileError(ValueError):
    """A .npy file is refused; the message names the path and the reason."""


def memory_bytes() -> int:
    """This machine's physical memory: no array file larger than it can be loaded."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return 1 << 40


def _header(handle: BinaryIO, path: Path) -> tuple[tuple[int, ...], np.dtype[np.generic]]:
    """(shape, dtype) from the header of the open .npy file (positioned after its magic check)."""
    version = npy_format.read_magic(handle)
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise ValueError(f"format version {version[0]}.{version[1]}, not one numpy writes (1.0, 2.0, 3.0)")
    length_bytes = 2 if version == (1, 0) else 4
    length = int.from_bytes(handle.read(length_bytes), "little")
    if length > MAX_HEADER_CHARS:
        raise ArrayFileError(
            f"{path}: the .npy header is {length} bytes long, more than the {MAX_HEADER_CHARS} numpy reads from "
            "a file it does not trust (numpy.save writes a short header for any plain array)"
        )
    handle.seek(-length_bytes, os.SEEK_CUR)
    reader = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
    shape, _, dtype = reader(handle, max_header_size=MAX_HEADER_CHARS)
    return tuple(int(n) for n in shape), dtype


def load_array(path: Path, option: str) -> npt.NDArray[np.generic]:
    """The one array ``path`` holds (see the module docstring); ``option`` names the flag in the advice."""
    limit = memory_bytes()
    try:
        handle = open_file(path, "array file", limit)
    except FileNotFoundError:
        raise ArrayFileError(f"no such file: {path}") from None
    except BackendError as exc:
        raise ArrayFileError(exc.message) from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        try:
            head = handle.read(len(NPY_MAGIC))
        except OSError as exc:
            raise ArrayFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        if head != NPY_MAGIC:
            what = (
                "a .npz archive, not one array (.npz is not accepted)"
                if head.startswith(_ZIP_MAGIC)
                else "not a .npy file"
            )
            raise ArrayFileError(
                f"{path}: {what}; {option} takes one array saved with numpy.save (a file starting with \\x93NUMPY)"
            )
        handle.seek(0)
        try:
            shape, dtype = _header(handle, path)
        except ArrayFileError:
            raise
        except (ValueError, EOFError, OSError) as exc:
            raise ArrayFileError(f"{path}: not a readable .npy array (its header: {exc})") from None
        if dtype.hasobject:  # its elements would be pickles, never loaded
            raise ArrayFileError(f"{path}: object arrays cannot be bound")
        if any(n < 0 for n in shape):
            raise ArrayFileError(f"{path}: the .npy header gives a negative dimension in shape {shape}")
        data_bytes = math.prod(shape) * dtype.itemsize
        held = size - handle.tell()
        if data_bytes > held:
            raise ArrayFileError(
                f"{path}: the .npy header describes a {shape} {dtype} array of {data_bytes} bytes, but the file "
                f"holds {held} bytes after its header"
            )
        handle.seek(0)
        try:
            array = npy_format.read_array(handle, allow_pickle=False, max_header_size=MAX_HEADER_CHARS)
        except (ValueError, OSError, EOFError) as exc:
            raise ArrayFileError(f"{path}: not a readable .npy array ({exc})") from None
    return np.asarray(array)


def output_problem(path: Path) -> str | None:
    """Why ``--out`` cannot write ``path`` (an existing special file, through symlinks too), or None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror}"
    if stat.S_ISREG(mode):
        return None
    return f"{path} is {describe_file(path, mode)}, not a regular file; --out writes a .npy file there"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def save_array(path: Path, array: npt.NDArray[np.generic]) -> None:
    """Write ``array`` to exactly ``path`` (see the module docstring); OSError when it cannot be."""
    problem = output_problem(path)
    if problem is not None:
        raise OSError(problem)
    target = os.path.realpath(path)  # a symlink keeps pointing at the new file
    replace_file(
        target,
        lambda handle: np.save(handle, array, allow_pickle=False),
        prefix=f".{os.path.basename(target)}.tmp-",
        mode=0o666 & ~_umask(),
    )
