"""The conformance suite (standard cases + the OpenCL cases) on every OpenCL device.

A case a device cannot pass goes into accel_cli/data/expected-failures.toml with the
date and the reason (it then runs as a strict xfail here and as xfail in `make run`);
a capability case may skip only for the reason the suite records. Nothing is silently skipped.
"""

from __future__ import annotations

from typing import Any

import pytest
from accel_cli.expectations import DEFAULT_EXPECTATIONS, load_expectations, match_expectation
from accel_opencl import provider_family
from accel_opencl.conformance_cases import opencl_cases

from accelcore.conformance.report import CaseStatus
from accelcore.conformance.suite import run, standard_case_ids

CASE_IDS = [*standard_case_ids(), *(case.id for case in opencl_cases())]
if "accounting.resource-lifecycle" not in CASE_IDS:
    CASE_IDS.append("accounting.resource-lifecycle")

EXPECTED = load_expectations(DEFAULT_EXPECTATIONS)
"""The known driver bugs `accel conformance` (and so `make run`) applies by default (one list for both)."""


@pytest.fixture(scope="module")
def report(entry: Any) -> Any:
    setup = provider_family.conformance(entry)
    return run(setup.factory, setup.target, setup.hooks, setup.extra_cases)


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_conformance_case(report: Any, entry: Any, case_id: str, request: pytest.FixtureRequest) -> None:
    expected = match_expectation(EXPECTED, entry, case_id)
    if expected is not None:
        request.applymarker(pytest.mark.xfail(reason=f"{expected.date}: {expected.reason}", strict=True))
    results = {result.id: result for result in report.cases}
    assert case_id in results, f"the suite did not run {case_id}"
    result = results[case_id]
    if result.status == CaseStatus.SKIPPED:
        assert result.reason, "a skip must say why"
        pytest.skip(f"suite skipped {case_id}: {result.reason}")
    assert result.status == CaseStatus.PASSED, result.reason


def test_the_suite_ran_every_case_once(report: Any) -> None:
    ids = [result.id for result in report.cases]
    assert sorted(ids) == sorted(set(ids)) and set(CASE_IDS) <= set(ids)
