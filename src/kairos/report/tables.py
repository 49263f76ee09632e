"""Terminal tables (rich) from lists of row dicts, the shape every experiment returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from kairos.report.console import make_console


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 1e9 or (value != 0 and abs(value) < 1e-3):
            return f"{value:.3e}"
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def rich_table(rows: Sequence[Mapping[str, Any]], title: str | None = None) -> Table:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    table = Table(title=title, header_style="bold")
    for col in columns:
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(*(_fmt(row.get(c, "")) for c in columns))
    return table


def print_table(
    rows: Sequence[Mapping[str, Any]], title: str | None = None, console: Console | None = None
) -> None:
    (console or make_console()).print(rich_table(rows, title))
