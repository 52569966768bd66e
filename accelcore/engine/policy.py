"""Host resource policy: caps on aggregate backing bytes and resident program bytes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..contract._checks import check_u64
from ..contract.errors import BackendError, ErrorKind

__all__ = ["MEMORY_OVERCOMMIT_ENV", "ResourcePolicy", "ResourceUsage"]

MEMORY_OVERCOMMIT_ENV = "ACCELCORE_MEMORY_OVERCOMMIT"
"""``1``: the default of :attr:`ResourcePolicy.memory_overcommit` (read when a policy is made)."""


def _overcommit_from_env() -> bool:
    return os.environ.get(MEMORY_OVERCOMMIT_ENV, "") == "1"


@dataclass(frozen=True, slots=True)
class ResourcePolicy:
    """``max_allocation_bytes``: cap on the sum of live buffers' *actual* ``allocation_bytes``.
    ``max_resident_bytes``: cap on the sum of loaded programs' authorised ``resident_bytes``
    (charged before the load). None means no cap.
    ``memory_overcommit``: allow live buffers past the device's reported global memory
    (``DeviceLimits.total_memory_bytes``; refused with RESOURCE_LIMIT otherwise); defaults to
    ``ACCELCORE_MEMORY_OVERCOMMIT=1`` in the environment when the policy is made."""

    max_allocation_bytes: int | None = None
    max_resident_bytes: int | None = None
    memory_overcommit: bool = field(default_factory=_overcommit_from_env)

    def __post_init__(self) -> None:
        for name in ("max_allocation_bytes", "max_resident_bytes"):
            value = getattr(self, name)
            if value is not None:
                check_u64(f"ResourcePolicy.{name}", value)


@dataclass(slots=True)
class ResourceUsage:
    """What is charged now against a :class:`ResourcePolicy`."""

    allocation_bytes: int = 0
    resident_bytes: int = 0

    def check_allocation(self, policy: ResourcePolicy, extra: int, what: str) -> None:
        cap = policy.max_allocation_bytes
        if cap is not None and self.allocation_bytes + extra > cap:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"{what}: {extra} allocation bytes on top of {self.allocation_bytes} exceed the policy cap {cap}",
            )

    def check_device_memory(self, policy: ResourcePolicy, total: int | None, extra: int, what: str) -> None:
        """Live buffers past the device's reported global memory ``total`` → RESOURCE_LIMIT naming the
        sizes, the limit and the override (none where ``total`` is unknown or overcommit is allowed)."""
        if total is None or policy.memory_overcommit or self.allocation_bytes + extra <= total:
            return
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"{what}: {extra} bytes on top of {self.allocation_bytes} live bytes pass the device's reported "
            f"global memory of {total} bytes (set {MEMORY_OVERCOMMIT_ENV}=1 or "
            "ResourcePolicy(memory_overcommit=True) to allow it)",
        )

    def check_resident(self, policy: ResourcePolicy, extra: int, what: str) -> None:
        cap = policy.max_resident_bytes
        if cap is not None and self.resident_bytes + extra > cap:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"{what}: {extra} resident bytes on top of {self.resident_bytes} exceed the policy cap {cap}",
            )
