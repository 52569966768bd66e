"""Intel's OpenCL CPU runtime is registered per checkout, so clones on one machine do not fight.

``make intel-icd`` writes the registration into the venv's vendors folder (``.venv/etc/accelcore/OpenCL/vendors``),
never into /etc; ``accel`` and ``accelcore.devices()`` point ``OCL_ICD_VENDORS`` at it (unless set), and keep links
there to the system's ICDs. Checkouts are simulated by venvs made here, whose interpreters import this one's packages;
the system's vendors folder by a copy of it that ``OPENCL_VENDOR_PATH`` names (the ICD loader's own variable for
its default folder), holding no legacy ``accelcore-intel-cpu.icd`` unless a test puts one there. The real ICD
loader enumerates in every child; Intel's device is expected where this interpreter's prefix has the runtime.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from accelcore.devices.opencl_vendors import INTEL_ICD, system_vendors

from .test_docs import make_environment

pytestmark = pytest.mark.opencl

ROOT = Path(__file__).resolve().parents[2]
INTEL_LIB = Path(sys.prefix, "lib", "libintelocl.so")
needs_intel = pytest.mark.skipif(not INTEL_LIB.is_file(), reason=f"no Intel OpenCL CPU runtime here ({INTEL_LIB})")

LIST = """
import json, os
import accelcore as ac
tags = sorted(e.native.get("tag", "") for e in ac.devices() if e.provider == "opencl")
print(json.dumps({"tags": tags, "vendors": os.environ.get("OCL_ICD_VENDORS")}))
"""


def _venv(path: Path, registers: Path | None) -> Path:
    """A venv at ``path`` importing this interpreter's packages; with ``registers``, the Intel registration
    ``make intel-icd`` writes there, naming that library."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(path), "platbase": str(path)}))
    (purelib / "accelcore-tests.pth").write_text(f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
    if registers is not None:
        _vendors(path).mkdir(parents=True)
        (_vendors(path) / INTEL_ICD).write_text(f"{registers}\n")
    return path


def _vendors(venv: Path) -> Path:
    return venv / "etc" / "accelcore" / "OpenCL" / "vendors"


def _links(folder: Path) -> dict[str, str]:
    return {p.name: os.readlink(p) for p in folder.iterdir() if p.is_symlink()}


def _env(system: Path, **extra: str) -> dict[str, str]:
    """This environment for a child: the system's ICDs are ``system``'s, OCL_ICD_VENDORS as ``extra`` says."""
    env = {k: v for k, v in os.environ.items() if k != "OCL_ICD_VENDORS"}
    return {**env, "OPENCL_VENDOR_PATH": str(system), "ACCEL_PROVIDERS": "opencl", **extra}


def _python(venv: Path, env: dict[str, str]) -> dict[str, Any]:
    """What ``import accelcore; ac.devices()`` finds in a child of ``venv``: OpenCL tags, OCL_ICD_VENDORS after."""
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", LIST], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _cli(venv: Path, env: dict[str, str]) -> list[str]:
    """The OpenCL tags ``accel devices --json`` lists in a child of ``venv``."""
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "accel_cli", "devices", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 4), done.stderr[-3000:]
    return sorted(d["native"].get("tag", "") for d in json.loads(done.stdout)["devices"])


def _copy_system(folder: Path, legacy: str | None = None) -> Path:
    """``folder`` holding copies of the system's ICDs but a legacy registration (or one naming ``legacy``)."""
    folder.mkdir()
    for icd in sorted(system_vendors().glob("*.icd")):
        if icd.name != INTEL_ICD:
            shutil.copy(icd, folder / icd.name)
    if legacy is not None:
        (folder / INTEL_ICD).write_text(f"{legacy}\n")
    return folder


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _copy_system(tmp_path_factory.mktemp("os") / "vendors")


@pytest.fixture(scope="module")
def system_tags(system: Path) -> list[str]:
    """What the system's ICDs alone offer (OCL_ICD_VENDORS set: accelcore leaves it alone)."""
    tags: list[str] = _python(Path(sys.prefix), _env(system, OCL_ICD_VENDORS=str(system)))["tags"]
    if not tags:
        pytest.skip(f"no OpenCL device from the system's ICDs ({sorted(p.name for p in system.iterdir())})")
    for name, tag in (("pocl.icd", "pocl"), ("rusticl.icd", "rusticl")):  # installed by make setup
        if (system / name).exists():
            assert tag in tags, (name, tags)
    return tags


