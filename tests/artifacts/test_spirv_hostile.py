"""SPIR-V inspector against hostile type and call graphs: work stays linear, cycles and bounds are refused.

Each module here is a few hundred words whose naive (path-by-path) walk is
exponential; the assertions are on the exact type-step count and the result,
and ``pytest.mark.timeout`` only keeps a regression from hanging the suite.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import shutil
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from accelcore import BackendError, ErrorKind
from accelcore.kernels.spirv import TYPE_STEP_LIMIT, Flavour, SpirvModule, inspect_spirv
from accelcore.testing.pytest_support import RaisesKind

from .conftest import op, spirv_module, text

# Opcodes, decorations, enums (SPIR-V 1.6 unified spec).
OP_NAME, OP_MEMBER_NAME, OP_MEMORY_MODEL, OP_ENTRY_POINT, OP_EXECUTION_MODE, OP_CAPABILITY = 5, 6, 14, 15, 16, 17
OP_TYPE_VOID, OP_TYPE_INT, OP_TYPE_FLOAT, OP_TYPE_VECTOR, OP_TYPE_ARRAY = 19, 21, 22, 23, 28
OP_TYPE_STRUCT, OP_TYPE_POINTER, OP_TYPE_FUNCTION, OP_TYPE_FORWARD_POINTER = 30, 32, 33, 39
OP_CONSTANT, OP_FUNCTION, OP_FUNCTION_PARAMETER, OP_FUNCTION_END, OP_FUNCTION_CALL = 43, 54, 55, 56, 57
OP_VARIABLE, OP_DECORATE, OP_MEMBER_DECORATE, OP_LABEL, OP_RETURN = 59, 71, 72, 248, 253
DEC_BLOCK, DEC_OFFSET, DEC_FUNC_PARAM_ATTR, BYVAL = 2, 35, 38, 2
CAP_SHADER, CAP_ADDRESSES, CAP_LINKAGE, CAP_KERNEL, CAP_INT64 = 1, 4, 5, 6, 11
SC_FUNCTION, SC_PUSH_CONSTANT, SC_PHYSICAL_STORAGE_BUFFER = 7, 9, 5349


def assemble_words(instructions: list[list[int]], bound: int, version: int = 0x00010300) -> bytes:
    return spirv_module(*instructions, bound=bound, version=version)


def fits(levels: int, members: int) -> bool:
    """Whether every Offset of the DAG fits a 32-bit literal (the top struct is at most 4 GiB)."""
    return 4 * members**levels <= 1 << 32


def struct_dag(levels: int, members: int, *, offsets: bool = True) -> tuple[list[list[int]], list[list[int]], int]:
    """Decorations, types and the top struct id of S_0 = {uint}, S_k = {S_(k-1) x members}.

    Ids: 10 = uint, 11 + k = S_k. Sizes: S_k is 4 * members**k bytes. Offsets are left out (so sizes are
    not computable) when ``offsets`` is false or they would not fit 32 bits.
    """
    offsets = offsets and fits(levels, members)
    decorations: list[list[int]] = []
    types = [op(OP_TYPE_INT, 10, 32, 0), op(OP_TYPE_STRUCT, 11, 10)]
    if offsets:
        decorations.append(op(OP_MEMBER_DECORATE, 11, 0, DEC_OFFSET, 0))
    for level in range(1, levels + 1):
        types.append(op(OP_TYPE_STRUCT, 11 + level, *[10 + level] * members))
        if offsets:
            inner = 4 * members ** (level - 1)
            decorations += [op(OP_MEMBER_DECORATE, 11 + level, m, DEC_OFFSET, m * inner) for m in range(members)]
    return decorations, types, 11 + levels


def vulkan_push_constant_dag(levels: int, members: int) -> bytes:
    decorations, types, top = struct_dag(levels, members)
    ptr, var, void, fn, main, label = top + 1, top + 2, top + 3, top + 4, top + 5, top + 6
    return assemble_words(
        [
            op(OP_CAPABILITY, CAP_SHADER),
            op(OP_MEMORY_MODEL, 0, 1),
            op(OP_ENTRY_POINT, 5, main, *text("main")),
            op(OP_EXECUTION_MODE, main, 17, 1, 1, 1),
            op(OP_DECORATE, top, DEC_BLOCK),
            *decorations,
            *types,
            op(OP_TYPE_POINTER, ptr, SC_PUSH_CONSTANT, top),
            op(OP_VARIABLE, ptr, var, SC_PUSH_CONSTANT),
            op(OP_TYPE_VOID, void),
            op(OP_TYPE_FUNCTION, fn, void),
            op(OP_FUNCTION, void, main, 0, fn),
            op(OP_LABEL, label),
            op(OP_RETURN),
            op(OP_FUNCTION_END),
        ],
        bound=label + 1,
    )


def opencl_by_value_dag(levels: int, members: int, *, byval_pointer: bool = False) -> bytes:
    """A kernel ``k(S_levels s)``: the struct by value, or (as llvm-spirv emits) a Function pointer with ByVal.

    No Offset decorations (they need the Shader capability): sizes come from the OpenCL C ABI.
    """
    decorations, types, top = struct_dag(levels, members, offsets=False)
    ptr, void, fn, kernel, param, label = top + 1, top + 2, top + 3, top + 4, top + 5, top + 6
    param_type = ptr if byval_pointer else top
    return assemble_words(
        [
            op(OP_CAPABILITY, CAP_ADDRESSES),
            op(OP_CAPABILITY, CAP_KERNEL),
            op(OP_CAPABILITY, CAP_INT64),
            op(OP_MEMORY_MODEL, 2, 2),  # Physical64 OpenCL
            op(OP_ENTRY_POINT, 6, kernel, *text("k")),
            op(OP_NAME, param, *text("s")),
            *([op(OP_DECORATE, param, DEC_FUNC_PARAM_ATTR, BYVAL)] if byval_pointer else []),
            *decorations,
            *types,
            op(OP_TYPE_POINTER, ptr, SC_FUNCTION, top),
            op(OP_TYPE_VOID, void),
            op(OP_TYPE_FUNCTION, fn, void, param_type),
            op(OP_FUNCTION, void, kernel, 0, fn),
            op(OP_FUNCTION_PARAMETER, param_type, param),
            op(OP_LABEL, label),
            op(OP_RETURN),
            op(OP_FUNCTION_END),
        ],
        bound=label + 1,
        version=0x00010000,  # OpenCL 1.2 takes SPIR-V 1.0
    )


def dag_steps(levels: int, members: int) -> int:
    """What the memoized walk costs: the uint (1), S_0 (1 + 1 edge), each S_k (1 + members edges)."""
    return 1 + 2 + levels * (1 + members)


def spirv_val(data: bytes, tmp_path: Path, env: str) -> None:
    """spirv-val must accept the generated module (so the tests exercise valid SPIR-V, not just our parser)."""
    validator = shutil.which("spirv-val")
    if validator is None:
        pytest.fail("spirv-val is not installed; `make setup` installs it")
    path = tmp_path / "dag.spv"
    path.write_bytes(data)
    done = subprocess.run([validator, "--target-env", env, str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- DAGs of structs

DAG_SHAPES = [(2, 16), (2, 18), (2, 20), (8, 10), (2, 64), (16, 12)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("members", "levels"), DAG_SHAPES)
def test_push_constant_struct_dag_is_linear(members: int, levels: int) -> None:
    data = vulkan_push_constant_dag(levels, members)
    assert len(data) < 8192
    found = inspect_spirv(data)
    assert found.flavour is Flavour.VULKAN
    expected = 4 * members**levels if fits(levels, members) else None
    assert found.push_constant_bytes == expected
    block = found.push_constant_block
    assert block is not None and block.size == expected and len(block.members) == members
    assert found.type_steps == dag_steps(levels, members)
    # Shared members are one object: the memo, not a copy per path.
    assert all(m.type is block.members[0].type for m in block.members)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("byval_pointer", [False, True], ids=["struct-param", "byval-pointer"])
@pytest.mark.parametrize(("members", "levels"), DAG_SHAPES)
def test_opencl_by_value_struct_dag_is_linear(members: int, levels: int, byval_pointer: bool) -> None:
    found = inspect_spirv(opencl_by_value_dag(levels, members, byval_pointer=byval_pointer))
    assert found.flavour is Flavour.OPENCL
    (param,) = found.entry_point("k").parameters
    size = 4 * members**levels  # sizeof under the OpenCL C ABI: uints, no padding
    assert param.value_bytes == (size if size <= 1 << 64 else None)
    assert param.storage_class == (SC_FUNCTION if byval_pointer else None)
    assert param.byval is byval_pointer
    assert param.name == "s"
    assert param.type is not None and param.type.kind == "struct" and len(param.type.members) == members
    assert found.type_steps == dag_steps(levels, members)


@pytest.mark.timeout(60)
def test_vulkan_dag_without_offsets_is_not_computable_and_still_linear() -> None:
    data = vulkan_push_constant_dag(10, 8)
    s0_offset = struct.pack("<5I", (5 << 16) | OP_MEMBER_DECORATE, 11, 0, DEC_OFFSET, 0)
    assert data.count(s0_offset) == 1
    found = inspect_spirv(data.replace(s0_offset, b""))
    assert found.push_constant_bytes is None  # S_0 lost its Offset, so nothing above it has a size
    assert found.type_steps == dag_steps(10, 8)


def test_generated_dag_modules_are_valid_spirv(tmp_path: Path) -> None:
    spirv_val(vulkan_push_constant_dag(4, 2), tmp_path, "vulkan1.1")
    # Offset needs the Shader capability, so only the Offset-free OpenCL variants are valid SPIR-V.
    spirv_val(opencl_by_value_dag(4, 2), tmp_path, "opencl1.2")
    spirv_val(opencl_by_value_dag(4, 2, byval_pointer=True), tmp_path, "opencl1.2")


@pytest.mark.timeout(60)
def test_deep_chain_needs_no_python_recursion() -> None:
    levels = 20_000  # far past sys.getrecursionlimit()
    found = inspect_spirv(vulkan_push_constant_dag(levels, 1))
    assert found.push_constant_bytes == 4
    assert found.type_steps == dag_steps(levels, 1)


def test_step_bound_is_resource_limit_naming_it(raises_kind: RaisesKind) -> None:
    data = vulkan_push_constant_dag(10, 8)
    needed = dag_steps(10, 8)
    assert inspect_spirv(data, max_type_steps=needed).type_steps == needed
    with raises_kind(ErrorKind.RESOURCE_LIMIT, match=f"max_type_steps={needed - 1}"):
        inspect_spirv(data, max_type_steps=needed - 1)
    assert TYPE_STEP_LIMIT >= 1 << 20


@pytest.mark.timeout(60)
def test_huge_array_nesting_is_capped_not_bignum() -> None:
    levels = 2000
    types = [op(OP_TYPE_INT, 10, 32, 0), op(OP_CONSTANT, 10, 11, 0xFFFFFFFF)]
    types += [op(OP_TYPE_ARRAY, 12 + k, 10 if k == 0 else 11 + k, 11) for k in range(levels)]
    top = 11 + levels
    data = assemble_words(
        [
            op(OP_CAPABILITY, CAP_SHADER),
            op(OP_MEMORY_MODEL, 0, 1),
            op(OP_ENTRY_POINT, 5, top + 3, *text("main")),
            op(OP_DECORATE, top + 5, DEC_BLOCK),
            op(OP_MEMBER_DECORATE, top + 5, 0, DEC_OFFSET, 0),
            *types,
            op(OP_TYPE_STRUCT, top + 5, top),
            op(OP_TYPE_POINTER, top + 1, SC_PUSH_CONSTANT, top + 5),
            op(OP_VARIABLE, top + 1, top + 2, SC_PUSH_CONSTANT),
            op(OP_TYPE_VOID, top + 6),
            op(OP_TYPE_FUNCTION, top + 4, top + 6),
            op(OP_FUNCTION, top + 6, top + 3, 0, top + 4),
            op(OP_LABEL, top + 7),
            op(OP_RETURN),
            op(OP_FUNCTION_END),
        ],
        bound=top + 8,
    )
    found = inspect_spirv(data)
    assert found.push_constant_bytes is None
    block = found.push_constant_block
    assert block is not None
    array = block.members[0].type
    assert array.kind == "array" and array.count == 0xFFFFFFFF and array.size is None
    assert found.type_steps == 1 + 2 * levels + 2  # uint, each array (1 + element), the struct (1 + member)


def test_results_on_a_dag_compare_hash_copy_and_pickle_in_linear_time() -> None:
    data = vulkan_push_constant_dag(200, 2)  # 2**200 paths
    first, second = inspect_spirv(data), inspect_spirv(data)
    assert first.push_constant_block is not None and second.push_constant_block is not None
    top_a, top_b = first.push_constant_block.type, second.push_constant_block.type
    assert top_a is not top_b and top_a == top_b and hash(top_a) == hash(top_b)
    assert first == second
    assert len(repr(first)) < 20_000
    assert copy.deepcopy(top_a) is top_a
    as_dict = dataclasses.asdict(first)
    assert as_dict["push_constant_bytes"] is None  # 4 * 2**200 bytes: no Offsets, not computable
    # pickle recurses once per nesting level (Python's own limit), but shares nodes: 2**30 paths stay linear.
    shallow = inspect_spirv(vulkan_push_constant_dag(30, 2))
    restored = pickle.loads(pickle.dumps(shallow))
    assert isinstance(restored, SpirvModule) and restored == shallow
    restored_top = restored.push_constant_block
    assert restored_top is not None and restored_top.type.members[0].type is restored_top.type.members[1].type
    with pytest.raises(AttributeError):
        top_a.size = 4
    other = inspect_spirv(vulkan_push_constant_dag(200, 3))
    assert other.push_constant_block is not None and other.push_constant_block.type != top_a


def test_opencl_layout_survives_degenerate_members() -> None:
    # S_1 = {uint, vec0 (a 0-lane vector: size and alignment 0), uint}: no ZeroDivisionError, no size.
    data = opencl_by_value_dag(1, 1)
    degenerate = op(OP_TYPE_VECTOR, 9, 10, 0)
    s1 = op(OP_TYPE_STRUCT, 12, 11)
    assert data.count(struct.pack(f"<{len(s1)}I", *s1)) == 1
    data = data.replace(
        struct.pack(f"<{len(s1)}I", *s1),
        struct.pack(f"<{len(degenerate) + 5}I", *degenerate, *op(OP_TYPE_STRUCT, 12, 10, 9, 10)),
    )
    (param,) = inspect_spirv(data).entry_point("k").parameters
    assert param.type is not None and param.value_bytes is None
    assert [m.offset for m in param.type.members] == [0, None, None]


# --------------------------------------------------------------------------- type cycles


def shader_with_push_constant(types: list[list[int]], block: int, *, extra: Sequence[list[int]] = ()) -> bytes:
    """A Vulkan module whose push-constant variable points at ``block`` (ids 80..89 are reserved here)."""
    return assemble_words(
        [
            op(OP_CAPABILITY, CAP_SHADER),
            *extra,
            op(OP_MEMORY_MODEL, 0, 1),
            op(OP_ENTRY_POINT, 5, 83, *text("main")),
            op(OP_DECORATE, block, DEC_BLOCK),
            op(OP_TYPE_INT, 80, 32, 0),
            *types,
            op(OP_TYPE_POINTER, 81, SC_PUSH_CONSTANT, block),
            op(OP_VARIABLE, 81, 82, SC_PUSH_CONSTANT),
            op(OP_TYPE_VOID, 84),
            op(OP_TYPE_FUNCTION, 85, 84),
            op(OP_FUNCTION, 84, 83, 0, 85),
            op(OP_LABEL, 86),
            op(OP_RETURN),
            op(OP_FUNCTION_END),
        ],
        bound=90,
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "types",
    [
        [op(OP_TYPE_STRUCT, 10, 80, 10)],  # contains itself directly
        [op(OP_TYPE_STRUCT, 10, 11), op(OP_TYPE_STRUCT, 11, 80, 12), op(OP_TYPE_STRUCT, 12, 10)],  # via later ids
        [op(OP_TYPE_STRUCT, 10, 11), op(OP_CONSTANT, 80, 13, 4), op(OP_TYPE_ARRAY, 11, 11, 13)],  # array of itself
        [op(OP_TYPE_STRUCT, 10, 11), op(OP_TYPE_VECTOR, 11, 11, 4)],  # vector of itself
    ],
    ids=["self", "three-struct-cycle", "array-of-itself", "vector-of-itself"],
)
def test_type_cycles_are_invalid_argument(types: list[list[int]], raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT, match="contains itself"):
        inspect_spirv(shader_with_push_constant(types, 10))


def test_pointer_cycles_are_fine() -> None:
    # OpTypeForwardPointer %11 PhysicalStorageBuffer; %10 = struct { %11 next; uint value } with %11 -> %10
    node = [
        op(OP_TYPE_FORWARD_POINTER, 11, SC_PHYSICAL_STORAGE_BUFFER),
        op(OP_TYPE_STRUCT, 10, 11, 80),
        op(OP_TYPE_POINTER, 11, SC_PHYSICAL_STORAGE_BUFFER, 10),
        op(OP_MEMBER_DECORATE, 10, 0, DEC_OFFSET, 0),
        op(OP_MEMBER_DECORATE, 10, 1, DEC_OFFSET, 8),
    ]
    found = inspect_spirv(shader_with_push_constant(node, 10, extra=[op(OP_CAPABILITY, 5347)]))
    block = found.push_constant_block
    assert block is not None and found.push_constant_bytes == 12
    pointer = block.members[0].type
    assert (pointer.kind, pointer.storage_class, pointer.pointee_id, pointer.size) == (
        "pointer",
        SC_PHYSICAL_STORAGE_BUFFER,
        10,
        8,
    )


# --------------------------------------------------------------------------- call-graph recursion


def kernel_with_calls(calls: dict[int, list[int]], entry: int) -> bytes:
    """An OpenCL module (Linkage, so extra functions are fine) whose function ids call each other as given."""
    body: list[list[int]] = []
    label = 1000
    for function, callees in calls.items():
        body.append(op(OP_FUNCTION, 10, function, 0, 11))
        body.append(op(OP_LABEL, label))
        label += 1
        for callee in callees:
            body.append(op(OP_FUNCTION_CALL, 10, label, callee))
            label += 1
        body += [op(OP_RETURN), op(OP_FUNCTION_END)]
    return assemble_words(
        [
            op(OP_CAPABILITY, CAP_ADDRESSES),
            op(OP_CAPABILITY, CAP_LINKAGE),
            op(OP_CAPABILITY, CAP_KERNEL),
            op(OP_MEMORY_MODEL, 2, 2),
            op(OP_ENTRY_POINT, 6, entry, *text("k")),
            op(OP_TYPE_VOID, 10),
            op(OP_TYPE_FUNCTION, 11, 10),
            *body,
        ],
        bound=label + 1,
    )


@pytest.mark.parametrize(
    ("calls", "recursive"),
    [
        ({20: [21], 21: [22], 22: []}, ()),
        ({20: [21, 21, 22], 21: [22], 22: []}, ()),  # a diamond is not a cycle
        ({20: [20]}, (20,)),
        ({20: [21], 21: [22], 22: [21]}, (21, 22)),
        ({20: [21, 23], 21: [22], 22: [20], 23: [24], 24: [24], 25: [20]}, (20, 21, 22, 24)),
        ({20: [21], 21: [], 22: [23], 23: [22]}, (22, 23)),  # a cycle the entry point never reaches counts too
    ],
)
def test_recursive_functions(calls: dict[int, list[int]], recursive: tuple[int, ...]) -> None:
    assert inspect_spirv(kernel_with_calls(calls, 20)).recursive_functions == recursive


def test_corpus_modules_are_not_recursive() -> None:
    from accelcore.conformance.corpus import KERNELS, load_module
    from accelcore.kernels.package import ModuleKind

    for kernel in KERNELS:
        for kind in (ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL):
            assert inspect_spirv(load_module(kernel, kind)).recursive_functions == (), kernel


@pytest.mark.timeout(60)
@pytest.mark.parametrize("closed", [False, True])
def test_long_call_chains_need_no_python_recursion(closed: bool) -> None:
    count = 20_000
    calls = {100 + i: [101 + i] for i in range(count - 1)}
    calls[100 + count - 1] = [100] if closed else []
    found = inspect_spirv(kernel_with_calls(calls, 100))
    assert found.recursive_functions == (tuple(range(100, 100 + count)) if closed else ())


# --------------------------------------------------------------------------- random type graphs

TYPE_OPS = st.sampled_from([OP_TYPE_INT, OP_TYPE_FLOAT, OP_TYPE_VECTOR, 24, OP_TYPE_ARRAY, 29, OP_TYPE_STRUCT, 32, 20])


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(TYPE_OPS, st.lists(st.integers(0, 40), max_size=6)), min_size=1, max_size=30),
    st.booleans(),
)
def test_random_type_graphs_end_linearly(types: list[tuple[int, list[int]]], kernel: bool) -> None:
    """Types 10..39 with random operands (forward ids, cycles, non-types): INVALID_ARGUMENT or a result."""
    instructions = [op(opcode, 10 + i, *operands) for i, (opcode, operands) in enumerate(types)]
    instructions.append(op(OP_CONSTANT, 10, 40, 3))  # a length for arrays that name %40
    top = 10 + len(types) - 1
    if kernel:  # kernel k(top) with ids 80.. for the fixed parts
        data = assemble_words(
            [
                op(OP_CAPABILITY, CAP_ADDRESSES),
                op(OP_CAPABILITY, CAP_KERNEL),
                op(OP_MEMORY_MODEL, 2, 2),
                op(OP_ENTRY_POINT, 6, 83, *text("k")),
                *instructions,
                op(OP_TYPE_VOID, 84),
                op(OP_TYPE_FUNCTION, 85, 84, top),
                op(OP_FUNCTION, 84, 83, 0, 85),
                op(OP_FUNCTION_PARAMETER, top, 86),
                op(OP_LABEL, 87),
                op(OP_RETURN),
                op(OP_FUNCTION_END),
            ],
            bound=90,
        )
    else:
        data = shader_with_push_constant(instructions, top)
    try:
        found = inspect_spirv(data)
    except BackendError as error:
        assert error.kind is ErrorKind.INVALID_ARGUMENT, str(error)
        event("invalid: contains itself" if "contains itself" in str(error) else "invalid: other")
        return
    event("accepted")
    assert found.type_steps <= 2 * len(data) // 4
