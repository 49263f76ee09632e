"""PNG figures of the Auxo experiments, drawn from the rows their JSON holds."""

from __future__ import annotations

from typing import Any

import kairos.auxo.experiments.paper as paper
from kairos.experiments import ExperimentContext
from kairos.report.plots import save_bar_plot


def plot_e1(ctx: ExperimentContext, rows: list[dict[str, Any]]) -> None:
    """E1 as Table 3.3/3.4 report it: Auxo's paired gain over the single model in final mean
    and worst-10% accuracy (points, 95% CI), and its speed-up to the single model's best in
    time and in participant-rounds (geometric mean, 95% CI), the paper's ranges shaded."""
    cases = [r["algorithm"] for r in rows]
    seeds = rows[0]["seeds"]
    gains = {"final mean": "d_final_mean", "worst 10%": "d_final_p10"}
    save_bar_plot(
        ctx.out_dir / "e1.png",
        cases,
        {label: [r[key] for r in rows] for label, key in gains.items()},
        ci={label: [r[key + "_ci95"] for r in rows] for label, key in gains.items()},
        ranges={c: paper.GAIN_RANGE_POINTS for c in cases},
        baseline=0.0,
        ylabel="Auxo - single model (accuracy points)",
        title=f"E1: accuracy gain, {seeds} paired seeds, 95% CI; paper range: mean",
    )
    ratios = {"time": "speedup", "participant-rounds": "resource_ratio"}
    save_bar_plot(
        ctx.out_dir / "e1_speedup.png",
        cases,
        {label: [r[key] for r in rows] for label, key in ratios.items()},
        bounds={
            label: [(r[key + "_lo"], r[key + "_hi"]) for r in rows] for label, key in ratios.items()
        },
        ranges={c: paper.SPEEDUP_RANGE for c in cases},
        baseline=1.0,
        ylabel="single model / Auxo, to the single model's best",
        title=f"E1: speed-up to target, {seeds} paired seeds, 95% CI; paper range: time",
    )
