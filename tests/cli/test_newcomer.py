"""What a newcomer hits first: choosing a device, conformance out of the box, typos in
expectations, bench output, GLSL input, push constants, documentation, environment mistakes, messages
and merged reports."""

from __future__ import annotations

import json

import pytest
from accel_cli.main import main
from accel_cli.schemas import validate
from click.testing import CliRunner

from .conftest import devices_document, matrix_run

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
    document = devices_document(runner)
    by_id = {d["id"]: d for d in document["devices"]}
    assert by_id["reference:0"]["native_facts"]["device_type"] == "host"
    assert by_id["fixture:0"]["native_facts"] is None
    table = runner.invoke(main, ["devices"]).stdout
    assert "Type" in table and "Driver" in table
    info = runner.invoke(main, ["info", "reference:0"])
    assert info.exit_code == 0, info.output
    assert "native limits and features (reference, from the driver)" in info.stdout
    assert [line for line in info.stdout.splitlines() if line != line.rstrip()] == []  # item 9: no trailing spaces


# 2. accel conformance out of the box: the shipped known failures apply by default.


def test_shipped_expectations_are_package_data_and_the_only_copy() -> None:
    import tomllib
    from importlib import resources
    from pathlib import Path

    from accel_cli.expectations import DEFAULT_EXPECTATIONS, load_expectations

    shipped = resources.files("accel_cli") / "data" / "expected-failures.toml"
    assert shipped.is_file() and Path(str(shipped)).resolve() == DEFAULT_EXPECTATIONS
    assert {e.case for e in load_expectations(DEFAULT_EXPECTATIONS)} >= {"opencl.long-loop", "vulkan.long-loop"}
    root = Path(__file__).resolve().parents[2]
    package_data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "data/*.toml" in package_data["accel_cli"]
    assert not (root / "conformance" / "expected-failures.toml").exists()
    assert "--expect" not in (root / "Makefile").read_text().split("\nrun:")[1].split("\n\n")[0]


@pytest.mark.vulkan
def test_known_failure_is_xfail_by_default_and_progress_does_not_call_it_failed(accel) -> None:
    devices = [d for d in _documents(accel, "vulkan") if "llvmpipe" in d["name"]]
    if not devices:
        pytest.skip("the shipped vulkan.long-loop expectation is for lavapipe (llvmpipe)")
    device = devices[0]["id"]
    proc = accel(["conformance", device, "--case", "vulkan.long-loop"], providers=["vulkan"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "xfail" in proc.stdout and "OK:" in proc.stdout
    assert "completed, 1 cases, 0 failed, 1 xfail" in proc.stderr
    assert "1 failed" not in proc.stderr
    off = accel(["conformance", device, "--case", "vulkan.long-loop", "--expect", "none"], providers=["vulkan"])
    assert off.returncode == 1 and "FAIL" in off.stdout and "completed, 1 cases, 1 failed" in off.stderr
    assert "got np." not in off.stdout + off.stderr  # item 9: plain numbers in the reason


def test_expect_file_adds_to_the_shipped_list_and_none_drops_it(tmp_path, monkeypatch) -> None:
    from accel_cli.commands.conformance import _load_expect
    from accel_cli.expectations import DEFAULT_EXPECTATIONS, load_expectations

    mine = tmp_path / "mine.toml"
    mine.write_text('[[expected-failure]]\ndevice = "reference:0"\ncase = "worker"\nreason = "r"\ndate = 2026-01-01\n')
    shipped = len(load_expectations(DEFAULT_EXPECTATIONS))
    assert len(_load_expect([], merge=False) or []) == shipped
    assert len(_load_expect([str(mine)], merge=False) or []) == shipped + 1
    assert [e.device for e in _load_expect(["none", str(mine)], merge=False) or []] == ["reference:0"]
    assert _load_expect(["none"], merge=False) == []
    assert _load_expect([], merge=True) is None


# 3. Typos in expectations are errors naming the entry, the bad value and the valid ones.


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            'device = "reference:*"\ncase = "metadata.stabel-valid"',
            ["expected-failure #1", "'metadata.stabel-valid'", "did you mean 'metadata.stable-valid'?"],
        ),
        (
            'device = "vulkn:*"\ncase = "vulkan.long-loop"',
            ["expected-failure #1", "provider 'vulkn'", "known providers: ", "reference"],
        ),
        (
            'device = "reference:*"\ncase = "worker"\nresaon = "typo"',
            ["expected-failure #1", "'resaon'", "allowed: device, case, reason, date"],
        ),
    ],
    ids=["case", "provider", "key"],
)
def test_expectation_typos_exit_3_naming_entry_value_and_valid_ones(
    runner: CliRunner, cli_env, monkeypatch, tmp_path, entry: str, expected: list[str]
) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")
    path = tmp_path / "typo.toml"
    path.write_text(f'[[expected-failure]]\n{entry}\nreason = "r"\ndate = 2026-01-01\n')
    result = runner.invoke(main, ["conformance", "reference:0", "--case", "metadata.", "--expect", str(path)])
    assert result.exit_code == 3, result.output
    for text in expected:
        assert text in result.output, result.output


