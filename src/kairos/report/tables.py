"""Terminal tables (rich) from lists of row dicts, the shape every experiment returns.

A table is never cut. Written to a file or a pipe it is printed at its full natural width,
however wide (`COLUMNS` or rich's 80-column default would cut it); on a terminal narrower than
the table its cells fold onto more lines instead of ending in an ellipsis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.measure import Measurement
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
        table.add_column(col, justify="right", overflow="fold")
    for row in rows:
        table.add_row(*(_fmt(row.get(c, "")) for c in columns))
    return table


def natural_width(table: Table, console: Console) -> int:
    """Columns the table needs to print without folding any cell."""
    options = console.options.update_width(1 << 16)
    return Measurement.get(console, options, table).maximum


def print_table(
    rows: Sequence[Mapping[str, Any]], title: str | None = None, console: Console | None = None
) -> None:
    out = console or make_console()
    table = rich_table(rows, title)
    if out.is_terminal:
        out.print(table)
        return
    width = out.width
    out.width = max(width, natural_width(table, out))  # print caps at the console's width
    try:
        out.print(table, soft_wrap=False)
    finally:
        out.width = width
