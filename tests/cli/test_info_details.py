"""``accel info`` at clinfo / vulkaninfo depth (docs/cli.md, "accel info").

Every fact is checked against the driver through another road than the provider's: pyopencl's own
device attributes and ``clinfo --raw`` for OpenCL, ``vulkaninfo`` for Vulkan (each skipped, saying
so, where the tool is not installed); the text has clinfo's sections and one extension a line; a
fact the driver does not report, and a family that reads no details, show as not reported with the
reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from accel_cli.details import details_json, details_lines, read_details
from accel_cli.main import main
from accel_cli.schemas import validate
from click.testing import CliRunner

from accelcore.devices.environment import DEFAULTS
from accelcore.devices.native_facts import DeviceDetails, Fact, FactSection
from accelcore.devices.registry import DeviceEntry

OPENCL_SECTIONS = [
    "Device",
    "Compute",
    "Memory",
    "Images",
    "Floating point",
    "Subgroups",
    "Extensions",
    "Platform / ICD",
]
VULKAN_SECTIONS = [
    "Device",
    "Compute",
    "Memory",
    "Images",
    "Shader features",
    "Floating point",
    "Subgroups",
    "Extensions",
    "Loader / ICD",
]


def _devices(accel, provider: str) -> list[dict[str, Any]]:
    proc = accel(["devices", "--json"], providers=[provider])
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    if not document["devices"]:
        pytest.skip(f"{provider} offers no device here: {document['providers'][0]['reason']}")
    return list(document["devices"])


def _info(accel, device: str, provider: str) -> dict[str, Any]:
    proc = accel(["info", device, "--json"], providers=[provider])
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validate("info", document)
    details = document["details"]
    assert details["reported"] is True, details["reason"]
    for section, facts in details["sections"].items():
        for key, value in facts.items():
            name = f"{section}.{key}"
            assert (value is None) == (name in details["not_reported"]), name  # null <=> a reason, never silent
    return dict(details)


def _tool_env() -> dict[str, str]:
    return {**DEFAULTS, **os.environ}


# --- OpenCL: pyopencl's own attributes -----------------------------------------------------------------------


def _pyopencl_devices() -> dict[tuple[str, str], list[Any]]:
    os.environ.update({k: v for k, v in DEFAULTS.items() if k not in os.environ})
    cl = pytest.importorskip("pyopencl")
    found: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for platform in cl.get_platforms():
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for device in devices:
            found[(platform.name.strip(), device.name.strip())].append(device)
    return found


def _flag_names(value: int, table: Any, names: dict[str, str]) -> list[str]:
    """The names of the bits of ``value``, with each bit's value taken from pyopencl's constant table."""
    return [ours for theirs, ours in names.items() if value & int(getattr(table, theirs))]


_FP = {
    "DENORM": "denorm",
    "INF_NAN": "inf_nan",
    "ROUND_TO_NEAREST": "round_to_nearest",
    "ROUND_TO_ZERO": "round_to_zero",
    "ROUND_TO_INF": "round_to_inf",
    "FMA": "fma",
    "SOFT_FLOAT": "soft_float",
    "CORRECTLY_ROUNDED_DIVIDE_SQRT": "correctly_rounded_divide_sqrt",
}


@pytest.mark.opencl
def test_opencl_details_are_the_drivers_answers_as_pyopencl_reads_them(accel) -> None:
    import pyopencl as cl

    natives = _pyopencl_devices()
    taken: dict[tuple[str, str], int] = defaultdict(int)
    for device in _devices(accel, "opencl"):
        details = _info(accel, device["id"], "opencl")
        s = details["sections"]
        key = (s["platform"]["name"], s["device"]["name"])
        d = natives[key][taken[key]]
        taken[key] += 1
        info = cl.device_info
        assert s["compute"]["max_clock_mhz"] == d.max_clock_frequency
        assert s["compute"]["compute_units"] == d.max_compute_units
        assert s["compute"]["max_work_item_dimensions"] == d.max_work_item_dimensions
        assert s["compute"]["max_work_item_sizes"] == list(d.max_work_item_sizes)
        assert len(s["compute"]["max_work_item_sizes"]) == d.max_work_item_dimensions
        assert s["compute"]["max_work_group_size"] == d.max_work_group_size
        assert s["compute"]["preferred_work_group_size_multiple"] == d.get_info(info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE)
        assert s["compute"]["native_vector_widths"]["float"] == d.native_vector_width_float
        assert s["memory"]["global_memory_bytes"] == d.global_mem_size
        assert s["memory"]["max_mem_alloc_bytes"] == d.max_mem_alloc_size
        assert s["memory"]["local_memory_bytes"] == d.local_mem_size
        assert s["memory"]["max_constant_buffer_bytes"] == d.max_constant_buffer_size
        assert s["memory"]["max_constant_args"] == d.max_constant_args
        assert s["memory"]["global_mem_cache_bytes"] == d.global_mem_cache_size
        assert s["memory"]["global_mem_cacheline_bytes"] == d.global_mem_cacheline_size
        cache = {cl.device_mem_cache_type.NONE: "none", cl.device_mem_cache_type.READ_ONLY_CACHE: "read_only"}
        cache[cl.device_mem_cache_type.READ_WRITE_CACHE] = "read_write"
        assert s["memory"]["global_mem_cache_type"] == cache[d.global_mem_cache_type]
        local = {cl.device_local_mem_type.LOCAL: "local", cl.device_local_mem_type.GLOBAL: "global"}
        assert s["memory"]["local_mem_type"] == local.get(d.local_mem_type, "none")
        assert s["images"]["image_support"] is bool(d.image_support)
        assert s["images"]["image2d_max_pixels"] == [d.image2d_max_width, d.image2d_max_height]
        assert s["images"]["image3d_max_pixels"] == [d.image3d_max_width, d.image3d_max_height, d.image3d_max_depth]
        assert s["images"]["max_read_image_args"] == d.max_read_image_args
        assert s["images"]["max_write_image_args"] == d.max_write_image_args
        assert s["images"]["max_samplers"] == d.max_samplers
        for width in ("half", "single", "double"):
            raw = d.get_info(getattr(info, f"{width.upper()}_FP_CONFIG"))
            assert s["floating_point"][f"{width}_fp_config"] == _flag_names(raw, cl.device_fp_config, _FP), width
        assert s["subgroups"]["max_num_sub_groups"] == d.max_num_sub_groups
        assert s["extensions"]["device"] == sorted(set(d.extensions.split()))
        assert s["device"]["driver_version"] == d.driver_version.strip()
        assert s["device"]["vendor_id"] == d.vendor_id
        assert s["platform"]["vendor"] == d.platform.vendor.strip()
        assert s["platform"]["version"] == d.platform.version.strip()
        assert s["platform"]["extensions"] == sorted(set(d.platform.extensions.split()))
        units = details["units"]
        assert units["compute.max_clock_mhz"] == "MHz" and units["memory.local_memory_bytes"] == "bytes"
        assert details["queries"]["compute.max_clock_mhz"] == "CL_DEVICE_MAX_CLOCK_FREQUENCY"


# --- OpenCL: clinfo --raw ------------------------------------------------------------------------------------

_RAW = re.compile(r"^\[(?P<tag>[^/\]]+)/(?P<index>[^\]]+)\]\s+(?P<name>\S+)(?:\s+(?P<value>.*))?$")
_PLATFORM_RAW = re.compile(r"^\s+(?P<name>CL_PLATFORM_\w+)\s+(?P<value>.*)$")


def _clinfo_raw() -> tuple[dict[tuple[str, str], list[dict[str, str]]], list[dict[str, str]], dict[str, str]]:
    """clinfo --raw: each device's CL_* answers by (platform name, device name), each platform's, and the ICD
    loader's (``[OCLICD/*]``). Platforms sharing an ICD suffix (rusticl and Clover: MESA) are told apart by
    order: a device belongs to the platform named last before it."""
    if shutil.which("clinfo") is None:
        pytest.skip("clinfo is not installed (Debian: clinfo)")
    out = subprocess.run(
        ["clinfo", "--raw"], capture_output=True, text=True, env=_tool_env(), timeout=120, check=True
    ).stdout
    devices: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    platforms: list[dict[str, str]] = []
    loader: dict[str, str] = {}
    platform = ""
    for line in out.splitlines():
        match = _RAW.match(line)
        if match is None:
            plain = _PLATFORM_RAW.match(line)
            if plain is not None:
                if plain["name"] == "CL_PLATFORM_NAME":
                    platforms.append({})
                platforms[-1][plain["name"]] = plain["value"].strip()
            continue
        value = (match["value"] or "").strip()
        if match["tag"] == "OCLICD":
            loader[match["name"]] = value
        elif match["index"] == "*":
            if match["name"] == "CL_PLATFORM_NAME":
                platform = value
        else:
            devices[(platform, f"{match['tag']}/{match['index']}")][match["name"]] = value
    by_name: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for (platform_name, _), answers in devices.items():
        by_name[(platform_name, answers.get("CL_DEVICE_NAME", ""))].append(answers)
    return by_name, platforms, loader


_PREFIXES = ("CL_DEVICE_TYPE_", "CL_FP_", "CL_DEVICE_SVM_", "CL_EXEC_", "CL_")


def _token(token: str) -> str:
    for prefix in _PREFIXES:
        if token.startswith(prefix):
            token = token[len(prefix) :]
            break
    return token.removesuffix("_CACHE").lower()


def _same(ours: Any, raw: str, name: str) -> bool:
    """Whether our value says what clinfo printed for ``name``."""
    if isinstance(ours, bool):
        return raw == ("CL_TRUE" if ours else "CL_FALSE")
    if isinstance(ours, int):
        return ours == int(raw, 0)
    if isinstance(ours, list) and all(isinstance(v, int) for v in ours):
        return ours == [int(v, 0) for v in raw.split()]
    if isinstance(ours, list):
        tokens = [_token(t) for t in raw.replace("|", " ").split()]
        ours_lower = [str(v).lower() for v in ours]
        if name.endswith("_FP_CONFIG") and not name.startswith("CL_DEVICE_SINGLE"):
            # clinfo shows only the bits the spec defines for half and double; CORRECTLY_ROUNDED_DIVIDE_SQRT is
            # a single-precision bit, which some drivers (PoCL) also set in DOUBLE_FP_CONFIG.
            ours_lower = [v for v in ours_lower if v != "correctly_rounded_divide_sqrt"]
        return sorted(set(ours_lower)) == sorted(set(tokens))
    if isinstance(ours, str):
        return _token(raw) == ours.lower() if raw.startswith("CL_") else ours.strip() == raw.strip()
    raise AssertionError(f"{name}: cannot compare {ours!r}")


@pytest.mark.opencl
def test_opencl_details_match_clinfo_raw(accel) -> None:
    by_name, platforms, loader = _clinfo_raw()
    taken: dict[tuple[str, str], int] = defaultdict(int)
    for device in _devices(accel, "opencl"):
        details = _info(accel, device["id"], "opencl")
        s = details["sections"]
        key = (s["platform"]["name"], s["device"]["name"])
        assert key in by_name, f"clinfo --raw shows no {key}; it shows {sorted(by_name)}"
        raw = by_name[key][taken[key]]
        taken[key] += 1
        compared = []
        for dotted, query in details["queries"].items():
            section, fact = dotted.split(".", 1)
            value = s[section][fact]
            if query not in raw or query in ("CL_DEVICE_EXTENSIONS",) or value is None:
                continue
            assert _same(value, raw[query], query), f"{device['id']} {dotted}: ours {value!r}, clinfo {raw[query]!r}"
            compared.append(dotted)
        assert len(compared) >= 40, f"{device['id']}: only {compared} compared with clinfo"
        for dotted, reason in details["not_reported"].items():
            query = details["queries"].get(dotted, "")
            if query.startswith("CL_DEVICE_"):
                assert query not in raw or not raw[query], f"{dotted} not reported ({reason}) but clinfo has it"
        assert set(s["extensions"]["device"]) == set(raw["CL_DEVICE_EXTENSIONS"].split())
        platform = next(p for p in platforms if p.get("CL_PLATFORM_NAME") == s["platform"]["name"])
        assert s["platform"]["icd_suffix"] == platform["CL_PLATFORM_ICD_SUFFIX_KHR"]
        assert s["platform"]["version"] == platform["CL_PLATFORM_VERSION"]
        if "cl_intel_required_subgroup_size" in s["extensions"]["device"]:
            assert s["subgroups"]["sub_group_sizes"] == [int(v) for v in raw["CL_DEVICE_SUB_GROUP_SIZES_INTEL"].split()]
        if "cl_khr_device_uuid" in s["extensions"]["device"]:
            assert s["device"]["uuid"] == raw["CL_DEVICE_UUID_KHR"]
        for key, name in (
            ("name", "NAME"),
            ("vendor", "VENDOR"),
            ("version", "VERSION"),
            ("opencl_version", "OCL_VERSION"),
        ):
            if (
                f"CL_ICDL_{name}" in loader
            ):  # clinfo's loader is the system's; ours is pyopencl's (the same ocl-icd here)
                ours = s["platform"][f"icd_loader_{key}"]
                assert ours is None or ours == loader[f"CL_ICDL_{name}"], (key, ours, loader)


@pytest.mark.opencl
def test_opencl_icd_library_is_the_vendors_file_library(accel) -> None:
    for device in _devices(accel, "opencl"):
        platform = _info(accel, device["id"], "opencl")["sections"]["platform"]
        if platform["icd_file"] is None:
            continue
        with open(platform["icd_file"], encoding="utf-8") as icd:
            named = icd.read().strip()
        assert os.path.basename(named) == os.path.basename(platform["icd_library"]) or os.path.realpath(
            named
        ) == os.path.realpath(platform["icd_library"])
        assert os.path.exists(platform["icd_library"]) and os.path.exists(platform["icd_loader_library"])


@pytest.mark.opencl
def test_opencl_query_the_driver_refuses_is_not_reported_with_its_reason(accel) -> None:
    seen = []
    for device in _devices(accel, "opencl"):
        details = _info(accel, device["id"], "opencl")
        if "cl_intel_required_subgroup_size" in details["sections"]["extensions"]["device"]:
            continue
        assert details["sections"]["subgroups"]["sub_group_sizes"] is None
        reason = details["not_reported"]["subgroups.sub_group_sizes"]
        assert "clGetDeviceInfo(CL_DEVICE_SUB_GROUP_SIZES_INTEL) returned CL_" in reason
        assert "cl_intel_required_subgroup_size" in reason
        text = _text(accel, device["id"], "opencl")
        row = next(line for line in text if line.strip().startswith("sub-group sizes"))
        assert row.split("sub-group sizes", 1)[1].strip() == f"not reported: {reason}"
        seen.append(device["id"])
    if not seen:
        pytest.skip("every OpenCL device here reports sub-group sizes (cl_intel_required_subgroup_size)")


# --- text -----------------------------------------------------------------------------------------------------


def _text(accel, device: str, provider: str) -> list[str]:
    proc = accel(["info", device], providers=[provider])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    return lines


def _check_text(lines: list[str], details: dict[str, Any], titles: list[str]) -> None:
    extensions = details["sections"]["extensions"]["device"]
    found = [
        line.split(" (")[0] for line in lines if line and not line.startswith(" ") and line.split(" (")[0] in titles
    ]
    assert found == titles
    start = lines.index(f"Extensions ({len(extensions)})")
    assert [line.strip() for line in lines[start + 1 : start + 1 + len(extensions)]] == extensions
    assert all(
        line.startswith("  ") and " " not in line.strip() for line in lines[start + 1 : start + 1 + len(extensions)]
    )
    assert not lines[start + 1 + len(extensions)].startswith("  ")  # the list ends with the section
    assert not any(extensions[0] in line and extensions[-1] in line for line in lines)  # never one long line
    summary = re.compile(rf"^extensions \({len(extensions)}\)\s+listed under Extensions below$")
    assert any(summary.match(line.strip()) for line in lines)
    for dotted, reason in details["not_reported"].items():
        assert any(line.endswith(f"not reported: {reason}") for line in lines), dotted


@pytest.mark.opencl
def test_opencl_text_has_clinfo_sections_and_one_extension_a_line(accel) -> None:
    for device in _devices(accel, "opencl"):
        details = _info(accel, device["id"], "opencl")
        lines = _text(accel, device["id"], "opencl")
        _check_text(lines, details, OPENCL_SECTIONS)
        compute = lines[lines.index("Compute") :]
        sizes = " x ".join(f"{v:,}" for v in details["sections"]["compute"]["max_work_item_sizes"])
        assert any(line.split()[:3] == ["max", "work-item", "sizes"] and line.endswith(sizes) for line in compute)
        clock = details["sections"]["compute"]["max_clock_mhz"]
        assert any(line.split()[:2] == ["max", "clock"] and line.endswith(f"{clock:,} MHz") for line in compute)


@pytest.mark.vulkan
def test_vulkan_text_has_sections_and_one_extension_a_line(accel) -> None:
    for device in _devices(accel, "vulkan"):
        details = _info(accel, device["id"], "vulkan")
        lines = _text(accel, device["id"], "vulkan")
        _check_text(lines, details, VULKAN_SECTIONS)
        subgroups = lines[lines.index("Subgroups") :]
        operations = ", ".join(details["sections"]["subgroups"]["supported_operations"])
        assert any(line.split()[:1] == ["supportedOperations"] and line.endswith(operations) for line in subgroups)


# --- Vulkan: vulkaninfo ---------------------------------------------------------------------------------------


def _vulkaninfo() -> tuple[str, str]:
    if shutil.which("vulkaninfo") is None:
        pytest.skip("vulkaninfo is not installed (Debian: vulkan-tools)")
    full = subprocess.run(["vulkaninfo"], capture_output=True, text=True, env=_tool_env(), timeout=120, check=True)
    summary = subprocess.run(
        ["vulkaninfo", "--summary"], capture_output=True, text=True, env=_tool_env(), timeout=120, check=True
    )
    return full.stdout, summary.stdout


def _vulkaninfo_blocks(text: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Per GPU (by deviceUUID), per structure (``VkPhysicalDeviceLimits``), each field's value: a string, or a
    list of strings for ``name: count = N`` lists."""
    gpus: dict[str, dict[str, dict[str, Any]]] = {}
    current: dict[str, dict[str, Any]] = {}
    block: dict[str, Any] = {}
    listing: list[str] | None = None
    for line in text.splitlines():
        if re.match(r"^GPU\d+:$", line):
            current = {}
            block = {}
            gpus[line] = current
            continue
        header = re.match(r"^(Vk\w+):$", line)
        if header:
            block = current.setdefault(header[1], {})
            listing = None
            continue
        field = re.match(r"^\t(\w+)\s*(?:=\s*(.*)|: count = \d+)$", line)
        if field:
            if field[2] is None:
                listing = block.setdefault(field[1], [])
            else:
                block[field[1]] = field[2].strip()
                listing = None
            continue
        item = re.match(r"^\t\t(\S+)$", line)
        if item and listing is not None:
            listing.append(item[1])
    by_uuid = {}
    for blocks in gpus.values():
        uuid = blocks.get("VkPhysicalDeviceIDProperties", {}).get("deviceUUID")
        if uuid:
            by_uuid[uuid] = blocks
    return by_uuid


