"""Known-failure expectations for ``accel conformance --expect FILE``.

Format (TOML; a ``.json`` file with the same structure is accepted too)::

    [[expected-failure]]
    device = "opencl:*rusticl*"   # a device selector (same grammar as everywhere)
    case = "event.cancellation-races"   # a case id, fnmatch globs allowed
    reason = "rusticl leaves a gated kernel QUEUED after its user event fails"
    date = 2026-11-30             # when the expectation was recorded (TOML date or "YYYY-MM-DD")

Every key is required; unknown keys are refused, so a typo cannot silently
disable an expectation.

Known flaky cells (``accel conformance --retries``) use the same four keys under ``[[flake]]``: a case
that fails and then passes on a retry is ``flake`` either way, but only an unlisted flake fails a
``--strict`` run.
"""

from __future__ import annotations

import datetime as dt
import difflib
import fnmatch
import json
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelcore.contract.errors import BackendError
from accelcore.devices.selector import DeviceLike, Selector, SelectorError, parse_selector
from accelcore.support.files import read_file

__all__ = [
    "DEFAULT_EXPECTATIONS",
    "Expectation",
    "ExpectationError",
    "check_cases",
    "check_cases_offered",
    "check_providers",
    "load_expectations",
    "match_expectation",
    "match_flake",
]

_KEYS = ("device", "case", "reason", "date")

DEFAULT_EXPECTATIONS = Path(__file__).resolve().parent / "data" / "expected-failures.toml"
"""The known driver bugs shipped with accel_cli (package data): ``accel conformance`` applies them unless
``--expect none``; the provider test suites read the same file."""


class ExpectationError(ValueError):
    """The expectations file is malformed; the message names the entry and key."""


@dataclass(frozen=True, slots=True)
class Expectation:
    device: str
    case: str
    reason: str
    date: str
    source: str
    selector: Selector
    number: int = 0
    kind: str = "expected-failure"
    """``expected-failure`` or ``flake`` (the TOML table name)."""

    @property
    def where(self) -> str:
        """How an error names the entry: its file, number and device/case."""
        return f"{self.source}: {self.kind} #{self.number} (device {self.device!r}, case {self.case!r})"

    def matches(self, device: DeviceLike, case_id: str) -> bool:
        return self.selector.matches(device) and fnmatch.fnmatchcase(case_id, self.case)

    def to_json(self) -> dict[str, str]:
        out = {
            "device": self.device,
            "case": self.case,
            "reason": self.reason,
            "date": self.date,
            "source": self.source,
        }
        if self.kind != "expected-failure":
            out["kind"] = self.kind
        return out


def _date(value: Any, where: str) -> str:
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise ExpectationError(f"{where}: date {value!r} is not a date (write 2026-11-30)")


def parse_expectations(document: Any, source: str) -> list[Expectation]:
    """Expectations from a parsed TOML/JSON document."""
    if not isinstance(document, dict):
        raise ExpectationError(f"{source}: top level must be a table with [[expected-failure]] entries")
    unknown_top = set(document) - {"expected-failure", "flake"}
    if unknown_top:
        raise ExpectationError(
            f"{source}: unknown top-level key(s) {sorted(unknown_top)}; use [[expected-failure]] (or [[flake]])"
        )
    result: list[Expectation] = []
    for kind in ("expected-failure", "flake"):
        result += _parse_entries(document.get(kind, []), source, kind)
    return result


def _parse_entries(entries: Any, source: str, kind: str) -> list[Expectation]:
    if not isinstance(entries, list):
        raise ExpectationError(f"{source}: {kind} must be an array of tables ([[{kind}]])")
    result: list[Expectation] = []
    for number, entry in enumerate(entries, start=1):
        where = f"{source}: {kind} #{number}"
        if not isinstance(entry, dict):
            raise ExpectationError(f"{where} is not a table")
        missing = [k for k in _KEYS if k not in entry]
        if missing:
            raise ExpectationError(f"{where} lacks {', '.join(missing)} (needs {', '.join(_KEYS)})")
        unknown = sorted(set(entry) - set(_KEYS))
        if unknown:
            named = ", ".join(f"{k}={entry[k]!r}" for k in ("device", "case") if isinstance(entry.get(k), str))
            raise ExpectationError(
                f"{where}{f' ({named})' if named else ''} has unknown key(s) {', '.join(map(repr, unknown))} "
                f"(allowed: {', '.join(_KEYS)})"
            )
        for key in ("device", "case", "reason"):
            if not isinstance(entry[key], str) or not entry[key].strip():
                raise ExpectationError(f"{where}: {key} must be a non-empty string, got {entry[key]!r}")
        try:
            selector = parse_selector(entry["device"])
        except SelectorError as exc:
            raise ExpectationError(f"{where}: {exc.message}") from None
        result.append(
            Expectation(
                entry["device"],
                entry["case"],
                entry["reason"],
                _date(entry["date"], where),
                source,
                selector,
                number,
                kind,
            )
        )
    return result


MAX_EXPECTATIONS_BYTES = 16 << 20
"""The most an expectations file (``--expect``) may hold."""


