"""Where the corpus lives and reading its committed files: modules (``.spv``, ``.cl``) and packages.

:func:`corpus_root` is ``$ACCELCORE_ARTIFACTS``, else the ``artifacts/`` folder of the source
checkout this package sits in. :func:`load_package` / :func:`load_module` return the committed
bytes (a fresh copy; nothing is cached). A missing corpus or file, or a kind the corpus does not
ship (:data:`SHIPPED_KINDS`) → UNSUPPORTED; an unknown kernel → INVALID_ARGUMENT.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...contract.errors import BackendError, ErrorKind
from ...kernels.package import ModuleKind
from .argument_kernels import _ARGUMENT_BY_NAME
from .table import kernel_spec

ARTIFACTS_ENV = "ACCELCORE_ARTIFACTS"
"""Environment variable that overrides where the corpus lives."""

SHIPPED_KINDS = (ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL, ModuleKind.OPENCL_SOURCE)
"""Module kinds the corpus ships packages for (device binaries are built per device)."""

_KIND_SUFFIX = {
    ModuleKind.SPIRV_VULKAN: "vk.spv",
    ModuleKind.SPIRV_OPENCL: "cl.spv",
    ModuleKind.OPENCL_SOURCE: "cl",
}


def corpus_root() -> Path:
    """The ``artifacts/`` directory: $ACCELCORE_ARTIFACTS, else the one beside the package."""
    override = os.environ.get(ARTIFACTS_ENV)
    # This file is <checkout>/accelcore/conformance/corpus/files.py: parents[3] is the checkout.
    root = Path(override) if override else Path(__file__).resolve().parents[3] / "artifacts"
    if not (root / "manifest.json").is_file():
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"kernel corpus not found at {root} (no manifest.json); run from a source checkout or set {ARTIFACTS_ENV}",
        )
    return root


def _shipped(kind: ModuleKind) -> str:
    kind = ModuleKind(kind)
    if kind not in _KIND_SUFFIX:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"the corpus ships no {kind.name} packages: device binaries are built per device "
            "(pack_module(binary, kind=OPENCL_BINARY, target=opencl_target_identity(...)) with kernel_spec())",
        )
    return _KIND_SUFFIX[kind]


def _shipped_for(kernel: str, kind: ModuleKind) -> tuple[str, str]:
    """(kernel name, file suffix) of a kernel of either collection shipped for ``kind``."""
    if kernel in _ARGUMENT_BY_NAME:
        spec = _ARGUMENT_BY_NAME[kernel]
        suffix = _shipped(kind)
        if ModuleKind(kind) not in spec.kinds:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"{kernel} is written for {', '.join(k.name for k in spec.kinds)} only; "
                f"the corpus ships no {ModuleKind(kind).name} package of it",
            )
        return spec.name, suffix
    name = kernel_spec(kernel).name
    return name, _shipped(kind)


def module_path(kernel: str, kind: ModuleKind) -> Path:
    """Path of the committed module (``.spv`` or ``.cl`` source) of ``kernel`` for ``kind``.

    ``kernel`` is one of :data:`KERNELS` or :data:`ARGUMENT_KERNELS` (those for their own kinds only).
    """
    name, suffix = _shipped_for(kernel, kind)
    root = corpus_root()
    if kind is ModuleKind.OPENCL_SOURCE:
        return root / "src" / "opencl" / f"{name}.cl"
    return root / "spirv" / f"{name}.{suffix}"


def package_path(kernel: str, kind: ModuleKind) -> Path:
    """Path of the committed ``.kpkg`` of ``kernel`` for ``kind`` (argument kernels: with their defaults)."""
    name, suffix = _shipped_for(kernel, kind)
    return corpus_root() / "packages" / f"{name}.{suffix}.kpkg"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise BackendError(
            ErrorKind.UNSUPPORTED, f"{path} is missing from the corpus; run tools/build_artifacts.py"
        ) from None


def load_module(kernel: str, kind: ModuleKind) -> bytes:
    """The raw module bytes (SPIR-V words or OpenCL C text) of a corpus kernel."""
    return _read(module_path(kernel, kind))


def load_package(kernel: str, kind: ModuleKind) -> bytes:
    """The committed kernel package bytes of ``kernel`` for module ``kind``.

    For an argument kernel this is the package for its recorded :attr:`ArgumentKernelSpec.defaults`
    (``write_package(argument_package(kernel, kind))``).
    """
    return _read(package_path(kernel, kind))
