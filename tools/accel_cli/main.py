"""Entry point of the ``accel`` console script: the click group and its subcommands.

Importing this module sets the environment defaults of
:mod:`accel_cli.environment` (RUSTICL_ENABLE=swrast unless already set), so
they are in place before any provider enumerates devices. A subcommand's module
is imported when that subcommand is asked for (``accel devices`` does not load
what ``accel conformance`` or ``accel bench`` need; docs/benchmarks.md, "Listing
devices"); ``accel --help`` loads them all.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

import accelcore

from . import signals
from .environment import apply_defaults
from .failures import Interrupted, interrupted_message

apply_defaults()

__all__ = ["COMMANDS", "main"]

COMMANDS = {
    "devices": "devices:devices",
    "info": "info:info",
    "inspect": "inspect:inspect",
    "pack": "pack:pack",
    "compile": "pack:compile_",
    "run": "run:run",
    "conformance": "conformance:conformance",
    "bench": "bench:bench",
}
"""Each subcommand's ``module:attribute`` in :mod:`accel_cli.commands` (``accel --help`` lists them sorted)."""


class _Group(click.Group):
    """The ``accel`` group: Ctrl-C anywhere in a command (also outside its error boundary: discovery, option
    callbacks) exits 130 saying so, never click's "Aborted!" with status 1 ("failures found"); SIGTERM and
    SIGHUP do the same (:mod:`accel_cli.signals`), with 143 and 129."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand, its module imported on first use (and kept in ``commands``)."""
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(f"{__package__}.commands.{module}"), attribute)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

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


if __name__ == "__main__":
    main()
