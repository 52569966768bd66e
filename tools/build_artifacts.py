#!/usr/bin/env python3
"""Regenerate the kernel corpus in artifacts/ and its manifest, or check it for drift.

    python tools/build_artifacts.py            # rebuild spirv/, packages/ and manifest.json
    python tools/build_artifacts.py --check    # rebuild into a temporary folder, compare, exit 1 on drift
    python tools/build_artifacts.py --hashes   # only compare files with manifest.json (no tools needed)

Every build command runs with artifacts/ as its working directory and only
relative paths, so the recorded command is exactly what reproduces the file.
GLSL → Vulkan SPIR-V: glslangValidator (target vulkan1.1). OpenCL C → OpenCL
SPIR-V: clang-15 (spir64, OpenCL C 1.2, -O0: llvm-spirv 15 cannot translate
the `freeze` instructions -O2 emits, and -O1 output fails spirv-val) then
llvm-spirv-15. Packages: accelcore.kernels.package_codec.write_package over the
module and accelcore.conformance.corpus.kernel_spec; the argument kernels
(accelcore.conformance.corpus.ARGUMENT_KERNELS, each for its own module kinds only) are
packed by accelcore.conformance.corpus.argument_package (accelcore.kernels.pack.pack_module) with
their recorded values, and their manifest entries describe the written package.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from accelcore.conformance.corpus import (  # noqa: E402
    ARGUMENT_KERNELS,
    KERNELS,
    SHIPPED_KINDS,
    argument_package,
    argument_spec,
    argument_values,
    kernel_spec,
)
from accelcore.kernels.package import ArgumentKind, KernelPackage, ModuleKind  # noqa: E402
from accelcore.kernels.package_codec import parse_package, write_package  # noqa: E402
from accelcore.kernels.values import decode_value  # noqa: E402

MANIFEST_FORMAT = 1
GLSL_TARGET_ENV = "vulkan1.1"

TOOLS = {
    "glslangValidator": ["glslangValidator", "--version"],
    "clang-15": ["clang-15", "--version"],
    "llvm-spirv-15": ["llvm-spirv-15", "--version"],
}

PACKAGE_SUFFIX = {
    ModuleKind.SPIRV_VULKAN: "vk.spv",
    ModuleKind.SPIRV_OPENCL: "cl.spv",
    ModuleKind.OPENCL_SOURCE: "cl",
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tool_version(name: str) -> str | None:
    if shutil.which(name) is None:
        return None
    done = subprocess.run(TOOLS[name], capture_output=True, text=True, check=False)
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    if name == "llvm-spirv-15":
        lines = [line for line in lines if "version" in line.lower()] or lines
    return lines[0] if lines else "unknown"


@dataclass
class Output:
    path: str
    kind: str
    sources: list[str]
    commands: list[list[str]]
    tool: str
    package: dict[str, object] | None = None
    argument_kernel: str | None = None
    """For an argument kernel's package: its name; the manifest's package fields are read back from the file."""


def package_spec(name: str, kind: ModuleKind) -> dict[str, object]:
    """The package fields recorded in the manifest (the kernel spec of accelcore.conformance.corpus)."""
    spec = kernel_spec(name)
    return {
        "module_kind": kind.name,
        "entry_point": spec.entry_point(kind),
        "local_size": list(spec.local_size),
        "bindings": [
            {"slot": b.slot, "native_index": b.native_index, "access": b.access.name, "element_size": b.element_size}
            for b in spec.bindings
        ],
        "dispatch": {
            "kind": spec.dispatch.kind.name,
            "groups": list(spec.dispatch.groups),
            "slot": spec.dispatch.slot,
            "count_argument": spec.dispatch.count_argument,
        },
    }


def described(pkg: KernelPackage, values: dict[str, object]) -> dict[str, object]:
    """The manifest fields of an argument kernel's package: everything it records, values decoded."""
    arguments: list[dict[str, object]] = []
    for argument in pkg.arguments:
        if argument.kind is ArgumentKind.LOCAL:
            arguments.append({"index": argument.index, "kind": "LOCAL", "local_bytes": argument.local_bytes})
        else:
            assert argument.value_type is not None
            arguments.append(
                {
                    "index": argument.index,
                    "kind": "VALUE",
                    "type": str(argument.value_type),
                    "value": decode_value(argument.value_type, argument.data),
                }
            )
    specs = [
        {
            "spec_id": spec.spec_id,
            "type": str(spec.value_type),
            "value": decode_value(spec.value_type, spec.data[: spec.value_type.size]),
        }
        for spec in pkg.spec_constants
    ]
    return {
        "module_kind": pkg.module_kind.name,
        "format_version": pkg.version,
        "entry_point": pkg.entry_point,
        "build_options": pkg.build_options,
        "local_size": list(pkg.local_size),
        "bindings": [
            {
                "slot": b.slot,
                "set": b.set,
                "native_index": b.native_index,
                "descriptor_type": b.descriptor_type.name,
                "access": b.access.name,
                "element_size": b.element_size,
                "coverage": b.coverage.name,
                "coverage_elements": b.coverage_elements,
            }
            for b in pkg.bindings
        ],
        "dispatch": {
            "kind": pkg.dispatch.kind.name,
            "global_size": list(pkg.dispatch.global_size),
            "count_argument": pkg.dispatch.count_argument,
        },
        "arguments": arguments,
        "push_constants": pkg.push_constants.hex(),
        "spec_constants": specs,
        "values": values,
    }


