"""Warm program loads: remembered module checks and pipeline-cache sizes never admit other bytes or leak.

A warm load (the same artifact again after an unload) skips the module
checks and the pipeline-cache measurement that an identical earlier load
did; these tests hold it to the cold load's promises: different bytes are
always checked, failures are never remembered, the memos are bounded, the
resident-bytes refusal gives the same numbers, the program runs, and every
native object is released by unload.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from accel_vulkan import module_check, pipeline

from accelcore import AccessMode, ErrorKind, Timeout
from accelcore.kernels.package import Dispatch, DispatchKind, KernelPackage, PackageBinding
from accelcore.kernels.package_codec import write_package

from .conftest import VK, Rig, artifact

RW = AccessMode.READ_WRITE
ELEMENTS = 64
GLSL = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { uint v[]; } data;
void main() { data.v[gl_GlobalInvocationID.x] += 1u; }
"""
PREAMBLE_OPCODES = {17, 10, 11, 14, 15, 16, 331}
"""OpCapability ... OpExecutionModeId: what precedes the debug section where OpSourceExtension may go."""


@pytest.fixture(scope="module")
def add_one(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """SPIR-V of a kernel adding 1 to each of 64 u32 (glslangValidator, Vulkan 1.2 target)."""
    tool = shutil.which("glslangValidator")
    if tool is None:
        pytest.fail(
            "glslangValidator is not installed (Debian: glslang-tools, which make setup installs); "
            "these tests compile GLSL"
        )
    folder = tmp_path_factory.mktemp("warm")
    (folder / "k.comp").write_text(GLSL)
    subprocess.run(
        [tool, "-V", "--target-env", "vulkan1.2", str(folder / "k.comp"), "-o", str(folder / "k.spv")],
        check=True,
        capture_output=True,
    )
    return (folder / "k.spv").read_bytes()


def tagged(module: bytes, tag: str) -> bytes:
    """``module`` with an ``OpSourceExtension "<tag>"``: valid, different bytes, same kernel."""
    words = [int.from_bytes(module[i : i + 4], "little") for i in range(0, len(module), 4)]
    position = 5
    while position < len(words) and words[position] & 0xFFFF in PREAMBLE_OPCODES:
        position += words[position] >> 16
    text = tag.encode() + b"\0"
    text += b"\0" * (-len(text) % 4)
    literal = [int.from_bytes(text[i : i + 4], "little") for i in range(0, len(text), 4)]
    words[position:position] = [((1 + len(literal)) << 16) | 4, *literal]
    return b"".join(word.to_bytes(4, "little") for word in words)


def live(accel: Any) -> dict[str, int]:
    """Live native objects per kind, kinds at zero left out (the ledger lists a kind once it was used)."""
    return {kind: count for kind, count in accel.live_resources().items() if count}


def package(module: bytes) -> bytes:
    dispatch = Dispatch(DispatchKind.FIXED, (1, 1, 1))
    return write_package(KernelPackage(VK, "main", (64, 1, 1), (PackageBinding(0, 0, RW, 4),), dispatch, module))


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """Modules that went through the full check (the memos start empty and are restored afterwards)."""
    seen: list[bytes] = []
    real = module_check.check_module

    def counting(pkg: KernelPackage, *args: Any) -> Any:
        seen.append(pkg.module)
        return real(pkg, *args)

    monkeypatch.setattr(module_check, "check_module", counting)
    monkeypatch.setattr(module_check, "_checked", {})
    monkeypatch.setattr(module_check, "_inspected", {})
    monkeypatch.setattr(pipeline, "_sizes", type(pipeline._sizes)())
    yield seen


def test_a_warm_load_skips_the_checks_and_reports_the_same_resident_bytes(
    rig: Any, add_one: bytes, checks: list[bytes]
) -> None:
    raw = package(add_one)
    first = rig.load(raw)
    rig.accel.unload_program(rig.programs.pop())
    second = rig.load(raw)
    assert checks == [add_one]
    assert second.resident_bytes == first.resident_bytes
    assert pipeline._sizes[rig.context]  # the warm load used the remembered size


def test_one_flipped_byte_is_checked_and_refused(
    rig: Any, add_one: bytes, checks: list[bytes], raises_kind: Any
) -> None:
    rig.load(package(add_one))
    flipped = bytearray(add_one)
    flipped[12] = 1  # one byte of the id bound: bound 1, every id is out of range
    for _ in range(2):  # a failure is never remembered: checked again each time
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            rig.load(package(bytes(flipped)))
    assert checks == [add_one, bytes(flipped), bytes(flipped)]


def test_a_failed_capability_check_is_repeated(rig: Any, add_one: bytes, checks: list[bytes], raises_kind: Any) -> None:
    # OpCapability Kernel (6) makes the module OpenCL-flavoured: UNSUPPORTED, whatever passed before.
    kernel = add_one[:20] + ((2 << 16) | 17).to_bytes(4, "little") + (6).to_bytes(4, "little") + add_one[20:]
    for _ in range(3):
        with raises_kind(ErrorKind.UNSUPPORTED):
            rig.load(package(kernel))
    assert len(checks) == 3


def test_different_valid_bytes_are_checked_again(rig: Any, add_one: bytes, checks: list[bytes]) -> None:
    for tag in ("a", "b", "a"):
        rig.accel.unload_program(rig.accel.load_program(rig.context, artifact(package(tagged(add_one, tag)))))
    assert checks == [tagged(add_one, "a"), tagged(add_one, "b")]


def test_the_memos_are_bounded(rig: Any, add_one: bytes, checks: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module_check, "CHECKED_CAPACITY", 3)
    monkeypatch.setattr(pipeline, "SIZES_CAPACITY", 3)
    for index in range(7):
        rig.accel.unload_program(rig.accel.load_program(rig.context, artifact(package(tagged(add_one, str(index))))))
        assert len(module_check._checked) <= 3
        assert len(pipeline._sizes[rig.context]) <= 3
    assert len(checks) == 7


def test_the_resident_bytes_refusal_holds_on_a_warm_load(
    rig: Any, add_one: bytes, checks: list[bytes], raises_kind: Any
) -> None:
    raw = package(add_one)
    baseline = live(rig.accel)
    floor = len(add_one) + pipeline.HOST_RECORD_BYTES  # passes the pre-check; the measured cache data does not fit
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as cold:  # the first load creates, measures, refuses, destroys
        rig.load(raw, resident_bytes=floor)
    assert "the program retains" in cold.value.message
    assert live(rig.accel) == baseline
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as warm:  # refused from the remembered size, same numbers
        rig.load(raw, resident_bytes=floor)
    assert warm.value.message == cold.value.message
    assert live(rig.accel) == baseline
    program = rig.load(raw)
    needed = program.resident_bytes
    assert needed > floor
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as tight:
        rig.load(raw, resident_bytes=needed - 1)
    assert f"the program retains {needed} bytes" in tight.value.message
    assert f"over resident_bytes {needed - 1}" in tight.value.message
    assert rig.load(raw, resident_bytes=needed).resident_bytes == needed
    assert checks == [add_one]


def test_a_warm_loaded_program_runs_and_unload_releases_everything(
    rig: Any, add_one: bytes, checks: list[bytes]
) -> None:
    raw = package(add_one)
    baseline = live(rig.accel)
    data = rig.buffer(np.arange(ELEMENTS, dtype=np.uint32).tobytes(), RW)
    after_buffer = live(rig.accel)
    for round_ in range(1, 4):  # cold, then warm twice
        program = rig.accel.load_program(rig.context, artifact(raw))
        assert live(rig.accel)["VkPipeline"] == after_buffer.get("VkPipeline", 0) + 1
        event = rig.accel.submit(rig.queue, program, rig.bind({0: (data, RW)}), Timeout.INFINITE)
        assert str(rig.wait(event)) == "Complete"
        rig.accel.destroy_event(event)
        rig.accel.unload_program(program)
        assert live(rig.accel) == after_buffer
        got = np.frombuffer(rig.read(data), dtype=np.uint32)
        assert np.array_equal(got, np.arange(ELEMENTS, dtype=np.uint32) + round_)
    rig.accel.free_buffer(rig.buffers.pop())
    assert live(rig.accel) == baseline
    assert checks == [add_one]


def test_sizes_are_per_context(make_accel: Callable[..., Any], add_one: bytes, checks: list[bytes]) -> None:
    accel = make_accel()
    one, two = Rig(accel), Rig(accel)
    try:
        first = accel.load_program(one.context, artifact(package(add_one)))
        second = accel.load_program(two.context, artifact(package(add_one)))
        assert first.resident_bytes == second.resident_bytes
        assert two.context in pipeline._sizes and one.context in pipeline._sizes
        accel.unload_program(first)
        accel.unload_program(second)
    finally:
        one.close()
        two.close()