# 4. accel bench writes nothing unless asked.


def test_bench_writes_nothing_without_json_or_plot(cli_env, runner: CliRunner, monkeypatch, tmp_path) -> None:
    import accel_bench

    calls: list[tuple] = []

    def fake_run(entries, json_path, plot_dir, **kwargs):
        calls.append((json_path, plot_dir))
        return {"devices": [{"errors": []}]}

    monkeypatch.setattr(accel_bench, "run", fake_run)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["bench", "fixture:0", "--quick"])
    assert result.exit_code == 0, result.output
    assert calls == [(None, None)]
    assert "nothing written" in result.output and list(tmp_path.iterdir()) == []
    result = runner.invoke(main, ["bench", "fixture:0", "--json", "r.json"])
    assert result.exit_code == 0 and calls[-1] == ("r.json", None) and "wrote r.json" in result.output
    result = runner.invoke(main, ["bench", "fixture:0", "--plot", "plots"])
    assert result.exit_code == 0 and calls[-1][1] == "plots" and calls[-1][0].endswith("results.json")
    from pathlib import Path

    make = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert "accel bench --json docs/benchmarks/results.json --plot docs/benchmarks" in make


# 5. GLSL is recognised and compiled (accelcore.kernels.glsl), not read as OpenCL C; a compile error names the line.


@pytest.mark.parametrize("command", [["run", "reference:0"], ["pack"], ["inspect"]])
def test_glsl_source_is_compiled_not_read_as_opencl_c(cli_env, runner: CliRunner, tmp_path, command) -> None:
    shader = tmp_path / "k.comp"
    shader.write_text(
        "#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer B { float x[]; };\n"
        "void main() { x[gl_GlobalInvocationID.x] *= 2.0 }\n"  # a missing ';' on line 4
    )
    extra = ["-o", str(tmp_path / "k.kpkg")] if command == ["pack"] else []
    result = runner.invoke(main, [*command, str(shader), *extra])
    assert result.exit_code == 3, result.output
    assert "GLSL k.comp does not compile" in result.output and "k.comp:4:" in result.output
    assert "__kernel" not in result.output  # not judged as OpenCL C
    shader.write_text(shader.read_text().replace("2.0 }", "2.0; }"))
    if command == ["inspect"]:
        result = runner.invoke(main, ["inspect", str(shader)])
        assert result.exit_code == 0 and "(GLCompute)" in result.output
    elif command == ["pack"]:
        result = runner.invoke(main, ["pack", str(shader), *extra, "--groups", "1"])
        assert result.exit_code == 0 and "SPIRV_VULKAN package" in result.output


# 6. A push-constant block is named in one step: every member, or --count-arg when it is just the count.


@pytest.mark.parametrize(
    ("module", "named", "count_hint"),
    [("saxpy_pc.vk.spv", ["--push a=VALUE --push n=VALUE"], False), ("saxpy.vk.spv", ["--push count=VALUE"], True)],
)
def test_push_constant_error_names_the_whole_fix(
    cli_env, runner: CliRunner, tmp_path, monkeypatch, module: str, named: list[str], count_hint: bool
) -> None:
    from pathlib import Path

    spv = Path(__file__).resolve().parents[2] / "artifacts" / "spirv" / module
    if not spv.exists():
        pytest.skip(f"{spv} not built")
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")
    from accel_cli.artifacts import load_artifact
    from accel_cli.packing import PackOptions

    for options in (PackOptions(), PackOptions(global_size=(1024,))):
        try:
            load_artifact(spv, options)
        except Exception as exc:  # ArtifactError
            from accel_cli.packing import cli_words

            message = cli_words(str(exc))
        else:
            pytest.fail("packing without push-constant values succeeded")
        for text in named:
            assert text in message, message
        assert ("--count-arg count (the block is just the element count)" in message) == count_hint, message
        if options.global_size is None:
            assert "--global" in message  # the dispatch is named in the same message


