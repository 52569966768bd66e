"""The conformance suite (standard + Vulkan cases) on every Vulkan device, under the validation layer."""

from __future__ import annotations

from accelcore.conformance.report import CaseStatus
from accelcore.conformance.suite import run
from accelcore.registry import DeviceEntry

from .conftest import VALIDATION

VULKAN_CASES = {
    "vulkan.corpus-kernels",
    "vulkan.spirv-refused-before-driver",
    "vulkan.package-contradicts-module",
    "vulkan.queues-independent",
    "vulkan.validation-clean",
}


def test_standard_and_vulkan_cases_pass_with_zero_validation_messages(entry: DeviceEntry) -> None:
    from accel_vulkan import provider_family

    setup = provider_family.conformance(entry, validation=VALIDATION)
    report = run(setup.factory, setup.target, setup.hooks, setup.extra_cases)
    allowed_skip = set() if VALIDATION else {"vulkan.validation-clean"}
    problems = [
        f"{c.id}: {c.status} {c.reason}"
        for c in report.cases
        if c.status is not CaseStatus.PASSED and not (c.status is CaseStatus.SKIPPED and c.id in allowed_skip)
    ]
    assert not problems, "\n".join(problems)
    assert VULKAN_CASES <= {c.id for c in report.cases}
    assert setup.factory.instances > len(report.cases) // 2
    assert setup.factory.validation_enabled == VALIDATION
    messages = setup.factory.messages
    assert not messages, f"{len(messages)} validation message(s); first: {messages[0]}"
