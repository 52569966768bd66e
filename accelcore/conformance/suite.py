"""``run()``: the conformance suite as a library function.

Progress: cases run one after another on fresh instances from ``factory``;
every wait is bounded (``wait_limit_s``), so a broken provider fails a case
instead of hanging the run. Failure: a case failure never stops the run; only
misuse of the API (duplicate case ids) raises.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from ..contract.device import DeviceInfo
from ..contract.errors import BackendError, DeviceInfoError, ReleaseFailure, SubmitFailure
from ..contract.flags import Capabilities
from .case import CaseContext, CaseFailed, CaseSkipped, ConformanceCase, describe_exception
from .report import CaseResult, CaseStatus, Report
from .standard import ACCOUNTING_CASE, STANDARD_CASES
from .target import ConformanceHooks, ConformanceTarget

__all__ = ["DEFAULT_WAIT_LIMIT_S", "run"]

DEFAULT_WAIT_LIMIT_S = 30.0


def run(
    factory: Callable[[], Any],
    target: ConformanceTarget,
    hooks: ConformanceHooks,
    extra_cases: Iterable[ConformanceCase] = (),
    progress: Callable[[CaseResult], None] | None = None,
    *,
    select: Collection[str] | None = None,
    on_start: Callable[[str], None] | None = None,
    wait_limit_s: float = DEFAULT_WAIT_LIMIT_S,
    device: Mapping[str, str] | None = None,
) -> Report:
    """Run every standard case, then ``extra_cases``, then ``accounting.resource-lifecycle``.

    ``factory()`` must return a fresh provider instance on every call.
    ``select``: run only these case ids (or id prefixes ending in ``.``).
    ``progress`` is called with each result as soon as it is known; ``on_start`` with a case's id just
    before it runs (``accel conformance`` uses it to know which case a dead or stuck worker was running).
    """
    started = time.perf_counter()
    extra = list(extra_cases)
    cases = [*STANDARD_CASES, *extra]
    seen: set[str] = {ACCOUNTING_CASE.id}
    for case in cases:
        if case.id in seen:
            raise ValueError(f"duplicate conformance case id {case.id!r}")
        seen.add(case.id)
    standard_ids = {case.id for case in STANDARD_CASES} | {ACCOUNTING_CASE.id}

    info, probe_problem = _probe(factory)
    labels = dict(device or {})
    if info is not None:
        labels.setdefault("uuid", info.identity.uuid_hex)
        labels.setdefault("class", info.identity.class_.name)
        labels.setdefault("vendor_id", f"{info.identity.vendor_id:#x}")
        labels.setdefault("device_id_native", f"{info.identity.device_id:#x}")
    labels.setdefault("target", target.name)

    results: list[CaseResult] = []
    accounting: list[str] = []
    invalid = target.problems()
    for case in [*cases, ACCOUNTING_CASE]:
        if not _selected(case.id, select):
            continue
        if on_start is not None:
            on_start(case.id)
        if invalid:
            reason = f"the ConformanceTarget {target.name!r} is invalid, so no case ran: {'; '.join(invalid)}"
            result = CaseResult(case.id, CaseStatus.FAILED, reason, 0.0, case.mandatory, case.id in standard_ids)
            results.append(result)
            if progress is not None:
                progress(result)
            continue
        result = _run_case(
            case, factory, target, hooks, info, probe_problem, wait_limit_s, accounting, case.id in standard_ids
        )
        results.append(result)
        if progress is not None:
            progress(result)
    return Report(tuple(results), labels, time.perf_counter() - started)


def _selected(case_id: str, select: Collection[str] | None) -> bool:
    if select is None:
        return True
    return any(case_id == s or (s.endswith(".") and case_id.startswith(s)) for s in select)


def _probe(factory: Callable[[], Any]) -> tuple[DeviceInfo | None, str]:
    try:
        provider = factory()
    except Exception as exc:
        return None, f"the factory failed: {describe_exception(exc)}"
    try:
        info = provider.device_info()
        if not isinstance(info, DeviceInfo):
            return None, f"device_info() returned {type(info).__name__}, not DeviceInfo"
        info.validate()
        return info, ""
    except DeviceInfoError as exc:
        return None, f"device_info() is invalid: {exc}"
    except Exception as exc:
        return None, f"device_info() failed: {describe_exception(exc)}"
    finally:
        close = getattr(provider, "close", None)
        if callable(close):
            close()


def _missing(info: DeviceInfo, requires: Capabilities) -> list[str]:
    missing = int(requires) & ~int(info.capabilities)
    return [Capabilities(1 << i).name or f"bit {i}" for i in range(64) if missing >> i & 1]


def _run_case(
    case: ConformanceCase,
    factory: Callable[[], Any],
    target: ConformanceTarget,
    hooks: ConformanceHooks,
    info: DeviceInfo | None,
    probe_problem: str,
    wait_limit_s: float,
    accounting: list[str],
    standard: bool,
) -> CaseResult:
    start = time.perf_counter()

    ctx: CaseContext | None = None

    def result(status: CaseStatus, reason: str) -> CaseResult:
        metrics = dict(ctx.metrics) if ctx is not None else {}
        return CaseResult(case.id, status, reason, time.perf_counter() - start, case.mandatory, standard, metrics)

    if info is None:
        return result(CaseStatus.FAILED, f"no valid device metadata, so the case cannot run: {probe_problem}")
    if case.requires is not None:
        missing = _missing(info, case.requires)
        if missing:
            return result(CaseStatus.SKIPPED, f"capability {' | '.join(missing)} not advertised by the device")

    ctx = CaseContext(case.id, factory, target, hooks, info, wait_limit_s)
    ctx.prior_accounting = list(accounting)
    status = CaseStatus.PASSED
    reason = ""
    try:
        case.run(ctx)
    except CaseSkipped as exc:
        if case.mandatory:
            status, reason = CaseStatus.FAILED, f"mandatory case tried to skip: {exc.reason}"
        else:
            status, reason = CaseStatus.SKIPPED, exc.reason
    except CaseFailed as exc:
        status, reason = CaseStatus.FAILED, str(exc)
    except (BackendError, ReleaseFailure, SubmitFailure) as exc:
        status, reason = CaseStatus.FAILED, f"unexpected {describe_exception(exc)}"
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        status = CaseStatus.FAILED
        reason = f"unexpected {describe_exception(exc)} at {frame.filename}:{frame.lineno}"
    cleanup = ctx.close_all()
    if cleanup and status is CaseStatus.PASSED:
        status, reason = CaseStatus.FAILED, "; ".join(cleanup)
    elif cleanup:
        reason += " (also: " + "; ".join(cleanup) + ")"
    accounting.extend(f"{case.id}: {problem}" for problem in ctx.accounting_problems)
    if status is CaseStatus.PASSED and ctx.notes:
        reason = "; ".join(ctx.notes)
    return result(status, reason)


def standard_case_ids() -> Sequence[str]:
    """The stable ids of the standard cases, in run order."""
    return [case.id for case in STANDARD_CASES] + [ACCOUNTING_CASE.id]
