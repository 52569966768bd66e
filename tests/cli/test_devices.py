"""``accel devices``: the table, --json against its schema, and unavailable providers as rows."""

from __future__ import annotations

import json

from accel_cli.main import main
from accel_cli.schemas import validate
from click.testing import CliRunner

from .conftest import devices_document


def test_devices_json_lists_devices_and_unavailable_providers(cli_env: dict[str, str], runner: CliRunner) -> None:
    document = devices_document(runner)
    assert [d["id"] for d in document["devices"]] == ["fixture:0", "fixture:1", "fixture:2"]
    assert document["devices"][1]["name"] == "Beta pocl GPU"
    assert document["devices"][1]["uuid"] == "10111213-1415-1617-1819-1a1b1c1d1e1f"
    rows = {p["name"]: p for p in document["providers"]}
    assert rows["fixture"] == {"name": "fixture", "available": True, "reason": None, "devices": 3}
    assert rows["broken"]["available"] is False
    assert "discover() raised RuntimeError: clGetPlatformIDs exploded" in rows["broken"]["reason"]
    assert rows["missing"]["reason"] == "libmissing.so.1 not found; install the missing-driver package"


def test_devices_table(cli_env: dict[str, str], runner: CliRunner) -> None:
    result = runner.invoke(main, ["devices", "--verbose"])
    assert result.exit_code == 0, result.output
    for text in (
        "fixture:0",
        "Alpha PoCL CPU",
        "Gamma llvmpipe",
        "unavailable",
        "clGetPlatformIDs exploded",
        "test fixture",
    ):
        assert text in result.stdout


def test_family_that_cannot_load_is_a_row(cli_env: dict[str, str], runner: CliRunner, monkeypatch) -> None:
    monkeypatch.setenv(
        "ACCEL_EXTRA_PROVIDERS", cli_env["ACCEL_EXTRA_PROVIDERS"] + ",ghost=no_such_module_xyz:family,odd=nocolon"
    )
    monkeypatch.setenv("ACCEL_PROVIDERS", "fixture,ghost,odd")
    document = devices_document(runner)
    rows = {p["name"]: p for p in document["providers"]}
    assert "ModuleNotFoundError" in rows["ghost"]["reason"] and "no_such_module_xyz" in rows["ghost"]["reason"]
    assert "not of the form name=module:attribute" in rows["odd"]["reason"]
    assert len(document["devices"]) == 3


def test_devices_subprocess(accel) -> None:
    proc = accel(["devices", "--json"])
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validate("devices", document)
    assert len(document["devices"]) == 3


def test_help_and_version(runner: CliRunner) -> None:
    result = runner.invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("devices", "conformance"):
        assert command in result.output
    assert "Exit status" in result.output
    version = runner.invoke(main, ["--version"])
    assert version.exit_code == 0 and "accel" in version.output


def _after_importing_the_cli(variable: str, preset: str) -> tuple[str, str]:
    """``variable`` as a child process sees it after ``import accel_cli.main``: started without it, then with
    it set to ``preset``."""
    import os
    import subprocess
    import sys

    code = f"import os, accel_cli.main; print(os.environ.get({variable!r}))"
    env = {k: v for k, v in os.environ.items() if k != variable}
    seen = []
    for child_env in (env, {**env, variable: preset}):
        done = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True, check=True)
        seen.append(done.stdout.strip())
    return seen[0], seen[1]


def test_rusticl_default_is_set_before_providers_load() -> None:
    assert _after_importing_the_cli("RUSTICL_ENABLE", "llvmpipe") == ("swrast", "llvmpipe")


def test_xdg_runtime_dir_default_only_when_unset() -> None:
    assert _after_importing_the_cli("XDG_RUNTIME_DIR", "/run/user/0") == ("/tmp", "/run/user/0")


def test_listing_devices_loads_only_what_listing_needs() -> None:
    """``accel devices`` imports neither the other subcommands nor the provider instances' modules nor the
    details readers of ``accel info`` (``accel_opencl.icd``, the loader's own queries, is read for
    ``CL_DEVICE_UUID_KHR``) (docs/benchmarks.md, "Listing devices"; no timing asserted here)."""
    import ast
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from accel_cli.main import main\n"
        "try:\n"
        "    main(['devices', '--json'], standalone_mode=False)\n"
        "finally:\n"
        "    print(sorted(m for m in sys.modules if m.startswith(('accel_cli', 'accel_opencl', 'accel_vulkan'))),"
        " file=sys.stderr)\n"
    )
    env = {**os.environ, "ACCEL_PROVIDERS": "opencl,vulkan,reference"}
    env.pop("ACCEL_EXTRA_PROVIDERS", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stderr.strip().splitlines()[-1]))
    assert {"accel_cli.commands.devices", "accel_cli.inventory"} <= loaded
    needless = {
        "accel_cli.commands.bench",
        "accel_cli.commands.conformance",
        "accel_cli.commands.info",
        "accel_cli.commands.inspect",
        "accel_cli.commands.pack",
        "accel_cli.commands.run",
        "accel_cli.details",
        "accel_opencl.accelerator",
        "accel_opencl.details",
        "accel_vulkan.accelerator",
        "accel_vulkan.details",
    }
    assert loaded & needless == set()
