"""SIGTERM and SIGHUP end an ``accel`` command the way Ctrl-C (SIGINT) does.

Promise: after :func:`install`, SIGTERM and SIGHUP raise :class:`KeyboardInterrupt` in the main thread,
so every path that handles Ctrl-C (killing run and conformance workers, removing temporary folders,
writing conformance's partial reports) handles them too. :func:`received` is the signal that stopped
the command (SIGINT until another one came); :func:`words` names it in messages and
:func:`exit_code` is 128 + its number, as shells report it.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

__all__ = ["exit_code", "install", "received", "words"]

_HANDLED = (signal.SIGTERM, signal.SIGHUP)
_received = signal.SIGINT


def _stop(signum: int, frame: FrameType | None) -> None:
    global _received
    _received = signal.Signals(signum)
    raise KeyboardInterrupt


def install() -> None:
    """Make SIGTERM and SIGHUP raise KeyboardInterrupt (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for number in _HANDLED:
        if signal.getsignal(number) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
            signal.signal(number, _stop)


def received() -> signal.Signals:
    """The signal that stopped the command: SIGINT unless SIGTERM or SIGHUP came."""
    return _received


def words() -> str:
    """The signal as messages name it: ``SIGINT, Ctrl-C``, ``SIGTERM`` or ``SIGHUP``."""
    return "SIGINT, Ctrl-C" if _received is signal.SIGINT else _received.name


def exit_code() -> int:
    """128 + the signal's number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + int(_received)
