"""The conformance suite as a library.

``run(factory, target, hooks, extra_cases=(), progress=None) -> Report`` runs
every standard case of SPEC.md (stable ids, exact expected error kinds) on
fresh provider instances, then the provider's own ``extra_cases``
(:class:`ConformanceCase`), then ``accounting.resource-lifecycle``. The CLI
and the tests call the same function.

Layer 7. Owns the case API (``case``), the standard cases (``standard``), ``run`` (``suite``), what a
provider hands the suite (``target``), reports (``report``), the numerics suite (``numerics``), the corpus of
``artifacts/`` as conformance cases (``corpus``) and the argument-layout cases' shared body (``layouts``).
May import every layer below it: contract, support, kernels, engine, devices, api (docs/architecture.md).
"""

from __future__ import annotations

from .case import CaseContext, CaseFailed, CaseSkipped, ConformanceCase, FixtureBuffer, Session
from .report import REPORT_FORMAT, CaseResult, CaseStatus, Report
from .standard import ACCOUNTING_CASE, STANDARD_CASES
from .suite import DEFAULT_WAIT_LIMIT_S, run, standard_case_ids
from .target import BindingFixture, ConformanceHooks, ConformanceTarget

__all__ = [
    "ACCOUNTING_CASE",
    "DEFAULT_WAIT_LIMIT_S",
    "REPORT_FORMAT",
    "STANDARD_CASES",
    "BindingFixture",
    "CaseContext",
    "CaseFailed",
    "CaseResult",
    "CaseSkipped",
    "CaseStatus",
    "ConformanceCase",
    "ConformanceHooks",
    "ConformanceTarget",
    "FixtureBuffer",
    "Report",
    "Session",
    "run",
    "standard_case_ids",
]
