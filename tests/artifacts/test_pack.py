"""pack_module: what it fills from a module, what it checks, and which option it names when it cannot."""

from __future__ import annotations

import pytest

from accelcore import AccessMode, ErrorKind, TargetIdentity
from accelcore.conformance.corpus import KERNELS, SHIPPED_KINDS, kernel_spec, load_module
from accelcore.kernels.pack import detect_module_kind, opencl_kernels, pack_module
from accelcore.kernels.package import (
    NO_COUNT_ARGUMENT,
    Dispatch,
    DispatchKind,
    ModuleKind,
    PackageBinding,
    opencl_target_identity,
)
from accelcore.kernels.package_codec import parse_package, write_package

FROM_OUT = Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=2)
R, W, RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("kind", SHIPPED_KINDS, ids=lambda k: k.name)
def test_corpus_modules_pack_from_their_own_metadata(kernel: str, kind: ModuleKind) -> None:
    spec = kernel_spec(kernel)
    data = load_module(kernel, kind)
    assert detect_module_kind(data) is kind
    pkg = pack_module(data, dispatch=spec.dispatch, local_size=spec.local_size)
    assert (pkg.module_kind, pkg.entry_point, pkg.local_size) == (kind, spec.entry_point(kind), spec.local_size)
    assert [(b.slot, b.native_index, b.element_size) for b in pkg.bindings] == [
        (b.slot, b.native_index, b.element_size) for b in spec.bindings
    ]
    for found, declared in zip(pkg.bindings, spec.bindings, strict=True):
        if kind is ModuleKind.SPIRV_VULKAN:
            assert found.access is declared.access  # readonly / writeonly decorations
        elif kind is ModuleKind.OPENCL_SOURCE:
            # const pointers are READ; a non-const pointer may be read or written.
            assert found.access is (R if declared.access is R else RW)
        else:
            assert found.access in (R, RW)
    assert parse_package(write_package(pkg)) == pkg
    # The spec's own table is accepted as given.
    explicit = pack_module(data, kind=kind, bindings=spec.bindings, dispatch=spec.dispatch, local_size=spec.local_size)
    assert explicit.bindings == spec.bindings


def test_detection_of_binaries_and_text(raises_kind) -> None:
    assert detect_module_kind(b"poclbin\x00\x01\xff") is ModuleKind.OPENCL_BINARY
    spirv = load_module("conformance", ModuleKind.SPIRV_OPENCL)
    rusticl_like = (1).to_bytes(4, "little") + len(spirv).to_bytes(4, "little") + (4).to_bytes(4, "little") + spirv
    assert detect_module_kind(rusticl_like) is ModuleKind.OPENCL_BINARY
    wrong_length = rusticl_like[:4] + (len(spirv) + 4).to_bytes(4, "little") + rusticl_like[8:]
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="kind="):
        detect_module_kind(wrong_length)
    assert detect_module_kind(b"__kernel void k() {}") is ModuleKind.OPENCL_SOURCE
    # Intel's CPU runtime writes ELF containers: a binary (its provider still header-checks and probes it).
    assert detect_module_kind(b"\x7fELF\x02\x01\x01\x00\xff\xfe") is ModuleKind.OPENCL_BINARY
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="kind=ModuleKind.OPENCL_BINARY"):
        detect_module_kind(b"\x00\x01MZ\x90\xff\xfe")
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        detect_module_kind(b"")


def test_missing_options_are_named(raises_kind) -> None:
    source = load_module("conformance", ModuleKind.OPENCL_SOURCE)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="dispatch= is required"):
        pack_module(source, local_size=(64, 1, 1))
    # Without reqd_work_group_size the driver chooses the local size ...
    assert pack_module(source, dispatch=FROM_OUT).local_size == (0, 0, 0)
    # ... except for a fixed grid, which counts workgroups.
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="local_size= is required"):
        pack_module(source, dispatch=Dispatch(DispatchKind.FIXED, (4, 1, 1), count_argument=2))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="dispatch= is required"):
        pack_module(load_module("conformance", ModuleKind.SPIRV_VULKAN))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="entry_point=, bindings=, dispatch= or global_size="):
        pack_module(b"poclbin\x00")
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="local_size= is required"):
        pack_module(
            b"poclbin\x00", entry_point="k", bindings=(PackageBinding(0, 0, R),), dispatch=Dispatch(DispatchKind.FIXED)
        )


