"""JSON schemas of every ``--json`` document the tool writes, and validators for them.

``load(name)`` returns the schema dict of ``<name>.schema.json`` shipped in
this package; ``validate(name, document)`` raises ``jsonschema.ValidationError``
(jsonschema is only needed when validating).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["NAMES", "load", "validate"]

NAMES = ("devices", "conformance-matrix", "junit", "error", "info", "inspect", "pack", "run", "run-compare")


@cache
def load(name: str) -> dict[str, Any]:
    if name not in NAMES:
        raise KeyError(f"no schema {name!r} (have: {', '.join(NAMES)})")
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate(name: str, document: Any) -> None:
    import jsonschema  # type: ignore[import-untyped]

    jsonschema.validate(document, load(name), cls=jsonschema.Draft202012Validator)
