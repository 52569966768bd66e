"""One call at a time per device: the lock every public method of a :class:`~accelcore.api.device.Device` and of
what it made takes, and the refusal of a device used in a forked child (docs/python.md, "Threads and fork").

:func:`serialized` guards a method of something a device made (``self.device``: a kernel, a device array, a
run); :func:`serialized_device` guards a method of the device itself. Both check, before the lock, that the
process is the one the device was opened in (a parent's thread may hold the lock for ever in a forked child),
then, under the lock, that the device is still open (a closed one: BackendError, never a crash).
"""

from __future__ import annotations

import functools
import operator
import os
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["process_id", "serialized", "serialized_device"]

_Method = TypeVar("_Method", bound=Callable[..., Any])

_this_process = os.getpid()
"""This process's id, renewed in a forked child (:func:`_after_fork`): a device compares it with the id it
was opened in at each public call, one int comparison and no system call."""


def _after_fork() -> None:
    global _this_process
    _this_process = os.getpid()


os.register_at_fork(after_in_child=_after_fork)


def process_id() -> int:
    """This process's id as the guards see it (renewed in a forked child without a system call)."""
    return _this_process


def _guarded(device_of: Callable[[Any], Any]) -> Callable[[_Method], _Method]:
    def guard(method: _Method) -> _Method:
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            device = device_of(self)
            if device._process != _this_process:
                device._refuse_in_fork()
            with device._lock:
                device._check_open()
                return method(self, *args, **kwargs)

        return call  # type: ignore[return-value]

    return guard


serialized = _guarded(operator.attrgetter("device"))
"""Guard a method of an object that a device made (its ``.device``)."""

serialized_device = _guarded(lambda device: device)
"""Guard a method of a :class:`~accelcore.api.device.Device`."""
