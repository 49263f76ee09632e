# ruff: noqa: RUF012  (Settings is a pydantic model: its list defaults are copied per instance)
"""E1 (QoE cases), E4 (real trace), E6 (greedy vs DP), E9 (voice), E10 (objectives),
E11 (ideal vs realised gain)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

import kairos.andes.experiments.paper as paper
from kairos.andes.experiments.common import plot_metric, policy_sweep
from kairos.andes.experiments.workload import SimPoint, run_point
from kairos.andes.latency import DEFAULT_PROFILE
from kairos.andes.qoe import READER_SPEEDS, qoe_at
from kairos.cli_utils import Settings
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.report import save_cdf_plot, save_line_plot, summarize

# Figure 5's cases with a=0, TTFT target 1 s, 1 token/s, ten tokens (ideal I_j = j).
QOE_CASES: dict[str, list[float]] = {
    "(a) perfect": [j - 0.5 for j in range(1, 11)],
    "(b) long initial delay": [j + 5.0 for j in range(1, 11)],
    "(c) slow streaming": [1.0 + 2.0 * (j - 1) for j in range(1, 11)],
    "(d) pause mid-stream": [1.0, 1.1, 1.2, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 10.0],
}


class NoConfig(Settings):
    pass


@experiment("andes", "e1", "QoE of Figure 5's four delivery cases", NoConfig)
def e1(cfg: NoConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    values = {name: qoe_at(t, 0.0, 1.0, 1.0) for name, t in QOE_CASES.items()}
    rows: list[dict[str, Any]] = [{"case": k, "qoe": v} for k, v in values.items()]
    order = " > ".join(k[:3] for k in sorted(values, key=lambda k: -values[k]))
    publish(
        ctx,
        "e1",
        cfg,
        rows,
        "E1: QoE of the four cases",
        {"order": order, "paper_order": "(a) > (d) > (b),(c)"},
    )
    save_line_plot(
        ctx.out_dir / "e1.png",
        list(range(1, 11)),
        {name: t for name, t in QOE_CASES.items()} | {"ideal": list(range(1, 11))},
        xlabel="token",
        ylabel="delivery time (s)",
        title="Figure 5 cases",
    )
    return rows


class TraceConfig(Settings):
    profile: str = DEFAULT_PROFILE
    span_s: float = 3600.0
    policies: list[str] = ["fcfs", "andes"]
    # a trace CSV (Azure/Splitwise or BurstGPT) to replay instead of the shared Azure
    # conversation trace: its arrivals and lengths, rescaled to `load_factor` x the profile's
    # sustainable rate for its own mean lengths
    trace: str | None = None
    load_factor: float = Field(1.0, gt=0)
    # the trace's own bursts (minute rates 0.6x-1.5x its mean) at the profile's capacity
    point: SimPoint = SimPoint(arrival="azure_trace", dataset="azure", collect=True)

    def base(self) -> SimPoint:
        update: dict[str, Any] = {
            "profile": self.profile,
            "span_s": self.span_s,
            "load_factor": self.load_factor,
        }
        if self.trace is not None:
            update |= {"arrival": "trace", "trace": self.trace}
        # validated again: a trace path is checked like any other setting
        return SimPoint.model_validate(self.point.model_dump() | update)


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


@experiment(
    "andes",
    "e4",
    "Real trace: QoE/TTFT/TDS CDFs, queue and KV over time (Figs. 3, 11-13)",
    TraceConfig,
    quick={"span_s": 1200.0},
)
def e4(cfg: TraceConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.base()
    results = ctx.sweep(run_point, base, [{"policy": p} for p in cfg.policies], "e4")
    rows: list[dict[str, Any]] = []
    for pol, res in zip(cfg.policies, results, strict=True):
        per = res["per_request"]
        rows.append(
            {
                "policy": pol,
                "requests": res["requests"],
                "rate": res["rate"],
                "avg_qoe": res["avg_qoe"],
                "share_qoe_095": res["share_qoe_095"],
                "avg_ttft": res["avg_ttft"],
                "p90_ttft": summarize(per["ttft"]).p90,
                "avg_tds": res["avg_tds"],
                "peak_waiting": res["peak_waiting"],
                "preemptions_per_request": res["preemptions_per_request"],
            }
        )
    for metric, label in (("qoe", "QoE"), ("ttft", "TTFT (s)"), ("tds", "TDS (tokens/s)")):
        save_cdf_plot(
            ctx.out_dir / f"e4_cdf_{metric}.png",
            {
                p: [v for v in r["per_request"][metric] if v >= 0]
                for p, r in zip(cfg.policies, results, strict=True)
            },
            xlabel=label,
        )
    for series in ("waiting", "kv_usage", "running"):
        time, lines = aligned_series(results, cfg.policies, series)
        save_line_plot(
            ctx.out_dir / f"e4_{series}.png",
            time,
            lines,
            xlabel="time (s)",
            ylabel=series,
            title=f"E4 {series}",
            kind="step",
        )
    summary: dict[str, Any] = {f"paper_{k}": v for k, v in paper.TRACE.items()}
    by = {r["policy"]: r for r in rows}
    if "fcfs" in by and "andes" in by:
        f, a = by["fcfs"], by["andes"]
        summary |= {
            "tds_change": a["avg_tds"] / f["avg_tds"] - 1,
            "peak_queue_reduction": 1 - a["peak_waiting"] / max(f["peak_waiting"], 1),
        }
    publish(ctx, "e4", cfg, rows, f"E4: {base.trace or 'Azure conversation'} trace", summary)
    return rows


class SolverConfig(Settings):
    profile: str = DEFAULT_PROFILE
    intensities: list[float] = [2.0, 2.4, 2.8]
    seeds: list[int] = [0]
    point: SimPoint = SimPoint(span_s=600.0, cycle_s=600.0)


@experiment(
    "andes", "e6", "Greedy vs exact DP solver (Fig. 18)", SolverConfig, quick={"intensities": [2.4]}
)
def e6(cfg: SolverConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    rows = policy_sweep(
        ctx, base, "intensity", cfg.intensities, ["andes", "andes-dp"], seeds=cfg.seeds
    )
    by = {(r["intensity"], r["policy"]): r for r in rows}
    speed = [
        by[(h, "andes-dp")]["mean_solve_ms"] / max(by[(h, "andes")]["mean_solve_ms"], 1e-9)
        for h in cfg.intensities
    ]
    qoe_ratio = [
        by[(h, "andes")]["avg_qoe"] / max(by[(h, "andes-dp")]["avg_qoe"], 1e-9)
        for h in cfg.intensities
    ]
    publish(
        ctx,
        "e6",
        cfg,
        rows,
        "E6: greedy vs DP",
        {
            "dp_over_greedy_time": float(np.mean(speed)),
            "greedy_over_dp_qoe": float(np.mean(qoe_ratio)),
            "paper_speedup": paper.GREEDY_SPEEDUP_OVER_DP,
        },
        ["intensity", "policy", "avg_qoe", "mean_solve_ms", "solves"],
    )
    plot_metric(ctx, rows, "intensity", "avg_qoe", "e6.png", "burst intensity", "average QoE", "E6")
    return rows


class VoiceConfig(Settings):
    profile: str = DEFAULT_PROFILE
    intensities: list[float] = [1.0, 1.5, 2.0, 2.4, 2.8]
    policies: list[str] = ["fcfs", "andes"]
    seeds: list[int] = [0]
    point: SimPoint = SimPoint(speeds="listener")


@experiment(
    "andes",
    "e9",
    "Voice: silence-time ratio vs burst intensity (Fig. 2.12)",
    VoiceConfig,
    quick={"intensities": [2.0, 2.8]},
)
def e9(cfg: VoiceConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    rows = policy_sweep(ctx, base, "intensity", cfg.intensities, cfg.policies, seeds=cfg.seeds)
    plot_metric(
        ctx,
        rows,
        "intensity",
        "silence_ratio",
        "e9.png",
        "burst intensity",
        "silence-time ratio",
        "E9: voice",
    )
    by = {(r["intensity"], r["policy"]): r["silence_ratio"] for r in rows}
    red = [by[(h, "fcfs")] / by[(h, "andes")] for h in cfg.intensities if by.get((h, "andes"))]
    publish(
        ctx,
        "e9",
        cfg,
        rows,
        "E9: silence-time ratio",
        {
            "max_fcfs_silence": max(by[(h, "fcfs")] for h in cfg.intensities),
            "max_reduction": max(red, default=math.nan),
            "paper_vllm_silence": paper.VOICE_SILENCE_VLLM,
            "paper_reduction": paper.VOICE_SILENCE_REDUCTION,
        },
        ["intensity", "policy", "silence_ratio", "avg_qoe"],
    )
    return rows


class ObjectivesConfig(Settings):
    profile: str = DEFAULT_PROFILE
    intensities: list[float] = [2.0, 2.8]
    seeds: list[int] = [0]
    point: SimPoint = SimPoint(collect=True)


@experiment(
    "andes",
    "e10",
    "Alternative objectives (appendix A)",
    ObjectivesConfig,
    quick={"intensities": [2.4]},
)
def e10(cfg: ObjectivesConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    variants: dict[str, dict[str, Any]] = {"fcfs": {"policy": "fcfs"}} | {
        f"andes[{o}]": {"policy": "andes", "andes": {"objective": o}}
        for o in ("average", "max_min", "perfect")
    }
    points = [{"intensity": h, **v} for h in cfg.intensities for v in variants.values()]
    results = ctx.sweep(run_point, base, points, "e10")
    rows = []
    for p, res in zip(points, results, strict=True):
        q = np.asarray(res["per_request"]["qoe"])
        label = next(k for k, v in variants.items() if all(p.get(x) == y for x, y in v.items()))
        rows.append(
            {
                "intensity": p["intensity"],
                "policy": label,
                "avg_qoe": float(q.mean()),
                "p10_qoe": float(np.percentile(q, 10)),
                "min_qoe": float(q.min()),
                "share_perfect": float((q >= 0.999).mean()),
            }
        )
    publish(ctx, "e10", cfg, rows, "E10: objectives (the paper prints no numbers)")
    return rows


class GainConfig(Settings):
    profile: str = DEFAULT_PROFILE
    load_factors: list[float] = [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]
    point: SimPoint = SimPoint()


@experiment(
    "andes",
    "e11",
    "Ideal gain bound vs realised gain (section 2.3)",
    GainConfig,
    quick={"load_factors": [0.2, 0.3, 0.4, 0.5, 0.6]},
)
def e11(cfg: GainConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    """Ideal gain: how many times faster than people read the engine streams under load (FCFS
    TDS at the default burst / mean reading speed). Realised: capacity gain at QoE 0.95."""
    from kairos.andes.capacity import capacity

    base = cfg.point.model_copy(update={"profile": cfg.profile})
    rows = policy_sweep(ctx, base, "load_factor", cfg.load_factors, ["fcfs", "andes"])
    mean_speed = sum(s * w for s, w in READER_SPEEDS) / sum(w for _, w in READER_SPEEDS)
    loaded = [
        r for r in rows if r["policy"] == "fcfs" and r["load_factor"] == max(cfg.load_factors)
    ]
    ideal = loaded[0]["avg_tds"] / mean_speed
    cap = {
        p: capacity(
            [r["load_factor"] for r in rows if r["policy"] == p],
            [r["avg_qoe"] for r in rows if r["policy"] == p],
            0.95,
        )
        for p in ("fcfs", "andes")
    }
    realised = cap["andes"] / cap["fcfs"] if cap["fcfs"] == cap["fcfs"] else math.nan
    summary = {
        "ideal_gain": ideal,
        "realised_gain": realised,
        "share_of_ideal": (realised - 1) / (ideal - 1) if ideal > 1 else math.nan,
        "paper_ideal_gain": paper.IDEAL_GAIN,
        "paper_share": paper.REALISED_SHARE_OF_IDEAL,
    }
    publish(
        ctx,
        "e11",
        cfg,
        rows,
        "E11: ideal vs realised gain",
        summary,
        ["load_factor", "policy", "avg_qoe", "avg_tds"],
    )
    return rows
