"""Host resource policy: caps on aggregate backing bytes and resident program bytes."""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import check_u64
from ..errors import BackendError, ErrorKind

__all__ = ["ResourcePolicy", "ResourceUsage"]


@dataclass(frozen=True, slots=True)
class ResourcePolicy:
    """``max_allocation_bytes``: cap on the sum of live buffers' *actual* ``allocation_bytes``.
    ``max_resident_bytes``: cap on the sum of loaded programs' authorised ``resident_bytes``
    (charged before the load). None means no cap."""

    max_allocation_bytes: int | None = None
    max_resident_bytes: int | None = None

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

    def check_resident(self, policy: ResourcePolicy, extra: int, what: str) -> None:
        cap = policy.max_resident_bytes
        if cap is not None and self.resident_bytes + extra > cap:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"{what}: {extra} resident bytes on top of {self.resident_bytes} exceed the policy cap {cap}",
            )