# 8. Environment mistakes and empty listings.


def test_providers_typo_is_a_usage_error_listing_known_names(cli_env, runner: CliRunner, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "vulkn,reference")
    result = runner.invoke(main, ["devices"])
    assert result.exit_code == 2, result.output
    assert "'vulkn'" in result.output and "known providers: " in result.output and "reference" in result.output


def test_no_device_found_is_non_zero_with_the_reasons(cli_env, runner: CliRunner, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "missing,broken")
    for args in (["devices"], ["devices", "--json"]):
        result = runner.invoke(main, args)
        assert result.exit_code == 4, result.output
        assert "no device found" in result.output and "libmissing.so.1 not found" in result.output


def test_two_outputs_to_stdout_are_refused(cli_env, runner: CliRunner) -> None:
    result = runner.invoke(main, ["conformance", "fixture:0", "--json", "-", "--junit", "-"])
    assert result.exit_code == 2, result.output
    assert "--json and --junit both write to stdout" in result.output


def test_bad_accel_device_says_where_it_came_from(cli_env, runner: CliRunner, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_DEVICE", "bogus")
    result = runner.invoke(main, ["info"])
    assert result.exit_code == 2, result.output
    assert "matches no device (the selector came from ACCEL_DEVICE='bogus'" in result.output
    result = runner.invoke(main, ["info", "bogus"])
    assert result.exit_code == 2 and "ACCEL_DEVICE" not in result.output


# 7. docs/cli.md documents every command and option of the tool, and nothing the tool lacks.


def test_cli_doc_matches_the_command_tree() -> None:
    import re
    from pathlib import Path

    import click

    doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#+ `accel ([a-z-]+)", doc, flags=re.MULTILINE)
    assert isinstance(main, click.Group)
    with click.Context(main) as ctx:  # the subcommands load on first use (accel_cli.main.COMMANDS)
        commands = {name: main.get_command(ctx, name) for name in main.list_commands(ctx)}
    missing_commands = sorted(set(commands) - set(headings))
    assert not missing_commands, f"commands without a docs/cli.md section: {missing_commands}"
    assert not set(headings) - set(commands), f"docs/cli.md sections of no command: {set(headings) - set(commands)}"
    options: set[str] = set()
    undocumented = []
    for name, command in commands.items():
        for param in command.params:
            for opt in getattr(param, "opts", []) + getattr(param, "secondary_opts", []):
                if opt.startswith("--"):
                    options.add(opt)
                    if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", doc):
                        undocumented.append(f"accel {name} {opt}")
    assert not undocumented, f"options without documentation in docs/cli.md: {undocumented}"
    foreign = {"--help", "--version", "--target-env"}  # click's own, and glslangValidator's
    mentioned = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", doc))
    assert not mentioned - options - foreign, (
        f"docs/cli.md names options no command has: {mentioned - options - foreign}"
    )
    assert "accel bench --json FILE" in doc or "`bench` does not" in doc


# 9. Messages that leak internals: a non-.npy --bind, a wrong-target binary, numpy scalars in reasons.


def test_bind_of_a_non_npy_file_says_so_and_never_mentions_pickles(cli_env, runner: CliRunner, tmp_path) -> None:
    import numpy as np

    from accelcore.testing.programs import encode_program

    (tmp_path / "add.acrp").write_bytes(encode_program("add_u32"))
    source = tmp_path / "saxpy.cl"
    source.write_text("__kernel void saxpy(__global float *x) { x[get_global_id(0)] *= 2.0f; }\n")
    np.save(tmp_path / "b.npy", np.zeros(4, dtype=np.uint32))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}, None], dtype=object))  # a pickle inside a real .npy
    np.savez(tmp_path / "z.npz", a=np.zeros(4))
    cases = {
        source: "saxpy.cl: not a .npy file; --bind takes one array saved with numpy.save",
        tmp_path / "objects.npy": "object arrays cannot be bound",
    }
    cases[tmp_path / "z.npz"] = ".npz archive, not one array"
    for first, expected in cases.items():
        args = ["--bind", f"0={first}", "--bind", f"1={tmp_path / 'b.npy'}", "--bind", f"2={tmp_path / 'b.npy'}"]
        result = runner.invoke(
            main, ["run", "reference:0", str(tmp_path / "add.acrp"), *args], env={"ACCEL_PROVIDERS": "reference"}
        )
        assert result.exit_code == 3, result.output
        assert expected in result.output, result.output
        assert "pickle" not in result.output and "unsafely" not in result.output, result.output


