"""A live "phase, elapsed" line on stderr while ``accel run`` waits for a run longer than a second.

Promise: shown only when stderr is a terminal (never in a pipe, a log or ``--json`` captured by a
program), only after :data:`DELAY_S`, and erased when the run ends (rich ``Live``, transient), so the
report printed after it is what stays. The run reports its phase (``setup``: worker start, allocation,
program load, uploads; ``execute``: the kernel, from the submission; ``transfer-out``) through
:meth:`RunProgress.phase`; a thread of its own draws the line, so a driver call blocking the caller
does not stop the clock.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner

__all__ = ["DELAY_S", "RunProgress"]

DELAY_S = 1.0
"""Runs shorter than this show nothing."""


class RunProgress:
    """``with RunProgress("opencl:0") as progress: ... progress.phase("execute") ...``."""

    def __init__(self, what: str, *, stream: TextIO | None = None, delay_s: float = DELAY_S) -> None:
        self.what = what
        self._stream = stream if stream is not None else sys.stderr
        self._delay_s = delay_s
        self._phase = "setup"
        self._started = self._since = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._spinner = Spinner("dots")

    @property
    def enabled(self) -> bool:
        """Whether anything is drawn: stderr is a terminal."""
        isatty = getattr(self._stream, "isatty", None)
        return bool(callable(isatty) and isatty())

    def phase(self, name: str) -> None:
        """The run entered phase ``name`` (the clock of the phase restarts)."""
        if name != self._phase:
            self._phase, self._since = name, time.monotonic()

    def text(self) -> str:
        """``opencl:0: execute for 12.3 s (13.1 s in all)``."""
        now = time.monotonic()
        return f"{self.what}: {self._phase} for {now - self._since:.1f} s ({now - self._started:.1f} s in all)"

    def _render(self) -> Spinner:
        self._spinner.update(text=self.text())
        return self._spinner

    def _show(self) -> None:
        if self._stop.wait(self._delay_s):
            return
        console = Console(file=self._stream, highlight=False)
        with Live(console=console, transient=True, refresh_per_second=4, get_renderable=self._render):
            self._stop.wait()

    def __enter__(self) -> RunProgress:
        self._started = self._since = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._show, name="accel-run-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