@needs_intel
def test_two_checkouts_each_list_their_intel_runtime_and_removing_one_breaks_nothing(
    tmp_path: Path, system: Path, system_tags: list[str]
) -> None:
    """Both registrations name this interpreter's runtime (no 700 MB copy): what is shown is that each checkout's
    processes find their own registration, with the system's drivers beside it, and outlive the other's tree."""
    first = _venv(tmp_path / "first" / ".venv", INTEL_LIB)
    second = _venv(tmp_path / "second" / ".venv", INTEL_LIB)
    expected = sorted([*system_tags, "intel"])
    assert _cli(first, _env(system)) == expected
    assert _python(second, _env(system)) == {"tags": expected, "vendors": str(_vendors(second))}
    assert _links(_vendors(second)) == {p.name: str(p) for p in system.glob("*.icd")}
    shutil.rmtree(tmp_path / "first")
    assert _cli(second, _env(system)) == expected
    assert _python(second, _env(system))["tags"] == expected


@needs_intel
def test_a_legacy_global_registration_is_never_loaded(tmp_path: Path, system_tags: list[str]) -> None:
    """A system accelcore-intel-cpu.icd (an older version's, another clone's) is not linked: Intel's runtime
    loads once, from the checkout's own registration, and not at all when that names a missing library."""
    legacy_system = _copy_system(tmp_path / "os-with-legacy", legacy=str(INTEL_LIB))
    checkout = _venv(tmp_path / "checkout" / ".venv", INTEL_LIB)
    assert _python(checkout, _env(legacy_system))["tags"] == sorted([*system_tags, "intel"])
    assert INTEL_ICD not in _links(_vendors(checkout))
    (_vendors(checkout) / INTEL_ICD).write_text(f"{tmp_path / 'removed' / 'libintelocl.so'}\n")
    assert _cli(checkout, _env(legacy_system)) == system_tags


def test_a_user_set_ocl_icd_vendors_is_respected(tmp_path: Path, system: Path, system_tags: list[str]) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    if not (system / "pocl.icd").exists():
        pytest.skip("no pocl.icd here")
    shutil.copy(system / "pocl.icd", mine)
    checkout = _venv(tmp_path / "checkout" / ".venv", INTEL_LIB)
    assert _python(checkout, _env(system, OCL_ICD_VENDORS=str(mine))) == {"tags": ["pocl"], "vendors": str(mine)}
    assert _cli(checkout, _env(system, OCL_ICD_VENDORS=str(mine))) == ["pocl"]
    assert _links(_vendors(checkout)) == {}, "the checkout's folder is not even refreshed"


def test_a_system_icd_installed_or_removed_after_setup_shows_at_once(
    tmp_path: Path, system: Path, system_tags: list[str]
) -> None:
    """No make in between: the links are refreshed by every process that applies the defaults. The checkout's
    registration names a missing library here, so this holds with or without Intel's runtime."""
    later = tmp_path / "os-later"
    later.mkdir()
    checkout = _venv(tmp_path / "checkout" / ".venv", tmp_path / "absent" / "libintelocl.so")
    assert _python(checkout, _env(later)) == {"tags": [], "vendors": str(_vendors(checkout))}
    for icd in system.glob("*.icd"):  # "installed"
        shutil.copy(icd, later)
    assert _cli(checkout, _env(later)) == system_tags
    assert _links(_vendors(checkout)) == {p.name: str(p) for p in later.glob("*.icd")}
    for icd in later.glob("*.icd"):  # "removed"
        icd.unlink()
    assert _python(checkout, _env(later))["tags"] == []
    assert _links(_vendors(checkout)) == {}


def test_a_prefix_without_a_registration_changes_nothing(tmp_path: Path, system: Path, system_tags: list[str]) -> None:
    """A plain interpreter (a venv without Intel's runtime, a system Python): OCL_ICD_VENDORS stays unset and the
    loader reads its default folder; nothing is created in the prefix."""
    plain = _venv(tmp_path / "plain", None)
    assert _python(plain, _env(system)) == {"tags": system_tags, "vendors": None}
    assert not (plain / "etc").exists()


