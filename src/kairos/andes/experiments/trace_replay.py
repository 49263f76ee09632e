# ruff: noqa: RUF012  (Settings is a pydantic model: its list defaults are copied per instance)
"""E4: a real trace at a stated operating point (Figs. 3, 11-13), with its tails.

The run is placed where FCFS's average QoE is the paper's (0.88, `target_fcfs_qoe`), found
by a short search over the load factor (`kairos.andes.operating_point.find_load`; a load
factor is a share of the profile's sustainable rate for the trace's own length
distribution), or at an explicit `load_factor`. Every policy then runs at `load_sweep`
multiples of that load, for each seed. The table gives each cell's mean and 95% CI over the
seeds, the TTFT percentiles and the QoE of the longest-prompt decile beside the average;
the summary pairs Andes with FCFS seed by seed at the operating point (ratios with their CI,
`kairos.report.stats.paired_ratio`), and Andes with its anti-starvation rules off (both:
the knapsack's and pacing's bounded overtaking, `experiments/variants.py`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

import kairos.andes.experiments.paper as paper
from kairos.andes.experiments.point_settings import PointSettings
from kairos.andes.experiments.variants import without_anti_starvation
from kairos.andes.experiments.workload import SimPoint, run_point
from kairos.andes.latency import DEFAULT_PROFILE
from kairos.andes.operating_point import PAPER_FCFS_QOE, LoadSearch, find_load
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.experiments.seeds import Cell, seed_average, seed_runs
from kairos.report import save_cdf_plot, save_line_plot
from kairos.report.stats import mean_ci, paired_ratio

NO_RULE = "andes (no anti-starvation)"
COLUMNS = [
    "load_x",
    "policy",
    "avg_qoe",
    "avg_qoe_ci95",
    "share_qoe_095",
    "avg_ttft",
    "ttft_p50",
    "ttft_p90",
    "ttft_p99",
    "ttft_max",
    "qoe_long_prompts",
    "avg_tds",
    "tds_unpreempted",
    "peak_waiting",
    "peak_new_waiting",
    "kv_peak",
    "prefill_time_share",
    "qoe_ttft_only",
    "qoe_stall_only",
    "preemptions_per_request",
]


class TraceConfig(PointSettings):
    profile: str = DEFAULT_PROFILE
    span_s: float = 3600.0
    policies: list[str] = ["fcfs", "andes"]
    # a trace CSV (Azure/Splitwise or BurstGPT) to replay instead of the shared Azure
    # conversation trace: its arrivals and lengths, at the operating point below
    trace: str | None = None
    # a share of the profile's sustainable rate for the trace's own lengths; None: the load
    # where FCFS's average QoE is `target_fcfs_qoe` (searched)
    load_factor: float | None = Field(None, gt=0)
    target_fcfs_qoe: float = Field(PAPER_FCFS_QOE, gt=0, lt=1)
    load_sweep: list[float] = [0.9, 1.0, 1.1]  # multiples of the operating load
    starvation_ablation: bool = True  # also run Andes with both anti-starvation rules off
    seeds: list[int] = [0, 1, 2]
    # the trace's own bursts (minute rates 0.6x-1.5x its mean)
    point: SimPoint = SimPoint(arrival="azure_trace", dataset="azure", collect=True)

    def base(self) -> SimPoint:
        update: dict[str, Any] = {"profile": self.profile, "span_s": self.span_s}
        if self.trace is not None:
            update |= {"arrival": "trace", "trace": self.trace}
        # validated again: a trace path is checked like any other setting
        return SimPoint.model_validate(self.point.model_dump() | update)


def operating_load(cfg: TraceConfig, ctx: ExperimentContext, base: SimPoint) -> LoadSearch:
    """The load factor the run is placed at: given, or where FCFS meets the target."""
    if cfg.load_factor is not None:
        return LoadSearch(cfg.load_factor, math.nan, [], True)
    probe = base.model_copy(update={"policy": "fcfs", "collect": False, "seed": cfg.seeds[0]})

    def fcfs_qoe(load: float) -> float:
        (res,) = ctx.sweep(run_point, probe, [{"load_factor": load}], "operating point")
        return float(res["avg_qoe"])

    return find_load(fcfs_qoe, cfg.target_fcfs_qoe)


def aligned_series(
    results: list[dict[str, Any]], policies: list[str], name: str
) -> tuple[list[float], dict[str, list[float]]]:
    """Every policy's per-second series on the longest run's time axis; a run that ended
    earlier has nothing (NaN) after its end."""
    time = max((r["series"]["time"] for r in results), key=len)
    return time, {
        p: [*r["series"][name], *([math.nan] * (len(time) - len(r["series"][name])))]
        for p, r in zip(policies, results, strict=True)
    }


def paired_summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Andes against FCFS (and against itself without the rule), seed by seed."""
    out: dict[str, Any] = {}

    def vals(label: str, key: str) -> list[float]:
        return [float(r[key]) for r in runs[label]]

    def ratio(num: str, den: str, key: str, name: str) -> None:
        pr = paired_ratio(vals(num, key), vals(den, key))  # geometric mean of num / den
        out.update({name: pr.geo_mean, f"{name}_lo": pr.lo, f"{name}_hi": pr.hi, "seeds": pr.n})

    def diff(num: str, den: str, key: str, name: str) -> None:
        d = np.subtract(vals(num, key), vals(den, key))
        mean, half = mean_ci(d.tolist(), 0.95)
        out.update({name: mean, f"{name}_ci95": half})

    if "fcfs" in runs and "andes" in runs:
        ratio("andes", "fcfs", "avg_qoe", "qoe_andes_over_fcfs")
        diff("andes", "fcfs", "share_qoe_095", "share_095_andes_minus_fcfs")
        ratio("andes", "fcfs", "avg_ttft", "ttft_andes_over_fcfs")
        ratio("andes", "fcfs", "avg_tds", "tds_andes_over_fcfs")
        ratio("andes", "fcfs", "ttft_max", "max_ttft_andes_over_fcfs")
        ratio("andes", "fcfs", "qoe_long_prompts", "long_prompt_qoe_andes_over_fcfs")
        a, f = runs["andes"], runs["fcfs"]
        pairs = zip(a, f, strict=True)
        cuts = [1 - x["peak_waiting"] / max(y["peak_waiting"], 1) for x, y in pairs]
        out["peak_queue_reduction"] = float(np.mean(cuts))
        # the queue of requests never started (Andes' waiting list also holds the users it
        # paused, which the paper's Fig. 13 shows apart)
        new = [
            1 - x["peak_new_waiting"] / max(y["peak_new_waiting"], 1)
            for x, y in zip(a, f, strict=True)
        ]
        out["peak_new_queue_reduction"] = float(np.mean(new))
    if "andes" in runs and NO_RULE in runs:
        diff("andes", NO_RULE, "avg_qoe", "qoe_rule_on_minus_off")
        ratio(NO_RULE, "fcfs", "ttft_max", "max_ttft_no_rule_over_fcfs")
    return out


