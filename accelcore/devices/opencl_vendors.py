"""The OpenCL ICD loader's vendors folder owned by this checkout: ``<venv>/etc/accelcore/OpenCL/vendors``, found
from the running interpreter's prefix (docs/opencl.md, "The Intel CPU runtime"). Not ``<venv>/etc/OpenCL/vendors``:
Intel's wheel installs ``.icd`` files there naming its build machine's paths (skipped by the loader today; a
second copy of the runtime, or its FPGA emulator, the day they resolve), and conda's loader reads that folder.

``make setup`` registers Intel's CPU runtime there (:data:`INTEL_ICD`, a file naming the venv's
``libintelocl.so``) instead of in /etc/OpenCL/vendors, where one file could name only one checkout's library and
clones on one machine took the registration from each other. The ICD loader (ocl-icd) reads one folder:
``OCL_ICD_VENDORS`` replaces the system's, so :func:`opencl_vendors` keeps links to the system's ICDs next to the
registration, current on every call (an ICD installed or removed later shows without re-running make), and
:func:`accelcore.devices.environment.apply_defaults` points ``OCL_ICD_VENDORS`` at the folder. ``make intel-icd`` calls
:func:`opencl_vendors` too, so that other tools given the folder see every driver right after setup.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["INTEL_ICD", "opencl_vendors", "system_vendors"]

INTEL_ICD = "accelcore-intel-cpu.icd"
"""The checkout's registration of Intel's runtime, a regular file written by ``make intel-icd``. Older versions
wrote the same name into /etc/OpenCL/vendors; a system ICD of a name the checkout owns is never linked, so a
process loads one Intel runtime, its own checkout's."""


def system_vendors() -> Path:
    """The folder the ICD loader reads when ``OCL_ICD_VENDORS`` is unset: ``OPENCL_VENDOR_PATH``, else
    /etc/OpenCL/vendors (the tests point ``OPENCL_VENDOR_PATH`` at a folder of their own)."""
    return Path(os.environ.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors")


def opencl_vendors() -> Path | None:
    """The folder for ``OCL_ICD_VENDORS``, its links to the system's ICDs brought up to date: ``sys.prefix``'s
    ``etc/accelcore/OpenCL/vendors`` (its regular ``.icd`` files are the checkout's; every link in it is managed here).
    None where that folder holds no :data:`INTEL_ICD` (a plain system Python, a venv without the runtime): the
    loader's own default then stands. When the folder cannot be written (a read-only venv) and is stale, a private
    folder of links to both, in the temporary directory; when that fails too, the stale folder."""
    folder = Path(sys.prefix, "etc", "accelcore", "OpenCL", "vendors")
    own = {name for name, target in _listing(folder).items() if target is None}
    if INTEL_ICD not in own:
        return None
    system = system_vendors().absolute()  # link targets do not depend on the folder
    if system.resolve() == folder.resolve():  # OPENCL_VENDOR_PATH names the folder itself: nothing to link
        return folder
    links = {name: str(system / name) for name in _listing(system) if name not in own}
    if _mirror(folder, links):
        return folder
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    private = Path(tempfile.gettempdir(), f"accelcore-opencl-vendors-{os.getuid()}-{digest}")
    if _private(private) and _mirror(private, links | {name: str(folder / name) for name in own}):
        return private
    return folder


def _listing(folder: Path) -> dict[str, str | None]:
    """The ``.icd`` entries of ``folder`` (what the loader reads): name to a link's target, None for a file."""
    found: dict[str, str | None] = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(".icd"):
                    try:
                        found[entry.name] = os.readlink(entry.path) if entry.is_symlink() else None
                    except OSError:  # removed meanwhile
                        continue
    except OSError:  # missing, not a folder, unreadable
        pass
    return found


def _mirror(folder: Path, wanted: dict[str, str]) -> bool:
    """Make ``folder``'s links exactly ``wanted`` (name: target), regular files untouched. Each link is replaced
    atomically (a process enumerating meanwhile sees the old or the new one). False when the folder is not
    writable."""
    links = {name: target for name, target in _listing(folder).items() if target is not None}
    if links == wanted:
        return True
    try:
        for name in links.keys() - wanted.keys():
            (folder / name).unlink(missing_ok=True)
        for name, target in wanted.items():
            if links.get(name) != target:
                temporary = folder / f".{name}.{os.getpid()}.tmp"  # not *.icd: the loader skips it
                temporary.unlink(missing_ok=True)
                os.symlink(target, temporary)
                os.replace(temporary, folder / name)
    except OSError:
        return False
    return True


def _private(folder: Path) -> bool:
    """``folder`` exists as a directory of this user's that no one else can write (it is in a shared /tmp)."""
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022
