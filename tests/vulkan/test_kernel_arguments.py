"""Version-2 packages on Vulkan: push constants, specialization constants, uniform buffers and sets, features.

Every kernel here is compiled from GLSL at test time (glslangValidator; the tests fail, not skip,
without it) and checked against numpy under the validation layer. Reuse is measured with the
provider's own counters: ``VulkanContext.pipelines_created`` and ``module_check.counters``.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from accel_vulkan import argument_kernels as kernels
from accel_vulkan import module_check, pipeline

from accelcore import (
    AccessMode,
    BindingRef,
    BufferRange,
    ErrorKind,
    EventState,
    MemoryDomain,
    SubmitRejected,
    Timeout,
)
from accelcore.kernels.package import (
    DescriptorType,
    Dispatch,
    DispatchKind,
    KernelPackage,
    PackageBinding,
    SpecConstant,
)
from accelcore.kernels.package_codec import write_package
from accelcore.kernels.values import ScalarType, ValueType

from .conftest import VK, Rig, artifact

R, W, RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE
U32 = ValueType(ScalarType.U32)
F32 = ValueType(ScalarType.F32)


@pytest.fixture(scope="module", autouse=True)
def _glslang() -> None:
    if kernels.glslang_path() is None:
        pytest.fail("glslangValidator is not installed (Debian: glslang-tools, which make setup installs)")


@pytest.fixture
def compile_glsl() -> Any:
    """GLSL compute source → SPIR-V (glslangValidator, Vulkan 1.1 target; cached per process)."""
    return kernels.compile_glsl


@pytest.fixture
def fresh_memos(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Empty module-check memos (restored afterwards), so counts do not depend on earlier tests."""
    monkeypatch.setattr(module_check, "_checked", {})
    monkeypatch.setattr(module_check, "_inspected", {})
    monkeypatch.setattr(pipeline, "_sizes", type(pipeline._sizes)())
    yield


def run(rig: Rig, case: kernels.ArgumentRun, program: Any = None) -> dict[int, bytes]:
    """Load (unless given), bind fresh buffers with the initial bytes, run to completion; slot → bytes after."""
    program = program if program is not None else rig.load(write_package(case.package))
    buffers = {slot: rig.buffer(data, case.access[slot]) for slot, data in case.initial.items()}
    event = rig.submit(program, {slot: (buffers[slot], case.access[slot]) for slot in buffers})
    assert rig.wait(event) == EventState.COMPLETE
    rig.accel.destroy_event(rig.events.pop())
    return {slot: rig.read(buffer) for slot, buffer in buffers.items()}


def check(rig: Rig, case: kernels.ArgumentRun, program: Any = None) -> None:
    got = run(rig, case, program)
    for slot in case.expected:
        problem = case.problem(slot, got[slot])
        assert problem is None, problem


def load_error(rig: Rig, package: KernelPackage, raises_kind: Any, kind: ErrorKind) -> str:
    with raises_kind(kind) as info:
        rig.load(write_package(package))
    assert info.value.native_call is None, f"refused by the driver ({info.value.native_call}), not before it"
    return str(info.value.message)


# --------------------------------------------------------------------------- results vs numpy


@pytest.mark.parametrize("index", range(len(kernels.standard_runs())))
@pytest.mark.parametrize("domain", [MemoryDomain.HOST, MemoryDomain.DEVICE])
def test_each_argument_kernel_matches_numpy(accel: Any, index: int, domain: MemoryDomain) -> None:
    if not accel.device_info().capabilities.supports_memory_domain(domain):
        pytest.skip(f"{domain.name} not offered")
    rig = Rig(accel, domain)
    try:
        check(rig, kernels.standard_runs()[index])
    finally:
        rig.close()


def test_the_specialised_group_size_is_the_real_one(rig: Rig) -> None:
    case = kernels.specialised_run(32, 0.5, groups=2)
    ids = np.frombuffer(run(rig, case)[0], dtype=np.uint32)
    assert set(ids[0::2]) == {32}, "gl_WorkGroupSize.x is not the specialised 32"
    assert ids[1::2].max() == 31, "gl_LocalInvocationID.x did not reach 31: the group is not 32 wide"


