"""The committed corpus: manifest drift, reproducible rebuilds, spirv-val, specs, references, standard target."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from accelcore import AccessMode, BackendError, ErrorKind, MemoryDomain, TargetIdentity
from accelcore.conformance.corpus import (
    KERNELS,
    SENTINEL,
    SHIPPED_KINDS,
    SPIN_MAX_ITERATIONS,
    STANDARD_RESIDENT_BYTES,
    KernelCase,
    compare,
    corpus_root,
    kernel_spec,
    load_module,
    load_package,
    make_case,
    matmul_shape,
    module_path,
    spin_affine,
    spin_case,
    standard_target,
)
from accelcore.kernels.package import ModuleKind, format_for
from accelcore.kernels.package_codec import parse_package

ROOT = corpus_root()
REPO = ROOT.parent
MANIFEST = json.loads((ROOT / "manifest.json").read_text())
OUTPUTS = {entry["path"]: entry for entry in MANIFEST["outputs"]}
SUFFIX = {ModuleKind.SPIRV_VULKAN: "vk.spv", ModuleKind.SPIRV_OPENCL: "cl.spv", ModuleKind.OPENCL_SOURCE: "cl"}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- manifest and drift


def test_manifest_lists_every_kernel_in_every_form() -> None:
    for kernel in KERNELS:
        assert (ROOT / "src" / "glsl" / f"{kernel}.comp").is_file()
        assert (ROOT / "src" / "opencl" / f"{kernel}.cl").is_file()
        for path in (f"spirv/{kernel}.vk.spv", f"spirv/{kernel}.cl.spv"):
            assert path in OUTPUTS
        for suffix in ("vk.spv", "cl.spv", "cl"):
            assert f"packages/{kernel}.{suffix}.kpkg" in OUTPUTS
    listed = {path for path in OUTPUTS}
    on_disk = {f"{folder}/{p.name}" for folder in ("spirv", "packages") for p in (ROOT / folder).iterdir()}
    assert on_disk == listed, "files in artifacts/ and manifest.json disagree"
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "src").rglob("*") if p.is_file()}
    used = {s["path"] for entry in MANIFEST["outputs"] for s in entry["sources"]}
    assert sources <= used, "a source file is not built by any manifest entry"


@pytest.mark.parametrize("path", sorted(OUTPUTS))
def test_no_drift_between_files_and_manifest(path: str) -> None:
    entry = OUTPUTS[path]
    assert sha256(ROOT / path) == entry["sha256"], f"{path} changed; rerun tools/build_artifacts.py"
    assert (ROOT / path).stat().st_size == entry["bytes"]
    for source in entry["sources"]:
        assert sha256(ROOT / source["path"]) == source["sha256"], (
            f"{source['path']} changed without rebuilding {path}; rerun tools/build_artifacts.py"
        )
    assert entry["commands"], "every output records the exact command that built it"
    for tool_name in ("glslangValidator", "clang-15", "llvm-spirv-15"):
        assert MANIFEST["tools"][tool_name], f"manifest records no version for {tool_name}"


def _build_artifacts(*args: str) -> subprocess.CompletedProcess[str]:
    """``tools/build_artifacts.py ARGS`` in a child process, its output captured."""
    command = [sys.executable, str(REPO / "tools" / "build_artifacts.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_build_script_hash_check_passes() -> None:
    done = _build_artifacts("--hashes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout


def test_build_script_hash_check_detects_drift(tmp_path: Path) -> None:
    copy = tmp_path / "artifacts"
    shutil.copytree(ROOT, copy)
    (copy / "src" / "glsl" / "saxpy.comp").write_text("// edited\n")
    (copy / "packages" / "spin.cl.kpkg").write_bytes(b"stale")
    done = _build_artifacts("--hashes", "--root", str(copy))
    assert done.returncode == 1
    assert "src/glsl/saxpy.comp: changed since spirv/saxpy.vk.spv was built" in done.stdout
    assert "packages/spin.cl.kpkg: sha256 differs" in done.stdout


def test_build_script_full_rebuild_check(tool: Callable[[str], str]) -> None:
    for name in ("glslangValidator", "clang-15", "llvm-spirv-15"):
        tool(name)
        if not same_tool(name):
            pytest.skip(f"installed {name} differs from the one recorded in manifest.json ({MANIFEST['tools'][name]})")
    done = _build_artifacts("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout


def same_tool(name: str) -> bool:
    version_line = subprocess.run([name, "--version"], capture_output=True, text=True, check=False)
    recorded = MANIFEST["tools"][name]
    return recorded in (version_line.stdout + version_line.stderr)


@pytest.mark.parametrize("path", sorted(p for p in OUTPUTS if p.startswith("spirv/")))
def test_committed_spirv_rebuilds_bit_for_bit(path: str, tool: Callable[[str], str], tmp_path: Path) -> None:
    entry = OUTPUTS[path]
    tools = ["glslangValidator"] if path.endswith(".vk.spv") else ["clang-15", "llvm-spirv-15"]
    for name in tools:
        tool(name)
        if not same_tool(name):
            pytest.skip(f"installed {name} differs from the one recorded in manifest.json ({MANIFEST['tools'][name]})")
    shutil.copytree(ROOT / "src", tmp_path / "src")
    (tmp_path / "spirv").mkdir()
    for command in entry["commands"]:
        done = subprocess.run(command.split(), cwd=tmp_path, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
    assert (tmp_path / path).read_bytes() == (ROOT / path).read_bytes(), f"{path} is not reproducible"


@pytest.mark.parametrize("path", sorted(p for p in OUTPUTS if p.startswith("spirv/")))
def test_spirv_val_accepts_every_committed_module(path: str, tool: Callable[[str], str]) -> None:
    validator = tool("spirv-val")
    env = ["--target-env", "vulkan1.1"] if path.endswith(".vk.spv") else []
    done = subprocess.run([validator, *env, str(ROOT / path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- packages against specs


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("kind", SHIPPED_KINDS, ids=lambda k: k.name)
def test_package_matches_spec_module_and_manifest(kernel: str, kind: ModuleKind) -> None:
    spec = kernel_spec(kernel)
    pkg = parse_package(load_package(kernel, kind))
    assert pkg.module_kind is kind
    assert pkg.entry_point == spec.entry_point(kind)
    assert pkg.local_size == spec.local_size
    assert pkg.bindings == spec.bindings
    assert pkg.dispatch == spec.dispatch
    assert pkg.target == TargetIdentity.any()
    assert pkg.module == load_module(kernel, kind) == module_path(kernel, kind).read_bytes()
    recorded = OUTPUTS[f"packages/{kernel}.{SUFFIX[kind]}.kpkg"]["package"]
    assert recorded["entry_point"] == pkg.entry_point
    assert [b["access"] for b in recorded["bindings"]] == [b.access.name for b in pkg.bindings]


def test_opencl_sources_name_the_kernel_and_keep_the_argument_convention() -> None:
    for kernel in KERNELS:
        spec = kernel_spec(kernel)
        source = load_module(kernel, ModuleKind.OPENCL_SOURCE).decode()
        match = re.search(rf"void\s+{spec.opencl_entry}\s*\(([^)]*)\)", source)
        assert match, f"{kernel}.cl has no kernel {spec.opencl_entry}"
        params = [p.strip() for p in match.group(1).split(",")]
        for binding in spec.bindings:
            param = params[binding.native_index]
            assert "__global" in param
            assert ("const" in param) == (binding.access is AccessMode.READ), param
        if spec.dispatch.count_argument != 0xFFFFFFFF:
            assert params[spec.dispatch.count_argument].startswith("const uint")


def test_unknown_kernel_and_unshipped_kind(raises_kind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="known: conformance"):
        load_package("nope", ModuleKind.SPIRV_VULKAN)
    with raises_kind(ErrorKind.UNSUPPORTED, match="built per device"):
        load_package("conformance", ModuleKind.OPENCL_BINARY)
    with raises_kind(ErrorKind.UNSUPPORTED, match="built per device"):
        standard_target(ModuleKind.OPENCL_BINARY)


def test_corpus_location_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raises_kind) -> None:
    monkeypatch.setenv("ACCELCORE_ARTIFACTS", str(tmp_path))
    with raises_kind(ErrorKind.UNSUPPORTED, match="ACCELCORE_ARTIFACTS"):
        load_package("conformance", ModuleKind.SPIRV_VULKAN)
    shutil.copytree(ROOT, tmp_path / "copy")
    monkeypatch.setenv("ACCELCORE_ARTIFACTS", str(tmp_path / "copy"))
    assert corpus_root() == tmp_path / "copy"
    assert load_package("spin", ModuleKind.OPENCL_SOURCE) == (ROOT / "packages" / "spin.cl.kpkg").read_bytes()


# --------------------------------------------------------------------------- references


@pytest.mark.parametrize("kernel", KERNELS)
def test_cases_are_deterministic_and_seeded(kernel: str) -> None:
    one, again, other = make_case(kernel, 300, seed=1), make_case(kernel, 300, seed=1), make_case(kernel, 300, seed=2)
    for slot in one.initial:
        assert one.initial_bytes(slot) == again.initial_bytes(slot)
    assert any(one.initial_bytes(s) != other.initial_bytes(s) for s in one.initial)
    for slot, expected in one.expected.items():
        assert compare(one, slot, expected.tobytes()) is None
        wrong = bytearray(expected.tobytes())
        wrong[len(wrong) // 2] ^= 0x40
        assert compare(one, slot, bytes(wrong)) is not None
        assert compare(one, slot, expected.tobytes()[:-4]) is not None
    spec = kernel_spec(kernel)
    assert set(one.initial) == {b.slot for b in spec.bindings}
    for binding in spec.bindings:
        if binding.access is AccessMode.WRITE:
            assert np.all(one.initial[binding.slot].view(np.uint32) == SENTINEL)


def test_reference_values_by_hand() -> None:
    case = make_case("intops", 4, seed=5)
    a, b = (int(x) for x in case.initial[0][:1]), (int(x) for x in case.initial[1][:1])
    (av,), (bv,) = a, b
    got = [int(x) for x in case.expected[2][:4]]
    mask = 0xFFFFFFFF
    shift = ((av << (bv & 31)) & mask) ^ (av >> ((bv >> 5) & 31))
    assert got == [(av + bv) & mask, (av * bv) & mask, av ^ bv, shift]
    reduce = make_case("reduce", 130, seed=1)
    values = [int(x) for x in reduce.initial[0]]
    assert [int(x) for x in reduce.expected[1]] == [
        sum(values[0:64]) & mask,
        sum(values[64:128]) & mask,
        sum(values[128:130]) & mask,
    ]
    histogram = make_case("histogram", 500)
    assert int(histogram.expected[1].sum()) == 500
    m, n, k = matmul_shape(1024)
    assert (m, n, k) == (32, 32, 35)


def test_spin_closed_form_matches_the_loop() -> None:
    for iterations in (0, 1, 2, 7, 100):
        case = spin_case(5, iterations)
        for index in range(5):
            x = (index * 2654435761 + 1) & 0xFFFFFFFF
            for _ in range(iterations):
                x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
            assert int(case.expected[1][index]) == x
    assert spin_affine(SPIN_MAX_ITERATIONS + 12345) == spin_affine(SPIN_MAX_ITERATIONS)


def test_ulp_tolerance_of_float_kernels() -> None:
    case = make_case("saxpy", 64)
    assert case.ulp_tolerance == 1
    expected = case.expected[2]
    one_ulp = np.nextafter(expected, np.float32(np.inf)).astype(np.float32)
    assert compare(case, 2, one_ulp.tobytes()) is None
    two_ulp = np.nextafter(one_ulp, np.float32(np.inf)).astype(np.float32)
    assert compare(case, 2, two_ulp.tobytes()) is not None
    exact = make_case("matmul", 100)
    assert exact.ulp_tolerance == 0
    nudged = exact.expected[2].copy()
    nudged[3] = np.nextafter(nudged[3], np.float32(np.inf))
    assert compare(exact, 2, nudged.tobytes()) is not None
    signed_zero = KernelCase("matmul", 2, {}, {0: np.array([0.0, 1.5], dtype=np.float32)}, 0)
    assert compare(signed_zero, 0, np.array([-0.0, 1.5], dtype=np.float32).tobytes()) is None
    assert compare(signed_zero, 0, np.array([np.nan, 1.5], dtype=np.float32).tobytes()) is not None


def test_make_case_rejects_bad_sizes(raises_kind) -> None:
    for bad in (0, -1, 1 << 27, 2.0, True):
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            make_case("conformance", bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- standard target


@pytest.mark.parametrize("kind", SHIPPED_KINDS, ids=lambda k: k.name)
def test_standard_target(kind: ModuleKind) -> None:
    target = standard_target(kind, 256, domain=MemoryDomain.DEVICE)
    assert target.format == format_for(kind)
    assert target.target == TargetIdentity.any()
    assert 0 < target.resident_bytes == STANDARD_RESIDENT_BYTES < 1 << 32
    pkg = parse_package(target.artifact)
    assert pkg.module_kind is kind
    read, write = target.fixtures
    assert (read.slot, read.access, write.slot, write.access) == (0, AccessMode.READ, 1, AccessMode.WRITE)
    assert read.domain is write.domain is MemoryDomain.DEVICE
    assert len(read.initial) == len(write.initial) == 256 * 4
    assert read.expected == read.initial, "the input must come back unchanged"
    assert write.initial == SENTINEL.to_bytes(4, "little") * 256
    case = make_case("conformance", 256)
    assert write.expected == case.expected_bytes(1) != write.initial


def test_standard_target_with_a_provider_artifact() -> None:
    own = b"provider-built package"
    target = standard_target(ModuleKind.OPENCL_BINARY, 64, artifact=own, target=TargetIdentity((1,) + (0,) * 11))
    assert target.artifact == own and target.format == format_for(ModuleKind.OPENCL_BINARY)
    assert target.target.words[0] == 1


def test_kernel_case_is_a_value() -> None:
    case = make_case("spin", 10)
    assert isinstance(case, KernelCase)
    with pytest.raises(AttributeError):
        case.kernel = "other"  # type: ignore[misc]


def test_errors_are_backend_errors() -> None:
    with pytest.raises(BackendError):
        kernel_spec("")
