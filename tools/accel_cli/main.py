"""Entry point of the ``accel`` console script (version only until the CLI issue lands)."""

from __future__ import annotations

import sys

import accelcore


def main(argv: list[str] | None = None) -> int:
    print(f"accel {accelcore.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