def test_a_v1_count_still_pushes_four_bytes(rig: Rig, compile_glsl: Any) -> None:
    module = compile_glsl(
        """#version 450
        layout(local_size_x = 64) in;
        layout(push_constant) uniform P { uint n; } p;
        layout(set = 0, binding = 0) writeonly buffer O { uint v[]; } o;
        void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) o.v[i] = p.n; }"""
    )
    package = KernelPackage(
        VK,
        "main",
        (64, 1, 1),
        (PackageBinding(0, 0, W),),
        Dispatch(DispatchKind.FROM_BINDING, slot=0, count_argument=0),
        module,
    )
    assert package.version == 1
    out = rig.buffer(bytes(4 * 100), W)
    event = rig.submit(rig.load(write_package(package)), {0: (out, W)})
    assert rig.wait(event) == EventState.COMPLETE
    assert set(np.frombuffer(rig.read(out), dtype=np.uint32)) == {100}


# --------------------------------------------------------------------------- reuse


def test_other_push_values_share_the_pipeline_and_skip_the_checks(rig: Rig, fresh_memos: None) -> None:
    first_case, second_case = kernels.saxpy_run(2.5, 256), kernels.saxpy_run(-1.5, 256, seed=9)
    created = rig.context.pipelines_created
    first = rig.load(write_package(first_case.package))
    counts = dict(module_check.counters)
    second = rig.load(write_package(second_case.package))
    assert dict(module_check.counters) == counts, "the module or agreement checks ran again for a push-only change"
    assert rig.context.pipelines_created == created + 1
    assert rig.accel.live_resources()["VkPipeline"] == 1
    assert first.pipeline == second.pipeline and first.push != second.push
    check(rig, first_case, first)
    check(rig, second_case, second)
    rig.accel.unload_program(rig.programs.pop())
    assert rig.accel.live_resources()["VkPipeline"] == 1, "the pipeline went with the first of its two programs"
    check(rig, first_case, first)
    rig.accel.unload_program(rig.programs.pop())
    live = rig.accel.live_resources()
    assert live["VkPipeline"] == 0 and live["VkPipelineLayout"] == 0 and live["VkDescriptorSetLayout"] == 0
    assert not rig.context.pipelines


def test_other_spec_constants_make_a_pipeline_but_reuse_the_module_checks(rig: Rig, fresh_memos: None) -> None:
    created = rig.context.pipelines_created
    first_case, second_case = kernels.specialised_run(32, 0.5), kernels.specialised_run(16, 3.0)
    first = rig.load(write_package(first_case.package))
    counts = dict(module_check.counters)
    second = rig.load(write_package(second_case.package))
    assert module_check.counters["modules"] == counts["modules"], "the module was inspected and validated again"
    assert module_check.counters["agreements"] == counts["agreements"] + 1
    assert rig.context.pipelines_created == created + 2
    assert rig.accel.live_resources()["VkPipeline"] == 2 and first.pipeline != second.pipeline
    check(rig, first_case, first)
    check(rig, second_case, second)
    third = rig.load(write_package(first_case.package))  # the first key again: shared, nothing checked
    assert rig.context.pipelines_created == created + 2 and third.pipeline == first.pipeline
    assert module_check.counters["agreements"] == counts["agreements"] + 1


def test_a_reload_after_the_last_unload_creates_again(rig: Rig, fresh_memos: None) -> None:
    raw = write_package(kernels.saxpy_run(2.0, 64).package)
    created = rig.context.pipelines_created
    rig.accel.unload_program(rig.accel.load_program(rig.context, artifact(raw)))
    program = rig.load(raw)
    assert rig.context.pipelines_created == created + 2
    assert program.resident_bytes == rig.load(raw).resident_bytes


def test_a_repeated_dispatch_reuses_its_recording_with_the_push_block(rig: Rig) -> None:
    case = kernels.saxpy_run(2.0, 128)
    program = rig.load(write_package(case.package))
    x = rig.buffer(case.initial[0], R)
    y = rig.buffer(case.initial[1], RW)
    bindings = rig.bind({0: (x, R), 1: (y, RW)})
    expected = np.frombuffer(case.initial[1], dtype=np.float32)
    recordings = set()
    for _ in range(3):
        event = rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
        assert rig.wait(event) == EventState.COMPLETE
        recordings.add(id(event.recording))
        rig.accel.destroy_event(event)
        expected = np.float32(2.0) * np.frombuffer(case.initial[0], dtype=np.float32) + expected
        got = np.frombuffer(rig.read(y), dtype=np.float32)
        assert np.allclose(got, expected, rtol=1e-6)
    assert len(recordings) == 1


# --------------------------------------------------------------------------- refusals at load


def test_a_push_block_of_the_wrong_size_names_both_sizes(rig: Rig, raises_kind: Any) -> None:
    saxpy = kernels.saxpy_package(1.0, 64)
    for size in (4, 12):
        message = load_error(
            rig, dataclasses.replace(saxpy, push_constants=bytes(size)), raises_kind, ErrorKind.INCOMPATIBLE
        )
        assert "8 bytes" in message and f"{size} bytes" in message