def _summary(text: str) -> dict[str, dict[str, str]]:
    """vulkaninfo --summary's device rows, by deviceUUID."""
    devices: dict[str, dict[str, str]] = {}
    row: dict[str, str] = {}
    for line in text.splitlines():
        if re.match(r"^GPU\d+:$", line):
            row = {}
            continue
        field = re.match(r"^\t(\w+)\s*=\s*(.*)$", line)
        if field:
            row[field[1]] = field[2].strip()
            if field[1] == "deviceUUID":
                devices[field[2].strip()] = row
    return devices


def _vk_same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, bool):
        return theirs == ("true" if ours else "false")
    if isinstance(ours, int):
        first, *rest = str(theirs).split()
        try:
            return ours == int(first, 0)
        except ValueError:  # "0.0.1 (1)": a version with its raw number
            return bool(rest) and ours == int(rest[0].strip("()"), 0)
    if isinstance(ours, float):
        return abs(ours - float(theirs)) <= 1e-6 * max(1.0, abs(ours))
    if isinstance(ours, list) and all(isinstance(v, int) for v in ours):
        return ours == [int(v, 0) for v in theirs]
    if isinstance(ours, list):
        names = [re.sub(r"^(SHADER_STAGE_|SUBGROUP_FEATURE_)", "", t).removesuffix("_BIT").lower() for t in theirs]
        return sorted(names) == sorted(ours)
    # vulkaninfo adds the raw number ("1.3.230 (4206822)") and writes enumerants in full (PHYSICAL_DEVICE_TYPE_CPU)
    enumerant = (
        re.sub(r"^(PHYSICAL_DEVICE_TYPE_|DRIVER_ID_|SHADER_FLOAT_CONTROLS_INDEPENDENCE_)", "", str(theirs))
        .replace("_", " ")
        .lower()
    )
    return (
        str(theirs) in (str(ours), f"{ours} ({theirs.split(' (')[-1]}")
        or enumerant == str(ours).replace("_", " ").lower()
    )


