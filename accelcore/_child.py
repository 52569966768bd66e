"""How accelcore starts a child Python process (conformance workers, the OpenCL binary probe).

Promise: :func:`python_module_command` is the argv of ``python -m MODULE ARGS`` in this
interpreter with **nothing prepended to** ``sys.path``: ``-P`` (Python 3.11+, which this
project requires) keeps the current folder out, so a ``json.py`` in the folder where
``accel conformance`` runs is not what the child imports. The child reads the ``PYTHON*``
environment the way this process did: ``-I`` when this one runs isolated, else ``-E`` /
``-s`` when it ignores ``PYTHON*`` / the user site; otherwise ``PYTHONPATH`` and the rest
apply as given (an empty or ``.`` entry in ``PYTHONPATH`` names the current folder, for this
process and the child alike). :func:`child_environment` is the environment to pass (a copy of
``os.environ``).
"""

from __future__ import annotations

import os
import sys

__all__ = ["child_environment", "interpreter_flags", "python_module_command"]


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
    """The environment of a child interpreter: a copy of this process's."""
    return dict(os.environ)
