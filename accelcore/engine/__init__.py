"""The reference command engine: host-side object IDs, checks, policy and recovery over any provider.

Layer 4. May import: :mod:`accelcore.contract`, :mod:`accelcore.support`, :mod:`accelcore.kernels`
(docs/architecture.md).
"""

from __future__ import annotations

from .core import BindingSpec, CommandEngine, EngineState, QuarantinedObject
from .ids import IdTable, ObjectKind, decode_id, format_id
from .policy import ResourcePolicy, ResourceUsage

__all__ = [
    "BindingSpec",
    "CommandEngine",
    "EngineState",
    "IdTable",
    "ObjectKind",
    "QuarantinedObject",
    "ResourcePolicy",
    "ResourceUsage",
    "decode_id",
    "format_id",
]