def test_a_block_without_a_module_block_or_a_module_block_without_one(
    rig: Rig, raises_kind: Any, compile_glsl: Any
) -> None:
    plain = compile_glsl(
        """#version 450
        layout(local_size_x = 64) in;
        layout(set = 0, binding = 0) buffer O { uint v[]; } o;
        void main() { o.v[gl_GlobalInvocationID.x] += 1u; }"""
    )
    rows = (PackageBinding(0, 0, RW),)
    fixed = Dispatch(DispatchKind.FIXED, (1, 1, 1))
    package = KernelPackage(VK, "main", (64, 1, 1), rows, fixed, plain, push_constants=bytes(8))
    assert "declares none" in load_error(rig, package, raises_kind, ErrorKind.INCOMPATIBLE)
    no_block = dataclasses.replace(kernels.saxpy_package(1.0, 64), push_constants=b"")
    assert "neither a block nor a count" in load_error(rig, no_block, raises_kind, ErrorKind.INCOMPATIBLE)


def test_a_push_block_over_the_device_limit_names_it(rig: Rig, raises_kind: Any, compile_glsl: Any) -> None:
    limit = rig.accel.description.max_push_constants_size
    words = limit // 4 + 4
    module = compile_glsl(
        f"""#version 450
        layout(local_size_x = 1) in;
        layout(push_constant) uniform P {{ uint v[{words}]; }} p;
        layout(set = 0, binding = 0) writeonly buffer O {{ uint v[]; }} o;
        void main() {{ o.v[0] = p.v[{words - 1}]; }}"""
    )
    package = KernelPackage(
        VK,
        "main",
        (1, 1, 1),
        (PackageBinding(0, 0, W),),
        Dispatch(DispatchKind.FIXED),
        module,
        push_constants=bytes(4 * words),
    )
    message = load_error(rig, package, raises_kind, ErrorKind.UNSUPPORTED)
    assert "maxPushConstantsSize" in message and str(limit) in message


def test_spec_constant_refusals(rig: Rig, raises_kind: Any) -> None:
    good = kernels.specialised_package(32, 1.0, 1)
    undeclared = dataclasses.replace(good, spec_constants=(*good.spec_constants, SpecConstant(9, U32, bytes(4))))
    message = load_error(rig, undeclared, raises_kind, ErrorKind.INCOMPATIBLE)
    assert "SpecId 9" in message and "0, 1" in message
    wrong_type = dataclasses.replace(
        good, spec_constants=(SpecConstant(0, F32, struct.pack("<f", 32.0)), good.spec_constants[1])
    )
    message = load_error(rig, wrong_type, raises_kind, ErrorKind.INCOMPATIBLE)
    assert "SpecId 0" in message and "u32" in message and "f32" in message
    mismatch = kernels.specialised_package(32, 1.0, 1, stated_local=64)
    message = load_error(rig, mismatch, raises_kind, ErrorKind.INCOMPATIBLE)
    assert "(32, 1, 1)" in message and "(64, 1, 1)" in message and "SpecId 0" in message
    defaults = dataclasses.replace(good, spec_constants=(good.spec_constants[1],))  # local size: the default 1
    message = load_error(rig, defaults, raises_kind, ErrorKind.INCOMPATIBLE)
    assert "(1, 1, 1)" in message
    rig.load(write_package(dataclasses.replace(defaults, local_size=(1, 1, 1))))  # and that loads


def test_a_specialised_local_size_over_the_device_limit_is_refused(rig: Rig, raises_kind: Any) -> None:
    limit = rig.accel.description.max_workgroup_invocations
    too_big = kernels.specialised_package(2 * limit, 1.0, 1)
    message = load_error(rig, too_big, raises_kind, ErrorKind.INCOMPATIBLE)
    assert "maxComputeWorkGroupInvocations" in message or "maxComputeWorkGroupSize" in message


def test_descriptor_sets_past_the_limit_are_refused_naming_it(rig: Rig, raises_kind: Any, compile_glsl: Any) -> None:
    terms = pipeline.device_terms(rig.accel.description)
    top = terms.max_sets
    module = compile_glsl(
        f"""#version 450
        layout(local_size_x = 1) in;
        layout(set = {top}, binding = 0) writeonly buffer O {{ uint v[]; }} o;
        void main() {{ o.v[0] = 1u; }}"""
    )
    package = KernelPackage(
        VK, "main", (1, 1, 1), (PackageBinding(0, 0, W, set=top),), Dispatch(DispatchKind.FIXED), module
    )
    message = load_error(rig, package, raises_kind, ErrorKind.UNSUPPORTED)
    assert "maxBoundDescriptorSets" in message and f"set {top}" in message


