"""Entry point of the ``accel`` console script: the click group and its subcommands.

Importing this module sets the environment defaults of
:mod:`accel_cli.environment` (RUSTICL_ENABLE=swrast unless already set), so
they are in place before any provider enumerates devices.
"""

from __future__ import annotations

from typing import Any

import click

import accelcore

from . import signals
from .environment import apply_defaults
from .failures import Interrupted, interrupted_message

apply_defaults()

from .commands.bench import bench  # noqa: E402  (after the environment defaults)
from .commands.conformance import conformance  # noqa: E402
from .commands.devices import devices  # noqa: E402
from .commands.info import info  # noqa: E402
from .commands.inspect import inspect  # noqa: E402
from .commands.pack import compile_, pack  # noqa: E402
from .commands.run import run  # noqa: E402

__all__ = ["main"]


class _Group(click.Group):
    """The ``accel`` group: Ctrl-C anywhere in a command (also outside its error boundary: discovery, option
    callbacks) exits 130 saying so, never click's "Aborted!" with status 1 ("failures found"); SIGTERM and
    SIGHUP do the same (:mod:`accel_cli.signals`), with 143 and 129."""

    def invoke(self, ctx: click.Context) -> Any:
        signals.install()
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            command = f"accel {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "accel"
            raise Interrupted(interrupted_message(exc, command)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(accelcore.__version__, prog_name="accel")
def main() -> None:
    """accel: drive compute devices through the accelcore contract.

    Devices are named by one selector grammar everywhere: PROVIDER (all its
    devices), PROVIDER:INDEX (opencl:0), PROVIDER:UUID, PROVIDER:GLOB ('opencl:*pocl*', case-insensitive
    over the device name) or a bare GLOB across providers. ACCEL_DEVICE sets
    the default for commands that take one DEVICE.

    Exit status: 0 ok, 1 failures found (conformance, run), 2 bad usage or
    selector, 3 an input file was refused, 4 the device or provider failed,
    130 interrupted (Ctrl-C; 143 SIGTERM, 129 SIGHUP).
    """
    apply_defaults()


main.add_command(devices)
main.add_command(info)
main.add_command(inspect)
main.add_command(pack)
main.add_command(compile_)
main.add_command(run)
main.add_command(conformance)
main.add_command(bench)


if __name__ == "__main__":
    main()