def test_wrong_target_binary_names_the_device_it_was_built_for(tmp_path) -> None:
    from accel_cli.artifacts import load_artifact
    from accel_cli.targets import foreign_binary_problem

    from accelcore.contract.flags import AccessMode
    from accelcore.devices.registry import DeviceEntry
    from accelcore.kernels.package import (
        Dispatch,
        DispatchKind,
        KernelPackage,
        ModuleKind,
        PackageBinding,
        opencl_target_identity,
        target_text,
    )
    from accelcore.kernels.package_codec import write_package

    def device(index: int, platform: str, name: str, driver: str) -> DeviceEntry:
        identity = opencl_target_identity(platform, name, driver, vendor_id=0x10006, address_bits=64)
        native = {"platform": platform, "driver_version": driver, "target_identity": target_text(identity)}
        return DeviceEntry("opencl", index, name, bytes(16), native)

    pocl = device(0, "Portable Computing Language", "cpu-haswell", "5.0")
    rusticl = device(1, "rusticl", "llvmpipe (LLVM 15.0.6, 256 bits)", "22.3.6")
    vulkan = DeviceEntry("vulkan", 0, "llvmpipe", bytes(16), {"driver": "22.3.6"})

    def binary_for(platform: str, name: str, driver: str):
        target = opencl_target_identity(platform, name, driver, vendor_id=0x10006, address_bits=64)
        package = KernelPackage(
            module_kind=ModuleKind.OPENCL_BINARY,
            entry_point="k",
            local_size=(64, 1, 1),
            bindings=(PackageBinding(0, 0, AccessMode.READ_WRITE),),
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0),
            module=b"poclbin\x00\x01\x02",
            target=target,
        )
        path = tmp_path / f"{name}-{driver}.kpkg"
        path.write_bytes(write_package(package))
        return load_artifact(path)

    on_pocl = binary_for("Portable Computing Language", "cpu-haswell", "5.0")
    message = foreign_binary_problem(on_pocl, rusticl, [pocl, rusticl, vulkan])
    assert message is not None
    assert "built for opencl:0 (cpu-haswell, Portable Computing Language, driver 5.0)" in message, message
    assert "not for opencl:1 (llvmpipe (LLVM 15.0.6, 256 bits), rusticl, driver 22.3.6), the device asked" in message
    assert "run it on opencl:0" in message and "accel compile opencl:1 SOURCE.cl -o OUT.kpkg" in message
    assert "0x" not in message and "[1, " not in message, message  # no raw target words
    assert foreign_binary_problem(on_pocl, pocl, [pocl, rusticl]) is None  # its own device
    assert foreign_binary_problem(on_pocl, vulkan, [pocl, vulkan]) is None  # no identity: the provider says why
    elsewhere = binary_for("Portable Computing Language", "cpu-haswell", "4.0")  # same device, older driver
    message = foreign_binary_problem(elsewhere, pocl, [pocl, rusticl])
    assert message is not None
    assert "built for another device (not on this machine) with the same device name but another driver version" in (
        message
    ), message
    assert "run the portable source package" in message


@pytest.mark.opencl
def test_opencl_devices_publish_the_target_identity_their_binaries_record(accel, tmp_path) -> None:
    devices = _documents(accel, "opencl")
    for entry in devices:
        assert len(entry["native"]["target_identity"].split()) == 12, entry["native"]
    binary = tmp_path / "saxpy.kpkg"
    from pathlib import Path

    source = Path(__file__).resolve().parents[2] / "artifacts" / "src" / "opencl" / "saxpy.cl"
    proc = accel(
        ["compile", devices[0]["id"], source, "-o", binary, "--grid-from", "2", "--count-arg", "4"],
        providers=["opencl"],
    )
    assert proc.returncode == 0, proc.stderr
    inspected = json.loads(accel(["inspect", binary, "--json"]).stdout)
    assert " ".join(inspected["package"]["target"]) == devices[0]["native"]["target_identity"]
    others = [d for d in devices[1:] if d["native"]["target_identity"] != devices[0]["native"]["target_identity"]]
    if not others:
        pytest.skip("only one OpenCL device: cannot show another device refusing the binary")
    x = tmp_path / "x.npy"
    import numpy as np

    np.save(x, np.ones(256, dtype=np.float32))
    binds = [a for slot in range(4) for a in ("--bind", f"{slot}={x}")]
    proc = accel(["run", others[0]["id"], binary, *binds], providers=["opencl"])
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"built for {devices[0]['id']} ({devices[0]['name']}" in proc.stderr, proc.stderr
    assert f"not for {others[0]['id']} ({others[0]['name']}" in proc.stderr, proc.stderr
    assert "[1, " not in proc.stderr and "0x" not in proc.stderr, proc.stderr