def glsl_output(name: str) -> Output:
    glsl = f"src/glsl/{name}.comp"
    vk = f"spirv/{name}.vk.spv"
    return Output(
        vk,
        "SPIRV_VULKAN module",
        [glsl],
        [["glslangValidator", "-V", "--target-env", GLSL_TARGET_ENV, "-o", vk, glsl]],
        "glslangValidator",
    )


NUMERICS_GLSL = tuple(sorted(path.stem for path in (ARTIFACTS / "src" / "glsl").glob("numerics_*.comp")))
"""The numerics suite's GLSL modules, every ``src/glsl/numerics_*.comp`` (accelcore.conformance.numerics;
packed at run time per function)."""
NUMERICS_OPENCL = tuple(sorted(path.stem for path in (ARTIFACTS / "src" / "opencl").glob("numerics_*.cl")))
"""The numerics suite's OpenCL C files: run as source by the drivers; compiled to OpenCL SPIR-V here
with clang-15 as a check that they are valid OpenCL C 1.2 (and for IL-only devices)."""


NUMERICS_OPENCL_STD = {"numerics_subgroup": "-cl-std=CL3.0"}
"""Numerics files checked under another OpenCL C version than 1.2 (subgroup built-ins: cl_khr_subgroups is
OpenCL C 2.0, __opencl_c_subgroups 3.0; clang-15's spir64 target declares them under CL3.0)."""


def opencl_spirv_output(name: str) -> Output:
    """``src/opencl/NAME.cl`` compiled to OpenCL SPIR-V (clang-15 to SPIR bitcode, llvm-spirv-15), under OpenCL C 1.2
    unless :data:`NUMERICS_OPENCL_STD` says otherwise: the corpus kernels and the numerics files alike."""
    opencl = f"src/opencl/{name}.cl"
    cl = f"spirv/{name}.cl.spv"
    bitcode = f"spirv/{name}.cl.bc"
    return Output(
        cl,
        "SPIRV_OPENCL module",
        [opencl],
        [
            [
                "clang-15",
                "-c",
                "-target",
                "spir64",
                NUMERICS_OPENCL_STD.get(name, "-cl-std=CL1.2"),
                "-O0",
                "-Xclang",
                "-finclude-default-header",
                "-emit-llvm",
                "-o",
                bitcode,
                opencl,
            ],
            ["llvm-spirv-15", bitcode, "-o", cl],
            ["rm", bitcode],
        ],
        "clang-15 + llvm-spirv-15",
    )