def test_opencl_binary_with_target() -> None:
    target = opencl_target_identity("Portable Computing Language", "cpu", "3.1")
    rows = (PackageBinding(0, 0, R), PackageBinding(1, 1, W))
    pkg = pack_module(
        b"poclbin\x00\x01",
        entry_point="conformance",
        bindings=rows,
        dispatch=FROM_OUT,
        local_size=(64, 1, 1),
        target=target,
    )
    assert pkg.module_kind is ModuleKind.OPENCL_BINARY and pkg.target == target
    assert parse_package(write_package(pkg)) == pkg


TWO_KERNELS = """
// a comment mentioning __kernel void fake(int x)
__kernel void first(__global const float4 *a, __global uchar *b, const uint n) { }
/* __kernel void hidden(void) */
kernel __attribute__((reqd_work_group_size(8, 8, 1))) void second(global int *restrict out, constant short *table) { }
__kernel void scratch(__global float *a, __local float *tmp) { }
__kernel void by_value(__global float *a, float scale, uint n) { }
__kernel void odd(__global struct thing *a) { }
"""


def test_opencl_c_signatures() -> None:
    found = {k.name: k for k in opencl_kernels(TWO_KERNELS)}
    assert list(found) == ["first", "second", "scratch", "by_value", "odd"]
    first = found["first"]
    assert [(p.address_space, p.is_const, p.element_bytes) for p in first.parameters] == [
        ("global", True, 16),
        ("global", False, 1),
        (None, True, 4),
    ]
    assert found["second"].required_local_size == (8, 8, 1)
    assert [(p.address_space, p.element_bytes) for p in found["second"].parameters] == [("global", 4), ("constant", 2)]


def test_opencl_c_packing_rules(raises_kind) -> None:
    data = TWO_KERNELS.encode()
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="5 __kernel functions .*pass entry_point="):
        pack_module(data, dispatch=FROM_OUT, local_size=(64, 1, 1))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="'missing' is not a __kernel function"):
        pack_module(data, entry_point="missing", dispatch=FROM_OUT, local_size=(64, 1, 1))
    first = pack_module(data, entry_point="first", dispatch=FROM_OUT, local_size=(32, 1, 1))
    assert first.bindings == (PackageBinding(0, 0, R, 16), PackageBinding(1, 1, RW, 1))
    second = pack_module(data, entry_point="second", dispatch=Dispatch(DispatchKind.FIXED, (4, 1, 1)))
    assert second.local_size == (8, 8, 1)
    assert second.bindings == (PackageBinding(0, 0, RW, 4), PackageBinding(1, 1, R, 2))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="contradicts"):
        pack_module(data, entry_point="second", dispatch=Dispatch(DispatchKind.FIXED, (4, 1, 1)), local_size=(64, 1, 1))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=r"argument 1 \(__local float \*tmp\) is a __local pointer"):
        pack_module(data, entry_point="scratch", dispatch=Dispatch(DispatchKind.FIXED, (1, 1, 1)), local_size=(1, 1, 1))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match=r"argument 1 \(float scale\) is by value and has no value"):
        pack_module(
            data,
            entry_point="by_value",
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0, count_argument=2),
            local_size=(1, 1, 1),
        )
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="count_argument=1 is argument 1 .*a pointer"):
        pack_module(
            data,
            entry_point="first",
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0, count_argument=1),
            local_size=(1, 1, 1),
        )
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="element size of argument 0"):
        pack_module(data, entry_point="odd", dispatch=Dispatch(DispatchKind.FIXED, (1, 1, 1)), local_size=(1, 1, 1))
    rows = (PackageBinding(0, 0, R, 4),)
    assert (
        pack_module(
            data,
            entry_point="odd",
            bindings=rows,
            dispatch=Dispatch(DispatchKind.FIXED, (1, 1, 1)),
            local_size=(1, 1, 1),
        ).bindings
        == rows
    )
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="argument 1 is not bound"):
        pack_module(
            data,
            entry_point="first",
            bindings=(PackageBinding(0, 0, R, 16),),
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0, count_argument=2),
            local_size=(1, 1, 1),
        )
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="argument 0 is const"):
        pack_module(
            data,
            entry_point="first",
            bindings=(PackageBinding(0, 0, RW, 16), PackageBinding(1, 1, RW, 1)),
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0, count_argument=2),
            local_size=(1, 1, 1),
        )


