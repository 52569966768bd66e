"""Test-only provider families for the CLI tests (never registered as entry points).

Loaded only through ``ACCEL_EXTRA_PROVIDERS=name=accel_cli_testfamilies:attr``
with this folder on PYTHONPATH, so users never see them:

- ``fixture``: three named devices for selector tests; ``open`` and
  ``conformance`` hand out the pure-Python reference provider.
- ``broken``: ``discover()`` raises a RuntimeError, as a buggy binding would.
- ``missing``: ``discover()`` raises ProviderUnavailable (driver not installed).
- ``badmeta``: one device whose ``device_info`` sets a reserved capability bit.
- ``crashing``: one device whose conformance factory calls ``os.abort()`` on
  its fourth instance, so the worker dies in the middle of the suite after
  some cases reported — what a segfaulting driver does.
- ``hanging``: one reference device whose ``submit`` never returns (a driver
  call stuck behind a kernel it cannot stop); it first starts a ``sleep``
  grandchild in its own process group and writes its pid to
  ``$ACCEL_TEST_HANG_PIDFILE``, so a test can see the whole group was killed.
- ``cases``: the reference device with test-only cases named by
  ``$ACCEL_TEST_CASES`` (comma-separated): ``test.hang`` sleeps for ever,
  ``test.kill-self`` writes a line to stderr and SIGKILLs its own worker,
  ``test.fails-once`` fails the first time per ``$ACCEL_TEST_FLAKY_STATE`` file
  (it creates the file) and passes after, ``test.always-fails`` always fails,
  ``test.slow`` sleeps 0.3 s and passes.
"""

from __future__ import annotations

import os
from typing import Any

from accelcore.devices.registry import ConformanceSetup, DeviceEntry, ProviderUnavailable

_DEVICES = (
    ("Alpha PoCL CPU", bytes(range(16))),
    ("Beta pocl GPU", bytes(range(16, 32))),
    ("Gamma llvmpipe (LLVM 15)", bytes(range(32, 48))),
)


def _reference_setup() -> ConformanceSetup:
    import accelcore.testing as testing

    return ConformanceSetup(
        factory=testing.ReferenceAccelerator,
        target=testing.reference_target(),
        hooks=testing.ReferenceHooks(),
    )


class FixtureFamily:
    name = "fixture"

    def discover(self) -> list[DeviceEntry]:
        return [
            DeviceEntry(self.name, index, name, uuid, {"kind": "test fixture", "position": str(index)})
            for index, (name, uuid) in enumerate(_DEVICES)
        ]

    def open(self, entry: DeviceEntry) -> Any:
        import accelcore.testing as testing

        return testing.ReferenceAccelerator()

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        return _reference_setup()


class BrokenFamily:
    name = "broken"

    def discover(self) -> list[DeviceEntry]:
        raise RuntimeError("clGetPlatformIDs exploded (simulated binding bug)")

    def open(self, entry: DeviceEntry) -> Any:
        raise AssertionError("never reached")

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        raise AssertionError("never reached")


class MissingFamily:
    name = "missing"

    def discover(self) -> list[DeviceEntry]:
        raise ProviderUnavailable(self.name, "libmissing.so.1 not found; install the missing-driver package")

    def open(self, entry: DeviceEntry) -> Any:
        raise AssertionError("never reached")

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        raise AssertionError("never reached")


class CrashingFamily:
    name = "crashing"
    abort_on_instance = 4

    def discover(self) -> list[DeviceEntry]:
        return [DeviceEntry(self.name, 0, "Crashing driver (aborts mid-suite)", b"\xcc" * 16, {"kind": "test crash"})]

    def open(self, entry: DeviceEntry) -> Any:
        import accelcore.testing as testing

        return testing.ReferenceAccelerator()

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        setup = _reference_setup()
        made = 0

        def factory() -> Any:
            nonlocal made
            made += 1
            if made >= self.abort_on_instance:
                os.abort()
            return setup.factory()

        return ConformanceSetup(factory=factory, target=setup.target, hooks=setup.hooks)


