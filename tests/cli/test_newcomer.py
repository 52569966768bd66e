"""What a newcomer hits first (issue 16): choosing a device, conformance out of the box, typos in
expectations, bench output, GLSL input, push constants, documentation, environment mistakes, messages
and merged reports."""

from __future__ import annotations

import json

import pytest
from accel_cli.main import main
from accel_cli.schemas import validate
from click.testing import CliRunner

_FACT_KEYS = {"compute_units", "global_memory_bytes", "local_memory_bytes", "max_work_group_size", "fp16", "fp64"}


def _documents(accel, provider: str) -> list[dict]:
    proc = accel(["devices", "--json"], providers=[provider])
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validate("devices", document)
    if not document["devices"]:
        pytest.skip(f"{provider} offers no device here: {document['providers'][0]['reason']}")
    return document["devices"]


# 1. Choosing a device: native type, API and driver versions, native limits and features.


@pytest.mark.parametrize(
    "provider", [pytest.param("opencl", marks=pytest.mark.opencl), pytest.param("vulkan", marks=pytest.mark.vulkan)]
)
def test_devices_and_info_show_native_facts_from_the_driver(accel, provider: str) -> None:
    devices = _documents(accel, provider)
    for device in devices:
        facts = device["native_facts"]
        assert facts is not None, device
        assert facts["device_type"] in {"CPU", "GPU", "integrated GPU", "discrete GPU", "virtual GPU", "accelerator"}
        assert facts["api"].startswith("OpenCL " if provider == "opencl" else "Vulkan ")
        assert facts["driver_version"]
        assert facts["global_memory_bytes"] > 0 and facts["local_memory_bytes"] > 0
        assert facts["max_work_group_size"] > 0
        assert facts["extensions"]
        if provider == "opencl":
            assert facts["compute_units"] > 0 and "OpenCL C" in facts["versions"]
            assert facts["uuid_derived"] == (facts["uuid_source"] != "CL_DEVICE_UUID_KHR")
        else:
            assert facts["max_push_constant_bytes"] >= 128  # the Vulkan minimum
            assert {"Vulkan", "SPIR-V"} <= set(facts["versions"])
            assert facts["uuid_derived"] is False
    table = accel(["devices"], providers=[provider], env={"COLUMNS": "200"})
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if "ID" in line and "UUID" in line)
    for column in ("Type", "API", "Driver"):
        assert column in header
    for device in devices:
        row = next(line for line in table.stdout.splitlines() if device["id"] in line)
        assert device["native_facts"]["device_type"] in row and device["native_facts"]["api"] in row
        assert ("(derived)" in row) == device["native_facts"]["uuid_derived"]
    first = devices[0]["id"]
    info = accel(["info", first, "--json"], providers=[provider])
    assert info.returncode == 0, info.stderr
    document = json.loads(info.stdout)
    validate("info", document)
    assert document["native_facts"] == devices[0]["native_facts"]
    text = accel(["info", first], providers=[provider]).stdout
    assert f"native limits and features ({provider}, from the driver)" in text
    for label in ("device type", "API", "driver version", "local memory bytes", "max work-group size", "extensions ("):
        assert label in text
    assert ("max push-constant bytes" in text) == (provider == "vulkan")
    assert ("compute units" in text) == (provider == "opencl")


def test_reference_device_facts_and_fixture_without_facts(cli_env, runner: CliRunner, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference,fixture")
    result = runner.invoke(main, ["devices", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    validate("devices", document)
    by_id = {d["id"]: d for d in document["devices"]}
    assert by_id["reference:0"]["native_facts"]["device_type"] == "host"
    assert by_id["fixture:0"]["native_facts"] is None
    table = runner.invoke(main, ["devices"]).stdout
    assert "Type" in table and "Driver" in table
    info = runner.invoke(main, ["info", "reference:0"])
    assert info.exit_code == 0, info.output
    assert "native limits and features (reference, from the driver)" in info.stdout
    assert [line for line in info.stdout.splitlines() if line != line.rstrip()] == []  # item 9: no trailing spaces