def plan() -> list[Output]:
    """Every output, its sources and its exact commands (paths relative to artifacts/)."""
    outputs: list[Output] = []
    outputs.extend(glsl_output(name) for name in NUMERICS_GLSL)
    outputs.extend(opencl_spirv_output(name) for name in NUMERICS_OPENCL)
    for name in KERNELS:
        opencl = f"src/opencl/{name}.cl"
        vk = f"spirv/{name}.vk.spv"
        cl = f"spirv/{name}.cl.spv"
        outputs.append(glsl_output(name))
        outputs.append(opencl_spirv_output(name))
        for kind in SHIPPED_KINDS:
            module = opencl if kind is ModuleKind.OPENCL_SOURCE else (vk if kind is ModuleKind.SPIRV_VULKAN else cl)
            target = f"packages/{name}.{PACKAGE_SUFFIX[kind]}.kpkg"
            outputs.append(
                Output(
                    target,
                    f"kernel package ({kind.name})",
                    [module],
                    [["python", "../tools/build_artifacts.py", "--package", name, kind.name]],
                    "accelcore.kernels.package_codec.write_package",
                    package_spec(name, kind),
                )
            )
    for name in ARGUMENT_KERNELS:
        spec = argument_spec(name)
        for kind in spec.kinds:
            if kind is ModuleKind.SPIRV_VULKAN:
                outputs.append(glsl_output(name))
                module = f"spirv/{name}.vk.spv"
            elif kind is ModuleKind.OPENCL_SOURCE:
                module = f"src/opencl/{name}.cl"
            else:
                raise SystemExit(f"{name}: no build rule for {kind.name} modules of argument kernels")
            outputs.append(
                Output(
                    f"packages/{name}.{PACKAGE_SUFFIX[kind]}.kpkg",
                    f"kernel package ({kind.name})",
                    [module],
                    [["python", "../tools/build_artifacts.py", "--package", name, kind.name]],
                    "accelcore.conformance.corpus.argument_package (accelcore.kernels.pack.pack_module)"
                    " + write_package",
                    argument_kernel=name,
                )
            )
    return outputs


def build_package(root: Path, name: str, kind: ModuleKind) -> Path:
    if kind is ModuleKind.OPENCL_SOURCE:
        module_path = root / "src" / "opencl" / f"{name}.cl"
    else:
        module_path = root / "spirv" / f"{name}.{PACKAGE_SUFFIX[kind]}"
    out = root / "packages" / f"{name}.{PACKAGE_SUFFIX[kind]}.kpkg"
    out.parent.mkdir(parents=True, exist_ok=True)
    if name in ARGUMENT_KERNELS:
        out.write_bytes(write_package(argument_package(name, kind, module=module_path.read_bytes())))
        return out
    spec = kernel_spec(name)
    pkg = KernelPackage(
        module_kind=kind,
        entry_point=spec.entry_point(kind),
        local_size=spec.local_size,
        bindings=spec.bindings,
        dispatch=spec.dispatch,
        module=module_path.read_bytes(),
    )
    out.write_bytes(write_package(pkg))
    return out


def run_output(root: Path, output: Output) -> None:
    for command in output.commands:
        if command[:2] == ["python", "../tools/build_artifacts.py"]:
            build_package(root, command[3], ModuleKind[command[4]])
            continue
        (root / output.path).parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"build failed ({output.path}): {' '.join(command)}\n{done.stdout}{done.stderr}")