@experiment(
    "andes",
    "e4",
    "Real trace at FCFS's paper QoE: QoE/TTFT/TDS, tails, queue and KV (Figs. 3, 11-13)",
    TraceConfig,
    quick={"span_s": 600.0, "load_sweep": [1.0], "seeds": [0]},
)
def e4(cfg: TraceConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.base()
    search = operating_load(cfg, ctx, base)
    labels: dict[str, dict[str, Any]] = {p: {"policy": p} for p in cfg.policies}
    if cfg.starvation_ablation and "andes" in cfg.policies:
        # both anti-starvation rules off (the knapsack's and pacing's overtaking), the rest
        # of the Andes given kept
        labels[NO_RULE] = {"policy": "andes", "andes": without_anti_starvation(cfg.point.andes)}
    cells = [
        Cell(
            {"load_x": m, "policy": label},
            {**upd, "load_factor": m * search.load, "collect": m == 1.0},
        )
        for m in cfg.load_sweep
        for label, upd in labels.items()
    ]
    groups = seed_runs(ctx, run_point, base, cells, cfg.seeds, "e4")
    rows = [
        {
            **c.labels,
            "load_factor": c.update["load_factor"],
            "seeds": len(g),
            # each cell's own numbers: the loss split is only computed where series are kept
            **seed_average(g, [k for k in g[0] if isinstance(g[0][k], int | float)]),
        }
        for c, g in zip(cells, groups, strict=True)
    ]
    at_point = {
        c.labels["policy"]: g
        for c, g in zip(cells, groups, strict=True)
        if c.labels["load_x"] == 1.0
    }
    _plots(ctx, {label: g[0] for label, g in at_point.items()}, rows, cfg.load_sweep)
    summary: dict[str, Any] = {
        "load_factor": search.load,
        "rate": next((r["rate"] for r in rows if r["load_x"] == 1.0), math.nan),
        "target_fcfs_qoe": cfg.target_fcfs_qoe if cfg.load_factor is None else math.nan,
        "search_probes": len(search.probes),
        "search_converged": search.converged,
    }
    summary |= paired_summary(at_point)
    summary |= {f"paper_{k}": v for k, v in paper.TRACE.items()}
    where = base.trace or "Azure conversation"
    publish(
        ctx,
        "e4",
        cfg,
        rows,
        f"E4: {where} trace at load {search.load:.3g} x sustainable",
        summary,
        COLUMNS,
    )
    return rows


def _plots(
    ctx: ExperimentContext,
    first_seed: dict[str, dict[str, Any]],
    rows: list[dict[str, Any]],
    sweep: list[float],
) -> None:
    names = [p for p in first_seed if "per_request" in first_seed[p]]
    results = [first_seed[p] for p in names]
    per = {p: r["per_request"] for p, r in zip(names, results, strict=True)}
    if results:  # CDFs and series exist only where the run kept them: at load 1.0
        _point_plots(ctx, names, results, per)
    if len(sweep) > 1:
        labels = list(dict.fromkeys(r["policy"] for r in rows))
        save_line_plot(
            ctx.out_dir / "e4_load.png",
            sweep,
            {p: [r["avg_qoe"] for r in rows if r["policy"] == p] for p in labels},
            xlabel="load (x operating point)",
            ylabel="average QoE",
            title="E4 around the operating point",
        )


def _point_plots(
    ctx: ExperimentContext,
    names: list[str],
    results: list[dict[str, Any]],
    per: dict[str, dict[str, Any]],
) -> None:
    """The operating point's CDFs and per-second series, first seed."""
    for metric, label in (("qoe", "QoE"), ("ttft", "TTFT (s)"), ("tds", "TDS (tokens/s)")):
        save_cdf_plot(
            ctx.out_dir / f"e4_cdf_{metric}.png",
            {p: [v for v in r[metric] if v >= 0] for p, r in per.items()},
            xlabel=label,
        )
    for series in ("waiting", "kv_usage", "running"):
        time, lines = aligned_series(results, names, series)
        save_line_plot(
            ctx.out_dir / f"e4_{series}.png",
            time,
            lines,
            xlabel="time (s)",
            ylabel=series,
            title=f"E4 {series}",
            kind="step",
        )
