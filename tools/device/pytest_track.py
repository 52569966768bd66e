"""pytest plugin for device-run diagnostics: after every test, record open file
descriptors and how many Vulkan instances the provider has created and
destroyed so far, to ``$ACCEL_TRACK_FILE`` (tab-separated, one line per test).

    python -m pytest -p pytest_track ...   (with tools/device on PYTHONPATH)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

_counts = {"created": 0, "destroyed": 0}
_rows: list[str] = []


def _instrument() -> None:
    try:
        from accel_vulkan import instance
    except ImportError:
        return
    cls: Any = instance.VulkanInstance
    init, close = cls.__init__, cls.close

    def counted_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _counts["created"] += 1

    def counted_close(self: Any) -> None:
        close(self)
        _counts["destroyed"] += 1

    cls.__init__, cls.close = counted_init, counted_close


_instrument()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    fds = len(os.listdir("/proc/self/fd"))
    _rows.append(f"{fds}\t{_counts['created']}\t{_counts['destroyed']}\t{item.nodeid}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("ACCEL_TRACK_FILE")
    if path:
        with open(path, "w") as out:
            out.write("fds\tvk_created\tvk_closed\ttest\n" + "\n".join(_rows) + "\n")