@pytest.mark.vulkan
def test_vulkan_details_match_vulkaninfo(accel) -> None:
    full, summary = _vulkaninfo()
    blocks = _vulkaninfo_blocks(full)
    rows = _summary(summary)
    for device in _devices(accel, "vulkan"):
        details = _info(accel, device["id"], "vulkan")
        s = details["sections"]
        uuid = s["device"]["device_uuid"]
        assert uuid == device["uuid"] and uuid in blocks, f"vulkaninfo shows no GPU with deviceUUID {uuid}"
        theirs = blocks[uuid]
        compared = []
        for dotted, query in details["queries"].items():
            section, key = dotted.split(".", 1)
            struct, _, field = query.partition(".")
            value = s[section][key]
            if not field or value is None or "*" in field:
                continue
            sources = [theirs.get(struct, {})]
            if struct.startswith("VkPhysicalDeviceVulkan1"):  # vulkaninfo prints the promoted structures' names
                sources += [b for name, b in theirs.items() if name.endswith("Features")]
            answer = next((b[field] for b in sources if field in b), None)
            if answer is None:
                continue
            assert _vk_same(value, answer), f"{device['id']} {dotted}: ours {value!r}, vulkaninfo {answer!r}"
            compared.append(dotted)
        for key in ("maxComputeWorkGroupCount", "maxComputeWorkGroupSize", "maxComputeSharedMemorySize"):
            assert any(query.endswith(f".{key}") for dotted, query in details["queries"].items() if dotted in compared)
        for key in ("subgroup_size", "supported_stages", "supported_operations"):
            assert f"subgroups.{key}" in compared
        for key in ("shader_float64", "shader_int64", "shader_int16", "shader_float16", "shader_int8"):
            assert f"features.{key}" in compared
        assert len(compared) >= 40, compared
        row = rows[uuid]
        device_facts = s["device"]
        assert device_facts["api_version"] == row["apiVersion"]
        assert device_facts["driver_version"] == row["driverVersion"]
        assert device_facts["driver_name"] == row["driverName"] and device_facts["driver_info"] == row["driverInfo"]
        assert f"DRIVER_ID_{device_facts['driver_id']}" == row["driverID"]
        assert device_facts["conformance_version"] == row["conformanceVersion"]
        assert device_facts["driver_uuid"] == row["driverUUID"]
        assert device_facts["vendor_id"] == int(row["vendorID"], 16)
        heaps = re.findall(r"memoryHeaps\[\d+\]:\n\t\tsize\s+=\s+(\d+)", full)
        assert [h["size_bytes"] for h in s["memory"]["heaps"]] == [int(h) for h in heaps]
        types = re.findall(r"memoryTypes\[\d+\]:\n\t\theapIndex\s+=\s+(\d+)\n\t\tpropertyFlags = (0x[0-9a-f]+)", full)
        assert [t["heap_index"] for t in s["memory"]["types"]] == [int(h) for h, _ in types]
        bits = {"device_local": 1, "host_visible": 2, "host_coherent": 4, "host_cached": 8, "lazily_allocated": 16}
        for ours, (_, flags) in zip(s["memory"]["types"], types, strict=True):
            assert sum(bits.get(f, 0) for f in ours["flags"]) == int(flags, 16) & 0x1F