def manifest_for(root: Path, outputs: list[Output], tools: dict[str, str | None]) -> dict[str, object]:
    entries = []
    for output in outputs:
        entries.append(
            {
                "path": output.path,
                "kind": output.kind,
                "tool": output.tool,
                "commands": [" ".join(c) for c in output.commands],
                "sources": [{"path": s, "sha256": sha256(root / s)} for s in output.sources],
                "sha256": sha256(root / output.path),
                "bytes": (root / output.path).stat().st_size,
            }
        )
        if output.package is not None:
            entries[-1]["package"] = output.package
        if output.argument_kernel is not None:
            pkg = parse_package((root / output.path).read_bytes())
            entries[-1]["package"] = described(pkg, dict(argument_values(output.argument_kernel)))
    return {
        "format": MANIFEST_FORMAT,
        "note": "Generated by tools/build_artifacts.py; every command runs in artifacts/ (docs/artifact-format.md).",
        "tools": tools,
        "outputs": entries,
    }


def write_manifest(root: Path, manifest: dict[str, object]) -> None:
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def build(root: Path) -> dict[str, object]:
    tools = {name: tool_version(name) for name in TOOLS}
    missing = [name for name, version in tools.items() if version is None]
    if missing:
        raise SystemExit(f"missing build tools: {', '.join(missing)} (Debian: glslang-tools clang-15 llvm-spirv-15)")
    outputs = plan()
    for output in outputs:
        run_output(root, output)
    return manifest_for(root, outputs, tools)


def check_hashes(root: Path) -> list[str]:
    """Drift between the committed files and manifest.json (no tools needed)."""
    manifest = json.loads((root / "manifest.json").read_text())
    problems = []
    listed = set()
    for entry in manifest["outputs"]:
        listed.add(entry["path"])
        path = root / entry["path"]
        if not path.is_file():
            problems.append(f"{entry['path']}: missing")
        elif sha256(path) != entry["sha256"]:
            problems.append(f"{entry['path']}: sha256 differs from manifest (rebuild: python tools/build_artifacts.py)")
        for source in entry["sources"]:
            source_path = root / source["path"]
            if not source_path.is_file():
                problems.append(f"{source['path']}: missing source of {entry['path']}")
            elif sha256(source_path) != source["sha256"]:
                problems.append(f"{source['path']}: changed since {entry['path']} was built")
    for folder in ("spirv", "packages"):
        for path in sorted((root / folder).glob("*")):
            relative = f"{folder}/{path.name}"
            if relative not in listed:
                problems.append(f"{relative}: not in manifest.json")
    return problems


def check_rebuild(root: Path) -> list[str]:
    """Rebuild everything in a temporary tree and compare bytes with the committed outputs."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "artifacts"
        shutil.copytree(root / "src", scratch / "src")
        build(scratch)
        problems = []
        for output in plan():
            fresh = (scratch / output.path).read_bytes()
            committed = root / output.path
            if not committed.is_file():
                problems.append(f"{output.path}: missing (rebuild produces it)")
            elif committed.read_bytes() != fresh:
                problems.append(f"{output.path}: rebuild differs from the committed file")
        return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="rebuild in a temporary folder and report drift")
    mode.add_argument("--hashes", action="store_true", help="only compare files with manifest.json")
    mode.add_argument("--package", nargs=2, metavar=("KERNEL", "KIND"), help="rebuild one package")
    parser.add_argument("--root", type=Path, default=ARTIFACTS, help="the artifacts folder (default: %(default)s)")
    args = parser.parse_args(argv)
    root: Path = args.root
    if args.package:
        print(build_package(root, args.package[0], ModuleKind[args.package[1]]))
        return 0
    if args.check or args.hashes:
        problems = check_hashes(root)
        if args.check:
            problems += check_rebuild(root)
        for problem in problems:
            print(f"drift: {problem}")
        print("corpus is up to date" if not problems else f"{len(problems)} drift problem(s)")
        return 1 if problems else 0
    manifest = build(root)
    write_manifest(root, manifest)
    print(f"built {len(manifest['outputs'])} outputs into {root}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
