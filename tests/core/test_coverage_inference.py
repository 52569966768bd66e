"""Coverage inference (accelcore.kernels.coverage_inference) and pack_module applying it: positive cases only where
every access is provably at the global id, unconditionally, on a 1-D dispatch; everything else stays UNKNOWN."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from accelcore.kernels.coverage_inference import MAX_SOURCE_CHARS, infer_coverage
from accelcore.kernels.pack import pack_module
from accelcore.kernels.package import Coverage, Dispatch, DispatchKind, KernelPackage

UNGUARDED = """
kernel void scale(global const float* x, global float* y, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i];
}
"""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        package = "glslang-tools" if "glslang" in name else "spirv-tools"
        pytest.skip(f"{name} is not installed (Debian package {package})")
    return path


def _coverage(pkg: KernelPackage) -> dict[int, Coverage]:
    return {b.slot: b.coverage for b in pkg.bindings}


def _pack_cl(source: str, **options: object) -> KernelPackage:
    arguments = {name: 2 for name in ("a", "n", "k") if f" {name})" in source or f" {name}," in source}
    options.setdefault("global_size", 64)
    return pack_module(source.encode(), arguments=arguments or None, **options)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- OpenCL C: proven


@pytest.mark.parametrize(
    "source",
    [
        UNGUARDED,
        "kernel void k(global const float* x, global float* y) { y[get_global_id(0)] = x[get_global_id(0)]; }",
        "kernel void k(global const int* x, global int* y) { const int i = (int)get_global_id(0); y[i] += x[i]; }",
        "kernel void k(global float4* x, global float4* y) { uint i = get_global_id(0); y[i].x = x[i].y; y[i]++; }",
        "// a comment: if (x) for while\nkernel void k(global float* x, global float* y) {\n"
        "    /* if */ unsigned int i = get_global_id(0); float t = x[i] * 2.0f; y[i] = t; }",
    ],
    ids=["local-size_t", "direct-subscript", "cast-int", "vector-members", "comments"],
)
def test_unguarded_opencl_c_is_one_per_work_item(source: str) -> None:
    pkg = _pack_cl(source)
    assert set(_coverage(pkg).values()) == {Coverage.PER_WORK_ITEM}, infer_coverage(pkg).describe()
    assert pkg.version == 2


def test_only_the_buffer_indexed_at_the_id_is_inferred() -> None:
    pkg = _pack_cl("kernel void k(global const float* x, global float* y) { int i = get_global_id(0); y[i] = x[i+1]; }")
    assert _coverage(pkg) == {0: Coverage.UNKNOWN, 1: Coverage.PER_WORK_ITEM}
    assert "slot 0 not inferred: x is indexed with something other than the global id" in (
        infer_coverage(pkg).describe()
    )


# --------------------------------------------------------------------------- OpenCL C: not proven

NEGATIVE = {
    "guarded-saxpy": (
        "kernel void saxpy(global const float* x, global float* y, float a, int n) {"
        " int i = get_global_id(0); if (i < n) y[i] = a * x[i] + y[i]; }",
        "'if'",
    ),
    "early-return": (
        "kernel void k(global float* y, int n) { int i = get_global_id(0); if (i >= n) return; y[i] = 1.0f; }",
        "'if'",
    ),
    "ternary": ("kernel void k(global float* y, int n) { int i = get_global_id(0); y[i < n ? i : 0] = 1; }", "'?'"),
    "short-circuit": (
        "kernel void k(global float* y, int n) { int i = get_global_id(0); (i < n) && (y[i] = 1); }",
        "'&&'",
    ),
    "loop": (
        "kernel void k(global float* y) { int i = get_global_id(0); for (int j = 0; j < 4; j++) y[i] += 1; }",
        "'for'",
    ),
    "index-plus-one": ("kernel void k(global float* y) { int i = get_global_id(0); y[i + 1] = 1; }", "other than"),
    "i-reassigned": ("kernel void k(global float* y) { int i = get_global_id(0); i = i * 2; y[i] = 1; }", "other than"),
    "i-incremented": ("kernel void k(global float* y) { int i = get_global_id(0); i++; y[i] = 1; }", "other than"),
    "i-address-taken": (
        "void bump(int* p) { *p += 1; }\nkernel void k(global float* y) { int i = get_global_id(0); y[i] = 1; }"
        "\nkernel void k2(global float* y) { int i = get_global_id(0); bump(&i); y[i] = 1; }",
        None,
    ),
    "pointer-to-helper": (
        "void h(global float* p, int i) { p[i] = 1; }\n"
        "kernel void k(global float* y) { int i = get_global_id(0); h(y, i); }",
        "calls h",
    ),
    "pointer-arithmetic": ("kernel void k(global float* y) { int i = get_global_id(0); *(y + i) = 1; }", "other than"),
    "address-of-element": (
        "kernel void k(global int* y) { int i = get_global_id(0); atomic_add(&y[i], 1); }",
        "not a plain subscript",
    ),
    "vstore": ("kernel void k(global float* y) { int i = get_global_id(0); vstore4((float4)(1), i, y); }", "other"),
    "other-axis": ("kernel void k(global float* y) { int i = get_global_id(1); y[i] = 1; }", "other than"),
    "macro-in-body": (
        "#define STORE(p, i) if (i < 4) p[i] = 1\nkernel void k(global float* y) { STORE(y, get_global_id(0)); }",
        "macro",
    ),
    "conditional-directive": (
        "#if 1\nkernel void k(global float* y) { y[get_global_id(0)] = 1; }\n#endif",
        "#if directive",
    ),
    "sizeof-only": ("kernel void k(global float* y, global float* z) { z[0] = sizeof(y[get_global_id(0)]); }", None),
    "unused-buffer": ("kernel void k(global float* y, global float* z) { y[get_global_id(0)] = 1; }", None),
    "block-literal": (
        "kernel void k(global float* y) { void (^b)(void) = ^{ y[get_global_id(0)] = 1; }; }",
        "'^'",
    ),
}


@pytest.mark.parametrize("case", sorted(NEGATIVE))
def test_what_inspection_cannot_prove_stays_unknown(case: str) -> None:
    source, reason = NEGATIVE[case]
    options: dict[str, object] = {"entry_point": "k2"} if case == "i-address-taken" else {}
    if "saxpy" in source:
        options["entry_point"] = "saxpy"
    pkg = _pack_cl(source, **options)
    found = infer_coverage(pkg)
    covered = _coverage(pkg)
    if case == "unused-buffer":
        assert covered == {0: Coverage.PER_WORK_ITEM, 1: Coverage.UNKNOWN}
        assert "slot 1 not inferred: the kernel does not access it" in found.describe()
        return
    assert set(covered.values()) == {Coverage.UNKNOWN}, found.describe()
    if reason is not None:
        assert reason in found.describe(), found.describe()


@pytest.mark.parametrize(
    ("dispatch", "local_size", "reason"),
    [
        ({"global_size": (8, 8)}, None, "not 1-D"),
        ({"dispatch": Dispatch(DispatchKind.FIXED, groups=(2, 2, 1))}, (8, 1, 1), "not 1-D"),
        ({"dispatch": Dispatch(DispatchKind.FROM_BINDING, slot=1)}, (64, 1, 1), "whole work-groups of 64"),
        ({"global_size": 64}, (8, 2, 1), "not 1-D"),
    ],
    ids=["global-2d", "fixed-2d", "from-binding-rounds-up", "local-2d"],
)
def test_dispatches_whose_work_items_differ_from_the_counted_elements(
    dispatch: dict[str, object], local_size: tuple[int, int, int] | None, reason: str
) -> None:
    options: dict[str, object] = dict(dispatch)
    options.pop("global_size", None)
    global_size = dispatch.get("global_size")
    pkg = pack_module(
        UNGUARDED.encode(), arguments={"a": 2.0}, local_size=local_size, global_size=global_size, **options
    )  # type: ignore[arg-type]
    assert set(_coverage(pkg).values()) == {Coverage.UNKNOWN}
    assert reason in infer_coverage(pkg).describe()


def test_build_options_that_change_the_language_or_the_body() -> None:
    for options, reason in (
        ("-cl-std=CLC++", "C++ for OpenCL"),
        ("-Dget_global_id=get_local_id", "the macro 'get_global_id'"),
        ("-DOTHER=1 -cl-fast-relaxed-math", ""),
    ):
        pkg = _pack_cl(UNGUARDED, build_options=options)
        found = infer_coverage(pkg)
        if reason:
            assert set(_coverage(pkg).values()) == {Coverage.UNKNOWN} and reason in found.describe(), found.describe()
        else:
            assert set(_coverage(pkg).values()) == {Coverage.PER_WORK_ITEM}, found.describe()


def test_dispatches_that_launch_exactly_the_counted_elements() -> None:
    for options in (
        {"dispatch": Dispatch(DispatchKind.FROM_BINDING, slot=1)},  # the driver chooses the local size
        {"dispatch": Dispatch(DispatchKind.FIXED, groups=(4, 1, 1)), "local_size": (16, 1, 1)},
        {"global_size": 100, "local_size": (10, 1, 1)},
    ):
        pkg = pack_module(UNGUARDED.encode(), arguments={"a": 2.0}, **options)  # type: ignore[arg-type]
        assert set(_coverage(pkg).values()) == {Coverage.PER_WORK_ITEM}, (options, infer_coverage(pkg).describe())


# --------------------------------------------------------------------------- what the caller says wins


def test_stated_coverage_overrides_inference() -> None:
    pkg = _pack_cl(UNGUARDED, coverage={0: 16, 1: Coverage.UNKNOWN})
    assert {b.slot: (b.coverage, b.coverage_elements) for b in pkg.bindings} == {
        0: (Coverage.EXACT, 16),
        1: (Coverage.UNKNOWN, 0),
    }
    assert _coverage(_pack_cl(UNGUARDED, infer_coverage=False)) == {0: Coverage.UNKNOWN, 1: Coverage.UNKNOWN}
    guarded = NEGATIVE["guarded-saxpy"][0]
    stated = _pack_cl(guarded, entry_point="saxpy", coverage={1: Coverage.PER_WORK_ITEM})
    assert _coverage(stated) == {0: Coverage.UNKNOWN, 1: Coverage.PER_WORK_ITEM}


def test_a_package_without_inferred_coverage_keeps_version_1_bytes() -> None:
    """Guarded kernels (the corpus's) pack exactly as before: no row changes, so a v1 package stays v1."""
    guarded = (
        "kernel void k(global const float* x, global float* y, uint n) {"
        " uint i = get_global_id(0); if (i < n) y[i] = x[i]; }"
    )
    dispatch = Dispatch(DispatchKind.FROM_BINDING, slot=1)
    pkg = pack_module(guarded.encode(), dispatch=dispatch, count_argument="n", local_size=(64, 1, 1))
    assert pkg.version == 1 and set(_coverage(pkg).values()) == {Coverage.UNKNOWN}


# --------------------------------------------------------------------------- SPIR-V

GLSL = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    BODY
}
"""


def _glsl(body: str, tmp_path: Path) -> bytes:
    compiler = _tool("glslangValidator")
    (tmp_path / "k.comp").write_text(GLSL.replace("BODY", body))
    done = subprocess.run(
        [compiler, "-V", "--target-env", "vulkan1.1", "-o", str(tmp_path / "k.spv"), str(tmp_path / "k.comp")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return (tmp_path / "k.spv").read_bytes()


def _pack_vk(module: bytes, global_size: int = 128) -> KernelPackage:
    return pack_module(module, global_size=global_size, push_constants={"n": 1})


def test_unguarded_glsl_is_one_per_work_item(tmp_path: Path) -> None:
    pkg = _pack_vk(_glsl("y[i] = 2.0 * x[i] + y[i];", tmp_path))
    assert _coverage(pkg) == {0: Coverage.PER_WORK_ITEM, 1: Coverage.PER_WORK_ITEM}, infer_coverage(pkg).describe()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("if (i < p.n) y[i] = x[i];", "more than one basic block"),
        ("for (uint j = 0; j < p.n; j++) y[i] += x[i];", "more than one basic block"),
        ("y[i] = x[i + 1];", "slot 0 not inferred"),
        ("uint j = i; j = j * 2u; y[j] = x[i];", "slot 1 not inferred"),
        ("y[gl_GlobalInvocationID.y] = x[i];", "slot 1 not inferred"),
        ("y[i] = x[p.n];", "slot 0 not inferred"),
    ],
    ids=["guarded", "loop", "index-plus-one", "reassigned", "axis-y", "index-from-push"],
)
def test_glsl_that_inspection_cannot_prove(body: str, expected: str, tmp_path: Path) -> None:
    pkg = _pack_vk(_glsl(body, tmp_path))
    found = infer_coverage(pkg)
    assert expected in found.describe(), found.describe()
    assert Coverage.UNKNOWN in _coverage(pkg).values()


def test_glsl_members_inside_one_element(tmp_path: Path) -> None:
    compiler = _tool("glslangValidator")
    (tmp_path / "k.comp").write_text(
        "#version 450\nlayout(local_size_x = 64) in;\nstruct P { vec2 at; float mass; };\n"
        "layout(set = 0, binding = 0) buffer Ps { P ps[]; };\n"
        "layout(set = 0, binding = 1) buffer Vs { vec4 vs[]; };\n"
        "void main() { uint i = gl_GlobalInvocationID.x; ps[i].mass = vs[i].w; vs[i].xy = ps[i].at; }\n"
    )
    command = [compiler, "-V", "--target-env", "vulkan1.1", "-o", str(tmp_path / "k.spv"), str(tmp_path / "k.comp")]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    pkg = pack_module((tmp_path / "k.spv").read_bytes(), global_size=128)
    assert _coverage(pkg) == {0: Coverage.PER_WORK_ITEM, 1: Coverage.PER_WORK_ITEM}, infer_coverage(pkg).describe()


def test_vulkan_global_size_not_a_multiple_of_the_group(tmp_path: Path) -> None:
    pkg = _pack_vk(_glsl("y[i] = x[i];", tmp_path), global_size=100)
    assert set(_coverage(pkg).values()) == {Coverage.UNKNOWN}
    assert "round up to a multiple of 64" in infer_coverage(pkg).describe()


OPENCL_SPIRV = """
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k" %gid
               OpName %x "x"
               OpName %y "y"
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %gid Constant
               OpDecorate %x FuncParamAttr NoWrite
      %ulong = OpTypeInt 64 0
       %uint = OpTypeInt 32 0
   %ulong_1 = OpConstant %ulong 1
    %v3ulong = OpTypeVector %ulong 3
     %ptr_in = OpTypePointer Input %v3ulong
       %void = OpTypeVoid
      %float = OpTypeFloat 32
     %ptr_cw = OpTypePointer CrossWorkgroup %float
     %ptr_fn = OpTypePointer Function %ptr_cw
    %uptr_fn = OpTypePointer Function %uint
         %fn = OpTypeFunction %void %ptr_cw %ptr_cw
        %gid = OpVariable %ptr_in Input
          %k = OpFunction %void None %fn
          %x = OpFunctionParameter %ptr_cw
          %y = OpFunctionParameter %ptr_cw
      %entry = OpLabel
         %vx = OpVariable %ptr_fn Function
         %vi = OpVariable %uptr_fn Function
               OpStore %vx %x Aligned 8
         %g3 = OpLoad %v3ulong %gid Aligned 32
         %g0 = OpCompositeExtract %ulong %g3 0
         %gi = OpUConvert %uint %g0
               OpStore %vi %gi Aligned 4
         %lx = OpLoad %ptr_cw %vx Aligned 8
         %li = OpLoad %uint %vi Aligned 4
         %lw = OpUConvert %ulong %li
         %px = OpInBoundsPtrAccessChain %ptr_cw %lx %lw
         %xv = OpLoad %float %px Aligned 4
         INDEX
         %py = OpInBoundsPtrAccessChain %ptr_cw %y %iy
               OpStore %py %xv Aligned 4
               OpReturn
               OpFunctionEnd
