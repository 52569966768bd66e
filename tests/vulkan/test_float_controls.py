"""SPV_KHR_float_controls on Vulkan: the provider reads VkPhysicalDeviceFloatControlsProperties and lets
a module declare a float-controls execution mode exactly where the device reports it for that width.

Before, the capability check knew no float-controls capability at all, so every module declaring one
(DenormPreserve, RoundingModeRTE, ...) was refused, also on devices that support it.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import pytest
from accel_vulkan import argument_kernels as kernels
from accel_vulkan import module_check, pipeline

from accelcore import AccessMode, ErrorKind, EventState
from accelcore.conformance.corpus import corpus_root
from accelcore.contract.errors import BackendError
from accelcore.kernels.package import Dispatch, DispatchKind, KernelPackage, PackageBinding
from accelcore.kernels.package_codec import write_package
from accelcore.kernels.spirv import inspect_spirv

from .conftest import VK, Rig

RTE_32 = """#version 450
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 32);
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer O { float v[]; } o;
void main() { o.v[0] = o.v[0] * 3.0; }
"""
"""A module declaring OpExecutionMode RoundingModeRTE 32 (capability 4467): triples v[0]."""


def _preserve_module() -> bytes:
    return (corpus_root() / "spirv" / "numerics_denorm_preserve.vk.spv").read_bytes()


def _package(module: bytes) -> KernelPackage:
    return KernelPackage(
        VK, "main", (1, 1, 1), (PackageBinding(0, 0, AccessMode.READ_WRITE),), Dispatch(DispatchKind.FIXED), module
    )


def _loaded_where_reported(rig: Rig, package: KernelPackage, feature: str) -> Any:
    """``package`` loaded where the device reports ``feature`` (``shader<Mode>Float32``); where it does not, the
    load is refused UNSUPPORTED naming the mode's capability and the feature, and this returns None."""
    raw = write_package(package)
    if feature in rig.accel.description.float_controls:
        return rig.load(raw)
    with pytest.raises(BackendError) as caught:
        rig.load(raw)
    assert caught.value.kind is ErrorKind.UNSUPPORTED
    capability = feature.removeprefix("shader").removesuffix("Float32")
    assert capability in str(caught.value) and feature in str(caught.value)
    return None


def test_inspection_reports_the_float_modes_a_module_declares() -> None:
    assert inspect_spirv(_preserve_module()).float_modes == (("DenormPreserve", 32),)
    assert inspect_spirv(kernels.compile_glsl(RTE_32)).float_modes == (("RoundingModeRTE", 32),)
    plain = (corpus_root() / "spirv" / "numerics_denorm.vk.spv").read_bytes()
    assert inspect_spirv(plain).float_modes == ()


def test_a_float_mode_runs_where_the_device_reports_it_and_is_refused_naming_the_property_where_not(
    rig: Rig,
) -> None:
    program = _loaded_where_reported(rig, _package(kernels.compile_glsl(RTE_32)), "shaderRoundingModeRTEFloat32")
    if program is not None:
        buffer = rig.buffer(struct.pack("<f", 1.5), AccessMode.READ_WRITE)
        event = rig.submit(program, {0: (buffer, AccessMode.READ_WRITE)})
        assert rig.wait(event) == EventState.COMPLETE
        assert struct.unpack("<f", rig.read(buffer)[:4])[0] == 4.5


def test_denorm_preserve_loads_only_where_the_device_reports_it(rig: Rig) -> None:
    program = _loaded_where_reported(rig, _package(_preserve_module()), "shaderDenormPreserveFloat32")
    if program is not None:
        rig.accel.unload_program(program)


def test_the_width_a_mode_names_must_be_reported_not_only_the_capability(accel: Any) -> None:
    module = inspect_spirv(_preserve_module())
    terms = pipeline.device_terms(accel.description)
    only_16 = dataclasses.replace(
        terms,
        capabilities=terms.capabilities | {"DenormPreserve"},
        float_controls=frozenset({"shaderDenormPreserveFloat16"}),
    )
    module_check.check_capabilities(module, only_16)  # the capability is there (some width) ...
    with pytest.raises(BackendError) as caught:
        module_check.check_float_modes(module, only_16)  # ... but not for 32-bit floats
    assert caught.value.kind is ErrorKind.UNSUPPORTED
    assert "DenormPreserve 32" in str(caught.value) and "shaderDenormPreserveFloat32" in str(caught.value)
    with_32 = dataclasses.replace(only_16, float_controls=frozenset({"shaderDenormPreserveFloat32"}))
    module_check.check_float_modes(module, with_32)
