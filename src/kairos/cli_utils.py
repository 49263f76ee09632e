"""Small helpers shared by the command groups."""

from __future__ import annotations

import json
from typing import Any

import typer


def parse_assignments(pairs: list[str] | None, option: str) -> dict[str, Any]:
    """`["a=1", "b=x"]` -> `{"a": 1, "b": "x"}`: values are JSON when they parse as JSON."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{option} takes KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out
