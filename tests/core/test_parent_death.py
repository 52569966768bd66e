"""No child of accelcore outlives its parent: one that calls ``die_with_parent()`` (run and conformance workers,
the OpenCL isolated-build worker, the Clang reflection child) is gone within seconds of its parent's SIGKILL,
whether the parent started it from its main thread (prctl's parent-death signal) or another one (the
``getppid()`` watch), and the Clang child's by-path loader finds the helper."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

DEATH_S = 5.0

PARENT = textwrap.dedent(
    """
    import subprocess, sys, threading, time
    from accelcore.support.child import child_environment, interpreter_flags

    how = sys.argv[1]
    child = "from accelcore.support.child import die_with_parent; die_with_parent(); import time; time.sleep(120)"
    if how == "clang":
        from accelcore.kernels import opencl_signature
        command = [sys.executable, *interpreter_flags(), opencl_signature._CHILD]
    else:
        command = [sys.executable, *interpreter_flags(), "-c", child]
    started = []

    def start():
        started.append(subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=child_environment(), start_new_session=True
        ))

    if how == "thread":
        worker = threading.Thread(target=start)
        worker.start()
        worker.join()
    else:
        start()
    print(started[0].pid, flush=True)
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill_parent_and_watch(code: str, *args: str, what: str, settle_s: float = 0.5) -> None:
    """Run ``code`` as a parent that prints its child's pid, SIGKILL the parent once the child has settled, and
    insist the child (``what``) is gone within DEATH_S."""
    parent = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        time.sleep(settle_s)  # the child is past die_with_parent()
        assert _alive(child)
        parent.kill()
        parent.wait()
        parent.stdout.close()  # not communicate(): a surviving child may hold the pipe
        deadline = time.monotonic() + DEATH_S
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), f"the {what} outlived its killed parent"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("how", ["main", "thread"])
def test_a_child_dies_with_its_parent(how: str) -> None:
    _kill_parent_and_watch(PARENT, how, what=f"child ({how})")


def test_the_clang_child_dies_with_its_parent() -> None:
    # Waiting for its request, it also ends on the end of its stdin; the parent-death watch covers the child
    # busy in Clang, which this test does not reach (the script's by-path loader of the helper runs first).
    _kill_parent_and_watch(PARENT, "clang", what="child (clang)")


def test_the_isolated_build_worker_dies_with_its_parent() -> None:
    code = textwrap.dedent(
        """
        import time
        from accel_opencl import isolation
        worker = isolation._Worker(1024)
        print(worker.proc.pid, flush=True)
        time.sleep(120)
        """
    )
    # (idle, it also ends at the end of its stdin; a build in progress needs the watch)
    _kill_parent_and_watch(code, what="isolated-build worker", settle_s=1.0)
