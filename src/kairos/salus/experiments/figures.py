"""PNG figures of the Salus experiments, drawn from the rows their JSON holds."""

from __future__ import annotations

from typing import Any

from kairos.experiments import ExperimentContext
from kairos.report.plots import save_bar_plot, save_span_plot, save_xy_plot


def plot_e1(
    ctx: ExperimentContext, rows: list[dict[str, Any]], cdf_rows: list[dict[str, Any]]
) -> None:
    """Table 2.1 as bars (means with 95% CIs, the paper's minutes dashed) and Fig. 2.7's CDF."""
    labels = {
        "makespan_min": "makespan",
        "avg_queuing_min": "avg queuing",
        "avg_jct_min": "avg JCT",
        "p95_jct_min": "p95 JCT",
    }
    save_bar_plot(
        ctx.out_dir / "table2_1.png",
        list(labels.values()),
        {r["policy"]: [r[k] for k in labels] for r in rows},
        ci={r["policy"]: [r[k + "_ci95"] for k in labels] for r in rows},
        reference={r["policy"]: [r.get("paper_" + k, float("nan")) for k in labels] for r in rows},
        ylabel="minutes",
        title=f"Table 2.1 (E1): means over {rows[0]['seeds']} seeds, 95% CI",
    )
    curves = {}
    for name in dict.fromkeys(r["policy"] for r in cdf_rows):
        mine = [r for r in cdf_rows if r["policy"] == name]
        curves[name] = ([r["jct_min"] for r in mine], [r["quantile"] for r in mine])
    save_xy_plot(
        ctx.out_dir / "table2_1_jct_cdf.png",
        curves,
        xlabel="JCT (min)",
        ylabel="CDF",
        title="Fig. 2.7: JCT per policy, pooled over seeds",
        kind="line",
    )


def plot_e2(ctx: ExperimentContext, segments: list[dict[str, Any]], seed: int) -> None:
    """Fig. 2.8a: when each job ran on the SRTF lane (job #0 at the top)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for s in sorted(segments, key=lambda s: s["job"]):
        spans.setdefault(f"#{s['job']} {s['workload']}", []).append((s["start"], s["end"]))
    save_span_plot(
        ctx.out_dir / "fig2_8a.png",
        spans,
        xlabel="time (s)",
        title=f"Fig. 2.8a (E2): SRTF on one lane, seed {seed}",
    )


def plot_e4(ctx: ExperimentContext, rows: list[dict[str, Any]]) -> None:
    """Fig. 2.10: makespan FIFO / PACK per workload, the paper's ratio dashed."""
    nan = float("nan")
    save_bar_plot(
        ctx.out_dir / "fig2_10.png",
        [r["workload"] for r in rows],
        {"FIFO / PACK": [r["speedup"] for r in rows]},
        reference={"FIFO / PACK": [r["paper_speedup"] or nan for r in rows]},
        baseline=1.0,
        ylabel="makespan FIFO / PACK",
        title="Fig. 2.10 (E4, model demonstration): one run, no seeds",
    )