"""
"""What llvm-spirv emits at -O0 for ``uint i = get_global_id(0); y[i] = x[i];`` (parameters kept in Function
variables, the id converted to uint and back); INDEX is how y's index is made."""


def _opencl_spirv(index: str, tmp_path: Path) -> bytes:
    assembler = _tool("spirv-as")
    (tmp_path / "k.spvasm").write_text(OPENCL_SPIRV.replace("INDEX", index))
    done = subprocess.run(
        [assembler, "--target-env", "spv1.0", "-o", str(tmp_path / "k.spv"), str(tmp_path / "k.spvasm")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return (tmp_path / "k.spv").read_bytes()


def test_opencl_spirv(tmp_path: Path) -> None:
    same = pack_module(_opencl_spirv("%iy = OpCopyObject %ulong %lw", tmp_path), global_size=32)
    assert _coverage(same) == {0: Coverage.PER_WORK_ITEM, 1: Coverage.PER_WORK_ITEM}
    shifted = pack_module(_opencl_spirv("%iy = OpIAdd %ulong %lw %ulong_1", tmp_path), global_size=32)
    assert _coverage(shifted) == {0: Coverage.PER_WORK_ITEM, 1: Coverage.UNKNOWN}
    assert "slot 1 not inferred: it is indexed with something other than the global id" in (
        infer_coverage(shifted).describe()
    )
    # not valid SPIR-V (a float has no members), and a forged module must not slip past: an index after the id
    # that steps out of the element is refused
    past = OPENCL_SPIRV.replace(
        "%py = OpInBoundsPtrAccessChain %ptr_cw %y %iy", "%py = OpInBoundsPtrAccessChain %ptr_cw %y %iy %uint_1"
    )
    (tmp_path / "past.spvasm").write_text(
        past.replace("INDEX", "%iy = OpCopyObject %ulong %lw").replace(
            "%ulong_1 = OpConstant %ulong 1", "%ulong_1 = OpConstant %ulong 1\n     %uint_1 = OpConstant %uint 1"
        )
    )
    done = subprocess.run(
        [_tool("spirv-as"), "--target-env", "spv1.0", "-o", str(tmp_path / "past.spv"), str(tmp_path / "past.spvasm")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    forged = pack_module((tmp_path / "past.spv").read_bytes(), global_size=32)
    assert _coverage(forged) == {0: Coverage.PER_WORK_ITEM, 1: Coverage.UNKNOWN}
    assert "steps past its element" in infer_coverage(forged).describe()


# --------------------------------------------------------------------------- hostile input: bounded, linear


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "hostile",
    [
        "kernel void k(global float* y) { int i = get_global_id(0); " + "y[i] = y[i] = " * 40_000 + "1; }",
        "kernel void k(global float* y) { " + "int a = " * 40_000 + "1; y[get_global_id(0)] = 1; }",
        "kernel void k(global float* y) { y[get_global_id(0)] = 1; }\n" + "/*" * 100_000,
        "kernel void k(global float* y) { y[get_global_id(0)] = 1; }\n" + '"' * 100_000,
        "kernel void k(global float* y) { y[get_global_id(0)] = 1; }\n" + "f(" * 100_000,
    ],
    ids=["assignment-chain", "declaration-chain", "unclosed-comments", "quotes", "open-parens"],
)
def test_inference_is_linear_in_hostile_source(hostile: str) -> None:
    """A quadratic scan would take minutes on these; the timeout mark turns that into a failure."""
    pkg = _pack_cl(hostile, infer_coverage=False)
    found = infer_coverage(pkg)
    assert isinstance(found.describe(), str)


def test_sources_past_the_size_bound_are_not_inspected() -> None:
    padding = "\n" * MAX_SOURCE_CHARS
    pkg = _pack_cl(UNGUARDED + padding)
    assert set(_coverage(pkg).values()) == {Coverage.UNKNOWN}
    assert f"longer than {MAX_SOURCE_CHARS}" in infer_coverage(pkg).describe()