@pytest.mark.vulkan
def test_vulkan_icd_manifest_is_not_reported_with_the_reason(accel) -> None:
    for device in _devices(accel, "vulkan"):
        details = _info(accel, device["id"], "vulkan")
        assert details["sections"]["loader"]["icd_manifest"] is None
        assert "loader does not say" in details["not_reported"]["loader.icd_manifest"]


# --- docs/cli.md names every key --------------------------------------------------------------------------------


def _documented(api: str) -> dict[str, set[str]]:
    """The keys docs/cli.md lists per section for ``api`` (its "| API | `section` | keys |" table rows)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(rf"^\| {api} \| `(\w+)` \| (.*) \|$", text, flags=re.MULTILINE)
    assert rows, f"docs/cli.md has no key table for {api}"
    # a row's keys are its backquoted words outside parentheses (those explain a value: `CL_DEVICE_UUID_KHR`)
    return {section: set(re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", keys))) for section, keys in rows}


@pytest.mark.parametrize(
    ("provider", "api"),
    [
        pytest.param("opencl", "OpenCL", marks=pytest.mark.opencl),
        pytest.param("vulkan", "Vulkan", marks=pytest.mark.vulkan),
    ],
)
def test_docs_list_exactly_the_keys_of_each_section(accel, provider: str, api: str) -> None:
    documented = _documented(api)
    for device in _devices(accel, provider):
        sections = _info(accel, device["id"], provider)["sections"]
        assert {section: set(facts) for section, facts in sections.items()} == documented


# --- families without details ---------------------------------------------------------------------------------


def test_reference_device_has_no_driver_details_and_says_why(cli_env, runner: CliRunner, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")
    result = runner.invoke(main, ["info", "reference:0", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    validate("info", document)
    assert document["details"]["reported"] is False and document["details"]["sections"] == {}
    assert "reads no driver details" in document["details"]["reason"]
    text = runner.invoke(main, ["info", "reference:0"]).stdout.splitlines()
    assert text[-2:] == ["driver details (reference)", f"  not reported: {document['details']['reason']}"]


class _Family:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def device_details(self, entry: DeviceEntry) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_a_failing_or_odd_family_gives_no_details_and_the_reason() -> None:
    entry = DeviceEntry("mine", 0, "my device", bytes(16))
    details, reason = read_details(_Family(RuntimeError("clGetDeviceInfo exploded")), entry)
    assert details is None and reason == "device_details() raised RuntimeError: clGetDeviceInfo exploded"
    assert details_json(details, reason)["reported"] is False
    details, reason = read_details(_Family({"not": "details"}), entry)
    assert details is None and "returned dict, not DeviceDetails" in reason


def test_a_fact_not_reported_must_say_why_and_renders_with_it() -> None:
    with pytest.raises(ValueError, match="says no reason"):
        Fact("max_clock_mhz", "max clock", None)
    section = FactSection(
        "compute",
        "Compute",
        (
            Fact("max_clock_mhz", "max clock", 2600, "CL_DEVICE_MAX_CLOCK_FREQUENCY", "MHz"),
            Fact("sizes", "sizes", None, "CL_X", reason="clGetDeviceInfo(CL_X) returned CL_INVALID_VALUE"),
            Fact("local_memory_bytes", "local memory", 65536, "CL_DEVICE_LOCAL_MEM_SIZE", "bytes"),
        ),
    )
    details = DeviceDetails("test", (section,))
    document = details_json(details, "")
    assert document["sections"]["compute"] == {"max_clock_mhz": 2600, "sizes": None, "local_memory_bytes": 65536}
    assert document["not_reported"] == {"compute.sizes": "clGetDeviceInfo(CL_X) returned CL_INVALID_VALUE"}
    assert document["units"] == {"compute.max_clock_mhz": "MHz", "compute.local_memory_bytes": "bytes"}
    assert details_lines(details, "", "test") == [
        "Compute",
        "  max clock     2,600 MHz",
        "  sizes         not reported: clGetDeviceInfo(CL_X) returned CL_INVALID_VALUE",
        "  local memory  65,536 bytes (64 KiB)",
    ]


def test_a_device_that_reports_its_uuid_is_listed_under_it() -> None:
    """An OpenCL device that answers ``CL_DEVICE_UUID_KHR`` (clinfo shows it) is listed under that UUID, not a
    derived one (pyopencl cannot ask for it; Intel's CPU runtime was listed under a derived UUID until
    2026-12-05), and a device that does not answer it is marked derived."""
    import accelcore as ac

    by_name, _, _ = _clinfo_raw()
    checked = 0
    for entry in ac.devices():
        if entry.provider != "opencl":
            continue
        answers = by_name.get((entry.native["platform"], entry.name), [])
        reported = {a["CL_DEVICE_UUID_KHR"] for a in answers if a.get("CL_DEVICE_UUID_KHR", "").count("-") == 4}
        uuid_text = "-".join(entry.uuid.hex()[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))
        if reported:
            assert reported == {uuid_text}, (entry.device_id, reported, uuid_text)
            assert entry.native["uuid_source"] == "CL_DEVICE_UUID_KHR", entry.native
            checked += 1
        else:
            assert entry.native["uuid_source"].startswith("sha256("), entry.native
    if not checked:
        pytest.skip("no OpenCL device here reports CL_DEVICE_UUID_KHR")
