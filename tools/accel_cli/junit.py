"""JUnit XML for a conformance matrix: one ``testsuite`` per device run, one ``testcase`` per case.

Mapping: fail → ``failure``; the synthetic ``worker`` case of a crashed or
timed-out run → ``error``; skip → ``skipped``; xfail → ``skipped`` with
type ``xfail`` and the expectation; xpass → passes, or ``failure`` of type
``xpass`` under ``--strict``; timeout (past --case-timeout) and crash (the worker
died in the case) → ``error`` of that type; flake (failed, then passed on a
retry) → passes with a ``flakyFailure`` per failed attempt (the Maven Surefire
element CI tools read) and ``system-out`` saying so, or ``failure`` of type
``flake`` under ``--strict`` unless a ``[[flake]]`` entry lists it; interrupted (Ctrl-C came before it
ended) → ``skipped`` of type ``interrupted``.
"""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

from .matrix import WORKER_CASE, Matrix

__all__ = ["matrix_to_junit", "xml_tree"]


def _first_line(text: str, fallback: str) -> str:
    lines = text.strip().splitlines()
    return (lines[0] if lines else fallback)[:500]


def matrix_to_junit(matrix: Matrix, *, strict: bool = False) -> str:
    root = ElementTree.Element("testsuites", {"name": "accel conformance"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for run in matrix.runs:
        label = run.label or run.device.device_id
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        suite = ElementTree.SubElement(root, "testsuite", {"name": label, "hostname": run.host})
        properties = ElementTree.SubElement(suite, "properties")
        for name, text in (
            ("device_id", run.device.device_id),
            ("device_name", run.device.name),
            ("device_uuid", run.device.uuid.hex()),
            ("driver_version", run.device.driver_version),
            ("outcome", run.outcome),
        ):
            ElementTree.SubElement(properties, "property", {"name": name, "value": text})
        for case in run.cases:
            counts["tests"] += 1
            element = ElementTree.SubElement(
                suite,
                "testcase",
                {"classname": f"conformance.{label}", "name": case.id, "time": f"{case.duration_s:.6f}"},
            )
            if case.verdict in ("timeout", "crash"):
                counts["errors"] += 1
                node = ElementTree.SubElement(
                    element, "error", {"type": case.verdict, "message": _first_line(case.reason, case.verdict)}
                )
                node.text = case.reason
            elif case.verdict == "flake":
                if strict and not case.expectation:
                    counts["failures"] += 1
                    node = ElementTree.SubElement(
                        element, "failure", {"type": "flake", "message": _first_line(case.reason, "flaky")}
                    )
                    node.text = case.reason
                for attempt in case.attempts:
                    if attempt.get("status") == "passed":
                        continue
                    reason = str(attempt.get("reason", ""))
                    node = ElementTree.SubElement(
                        element,
                        "flakyFailure",
                        {"type": str(attempt.get("status")), "message": _first_line(reason, "failed")},
                    )
                    node.text = reason
                ElementTree.SubElement(element, "system-out").text = case.reason
            elif case.verdict == "fail" and case.id == WORKER_CASE:
                counts["errors"] += 1
                node = ElementTree.SubElement(
                    element, "error", {"type": run.outcome, "message": _first_line(case.reason, run.outcome)}
                )
                node.text = case.reason
            elif case.verdict == "fail" or (case.verdict == "xpass" and strict):
                counts["failures"] += 1
                message = case.reason if case.verdict == "fail" else "expected to fail but passed"
                node = ElementTree.SubElement(
                    element, "failure", {"type": case.verdict, "message": _first_line(message, "failed")}
                )
                node.text = case.reason
            elif case.verdict == "interrupted":
                counts["skipped"] += 1
                ElementTree.SubElement(
                    element, "skipped", {"type": "interrupted", "message": _first_line(case.reason, "interrupted")}
                )
            elif case.verdict == "skip":
                counts["skipped"] += 1
                ElementTree.SubElement(element, "skipped", {"message": _first_line(case.reason, "skipped")})
            elif case.verdict == "xfail":
                counts["skipped"] += 1
                why = case.expectation.get("reason", "") if case.expectation else ""
                ElementTree.SubElement(
                    element,
                    "skipped",
                    {"type": "xfail", "message": _first_line(f"expected failure: {why} | {case.reason}", "xfail")},
                )
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{run.duration_s:.6f}")
        total_time += run.duration_s
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.6f}")
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def xml_tree(text: str) -> dict[str, Any]:
    """The XML as nested ``{"tag", "attrib", "text", "children"}`` dicts, the form the shipped
    ``junit.schema.json`` validates (there is no XML-schema validator in the dependencies)."""

    def convert(element: ElementTree.Element) -> dict[str, Any]:
        return {
            "tag": element.tag,
            "attrib": dict(element.attrib),
            "text": (element.text or "").strip(),
            "children": [convert(child) for child in element],
        }

    return convert(ElementTree.fromstring(text))
