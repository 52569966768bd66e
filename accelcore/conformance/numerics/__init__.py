"""The numerics suite: which device keeps which numerical promise, on OpenCL and on Vulkan.

Case ids ``numerics.<function>.<type>`` (docs/numerics.md). Every case runs one committed kernel
(artifacts/src/opencl/numerics_*.cl, artifacts/src/glsl/numerics_*.comp) over a deterministic sweep of
at least 2^16 values in a single launch, measures each result against an exact reference and judges
it against the limit of the API it ran through: the OpenCL C spec's ULP table (section 7.4) or the
Vulkan spec's precision table. Provider families add :func:`numerics_cases` to their extra cases.
"""

from __future__ import annotations

from .cases import NUMERICS_PREFIX, QUICK_FUNCTIONS, is_quick, numerics_cases

__all__ = ["NUMERICS_PREFIX", "QUICK_FUNCTIONS", "is_quick", "numerics_cases"]