def test_vulkan_binding_checks(raises_kind) -> None:
    data = load_module("conformance", ModuleKind.SPIRV_VULKAN)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="declares READ but set 0 binding 1 is WRITE"):
        pack_module(data, bindings=(PackageBinding(0, 0, R), PackageBinding(1, 1, R)), dispatch=FROM_OUT)
    wider = pack_module(data, bindings=(PackageBinding(0, 0, RW), PackageBinding(1, 1, RW)), dispatch=FROM_OUT)
    assert [b.access for b in wider.bindings] == [RW, RW]
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="uses set 0 binding 1, which no slot"):
        pack_module(
            data,
            bindings=(PackageBinding(0, 0, R),),
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=0, count_argument=0),
        )
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="lacks"):
        pack_module(data, bindings=(PackageBinding(0, 0, R), PackageBinding(1, 4, W)), dispatch=FROM_OUT)
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="reads a push-constant block"):
        pack_module(data, dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="contradicts"):
        pack_module(data, dispatch=FROM_OUT, local_size=(32, 1, 1))
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="no push-constant block"):
        pack_module(
            load_module("matmul", ModuleKind.SPIRV_VULKAN),
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=2, count_argument=0),
        )
    assert (
        pack_module(
            load_module("matmul", ModuleKind.SPIRV_VULKAN),
            dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=2, count_argument=NO_COUNT_ARGUMENT),
        ).bindings
        == kernel_spec("matmul").bindings
    )


def test_kind_and_flavour_must_agree(raises_kind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="opencl-flavoured"):
        pack_module(
            load_module("conformance", ModuleKind.SPIRV_OPENCL), kind=ModuleKind.SPIRV_VULKAN, dispatch=FROM_OUT
        )
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="target words must be 0"):
        pack_module(
            load_module("conformance", ModuleKind.SPIRV_VULKAN),
            dispatch=FROM_OUT,
            target=TargetIdentity((1,) + (0,) * 11),
        )


def test_unsupported_vulkan_resources(tool, tmp_path, raises_kind) -> None:
    import subprocess

    compiler = tool("glslangValidator")
    (tmp_path / "s.comp").write_text(
        "#version 450\nlayout(local_size_x = 1) in;\n"
        "layout(set = 1, binding = 0) buffer B { uint v[]; } b;\n"
        "void main() { b.v[0] = 1u; }\n"
    )
    done = subprocess.run(
        [compiler, "-V", "-o", str(tmp_path / "s.spv"), str(tmp_path / "s.comp")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout
    pkg = pack_module((tmp_path / "s.spv").read_bytes(), dispatch=Dispatch(DispatchKind.FIXED, (1, 1, 1)))
    assert [(b.slot, b.set, b.native_index) for b in pkg.bindings] == [(0, 1, 0)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "hostile",
    ["kernel " * 40000, "kernel void a( " * 40000, "/* " * 60000, "__kernel void k(int a" * 30000],
    ids=["keywords", "unclosed-signatures", "unclosed-comments", "no-closing-paren"],
)
def test_signature_parsing_is_linear_in_the_source(hostile: str) -> None:
    """Untrusted OpenCL C: a regex reader once took 6 s for 8,000 'kernel ' tokens and grew quadratically;
    Clang's front end reads these in well under a second. The timeout mark turns a regression into a failure
    instead of a hang. Only a kernel the compiler sees is reported: after an unclosed comment, the one that
    follows it; after unbalanced garbage, none (the compiler would not build it either)."""
    assert opencl_kernels(hostile) == ()
    after = opencl_kernels(hostile + "*/\n__kernel void ok(__global int *a) { }")
    assert [k.name for k in after] == (["ok"] if hostile.startswith("/*") else [])
