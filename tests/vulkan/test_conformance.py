"""The conformance suite (standard + Vulkan cases) on every Vulkan device, under the validation layer."""

from __future__ import annotations

from accel_cli.expectations import DEFAULT_EXPECTATIONS, load_expectations, match_expectation

from accelcore.conformance.report import CaseStatus
from accelcore.conformance.suite import run
from accelcore.devices.registry import DeviceEntry

from .conftest import VALIDATION

VULKAN_CASES = {
    "vulkan.corpus-kernels",
    "vulkan.spirv-refused-before-driver",
    "vulkan.package-contradicts-module",
    "vulkan.queues-independent",
    "vulkan.validation-clean",
    "vulkan.long-loop",
    "vulkan.kernel-arguments",
}
EXPECTED = load_expectations(DEFAULT_EXPECTATIONS)
"""The known driver bugs `accel conformance` (and so `make run`) applies by default (one list for both)."""


def test_standard_and_vulkan_cases_pass_with_zero_validation_messages(entry: DeviceEntry) -> None:
    from accel_vulkan import provider_family

    setup = provider_family.conformance(entry, validation=VALIDATION)
    report = run(setup.factory, setup.target, setup.hooks, setup.extra_cases)
    allowed_skip = set() if VALIDATION else {"vulkan.validation-clean"}
    expected = {c.id for c in report.cases if match_expectation(EXPECTED, entry, c.id) is not None}
    problems = [
        f"{c.id}: {c.status} {c.reason}"
        for c in report.cases
        if c.status is not CaseStatus.PASSED
        and c.id not in expected
        and not (c.status is CaseStatus.SKIPPED and c.id in allowed_skip)
    ]
    assert not problems, "\n".join(problems)
    # Expected failures are strict: a fixed driver must make the entry go.
    fixed = [c.id for c in report.cases if c.id in expected and c.status is not CaseStatus.FAILED]
    assert not fixed, f"expected to fail on {entry.name} but did not (remove the entry): {fixed}"
    assert VULKAN_CASES <= {c.id for c in report.cases}
    assert setup.factory.instances > len(report.cases) // 2
    assert setup.factory.validation_enabled == VALIDATION
    messages = setup.factory.messages
    assert not messages, f"{len(messages)} validation message(s); first: {messages[0]}"
