"""The runner's promises: ids, skips, mandatory rules, extra cases, bounded waits, report formats."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any
from xml.etree import ElementTree

import pytest

from accelcore import Capabilities, ErrorKind
from accelcore.conformance import (
    CaseContext,
    CaseResult,
    CaseStatus,
    ConformanceCase,
    Report,
    run,
    standard_case_ids,
)
from accelcore.devices.registry import load_families
from accelcore.testing import (
    REFERENCE_CAPABILITIES,
    FaultAccelerator,
    ReferenceAccelerator,
    ReferenceHooks,
    reference_target,
)

SPEC_IDS = [
    "metadata.stable-valid",
    "intent.reserved-flags",
    "memory.host",
    "memory.device",
    "memory.shared",
    "buffer.segmented-transfer-bounds",
    "buffer.transfer-permissions",
    "program.segmented-artifact-bounds",
    "submission.binding-validation",
    "submission.context-isolation",
    "submission.copy-path-diagnostics",
    "event.pending-release-terminal-stability",
    "timeout.finite-admission",
    "event.cancellation-races",
    "accounting.resource-lifecycle",
]


def test_standard_ids_are_the_spec_ids() -> None:
    assert sorted(standard_case_ids()) == sorted(SPEC_IDS)
    report = run(ReferenceAccelerator, reference_target(), ReferenceHooks())
    assert [c.id for c in report.cases] == list(standard_case_ids())
    assert all(c.standard for c in report.cases)


def test_capability_cases_skip_with_reason_when_bits_are_absent() -> None:
    caps = REFERENCE_CAPABILITIES & ~(Capabilities.EVENT_CANCELLATION | Capabilities.SHARED_MEMORY)

    report = run(lambda: ReferenceAccelerator(capabilities=caps), reference_target(), ReferenceHooks())

    skipped = {c.id: c.reason for c in report.cases if c.status is CaseStatus.SKIPPED}
    assert set(skipped) == {"event.cancellation-races", "memory.shared"}
    assert "EVENT_CANCELLATION" in skipped["event.cancellation-races"]
    assert "SHARED_MEMORY" in skipped["memory.shared"]
    assert report.passed


class _NoCounts(ReferenceHooks):
    def live_resources(self, provider: Any) -> Mapping[str, int] | None:
        return None


def test_accounting_skips_only_when_hooks_do_not_count() -> None:
    report = run(ReferenceAccelerator, reference_target(), _NoCounts())
    accounting = report.by_id("accounting.resource-lifecycle")
    assert accounting.status is CaseStatus.SKIPPED
    assert "live_resources" in accounting.reason
    assert [c.id for c in report.cases if c.status is CaseStatus.SKIPPED] == ["accounting.resource-lifecycle"]


def test_suite_passes_through_a_transparent_fault_wrapper() -> None:
    report = run(lambda: FaultAccelerator(ReferenceAccelerator()), reference_target(), ReferenceHooks())
    assert report.failed() == []


def _leaves_a_held_event(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    fixtures = session.fixtures(context)
    program, queue = session.load_program(context), session.create_queue(context)
    session.hold()
    session.submit(queue, program, session.bindings(fixtures))  # left pending: cleanup must settle it


def _checks_output(ctx: CaseContext) -> None:
    session = ctx.open()
    context = session.create_context()
    fixtures = session.fixtures(context)
    event = session.submit(session.create_queue(context), session.load_program(context), session.bindings(fixtures))
    session.wait_terminal(event)
    session.check_contents(fixtures, expect="expected", what="extra case")
    ctx.expect_error(ErrorKind.OUT_OF_BOUNDS, "read at the end", session.read, fixtures[0].buffer, 1, fixtures[0].size)


def _skips(ctx: CaseContext) -> None:
    ctx.skip("nothing to do here")


def _fails(ctx: CaseContext) -> None:
    ctx.fail("the provider did something wrong")


def _crashes(ctx: CaseContext) -> None:
    raise RuntimeError("boom")


def test_extra_cases_run_after_standard_ones_with_their_verdicts() -> None:
    extra = [
        ConformanceCase("reference.output", _checks_output),
        ConformanceCase("reference.held-leftover", _leaves_a_held_event),
        ConformanceCase("reference.optional-skip", _skips, mandatory=False),
        ConformanceCase("reference.mandatory-skip", _skips),
        ConformanceCase("reference.fails", _fails),
        ConformanceCase("reference.crashes", _crashes),
        ConformanceCase("reference.needs-bit", _fails, requires=Capabilities(1 << 40)),
    ]
    seen: list[CaseResult] = []

    report = run(ReferenceAccelerator, reference_target(), ReferenceHooks(), extra, progress=seen.append)

    assert [c.id for c in seen] == [c.id for c in report.cases]
    statuses = {c.id: (c.status, c.reason) for c in report.cases if not c.standard}
    assert statuses["reference.output"][0] is CaseStatus.PASSED
    assert statuses["reference.held-leftover"][0] is CaseStatus.PASSED
    assert statuses["reference.optional-skip"] == (CaseStatus.SKIPPED, "nothing to do here")
    assert statuses["reference.mandatory-skip"][0] is CaseStatus.FAILED
    assert "mandatory case tried to skip" in statuses["reference.mandatory-skip"][1]
    assert statuses["reference.fails"] == (CaseStatus.FAILED, "the provider did something wrong")
    assert "RuntimeError: boom" in statuses["reference.crashes"][1]
    assert statuses["reference.needs-bit"][0] is CaseStatus.SKIPPED
    assert report.by_id("accounting.resource-lifecycle").status is CaseStatus.PASSED
    assert report.cases[-1].id == "accounting.resource-lifecycle"


def test_duplicate_case_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        run(ReferenceAccelerator, reference_target(), ReferenceHooks(), [ConformanceCase("memory.host", _skips)])


class _NeverCompletes(ReferenceHooks):
    def complete_held(self, provider: Any, event: Any) -> None:
        pass  # a broken hook: the held event stays pending forever


def test_a_pending_event_fails_the_case_instead_of_hanging() -> None:
    start = time.monotonic()
    report = run(
        ReferenceAccelerator,
        reference_target(),
        _NeverCompletes(),
        select=["event.pending-release-terminal-stability"],
        wait_limit_s=0.2,
    )
    assert time.monotonic() - start < 20  # bounded: a hang would hit the pytest timeout instead
    (case,) = report.cases
    assert case.status is CaseStatus.FAILED
    assert "still Pending after 0.2 s" in case.reason


def test_select_runs_only_the_named_cases() -> None:
    wanted = ["memory.", "metadata.stable-valid"]
    report = run(ReferenceAccelerator, reference_target(), ReferenceHooks(), select=wanted)
    assert [c.id for c in report.cases] == ["metadata.stable-valid", "memory.host", "memory.device", "memory.shared"]


def test_a_broken_factory_fails_every_case_with_the_reason() -> None:
    def factory() -> ReferenceAccelerator:
        raise OSError("no device")

    report = run(factory, reference_target(), ReferenceHooks())
    assert all(c.status is CaseStatus.FAILED and "no device" in c.reason for c in report.cases)


def test_report_round_trips_through_json_and_renders_junit() -> None:
    caps = REFERENCE_CAPABILITIES & ~Capabilities.EVENT_CANCELLATION
    extra = [ConformanceCase("reference.fails", _fails)]
    report = run(lambda: ReferenceAccelerator(capabilities=caps), reference_target(), ReferenceHooks(), extra)

    text = report.to_json()
    assert Report.from_json(text) == report
    data = json.loads(text)
    assert data["summary"] == {"passed": 14, "failed": 1, "skipped": 1}
    assert {"id", "status", "reason", "duration_s"} <= set(data["cases"][0])

    suite = ElementTree.fromstring(report.to_junit_xml())
    assert suite.get("tests") == "16" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    failure = cases["reference.fails"].find("failure")
    assert failure is not None and failure.text == "the provider did something wrong"
    assert cases["event.cancellation-races"].find("skipped") is not None


def test_report_refuses_foreign_json() -> None:
    with pytest.raises(ValueError, match="not a conformance report"):
        Report.from_json('{"format": "something-else", "cases": []}')


def test_reference_family_is_registered_and_conforms() -> None:
    family = load_families(["reference"])["reference"]
    entries = family.discover()  # type: ignore[union-attr]
    assert [e.device_id for e in entries] == ["reference:0"]
    setup = family.conformance(entries[0])  # type: ignore[union-attr]
    report = run(setup.factory, setup.target, setup.hooks, setup.extra_cases)
    assert report.passed
    assert isinstance(family.open(entries[0]), ReferenceAccelerator)  # type: ignore[union-attr]
