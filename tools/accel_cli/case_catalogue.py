"""Every conformance case id a built-in provider family can report, known without opening a device.

The ids come from the functions the families build their suites from (the standard cases of
:mod:`accelcore.conformance`, each provider's own cases, the numerics suite, whose ids do not depend on
what a device claims), so an ``--expect`` entry's case is judged before any worker starts and whatever
devices the run selects: ``case = "opencl.long-lop"`` is a typo even on a run of ``reference:0`` alone.
A family this module does not list (a third-party or test family) has no catalogue; its entries are
judged after the run, against the ids its devices reported (:func:`accel_cli.expectations.check_cases`).
"""

from __future__ import annotations

import functools

__all__ = ["offered_case_ids"]


@functools.cache
def offered_case_ids(provider: str) -> frozenset[str] | None:
    """The case ids any device of the built-in family ``provider`` can report; None for another family (or one
    whose package is not importable here)."""
    from accelcore.conformance.suite import standard_case_ids

    standard = set(standard_case_ids())
    if provider == "reference":
        return frozenset(standard)
    if provider not in ("opencl", "vulkan"):
        return None
    from accelcore.conformance.numerics import numerics_cases

    try:
        if provider == "opencl":
            from accel_opencl.conformance_cases import opencl_cases

            own = [case.id for case in opencl_cases()]
        else:
            from accel_vulkan.cases import extra_cases

            own = [case.id for case in extra_cases(None)]  # the factory is only read when a case runs
    except ImportError:
        return None
    return frozenset(standard | set(own) | {case.id for case in numerics_cases(provider)})
