"""Shared helpers for the contract's unit tests (tests/core)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from accelcore import BackendError, ErrorKind

RaisesKind = Callable[[ErrorKind], AbstractContextManager[pytest.ExceptionInfo[BackendError]]]


@contextmanager
def _raises_kind(kind: ErrorKind) -> Iterator[pytest.ExceptionInfo[BackendError]]:
    with pytest.raises(BackendError) as info:
        yield info
    assert info.value.kind is kind, f"expected {kind.name}, got {info.value}"


@pytest.fixture
def raises_kind() -> RaisesKind:
    """``with raises_kind(ErrorKind.X): ...`` asserts a BackendError of exactly that kind."""
    return _raises_kind
