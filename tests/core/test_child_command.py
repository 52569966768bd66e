"""accelcore.support.child: the one way child interpreters are started (``-P``, and this process's isolation)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from accelcore.support.child import child_environment, python_module_command


def test_the_command_keeps_the_current_folder_off_the_child_path(tmp_path: Path) -> None:
    command = python_module_command("site")  # ``python -m site`` prints its sys.path
    assert command[0] == sys.executable and "-P" in command and command[-2:] == ["-m", "site"]
    done = subprocess.run(
        command, cwd=tmp_path, env=child_environment(), capture_output=True, text=True, check=True, timeout=60
    )
    listed = done.stdout.split("sys.path = [", 1)[1].split("]", 1)[0]
    path = ast.literal_eval("[" + listed + "]")
    assert path, done.stdout
    assert str(tmp_path) not in path and "" not in path, path


def test_the_child_reads_the_environment_as_this_process_does() -> None:
    code = "from accelcore.support.child import python_module_command as c; print(c('m', 'arg'))"
    for flags, expected in ((["-I"], ["-P", "-I"]), (["-E", "-s"], ["-P", "-E", "-s"]), ([], ["-P"])):
        done = subprocess.run(
            [sys.executable, *flags, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )
        command = ast.literal_eval(done.stdout.strip())
        assert command[1:] == [*expected, "-m", "m", "arg"], (flags, command)
