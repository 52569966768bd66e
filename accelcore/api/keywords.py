"""The Python layer's keywords: what a work-size keyword takes, and how packing errors name the keywords.

Promise: :func:`work_size` is the one check of ``local_size=`` (``Device.kernel``), ``global_size=`` and
``groups=`` (a kernel's call and ``submit``): an int or a tuple (or list) of 1 to 3 ints, numpy integers
included, each at least 1; anything else is ``BackendError(INVALID_ARGUMENT)`` naming the keyword and the
value given. :func:`python_words` rewrites an :mod:`accelcore.kernels.pack` message so that it names the keywords
a Python caller writes (``entry=``, ``spec=``, ``a=VALUE``) instead of ``pack_module``'s own
(``entry_point=``, ``spec_constants=``, ``arguments={...: VALUE}``), as ``accel_cli.packing.cli_words``
does for the CLI's options. Imports nothing but numpy and :mod:`accelcore.contract.errors`.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from ..contract.errors import BackendError, ErrorKind

__all__ = ["python_words", "work_size"]

_MOST_AXES = 3


def _axis(value: object) -> int | None:
    """``value`` as an int when it is an integer (a numpy one too), not a bool; else None."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return None
    return int(value)


def work_size(keyword: str, value: object) -> int | tuple[int, ...]:
    """``value`` given as ``keyword=`` (``"local_size"``, ``"global_size"``, ``"groups"``) as an int or a
    tuple of 1 to 3 ints, each at least 1 (see the module docstring).

    A plain int and a tuple of plain ints come back as the very object given (a kernel matches a repeated
    call's sizes by identity); a numpy integer comes back as an int, a list or a tuple holding numpy integers
    as a tuple of ints."""
    if type(value) is int and value >= 1:
        return value
    if type(value) is tuple and 1 <= len(value) <= _MOST_AXES and all(type(v) is int and v >= 1 for v in value):
        return value
    shown = f"{keyword}={value!r}"
    single = _axis(value)
    if single is not None:
        if single < 1:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{shown}: a work size is at least 1")
        return single
    if not isinstance(value, (tuple, list)):
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"{shown} is not a work size; give a positive int or a tuple of 1 to {_MOST_AXES} of them",
        )
    if not 1 <= len(value) <= _MOST_AXES:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT, f"{shown} has {len(value)} axes; a work size has 1 to {_MOST_AXES}"
        )
    axes = []
    for given in value:
        axis = _axis(given)
        if axis is None:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"{shown}: axis {given!r} is not an int; give a positive int or a tuple of 1 to {_MOST_AXES} of them",
            )
        if axis < 1:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{shown}: every axis of a work size is at least 1")
        axes.append(axis)
    return tuple(axes)


_NAMED = r"\((?:(?P<spirv>\w+): [^()]*|[^()]*?(?P<source>\w+))\)"
"""The argument's name in a pack label: ``(const int n)`` (OpenCL C) or ``(n: int)`` (OpenCL SPIR-V)."""


_ARGUMENT_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(_NAMED + r"(?P<said> is by value and has no value; pass )arguments=\{\.\.\.: VALUE\}"), "=VALUE"),
    (
        re.compile(_NAMED + r"(?P<said> is a __local pointer without a size; pass )local_memory=\{\.\.\.: BYTES\}"),
        "=ac.local_memory(NBYTES)",
    ),
)
"""Hints that name what to pass for one argument: with its name where the label shows it."""

_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r" \(or count_argument=\w+ if it takes the element count\)"), ""),
    (re.compile(r", or set dispatch\.count_argument=\w+ \(the block is just the element count\)"), ""),
    (re.compile(r"\barguments=\{\.\.\.: VALUE\}"), "NAME=VALUE"),
    (re.compile(r"\blocal_memory=\{\.\.\.: BYTES\}"), "NAME=ac.local_memory(NBYTES)"),
    (re.compile(r"\bpush_constants\[(\w+)\]=VALUE"), r"\1=VALUE"),
    (re.compile(r"\bspec_constants="), "spec="),
    (re.compile(r"\bentry_point="), "entry="),
    (re.compile(r"\bdispatch= or global_size="), "global_size= or groups="),
)


def _hint(match: re.Match[str], passed: str) -> str:
    """The matched label and hint, the hint naming the argument (``pass n=VALUE``)."""
    label = match.group(0)[: match.start("said") - match.start()]
    return f"{label}{match.group('said')}{match.group('spirv') or match.group('source')}{passed}"


def python_words(message: str) -> str:
    """An :mod:`accelcore.kernels.pack` message with ``pack_module``'s keywords replaced by the Python layer's."""
    for pattern, passed in _ARGUMENT_HINTS:
        message = pattern.sub(functools.partial(_hint, passed=passed), message)
    for pattern, replacement in _WORDS:
        message = pattern.sub(replacement, message)
    return message


def _invalid(message: str) -> BackendError:
    """INVALID_ARGUMENT with ``message`` (the api layer's most common refusal)."""
    return BackendError(ErrorKind.INVALID_ARGUMENT, message)
