"""How accelcore starts a child Python process (conformance workers, the OpenCL binary probe).

Promise: :func:`python_module_command` is the argv of ``python -m MODULE ARGS`` in this
interpreter with **nothing prepended to** ``sys.path``: ``-P`` (Python 3.11+, which this
project requires) keeps the current folder out, so a ``json.py`` in the folder where
``accel conformance`` runs is not what the child imports. The child reads the ``PYTHON*``
environment the way this process did: ``-I`` when this one runs isolated, else ``-E`` /
``-s`` when it ignores ``PYTHON*`` / the user site; otherwise ``PYTHONPATH`` and the rest
apply as given (an empty or ``.`` entry in ``PYTHONPATH`` names the current folder, for this
process and the child alike). :func:`child_environment` is the environment to pass (a copy of
``os.environ`` naming this process as the parent).

No child outlives its parent: a child calls :func:`die_with_parent` first thing. On Linux it asks the
kernel for SIGKILL when its parent ends (``prctl(PR_SET_PDEATHSIG)``; only where the parent started it
from its main thread, since the kernel sends it when the starting *thread* ends), and everywhere a
daemon thread polls ``getppid()`` and kills the child once it is no longer the parent named in
:data:`PARENT_ENV` (the fallback where prctl is missing or the parent started it from another thread).
This module imports the standard library only: the Clang reflection child loads it by path.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

__all__ = ["PARENT_ENV", "child_environment", "die_with_parent", "interpreter_flags", "python_module_command"]

PARENT_ENV = "ACCEL_PARENT"
"""``"PID main"`` or ``"PID thread"``: the parent's pid and whether its main thread started the child."""

_PR_SET_PDEATHSIG = 1
_WATCH_S = 0.2


def interpreter_flags() -> list[str]:
    """The options every child interpreter gets: ``-P`` plus this process's environment isolation."""
    flags = ["-P"]
    if sys.flags.isolated:
        flags.append("-I")
    else:
        if sys.flags.ignore_environment:
            flags.append("-E")
        if sys.flags.no_user_site:
            flags.append("-s")
    return flags


def python_module_command(module: str, *args: str) -> list[str]:
    """argv that runs ``module`` as ``__main__`` in this interpreter, without the current folder on its path."""
    return [sys.executable, *interpreter_flags(), "-m", module, *args]


def child_environment() -> dict[str, str]:
    """The environment of a child interpreter: a copy of this process's, with :data:`PARENT_ENV` naming this one."""
    environment = dict(os.environ)
    started_by = "main" if threading.current_thread() is threading.main_thread() else "thread"
    environment[PARENT_ENV] = f"{os.getpid()} {started_by}"
    return environment


def _parent_death_signal() -> bool:
    """Linux: SIGKILL this process when its parent (thread) ends. False where that cannot be asked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_WATCH_S)
    os.kill(os.getpid(), signal.SIGKILL)


def die_with_parent() -> None:
    """End this process (SIGKILL) when the process named in :data:`PARENT_ENV` ends; see the module docstring.

    A no-op when the variable is absent (the module run by hand)."""
    named = os.environ.get(PARENT_ENV, "").split()
    if len(named) != 2 or not named[0].isdigit():
        return
    parent, started_by = int(named[0]), named[1]
    if started_by == "main":
        _parent_death_signal()
    if os.getppid() != parent:  # it ended before the request above took effect
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=_watch, args=(parent,), name="accel-parent-watch", daemon=True).start()
