"""How an experiment hands its numbers over: printed for the person at the terminal, written
for everyone after (`<name>.json` with config and provenance, `<name>.csv` with the rows).

One function for every system so each result file is written the same way and the terminal
shows the same shape: the rows (or only the `columns` worth reading there), then the summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kairos.report import print_table, write_result

if TYPE_CHECKING:
    from kairos.experiments.registry import ExperimentContext


def publish(
    ctx: ExperimentContext,
    name: str,
    config: BaseModel | Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    title: str | None = None,
    summary: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    *,
    summary_title: str | None = None,
    show_summary: bool = True,
    seed: int | None = None,
) -> tuple[Path, Path]:
    """Print the rows under `title` (none printed without one; only `columns` if given) and a
    non-empty `summary` (unless `show_summary` is off, for a summary too nested for a table),
    then write every column and the summary to JSON + CSV. Returns both paths."""
    if title is not None:
        shown = [{k: r[k] for k in columns if k in r} for r in rows] if columns else rows
        print_table(shown, title=title)
    if summary and show_summary:
        print_table([dict(summary)], title=summary_title or f"{name}: summary")
    return write_result(ctx.out_dir, name, config=config, rows=rows, summary=summary, seed=seed)
