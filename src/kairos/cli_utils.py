"""Small helpers shared by the command groups: options, consoles and config errors."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import typer

from kairos.report.console import WIDE, make_console

__all__ = ["WIDE", "config_error", "make_console", "parse_assignments", "wide_help"]


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


def wide_help() -> None:
    """`--help` piped or captured: typer's rich help would cut defaults at 80 columns."""
    if (
        not sys.stdout.isatty()
        and not os.environ.get("TERMINAL_WIDTH")
        and not os.environ.get("COLUMNS")
    ):
        os.environ["TERMINAL_WIDTH"] = str(WIDE)


def config_error(exc: Exception) -> str:
    """A config error as a person acts on it: each bad field, what is wrong and what it got,
    instead of pydantic's multi-line report that ends with a link to its docs."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for err in exc.errors():
        msg = str(err["msg"]).removeprefix("Value error, ")
        where = ".".join(str(p) for p in err["loc"])
        got = err.get("input")
        shown = "" if isinstance(got, dict) or got is None else f" (got {got!r})"
        parts.append(f"invalid {where}: {msg}{shown}" if where else f"{msg}{shown}")
    return "; ".join(parts)
