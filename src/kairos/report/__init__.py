"""Reporting: result files with provenance, summary statistics, tables and plots.

The names load on first use: `kairos --help` and every command that only prints a table must
not pay for matplotlib and scipy (seconds on a loaded two-core machine).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kairos.report.plots import save_cdf_plot, save_line_plot
    from kairos.report.results import Provenance, ResultFile, provenance, write_result
    from kairos.report.stats import Summary, cdf, summarize
    from kairos.report.tables import print_table, rich_table

_HOME = {
    "save_cdf_plot": "plots",
    "save_line_plot": "plots",
    "Provenance": "results",
    "ResultFile": "results",
    "provenance": "results",
    "write_result": "results",
    "Summary": "stats",
    "cdf": "stats",
    "summarize": "stats",
    "print_table": "tables",
    "rich_table": "tables",
}

__all__ = [
    "Provenance",
    "ResultFile",
    "Summary",
    "cdf",
    "print_table",
    "provenance",
    "rich_table",
    "save_cdf_plot",
    "save_line_plot",
    "summarize",
    "write_result",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'kairos.report' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kairos.report.{_HOME[name]}"), name)
    globals()[name] = value
    return value