def load_expectations(path: Path) -> list[Expectation]:
    """Read ``path`` (TOML, or JSON when it ends in .json); ExpectationError says what is wrong."""
    try:  # a regular file of at most MAX_EXPECTATIONS_BYTES, never a FIFO or device (accelcore.support.files)
        text = read_file(path, "expectations file", MAX_EXPECTATIONS_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise ExpectationError(f"no such file: {path}") from None
    except BackendError as exc:
        raise ExpectationError(exc.message) from None
    except UnicodeDecodeError:
        raise ExpectationError(f"{path}: not UTF-8 text") from None
    try:
        document = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ExpectationError(f"{path}: {exc}") from None
    except RecursionError:
        raise ExpectationError(f"{path}: nested too deeply to be an expectations file") from None
    return parse_expectations(document, str(path))


def match_expectation(expectations: Sequence[Expectation], device: DeviceLike, case_id: str) -> Expectation | None:
    """The first expected failure covering ``case_id`` on ``device``."""
    for expectation in expectations:
        if expectation.kind == "expected-failure" and expectation.matches(device, case_id):
            return expectation
    return None


def match_flake(expectations: Sequence[Expectation], device: DeviceLike, case_id: str) -> Expectation | None:
    """The first ``[[flake]]`` entry covering ``case_id`` on ``device``."""
    for expectation in expectations:
        if expectation.kind == "flake" and expectation.matches(device, case_id):
            return expectation
    return None


def check_providers(expectations: Sequence[Expectation], known: Sequence[str]) -> None:
    """ExpectationError for an entry whose device selector names a provider no family has (``vulkn:*``)."""
    names = {n.lower() for n in known}
    for expectation in expectations:
        provider = expectation.selector.provider
        if provider is not None and provider not in names:
            raise ExpectationError(
                f"{expectation.where}: device selector names provider {provider!r}, which is not installed or "
                f"registered; known providers: {', '.join(sorted(names)) or '(none)'}"
            )


WORKER_CASE = "worker"
"""The case id of a worker that died (always valid in an expectation)."""


def _unknown_case(expectation: Expectation, whose: str, known: Sequence[str]) -> ExpectationError:
    """The error for a case pattern matching none of ``known``: the closest ids (difflib), not all of them."""
    close = difflib.get_close_matches(expectation.case, known, n=3, cutoff=0.6)
    if close:
        hint = f"did you mean {' or '.join(map(repr, close))}?"
    else:
        prefixes = sorted({case.split(".")[0] + "." for case in known})
        hint = f"no case id is close; the ids of {whose} begin with {', '.join(prefixes)}"
    return ExpectationError(
        f"{expectation.where}: case {expectation.case!r} matches no case id of {whose}; {hint} "
        f"(or {WORKER_CASE!r} for a worker that died; fnmatch globs allowed)"
    )


def check_cases_offered(
    expectations: Sequence[Expectation],
    offered: Callable[[str], frozenset[str] | None],
    families: Sequence[str],
) -> list[Expectation]:
    """ExpectationError for an entry whose case pattern matches no case id its provider can offer on any device,
    whatever devices run (``offered``: :func:`accel_cli.case_catalogue.offered_case_ids`). An entry without a
    provider is judged against every family in ``families``. Returns the entries it cannot judge (a family with no
    catalogue), for :func:`check_cases` after the run."""
    undecided = []
    for expectation in expectations:
        if expectation.case == WORKER_CASE:
            continue
        provider = expectation.selector.provider
        catalogues = [offered(name) for name in ([provider] if provider is not None else families)]
        if not catalogues or any(catalogue is None for catalogue in catalogues):
            undecided.append(expectation)
            continue
        known = sorted(set().union(*(c for c in catalogues if c is not None)))
        if not any(fnmatch.fnmatchcase(case, expectation.case) for case in known):
            raise _unknown_case(expectation, provider or "any provider", known)
    return undecided


def check_cases(expectations: Sequence[Expectation], case_ids: dict[str, Sequence[str]]) -> None:
    """ExpectationError for an entry whose case pattern matches no case id its provider offers.

    ``case_ids``: the ids each provider's devices reported, by provider name. An entry of a provider
    that reported nothing (not run here) cannot be judged and is left alone.
    """
    for expectation in expectations:
        provider = expectation.selector.provider
        if provider is None:
            known = sorted({c for ids in case_ids.values() for c in ids})
        elif provider in case_ids:
            known = sorted(set(case_ids[provider]))
        else:
            continue
        if not known:
            continue
        if expectation.case == WORKER_CASE or any(fnmatch.fnmatchcase(c, expectation.case) for c in known):
            continue
        raise _unknown_case(expectation, provider or "any provider", known)


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def device_selector_for(device: DeviceLike) -> str:
    """A selector naming ``device`` by provider and exact name (glob characters escaped), so a baseline
    written on one machine matches the same device model elsewhere."""
    escaped = "".join(f"[{c}]" if c in "*?[" else c for c in device.name)
    return f"{device.provider}:{escaped}"


def baseline_toml(entries: Sequence[tuple[str, str, str]], date: str, header: str = "") -> str:
    """``[[expected-failure]]`` entries for (device selector, case id, reason), as ``--expect`` reads them."""
    lines = [f"# {line}" for line in header.splitlines()]
    for device, case, reason in entries:
        first = reason.strip().splitlines()[0] if reason.strip() else "failed (no reason given)"
        lines += [
            "",
            "[[expected-failure]]",
            f"device = {_toml_string(device)}",
            f"case = {_toml_string(case)}",
            f"reason = {_toml_string(first[:300])}",
            f"date = {date}",
        ]
    return "\n".join(lines).lstrip("\n") + "\n"
