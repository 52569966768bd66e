"""The conformance report: one :class:`CaseResult` per case, serialisable to JSON and JUnit XML."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

__all__ = ["REPORT_FORMAT", "CaseResult", "CaseStatus", "Report"]

REPORT_FORMAT = "accelcore-conformance-report/1"


class CaseStatus(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one case. ``reason`` says why it failed or skipped (and may note a pass)."""

    id: str
    status: CaseStatus
    reason: str = ""
    duration_s: float = 0.0
    mandatory: bool = True
    standard: bool = True
    metrics: Mapping[str, Any] = field(default_factory=dict)
    """Numbers a case measured (``ctx.record``; the numerics suite: max error, limit, worst input), JSON-ready."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "status": self.status.value,
            "reason": self.reason,
            "duration_s": self.duration_s,
            "mandatory": self.mandatory,
            "standard": self.standard,
        }
        if self.metrics:
            out["metrics"] = dict(self.metrics)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseResult:
        return cls(
            id=str(data["id"]),
            status=CaseStatus(data["status"]),
            reason=str(data.get("reason", "")),
            duration_s=float(data.get("duration_s", 0.0)),
            mandatory=bool(data.get("mandatory", True)),
            standard=bool(data.get("standard", True)),
            metrics=dict(data.get("metrics") or {}),
        )


@dataclass(frozen=True, slots=True)
class Report:
    """Every case's result, in run order. ``device`` is free-form metadata (name, uuid, provider)."""

    cases: tuple[CaseResult, ...]
    device: Mapping[str, str] = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def passed(self) -> bool:
        """True when no case failed (skips allowed)."""
        return all(case.status is not CaseStatus.FAILED for case in self.cases)

    def failed(self) -> list[CaseResult]:
        return [case for case in self.cases if case.status is CaseStatus.FAILED]

    def by_id(self, case_id: str) -> CaseResult:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def counts(self) -> dict[str, int]:
        totals = {status.value: 0 for status in CaseStatus}
        for case in self.cases:
            totals[case.status.value] += 1
        return totals

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "device": dict(self.device),
            "duration_s": self.duration_s,
            "summary": self.counts(),
            "cases": [case.to_dict() for case in self.cases],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        if data.get("format") != REPORT_FORMAT:
            raise ValueError(f"not a conformance report: format {data.get('format')!r}, expected {REPORT_FORMAT!r}")
        cases: Sequence[Mapping[str, Any]] = data.get("cases", [])
        return cls(
            cases=tuple(CaseResult.from_dict(c) for c in cases),
            device={str(k): str(v) for k, v in dict(data.get("device", {})).items()},
            duration_s=float(data.get("duration_s", 0.0)),
        )

    @classmethod
    def from_json(cls, text: str) -> Report:
        return cls.from_dict(json.loads(text))

    def to_junit_xml(self, *, suite_name: str = "accelcore-conformance") -> str:
        """JUnit XML: one ``testcase`` per case; failures and skips carry the reason."""
        counts = self.counts()
        suite = ElementTree.Element(
            "testsuite",
            {
                "name": suite_name,
                "tests": str(len(self.cases)),
                "failures": str(counts["failed"]),
                "errors": "0",
                "skipped": str(counts["skipped"]),
                "time": f"{self.duration_s:.6f}",
            },
        )
        if self.device:
            properties = ElementTree.SubElement(suite, "properties")
            for key, value in self.device.items():
                ElementTree.SubElement(properties, "property", {"name": key, "value": value})
        classname = "conformance." + self.device.get("device_id", self.device.get("name", "provider"))
        for case in self.cases:
            element = ElementTree.SubElement(
                suite, "testcase", {"classname": classname, "name": case.id, "time": f"{case.duration_s:.6f}"}
            )
            if case.status is CaseStatus.FAILED:
                failure = ElementTree.SubElement(
                    element, "failure", {"message": (case.reason or "failed").splitlines()[0][:500]}
                )
                failure.text = case.reason
            elif case.status is CaseStatus.SKIPPED:
                ElementTree.SubElement(element, "skipped", {"message": case.reason})
        ElementTree.indent(suite)
        return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)