def test_rows_must_match_the_modules_sets_and_types(rig: Rig, raises_kind: Any) -> None:
    case = kernels.uniform_run(1.0, 0.0, 64)
    rows = case.package.bindings
    in_set0 = dataclasses.replace(
        case.package, bindings=(*rows[:2], dataclasses.replace(rows[2], set=0, native_index=2))
    )
    assert "set 1 binding 0" in load_error(rig, in_set0, raises_kind, ErrorKind.INCOMPATIBLE)
    as_storage = dataclasses.replace(
        case.package, bindings=(*rows[:2], dataclasses.replace(rows[2], descriptor_type=DescriptorType.STORAGE_BUFFER))
    )
    message = load_error(rig, as_storage, raises_kind, ErrorKind.INCOMPATIBLE)
    assert "STORAGE_BUFFER" in message and "uniform_buffer" in message


# --------------------------------------------------------------------------- refusals at submit


def _uniform_program(rig: Rig) -> tuple[Any, Any, Any, kernels.ArgumentRun]:
    case = kernels.uniform_run(2.0, 1.0, 64)
    program = rig.load(write_package(case.package))
    x = rig.buffer(case.initial[0], R)
    y = rig.buffer(case.initial[1], W)
    return program, x, y, case


def _rejected(rig: Rig, program: Any, bindings: list[BindingRef[Any]], kind: ErrorKind) -> str:
    with pytest.raises(SubmitRejected) as info:
        rig.accel.submit(rig.queue, program, bindings, Timeout.INFINITE)
    assert info.value.error.kind is kind, info.value.error
    return str(info.value.error.message)


def test_uniform_ranges_honour_the_device_limits(rig: Rig) -> None:
    program, x, y, case = _uniform_program(rig)
    description = rig.accel.description
    alignment = description.min_uniform_buffer_offset_alignment
    limit = description.max_uniform_buffer_range
    params = rig.buffer(bytes(alignment) + case.initial[2] + bytes(limit), R)
    base = [BindingRef(0, x, BufferRange(0, x.desc.bytes), R), BindingRef(1, y, BufferRange(0, y.desc.bytes), W)]
    if alignment > 1:
        message = _rejected(rig, program, [*base, BindingRef(2, params, BufferRange(4, 16), R)], ErrorKind.INCOMPATIBLE)
        assert "slot 2" in message and "minUniformBufferOffsetAlignment" in message
    message = _rejected(
        rig, program, [*base, BindingRef(2, params, BufferRange(0, limit + 16), R)], ErrorKind.INCOMPATIBLE
    )
    assert "slot 2" in message and "maxUniformBufferRange" in message and str(limit) in message
    message = _rejected(
        rig, program, [*base, BindingRef(2, params, BufferRange(alignment, 8), R)], ErrorKind.INVALID_ARGUMENT
    )
    assert "slot 2" in message and "12-byte uniform block" in message
    event = rig.accel.submit(
        rig.queue, program, [*base, BindingRef(2, params, BufferRange(alignment, 16), R)], Timeout.INFINITE
    )
    rig.events.append(event)
    assert rig.wait(event) == EventState.COMPLETE
    assert case.problem(1, rig.read(y)) is None


def test_a_buffer_without_uniform_usage_is_refused_as_a_uniform_buffer(make_accel: Any) -> None:
    accel = make_accel()
    rig = Rig(accel)
    try:
        program, x, y, case = _uniform_program(rig)
        assert x.can_uniform  # lavapipe and NVIDIA report the same requirements with the uniform bit
        rig.context.uniform_usage = False  # as on a device where the uniform bit changes the requirements
        params = rig.buffer(case.initial[2], R)
        assert not params.can_uniform
        bindings = rig.bind({0: (x, R), 1: (y, W), 2: (params, R)})
        message = _rejected(rig, program, bindings, ErrorKind.INCOMPATIBLE)
        assert "slot 2" in message and "uniform" in message
    finally:
        rig.close()


# --------------------------------------------------------------------------- device features


