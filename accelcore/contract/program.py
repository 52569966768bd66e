"""Program artifacts: format, target identity and the borrowed artifact envelope."""

from __future__ import annotations

from dataclasses import dataclass

from ._checks import check_u32, check_u64
from .errors import BackendError, ErrorKind
from .ports import ByteSource, source_of

__all__ = ["ArtifactFormat", "ArtifactRef", "TargetIdentity"]


@dataclass(frozen=True, slots=True)
class ArtifactFormat:
    """Opaque, provider-owned executable format identifier (nonzero u32)."""

    value: int

    def __post_init__(self) -> None:
        check_u32("ArtifactFormat", self.value)
        if self.value == 0:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, "ArtifactFormat must be nonzero")

    def __int__(self) -> int:
        return self.value


TARGET_WORDS = 12


@dataclass(frozen=True, slots=True)
class TargetIdentity:
    """Twelve opaque u32 words; their schema belongs to the artifact format."""

    words: tuple[int, ...] = (0,) * TARGET_WORDS

    def __post_init__(self) -> None:
        words = tuple(self.words)
        if len(words) != TARGET_WORDS:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"TargetIdentity needs exactly {TARGET_WORDS} u32 words, got {len(words)}",
            )
        for index, word in enumerate(words):
            check_u32(f"TargetIdentity word {index}", word)
        object.__setattr__(self, "words", words)

    @classmethod
    def any(cls) -> TargetIdentity:
        """All-zero words: no target recorded."""
        return cls()


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    """Borrowed program artifact envelope.

    ``payload`` is read only during ``load_program``. ``resident_bytes`` is the
    caller-authorised ceiling on everything the loaded program retains.
    """

    format: ArtifactFormat
    target: TargetIdentity
    payload: ByteSource
    resident_bytes: int

    def __post_init__(self) -> None:
        if not isinstance(self.format, ArtifactFormat):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"ArtifactRef.format must be an ArtifactFormat, got {self.format!r}"
            )
        if not isinstance(self.target, TargetIdentity):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"ArtifactRef.target must be a TargetIdentity, got {self.target!r}"
            )
        # A plain buffer-protocol payload is wrapped zero-copy; anything else → INVALID_ARGUMENT.
        object.__setattr__(self, "payload", source_of(self.payload))
        check_u64("ArtifactRef.resident_bytes", self.resident_bytes)
        if self.resident_bytes == 0:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, "ArtifactRef.resident_bytes must be nonzero")