def test_reasons_write_numbers_plainly_not_as_numpy_reprs() -> None:
    import numpy as np

    from accelcore import BackendError
    from accelcore.conformance.corpus import compare, spin_case
    from accelcore.kernels.values import ScalarType, ValueType, encode_value
    from accelcore.support.text import plain

    assert plain(np.uint32(2776852650)) == "2776852650" and plain(np.float32(1.5)) == "1.5"
    assert plain(np.array(7, dtype=np.int64)) == "7" and plain("x") == "'x'" and plain(3) == "3"
    case = spin_case(64, 100_000)  # vulkan.long-loop / opencl.long-loop compare exactly like this
    (slot, expected), *_ = case.expected.items()
    wrong = (expected.view(np.uint32) ^ np.uint32(1)).tobytes()
    reason = compare(case, slot, wrong)
    assert reason is not None and "np." not in reason, reason
    first = expected.view(np.uint32)[0]
    assert f"got {int(first) ^ 1}, expected {int(first)}" in reason, reason
    with pytest.raises(BackendError) as caught:
        encode_value(ValueType(ScalarType.F32), np.float64(2.5), "a")
    assert "was given a numpy float64 (2.5); pass np.float32(...)" in caught.value.message, caught.value.message


# 10. Merged reports: every column names its host when several hosts are merged; driver versions shown.


def test_merged_report_labels_every_column_by_host_and_shows_driver_versions(
    runner: CliRunner, cli_env, tmp_path
) -> None:
    from accel_cli.junit import xml_tree

    devices = {
        "laptop": [("vulkan", 0, "llvmpipe", {"driver": "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"})],
        "gpu-box": [
            ("opencl", 0, "NVIDIA H200", {"platform": "NVIDIA CUDA", "driver_version": "550.54.15"}),
            ("vulkan", 0, "NVIDIA H200", {"driver": "NVIDIA 550.54.15"}),
        ],
    }
    reports = []
    for host, entries in devices.items():
        runs = [matrix_run(host, provider, index, name, native) for provider, index, name, native in entries]
        path = tmp_path / f"{host}.json"
        path.write_text(json.dumps({"format": "accel-conformance-matrix/1", "runs": runs}))
        reports.append(str(path))
    out = {kind: tmp_path / f"merged.{kind}" for kind in ("json", "html", "xml")}
    result = runner.invoke(
        main,
        [
            "conformance",
            "--merge",
            *reports,
            "--json",
            str(out["json"]),
            "--html",
            str(out["html"]),
            "--junit",
            str(out["xml"]),
        ],
    )
    assert result.exit_code == 0, result.output
    labels = ["laptop/vulkan:0", "gpu-box/opencl:0", "gpu-box/vulkan:0"]
    assert [r["label"] for r in json.loads(out["json"].read_text())["runs"]] == labels  # opencl:0 too
    for label in labels:
        assert label in result.stdout, result.stdout
    page = out["html"].read_text()
    for driver in ("llvmpipe Mesa 22.3.6 (LLVM 15.0.6)", "550.54.15", "NVIDIA 550.54.15"):
        assert f"<small>driver {driver}</small>" in page and f", driver {driver} (uuid" in page
    tree = xml_tree(out["xml"].read_text())
    validate("junit", tree)
    suites = tree["children"]
    properties = [
        {p["attrib"]["name"]: p["attrib"]["value"] for p in suite["children"][0]["children"]} for suite in suites
    ]
    assert [p["driver_version"] for p in properties] == [
        "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)",
        "550.54.15",
        "NVIDIA 550.54.15",
    ]
    single = runner.invoke(main, ["conformance", "--merge", reports[1], reports[1], "--json", "-"])
    assert [r["label"] for r in json.loads(single.stdout)["runs"]] == [
        "opencl:0",
        "vulkan:0",
        "opencl:0#2",
        "vulkan:0#2",
    ]  # one host: no prefix, repeats numbered