def test_the_context_enables_the_storage_and_layout_features(accel: Any) -> None:
    description = accel.description
    capabilities = pipeline.supported_capabilities(description)
    for feature, capability in (
        ("storageBuffer8BitAccess", "StorageBuffer8BitAccess"),
        ("uniformAndStorageBuffer8BitAccess", "UniformAndStorageBuffer8BitAccess"),
        ("storagePushConstant8", "StoragePushConstant8"),
        ("storageBuffer16BitAccess", "StorageBuffer16BitAccess"),
        ("uniformAndStorageBuffer16BitAccess", "UniformAndStorageBuffer16BitAccess"),
        ("storagePushConstant16", "StoragePushConstant16"),
        ("shaderInt8", "Int8"),
        ("shaderInt16", "Int16"),
        ("shaderInt64", "Int64"),
        ("shaderFloat16", "Float16"),
        ("shaderFloat64", "Float64"),
    ):
        assert (feature in description.features) == (capability in capabilities), feature
    terms = pipeline.device_terms(description)
    assert ("--scalar-block-layout" in terms.validator_options) == ("scalarBlockLayout" in description.features)


SCALAR_8BIT = """#version 450
#extension GL_EXT_scalar_block_layout : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_8bit_storage : require
layout(local_size_x = 64) in;
layout(push_constant) uniform P { uint8_t factor; } p;
layout(scalar, set = 0, binding = 0) buffer V { vec3 v[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < v.length()) v[i] = v[i] * float(p.factor);
}
"""


def test_a_scalar_layout_8bit_push_constant_kernel_runs(rig: Rig, compile_glsl: Any) -> None:
    features = rig.accel.description.features
    if not {"scalarBlockLayout", "storagePushConstant8", "shaderInt8"} <= features:
        pytest.skip("the device lacks scalarBlockLayout / storagePushConstant8 / shaderInt8")
    module = compile_glsl(SCALAR_8BIT)
    items = 100
    values = np.arange(3 * items, dtype=np.float32)
    package = KernelPackage(
        VK,
        "main",
        (64, 1, 1),
        (PackageBinding(0, 0, RW, 12),),
        Dispatch(DispatchKind.FROM_BINDING, slot=0),
        module,
        push_constants=bytes([3, 0, 0, 0]),  # a 1-byte block, passed as a 4-byte range
    )
    data = rig.buffer(values.tobytes(), RW)
    event = rig.submit(rig.load(write_package(package)), {0: (data, RW)})
    assert rig.wait(event) == EventState.COMPLETE
    assert np.array_equal(np.frombuffer(rig.read(data), dtype=np.float32), values * 3)


def test_a_module_needing_a_missing_feature_is_refused_naming_it(
    accel: Any, compile_glsl: Any, raises_kind: Any
) -> None:
    module = compile_glsl(SCALAR_8BIT)
    package = KernelPackage(
        VK,
        "main",
        (64, 1, 1),
        (PackageBinding(0, 0, RW, 12),),
        Dispatch(DispatchKind.FROM_BINDING, slot=0),
        module,
        push_constants=bytes(4),
    )
    terms = pipeline.device_terms(accel.description)
    no_push8 = dataclasses.replace(terms, capabilities=terms.capabilities - {"StoragePushConstant8"})
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        module_check.check_module(package, no_push8)
    assert "StoragePushConstant8 (Vulkan feature storagePushConstant8)" in info.value.message
    if module_check.validator_path() is None:
        pytest.skip("spirv-val is not installed: the layout is not validated")
    no_scalar = dataclasses.replace(terms, features=terms.features - {"scalarBlockLayout"})
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        module_check.check_module(package, no_scalar)
    assert "scalarBlockLayout" in info.value.message
    module_check.check_module(package, terms)  # with the device's real features it passes


def test_sets_below_the_used_one_get_empty_layouts(rig: Rig, compile_glsl: Any) -> None:
    only_set2 = compile_glsl(
        """#version 450
        layout(local_size_x = 16) in;
        layout(set = 2, binding = 3) buffer O { uint v[]; } o;
        void main() { o.v[gl_GlobalInvocationID.x] += gl_GlobalInvocationID.x; }"""
    )
    package = KernelPackage(
        VK, "main", (16, 1, 1), (PackageBinding(5, 3, RW, set=2),), Dispatch(DispatchKind.FIXED, (2, 1, 1)), only_set2
    )
    before = rig.accel.live_resources().get("VkDescriptorSetLayout", 0)
    program = rig.load(write_package(package))
    assert rig.accel.live_resources()["VkDescriptorSetLayout"] == before + 3  # sets 0 and 1 are empty layouts
    data = rig.buffer(np.ones(32, dtype=np.uint32).tobytes(), RW)
    event = rig.submit(program, {5: (data, RW)})
    assert rig.wait(event) == EventState.COMPLETE
    assert np.array_equal(np.frombuffer(rig.read(data), dtype=np.uint32), np.arange(32, dtype=np.uint32) + 1)
