"""Reporting: result files with provenance, summary statistics, tables and plots."""

from kairos.report.plots import save_cdf_plot, save_line_plot
from kairos.report.results import Provenance, ResultFile, provenance, write_result
from kairos.report.stats import Summary, cdf, summarize
from kairos.report.tables import print_table, rich_table

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
