# ruff: noqa: RUF012  (Settings is a pydantic model: its list defaults are copied per instance)
"""E1 (QoE cases), E6 (greedy vs DP), E9 (voice), E10 (objectives),
E11 (ideal vs realised gain). E4 is in `trace_replay`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import kairos.andes.experiments.paper as paper
from kairos.andes.experiments.common import plot_metric, policy_sweep
from kairos.andes.experiments.point_settings import PointSettings
from kairos.andes.experiments.workload import SimPoint, run_point
from kairos.andes.latency import DEFAULT_PROFILE
from kairos.andes.qoe import READER_SPEEDS, qoe_at
from kairos.cli_utils import Settings
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.experiments.seeds import Cell, seed_average, seed_runs
from kairos.report import save_line_plot

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


class SolverConfig(PointSettings):
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


class VoiceConfig(PointSettings):
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


class ObjectivesConfig(PointSettings):
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
    """Each objective's QoE distribution, per seed of `seeds` (the point's own seed is not
    used, as in every seed-averaged sweep), then its mean and 95% CI over the seeds."""
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    variants: dict[str, dict[str, Any]] = {"fcfs": {"policy": "fcfs"}} | {
        f"andes ({o})": {"policy": "andes", "andes": cfg.point.andes | {"objective": o}}
        for o in ("average", "max_min", "perfect")
    }
    cells = [
        Cell({"intensity": h, "policy": label}, {"intensity": h, **v})
        for h in cfg.intensities
        for label, v in variants.items()
    ]
    groups = seed_runs(ctx, run_point, base, cells, cfg.seeds, "e10")
    rows = [
        {**c.labels, "seeds": len(g), **seed_average([_qoe_shape(r) for r in g])}
        for c, g in zip(cells, groups, strict=True)
    ]
    publish(ctx, "e10", cfg, rows, "E10: objectives (the paper prints no numbers)")
    return rows


def _qoe_shape(result: dict[str, Any]) -> dict[str, float]:
    """What the objectives trade: the mean, the low tail and the share at perfect QoE."""
    q = np.asarray(result["per_request"]["qoe"])
    return {
        "avg_qoe": float(q.mean()),
        "p10_qoe": float(np.percentile(q, 10)),
        "min_qoe": float(q.min()),
        "share_perfect": float((q >= 0.999).mean()),
    }


class GainConfig(PointSettings):
    profile: str = DEFAULT_PROFILE
    load_factors: list[float] = [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]
    seeds: list[int] = [0]
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
    TDS at the default burst / mean reading speed). Realised: capacity gain at QoE 0.95.
    Both on the curves averaged over `seeds`."""
    from kairos.andes.capacity import capacity

    base = cfg.point.model_copy(update={"profile": cfg.profile})
    rows = policy_sweep(
        ctx, base, "load_factor", cfg.load_factors, ["fcfs", "andes"], seeds=cfg.seeds
    )
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