class HangingFamily:
    name = "hanging"

    def discover(self) -> list[DeviceEntry]:
        return [DeviceEntry(self.name, 0, "Driver stuck in submit", b"\xdd" * 16, {"kind": "test hang"})]

    def open(self, entry: DeviceEntry) -> Any:
        import subprocess
        import time

        import accelcore.testing as testing

        class Hanging(testing.ReferenceAccelerator):
            def submit(self, *args: Any) -> Any:
                grandchild = subprocess.Popen(["sleep", "600"])
                pidfile = os.environ.get("ACCEL_TEST_HANG_PIDFILE")
                if pidfile:
                    with open(pidfile, "w") as handle:
                        handle.write(str(grandchild.pid))
                while True:
                    time.sleep(1)

        return Hanging()

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        raise AssertionError("not used")


def _test_case(name: str) -> Any:
    import signal
    import sys
    import time

    from accelcore.conformance.case import CaseFailed, ConformanceCase

    def hang(ctx: Any) -> None:
        while True:
            time.sleep(1)

    def kill_self(ctx: Any) -> None:
        sys.stderr.write("test.kill-self: about to SIGKILL my own worker\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def fails_once(ctx: Any) -> None:
        state = os.environ["ACCEL_TEST_FLAKY_STATE"]
        if not os.path.exists(state):
            with open(state, "w") as handle:
                handle.write("failed once\n")
            raise CaseFailed("first run fails (test flake)")

    def always_fails(ctx: Any) -> None:
        raise CaseFailed("this case always fails (test)")

    def slow(ctx: Any) -> None:
        time.sleep(0.3)

    bodies = {
        "hang": hang,
        "kill-self": kill_self,
        "fails-once": fails_once,
        "always-fails": always_fails,
        "slow": slow,
    }
    return ConformanceCase(f"test.{name}", bodies[name], mandatory=False)


class CasesFamily:
    name = "cases"

    def discover(self) -> list[DeviceEntry]:
        return [DeviceEntry(self.name, 0, "Reference with test cases", b"\xee" * 16, {"kind": "test cases"})]

    def open(self, entry: DeviceEntry) -> Any:
        import accelcore.testing as testing

        return testing.ReferenceAccelerator()

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        setup = _reference_setup()
        names = [n.strip() for n in os.environ.get("ACCEL_TEST_CASES", "").split(",") if n.strip()]
        extra = [_test_case(n.removeprefix("test.")) for n in names]
        return ConformanceSetup(factory=setup.factory, target=setup.target, hooks=setup.hooks, extra_cases=extra)


class _BadMetadataDevice:
    def device_info(self) -> Any:
        from accelcore import AcceleratorClass, Capabilities, DeviceIdentity, DeviceInfo, DeviceLimits

        limits = DeviceLimits(1, 1, 1, 1, 1, 1, 1 << 20, 1 << 16)
        identity = DeviceIdentity(b"\xbb" * 16, AcceleratorClass.OTHER, 1, 2)
        return DeviceInfo(identity, Capabilities.HOST_VISIBLE_MEMORY | Capabilities.SECURE_CONTEXTS, limits)


class BadMetadataFamily:
    name = "badmeta"

    def discover(self) -> list[DeviceEntry]:
        return [DeviceEntry(self.name, 0, "Device with reserved capability bits", b"\xbb" * 16)]

    def open(self, entry: DeviceEntry) -> Any:
        return _BadMetadataDevice()

    def conformance(self, entry: DeviceEntry) -> ConformanceSetup:
        raise AssertionError("not used")


fixture = FixtureFamily()
badmeta = BadMetadataFamily()
broken = BrokenFamily()
missing = MissingFamily()
crashing = CrashingFamily()
hanging = HangingFamily()
cases = CasesFamily()