def _read_only_mount_works(folder: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && ! touch {folder}/probe"
    done = subprocess.run(["unshare", "-m", "sh", "-c", probe], capture_output=True, timeout=30, check=False)
    return done.returncode == 0 and not (folder / "probe").exists()


def test_a_read_only_checkout_falls_back_to_a_private_folder(
    tmp_path: Path, system: Path, system_tags: list[str]
) -> None:
    """The venv's folder mounted read-only (as a venv installed by another user is to this one) and stale: the
    child links the system's ICDs and the registration in a private folder of the temporary directory."""
    checkout = _venv(tmp_path / "checkout" / ".venv", INTEL_LIB)
    folder = _vendors(checkout)
    if not _read_only_mount_works(folder):
        pytest.skip("no read-only bind mount here (unshare -m needs CAP_SYS_ADMIN)")
    script = f'mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && exec "$0" -c "$1"'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(checkout / "bin" / "python"), LIST],
        env=_env(system),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    private = Path(found["vendors"])
    try:
        assert private.parent == Path(tempfile.gettempdir()) and private.name.startswith("accelcore-opencl-vendors-")
        assert found["tags"] == sorted([*system_tags, *(["intel"] if INTEL_LIB.is_file() else [])])
        assert _links(private) == {INTEL_ICD: str(folder / INTEL_ICD)} | {p.name: str(p) for p in system.glob("*.icd")}
        assert _links(folder) == {}, "nothing was written into the read-only folder"
    finally:
        shutil.rmtree(private, ignore_errors=True)


# ----------------------------------------------------------------------------- make intel-icd


def test_make_intel_icd_writes_nothing_under_etc() -> None:
    done = subprocess.run(
        ["make", "-n", "intel-icd"], cwd=ROOT, env=make_environment(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    registration = f"{_vendors(ROOT / '.venv') / INTEL_ICD}"
    assert f"> {registration}.tmp" in done.stdout, done.stdout
    for line in done.stdout.splitlines():
        if "/etc/OpenCL" in line:
            assert not any(word in line for word in ("tee", ">", "mkdir", "ln ", "cp ", "mv ")), line


@pytest.mark.parametrize("legacy", ["none", "this-checkout", "missing-library", "other-checkout", "no-runtime"])
def test_make_intel_icd_registers_in_the_venv_and_migrates_a_legacy_file(tmp_path: Path, legacy: str) -> None:
    """A real ``make intel-icd`` on a venv made here, with OPENCL_VENDOR_PATH as the system's folder. A legacy
    registration is removed when it names this checkout's library or a missing one, else left with a note."""
    if shutil.which("make") is None:
        pytest.skip("no make here")
    venv = _venv(tmp_path / ".venv", None)
    lib = venv / "lib" / "libintelocl.so"
    if legacy != "no-runtime":
        lib.write_bytes(b"")  # make only checks that it exists
    other = tmp_path / "other" / ".venv" / "lib" / "libintelocl.so"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"")
    named = {"this-checkout": lib, "missing-library": tmp_path / "gone" / "libintelocl.so", "other-checkout": other}
    system = _copy_system(tmp_path / "os", legacy=str(named[legacy]) if legacy in named else None)
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    (stamps / "venv").touch()
    later = time.time() + 60
    os.utime(stamps / "venv", (later, later))  # newer than pyproject.toml and the venv: no pip run
    env = {**make_environment(), "OPENCL_VENDOR_PATH": str(system)}
    command = ["make", "--no-print-directory", "intel-icd", f"VENV={venv}", f"STAMPS={stamps}"]

    first = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 0, first.stdout + first.stderr
    registration = _vendors(venv) / INTEL_ICD
    if legacy == "no-runtime":
        assert not registration.exists() and "note: no Intel OpenCL CPU device" in first.stdout, first.stdout
    else:
        assert registration.read_text() == f"{lib}\n", first.stdout
        assert f"registering Intel's OpenCL CPU runtime: {registration} -> {lib}" in first.stdout
        assert _links(_vendors(venv)) == {p.name: str(p) for p in system.glob("*.icd") if p.name != INTEL_ICD}
    kept = legacy == "other-checkout"
    assert (system / INTEL_ICD).exists() == kept, first.stdout
    if legacy in named:
        assert ("note: left" in first.stdout) == kept and ("removing" in first.stdout) != kept, first.stdout

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "registering" not in again.stdout and "removing" not in again.stdout, again.stdout
