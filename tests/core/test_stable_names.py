"""Stable device names: a device's UUID does not depend on its enumeration index, the selector takes the names
users know (``lavapipe``), and ``accel devices`` shows an OpenCL device's platform.

The UUID check runs OpenCL discovery in child processes with ``OCL_ICD_VENDORS`` pointing at a folder of copies
of the ``.icd`` files this process's loader reads (the checkout's vendors folder, else the system's): once all of
them, then subsets (one ICD pointing at a missing library, as a broken install leaves it; one left out). Every
device found in a subset keeps the UUID of the full run although its index moved (rusticl: ``opencl:2`` →
``opencl:1`` when Intel's ``.icd`` is broken), and the child finds it again by that UUID.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from accelcore.devices.environment import apply_defaults
from accelcore.devices.opencl_vendors import system_vendors
from accelcore.devices.registry import DeviceEntry
from accelcore.devices.selector import SelectorError, select_many, select_one

apply_defaults()

VENDORS = Path(os.environ.get("OCL_ICD_VENDORS") or system_vendors())
"""The folder this process's ICD loader reads: the checkout's (with Intel's runtime) where it has one."""

CHILD = r"""
import json
import accelcore as ac
from accel_opencl.discovery import find_device
found = []
for entry in ac.devices("opencl") if any(e.provider == "opencl" for e in ac.devices()) else []:
    again = find_device(entry)  # a provider instance finds its device by the UUID
    found.append({"id": entry.device_id, "index": entry.index, "name": entry.name,
                  "platform": entry.native.get("platform", ""), "uuid": entry.uuid.hex(),
                  "source": entry.native.get("uuid_source", ""), "found_again": again.index})
print(json.dumps(found))
"""


def _icd_files() -> list[Path]:
    return sorted(VENDORS.glob("*.icd")) if VENDORS.is_dir() else []


def _discover(folder: Path) -> list[dict[str, object]]:
    env = {**os.environ, "OCL_ICD_VENDORS": str(folder), "ACCEL_PROVIDERS": "opencl"}
    env.pop("OCL_ICD_FILENAMES", None)
    done = subprocess.run(
        [sys.executable, "-P", "-c", CHILD], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: list[dict[str, object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _folder(tmp_path: Path, name: str, files: list[Path], broken: Path | None = None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for icd in files:
        shutil.copy(icd, folder / icd.name)
    if broken is not None:
        (folder / broken.name).write_text(str(tmp_path / "missing" / "libOpenCL-driver.so") + "\n")
    return folder


def _key(device: dict[str, object]) -> tuple[object, object]:
    return device["platform"], device["name"]


@pytest.fixture(scope="module")
def icd_platforms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, object]]]:
    """Per .icd file that offers devices: what discovery with that file alone finds."""
    files = _icd_files()
    alone: dict[str, list[dict[str, object]]] = {}
    base = tmp_path_factory.mktemp("icd-alone")
    for icd in files:
        found = _discover(_folder(base, icd.stem, [icd]))
        if found:
            alone[icd.name] = found
    if len(alone) < 2:
        pytest.skip(f"needs two OpenCL ICDs with devices in {VENDORS} (found {sorted(alone) or 'none'})")
    return alone


def test_uuids_survive_a_broken_or_missing_icd(
    icd_platforms: dict[str, list[dict[str, object]]], tmp_path: Path
) -> None:
    files = _icd_files()
    full = _discover(_folder(tmp_path, "all", files))
    by_key = {_key(d): d for d in full}
    assert len(by_key) == len(full), f"two devices answer the same: {full}"
    for device in full:
        assert device["found_again"] == device["index"], device
        if device["source"] != "CL_DEVICE_UUID_KHR":
            assert "index" not in str(device["source"]), device["source"]
    offering = [f for f in files if f.name in icd_platforms]
    moved = 0
    for gone in offering:
        others = [f for f in files if f != gone]
        for label, folder in (
            (f"{gone.stem}-broken", _folder(tmp_path, f"{gone.stem}-broken", others, broken=gone)),
            (f"{gone.stem}-removed", _folder(tmp_path, f"{gone.stem}-removed", others)),
        ):
            subset = _discover(folder)
            lost = {_key(d) for d in icd_platforms[gone.name]}
            assert {_key(d) for d in subset} == set(by_key) - lost, (label, subset)
            for device in subset:
                before = by_key[_key(device)]
                assert device["uuid"] == before["uuid"], (
                    f"{label}: {device['name']} ({device['platform']}) was {before['id']} uuid {before['uuid']}, "
                    f"is {device['id']} uuid {device['uuid']}"
                )
                assert device["found_again"] == device["index"], (label, device)
                moved += device["index"] != before["index"]
    assert moved, "no device changed its index: the subsets proved nothing"


# ----------------------------------------------------------------------------- the selector's aliases


@dataclass(frozen=True)
class _Dev:
    provider: str
    index: int
    name: str
    uuid: bytes
    native: dict[str, str] = field(default_factory=dict)


LAVAPIPE = _Dev("vulkan", 0, "llvmpipe (LLVM 15.0.6, 256 bits)", bytes(16), {"aliases": "lavapipe"})
RUSTICL = _Dev("opencl", 2, "llvmpipe (LLVM 15.0.6, 256 bits)", bytes(range(16)), {"tag": "rusticl"})
TWO_NAMES = _Dev("vulkan", 1, "AMD Radeon", bytes(range(1, 17)), {"aliases": "radv, amd-open"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("vulkan:*lavapipe*", [LAVAPIPE]),
        ("VULKAN:*LAVAPIPE*", [LAVAPIPE]),
        ("lavapipe", [LAVAPIPE]),
        ("*lavapipe*", [LAVAPIPE]),
        ("vulkan:*llvmpipe*", [LAVAPIPE]),  # the driver's own device name still matches
        ("*rusticl*", [RUSTICL]),
        ("amd-open", [TWO_NAMES]),
        ("vulkan:radv", [TWO_NAMES]),
    ],
)
def test_globs_match_the_aliases_users_know(text: str, expected: list[_Dev]) -> None:
    assert select_many([text], [RUSTICL, LAVAPIPE, TWO_NAMES]) == expected


def test_an_alias_is_no_catch_all() -> None:
    with pytest.raises(SelectorError, match="matches no device"):
        select_one("opencl:*lavapipe*", [RUSTICL, LAVAPIPE])


def test_the_lavapipe_device_has_its_alias_and_is_selected_by_it() -> None:
    import accelcore as ac

    lavapipe = [e for e in ac.devices() if e.provider == "vulkan" and e.name.startswith("llvmpipe")]
    if not lavapipe:
        pytest.skip("no lavapipe (Mesa llvmpipe Vulkan) device here")
    assert lavapipe[0].native.get("aliases") == "lavapipe"
    assert ac.devices("vulkan:*lavapipe*") == lavapipe
    with ac.open("vulkan:*lavapipe*") as dev:
        assert dev.entry == lavapipe[0]


def test_vulkan_driver_ids_map_to_their_common_names() -> None:
    pytest.importorskip("vulkan")
    from accel_vulkan._binding import vk
    from accel_vulkan.family import driver_aliases

    binding = vk()
    assert driver_aliases(binding.VK_DRIVER_ID_MESA_LLVMPIPE) == "lavapipe"
    assert driver_aliases(binding.VK_DRIVER_ID_MESA_RADV) == "radv"
    assert driver_aliases(0) == ""


# ----------------------------------------------------------------------------- accel devices


def test_accel_devices_shows_each_opencl_devices_platform() -> None:
    import accelcore as ac

    opencl: list[DeviceEntry] = [e for e in ac.devices() if e.provider == "opencl"]
    if not opencl:
        pytest.skip("no OpenCL device here")
    env = {**os.environ, "COLUMNS": "400", "ACCEL_PROVIDERS": "opencl,vulkan"}
    done = subprocess.run(
        [sys.executable, "-m", "accel_cli", "devices"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "┃ ID" in line)
    assert "Platform" in header
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.startswith("│ ")}
    for entry in opencl:
        platform = entry.native["platform"]
        assert platform and platform in rows[entry.device_id], (entry.device_id, platform, rows[entry.device_id])
    json_done = subprocess.run(
        [sys.executable, "-m", "accel_cli", "devices", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    listed = {d["id"]: d for d in json.loads(json_done.stdout)["devices"]}
    for entry in opencl:
        native = listed[entry.device_id]["native"]
        assert native["platform"] == entry.native["platform"] and "platform_vendor" in native
