"""PNG plots with matplotlib's non-interactive backend (works with no display)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from kairos.report.stats import cdf


def save_line_plot(
    path: str | Path,
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
    reference: Mapping[str, Sequence[float]] | None = None,
    kind: str = "line",
) -> Path:
    """One line per series; `reference` series (e.g. the paper's numbers) are drawn dashed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, ys in series.items():
        if kind == "step":
            ax.step(list(x), list(ys), where="post", label=name)
        else:
            ax.plot(list(x), list(ys), marker="o", markersize=3, label=name)
    for name, ys in (reference or {}).items():
        ax.plot(list(x), list(ys), linestyle="--", marker="x", label=f"{name} (paper)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def save_cdf_plot(
    path: str | Path, samples: Mapping[str, Sequence[float]], *, xlabel: str, title: str = ""
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, values in samples.items():
        xs, ys = cdf(values)
        ax.step(xs, ys, where="post", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CDF")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
