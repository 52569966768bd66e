"""``accel bench`` is wired to accel_bench and writes a results document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accel_cli.main import main
from click.testing import CliRunner


def test_bench_help_names_its_options() -> None:
    result = CliRunner().invoke(main, ["bench", "--help"])
    assert result.exit_code == 0, result.output
    for option in ("--json", "--plot", "--quick"):
        assert option in result.output


def test_bench_unknown_device_is_a_selector_error() -> None:
    result = CliRunner().invoke(main, ["bench", "nosuch:7", "--quick"])
    assert result.exit_code == 2, result.output
    assert "nosuch:7" in result.output


@pytest.mark.slow
def test_bench_quick_on_pocl_writes_every_item(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    result = CliRunner().invoke(main, ["bench", "opencl:*pthread*", "--quick", "--json", str(out)])
    if "matches no device" in result.output:
        pytest.skip("no PoCL device on this machine (selector opencl:*pthread* matched nothing)")
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert len(document["devices"]) == 1
    assert document["devices"][0]["errors"] == []
    assert (tmp_path / "results.md").exists()
