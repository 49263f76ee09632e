"""A first look at a trace: arrival rate per minute and length statistics, as tables and a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kairos.report import save_line_plot, summarize
from kairos.workloads.trace import Trace


def rate_per_minute(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(minute index, requests/s averaged over that minute) for every minute of the trace."""
    if len(trace) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0)
    t = trace.arrivals - trace.arrivals[0]
    counts = np.bincount((t // 60).astype(np.int64))
    return np.arange(counts.size), counts / 60.0


def length_rows(trace: Trace) -> list[dict[str, Any]]:
    rows = []
    for name, values in (
        ("prompt tokens", trace.prompt_tokens),
        ("output tokens", trace.output_tokens),
    ):
        s = summarize(values)
        rows.append(
            {
                "quantity": name,
                "mean": s.mean,
                "std": s.std,
                "p50": s.p50,
                "p90": s.p90,
                "p99": s.p99,
                "max": s.max,
            }
        )
    return rows


def describe(trace: Trace, plot_path: str | Path | None = None) -> dict[str, Any]:
    minutes, rates = rate_per_minute(trace)
    rate_summary = summarize(rates)
    if plot_path is not None:
        save_line_plot(
            plot_path,
            minutes.tolist(),
            {"arrival rate": rates.tolist()},
            xlabel="minute",
            ylabel="requests / s",
            title=f"{Path(trace.source).name}: {len(trace)} requests",
            kind="step",
        )
    return {
        "requests": len(trace),
        "duration_s": trace.duration,
        "mean_rate": trace.mean_rate,
        "peak_minute_rate": rate_summary.max,
        "minutes": minutes.tolist(),
        "rates": rates.tolist(),
        "lengths": length_rows(trace),
    }
