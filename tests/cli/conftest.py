"""Shared fixtures of the CLI tests: an environment showing only the test families, a click runner,
and ``accel`` as a real subprocess; :func:`matrix_run` builds one run of a saved conformance report."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

PLUGINS = Path(__file__).parent / "plugins"
_FAMILIES = {
    "fixture": "accel_cli_testfamilies:fixture",
    "broken": "accel_cli_testfamilies:broken",
    "missing": "accel_cli_testfamilies:missing",
    "crashing": "accel_cli_testfamilies:crashing",
    "badmeta": "accel_cli_testfamilies:badmeta",
    "hanging": "accel_cli_testfamilies:hanging",
    "cases": "accel_cli_testfamilies:cases",
}

AccelRun = Callable[..., subprocess.CompletedProcess[str]]


def _environment(providers: Sequence[str]) -> dict[str, str]:
    return {
        "ACCEL_EXTRA_PROVIDERS": ",".join(f"{name}={target}" for name, target in _FAMILIES.items()),
        "ACCEL_PROVIDERS": ",".join(providers),
    }


def child_environment(providers: Sequence[str], env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an ``accel`` child process: this one without ACCEL_DEVICE, only the test families
    ``providers`` visible, ``env`` on top, and the test families importable (PYTHONPATH)."""
    full = dict(os.environ)
    full.pop("ACCEL_DEVICE", None)
    full.update(_environment(providers))
    full.update(env or {})
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGINS), full.get("PYTHONPATH", "")) if p)
    return full


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """In-process: only fixture, broken and missing families are visible; no ACCEL_DEVICE."""
    env = _environment(["fixture", "broken", "missing"])
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("ACCEL_DEVICE", raising=False)
    monkeypatch.syspath_prepend(str(PLUGINS))
    # Worker processes (accel run, accel conformance) import the test families too.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(PLUGINS), os.environ.get("PYTHONPATH", "")) if p))
    return env


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def devices_document(runner: CliRunner) -> dict[str, Any]:
    """``accel devices --json`` run in-process: it exits 0 and its document is valid against the schema."""
    import json

    from accel_cli.main import main
    from accel_cli.schemas import validate

    result = runner.invoke(main, ["devices", "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    validate("devices", document)
    return document


@pytest.fixture
def accel() -> AccelRun:
    """``accel(args, providers=[...], env={...})``: the CLI as a real subprocess (python -m accel_cli)."""

    def run(
        args: Sequence[str],
        *,
        providers: Sequence[str] = ("fixture", "broken", "missing"),
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "accel_cli", *map(str, args)],
            env=child_environment(providers, env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


_VERDICT = {"passed": "pass", "failed": "fail", "skipped": "skip"}


def matrix_run(
    host: str,
    provider: str,
    index: int,
    name: str,
    native: dict[str, Any],
    cases: Sequence[tuple[str, str, str]] = (("metadata.stable-valid", "passed", ""),),
) -> dict[str, Any]:
    """One completed run of an ``accel-conformance-matrix/1`` report (what ``accel conformance --json`` saves on
    ``host``), with a case per ``(id, status, reason)``: the run ``accel conformance --merge`` reads."""
    return {
        "label": f"{provider}:{index}",
        "host": host,
        "device": {
            "id": f"{provider}:{index}",
            "provider": provider,
            "index": index,
            "name": name,
            "uuid": "00" * 16,
            "native": native,
        },
        "outcome": "completed",
        "detail": "",
        "exit_code": 0,
        "duration_s": 1.0,
        "cases": [
            {
                "id": case_id,
                "status": status,
                "verdict": _VERDICT[status],
                "reason": reason,
                "duration_s": 0.1,
                "expectation": None,
            }
            for case_id, status, reason in cases
        ],
    }
