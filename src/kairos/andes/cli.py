"""`kairos andes ...` commands."""

from __future__ import annotations

import typer


def register(group: typer.Typer) -> None:
    """Add the Andes commands to the `andes` group (experiments are added by the shared CLI)."""
