"""The reference command engine: host-side object IDs, checks, policy and recovery over any provider.

Layer 4. May import: :mod:`accelcore.contract`, :mod:`accelcore.support`, :mod:`accelcore.kernels`
(docs/architecture.md).

``CommandEngine`` (:mod:`.core`) is one class over a mixin per responsibility: :mod:`.base` (its
state, ID resolution and releases), :mod:`.buffers`, :mod:`.programs` (programs and queues),
:mod:`.submission`, :mod:`.events` and :mod:`.recovery` (``reset`` and the quarantine), over the
records of :mod:`.entries`; :mod:`.ids` (the ID tables), :mod:`.policy` (the resource policy) and
:mod:`.coverage` (the coverage check of kernel packages) are the leaves they use.
"""

from __future__ import annotations

from .core import CommandEngine
from .entries import EngineState, QuarantinedObject
from .ids import IdTable, ObjectKind, decode_id, format_id
from .policy import ResourcePolicy, ResourceUsage
from .submission import BindingSpec

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
