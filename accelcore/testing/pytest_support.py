"""pytest helpers shared by the real-device suites (imports pytest; ``accelcore.testing`` does not).

- :func:`device_params`: the devices of one provider family as ``(params, ids)`` for
  ``metafunc.parametrize``, filtered by ``ACCEL_DEVICES`` (:mod:`accelcore.testing.selection`);
  an unavailable family or an empty selection is one skipped param that says why.
- :func:`parametrize_entry`: a ``pytest_generate_tests`` hook that gives every test taking ``entry`` those
  devices (a provider's test folder sets it in its conftest).
- :func:`provider_device_params`: the same over the inventory's devices of some providers (what
  ``accelcore.devices()`` lists), for the high-level API's tests.
- :func:`raises_kind`: ``pytest.raises(BackendError)`` that also insists on the error kind (the test suite's
  ``raises_kind`` fixture; :data:`RaisesKind` is its type).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest

from accelcore.contract.errors import BackendError, ErrorKind
from accelcore.devices.registry import DeviceEntry, ProviderUnavailable, load_families
from accelcore.testing.selection import device_test_id, is_wanted, wanted_globs

__all__ = [
    "RaisesKind",
    "device_params",
    "parametrize_entry",
    "provider_device_params",
    "raises_kind",
    "real_device_params",
]


def device_params(discover: Callable[[], Iterable[DeviceEntry]], label: str) -> tuple[list[Any], list[str]]:
    """``(entries or skip params, ids)`` of the wanted devices ``discover()`` offers."""
    try:
        entries = list(discover())
    except ProviderUnavailable as exc:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{label} unavailable: {exc.reason}"))], ["none"]
    wanted = wanted_globs()
    entries = [e for e in entries if is_wanted(e, wanted)]
    if not entries:
        reason = f"no {label} device found" + (f" matching ACCEL_DEVICES={wanted}" if wanted else "")
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason))], ["none"]
    return list(entries), [device_test_id(e) for e in entries]


def parametrize_entry(discover: Callable[[], Iterable[DeviceEntry]], label: str) -> Callable[[pytest.Metafunc], None]:
    """A ``pytest_generate_tests`` hook: every test that takes ``entry`` runs once per wanted device of
    ``discover()`` (:func:`device_params`, discovered once, here), module-scoped so a module's fixtures on
    one device are made once."""
    entries, ids = device_params(discover, label)

    def generate(metafunc: pytest.Metafunc) -> None:
        if "entry" in metafunc.fixturenames:
            metafunc.parametrize("entry", entries, ids=ids, scope="module")

    return generate


_PROVIDER_LABELS = {"opencl": "OpenCL", "vulkan": "Vulkan"}


def provider_device_params(*providers: str) -> tuple[list[Any], list[str]]:
    """:func:`device_params` over the inventory's devices (``accelcore.devices()``) of ``providers``
    (default: opencl and vulkan), labelled by them in a skip reason ("no OpenCL or Vulkan device found")."""
    from accelcore.devices.inventory import discover

    chosen = providers or ("opencl", "vulkan")
    label = " or ".join(_PROVIDER_LABELS.get(name, name) for name in chosen)
    return device_params(lambda: [e for e in discover().devices if e.provider in chosen], label)


@contextmanager
def raises_kind(kind: ErrorKind, match: str | None = None) -> Iterator[pytest.ExceptionInfo[BackendError]]:
    """Expect a :class:`BackendError` of exactly ``kind`` (and, given ``match``, a message that regex finds)."""
    with pytest.raises(BackendError, match=match) as info:
        yield info
    assert info.value.kind is kind, f"expected {kind.name}, got {info.value}"


RaisesKind = Callable[..., AbstractContextManager[pytest.ExceptionInfo[BackendError]]]
"""The type of :func:`raises_kind` (and of the ``raises_kind`` fixture of ``tests/conftest.py``)."""


def real_device_params(*, reference: bool = False) -> list[Any]:
    """``(family, entry)`` params of every wanted real device (``ACCEL_DEVICES``), marked with the family's
    name; a family that is unavailable is one skip param with its reason. The reference family is left out,
    unless ``reference``: then its devices come too, unmarked and whatever ``ACCEL_DEVICES`` says."""
    wanted = wanted_globs()
    params: list[Any] = []
    for name, family in load_families().items():
        if name == "reference" and not reference:
            continue
        if isinstance(family, ProviderUnavailable):
            params.append(pytest.param(None, None, id=name, marks=pytest.mark.skip(reason=family.reason)))
            continue
        try:
            entries = family.discover()
        except ProviderUnavailable as exc:
            params.append(pytest.param(None, None, id=name, marks=pytest.mark.skip(reason=exc.reason)))
            continue
        for entry in entries:
            if name == "reference":
                params.append(pytest.param(family, entry, id=device_test_id(entry)))
            elif is_wanted(entry, wanted):
                params.append(pytest.param(family, entry, id=device_test_id(entry), marks=getattr(pytest.mark, name)))
    return params
