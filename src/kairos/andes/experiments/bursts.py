# ruff: noqa: RUF012  (Settings is a pydantic model: its list defaults are copied per instance)
"""Experiments on the cyclic burst pattern: E2 (intensity), the capacity table, E3 (duration),
E5 (refiner ablation), the guard ablation of spec section 10, E7 (Δt) and E8 (Poisson)."""

from __future__ import annotations

import math
from typing import Any

import kairos.andes.experiments.paper as paper
from kairos.andes.capacity import capacity
from kairos.andes.experiments.common import BASELINES, plot_metric, policy_sweep
from kairos.andes.experiments.point_settings import PointSettings
from kairos.andes.experiments.variants import ablation_variants
from kairos.andes.experiments.workload import SimPoint, base_rate
from kairos.andes.latency import DEFAULT_PROFILE, PROFILES
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.report import save_line_plot

ALL_PROFILES = list(PROFILES)


class IntensityConfig(PointSettings):
    profiles: list[str] = ALL_PROFILES
    intensities: list[float] = [1.0, 1.4, 1.8, 2.0, 2.2, 2.5, 2.8]
    policies: list[str] = list(BASELINES)
    seeds: list[int] = [0]
    point: SimPoint = SimPoint()


@experiment(
    "andes",
    "e2",
    "Average QoE vs burst intensity (Fig. 15 / 2.11)",
    IntensityConfig,
    quick={"profiles": [DEFAULT_PROFILE], "intensities": [2.0, 2.4, 2.8]},
)
def e2(cfg: IntensityConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {"paper_max_gain": paper.MAX_QOE_GAIN_INTENSITY}
    for prof in cfg.profiles:
        base = cfg.point.model_copy(update={"profile": prof})
        part = policy_sweep(ctx, base, "intensity", cfg.intensities, cfg.policies, seeds=cfg.seeds)
        for r in part:
            r["profile"] = prof
        rows += part
        plot_metric(
            ctx,
            part,
            "intensity",
            "avg_qoe",
            f"e2_{prof}.png",
            "burst intensity",
            "average QoE",
            f"E2 {prof}",
        )
        gains = _ratios(part, "intensity", "avg_qoe")
        summary[f"{prof}_max_gain"] = max(gains.values(), default=math.nan)
    publish(
        ctx,
        "e2",
        cfg,
        rows,
        "E2: average QoE vs burst intensity",
        summary,
        [
            "profile",
            "intensity",
            "policy",
            "avg_qoe",
            "share_qoe_095",
            "avg_ttft",
            "avg_tds",
            "ttft_p99",
            "ttft_max",
            "qoe_long_prompts",
            "preemptions_per_request",
        ],
    )
    return rows


def _ratios(
    rows: list[dict[str, Any]], axis: str, metric: str, num: str = "andes", den: str = "fcfs"
) -> dict[Any, float]:
    by = {(r[axis], r["policy"]): float(r[metric]) for r in rows}
    return {x: by[(x, num)] / by[(x, den)] for (x, p) in by if p == num and by.get((x, den))}


class CapacityConfig(PointSettings):
    profiles: list[str] = ALL_PROFILES
    load_factors: list[float] = [0.05, 0.1, 0.125, 0.15, 0.175, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8]
    targets: list[float] = [0.95, 0.96, 0.97, 0.98, 0.99]
    policies: list[str] = ["fcfs", "andes"]
    seeds: list[int] = [0]
    point: SimPoint = SimPoint()


@experiment(
    "andes",
    "capacity",
    "Serving capacity at QoE targets (Tables 2.5, A.3, A.4)",
    CapacityConfig,
    quick={"profiles": [DEFAULT_PROFILE], "load_factors": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3]},
)
def capacity_table(cfg: CapacityConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    """Capacity = the highest burst request rate (intensity x average rate) keeping average
    QoE at or above the target, at the default burst shape; the gain is andes / fcfs."""
    rows: list[dict[str, Any]] = []
    for prof in cfg.profiles:
        base = cfg.point.model_copy(update={"profile": prof})
        part = policy_sweep(
            ctx, base, "load_factor", cfg.load_factors, cfg.policies, seeds=cfg.seeds
        )
        burst = base.intensity * base_rate(prof, base.dataset)
        curves = {
            p: (
                [burst * r["load_factor"] for r in part if r["policy"] == p],
                [r["avg_qoe"] for r in part if r["policy"] == p],
            )
            for p in cfg.policies
        }
        save_line_plot(
            ctx.out_dir / f"capacity_{prof}.png",
            curves[cfg.policies[0]][0],
            {p: c[1] for p, c in curves.items()},
            xlabel="burst request rate (req/s)",
            ylabel="average QoE",
            title=f"capacity {prof}",
        )
        for t in cfg.targets:
            row: dict[str, Any] = {"profile": prof, "target": t}
            for p, (x, y) in curves.items():
                row[f"{p}_req_s"] = capacity(x, y, t)
            f, a = row.get("fcfs_req_s", math.nan), row.get("andes_req_s", math.nan)
            row["gain"] = a / f if f and f == f else math.nan
            row["paper_gain"] = paper.CAPACITY_GAIN_SHAREGPT.get(prof, {}).get(t, math.nan)
            rows.append(row)
    publish(ctx, "capacity", cfg, rows, "Serving capacity (burst req/s) and gain vs paper")
    return rows


class DurationConfig(PointSettings):
    profile: str = DEFAULT_PROFILE
    durations: list[float] = [0.15, 0.25, 0.35, 0.45]
    policies: list[str] = list(BASELINES)
    seeds: list[int] = [0]
    point: SimPoint = SimPoint()


@experiment(
    "andes",
    "e3",
    "Average QoE vs burst duration (Fig. 16)",
    DurationConfig,
    quick={"durations": [0.25, 0.35, 0.45]},
)
def e3(cfg: DurationConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    rows = policy_sweep(ctx, base, "duration", cfg.durations, cfg.policies, seeds=cfg.seeds)
    plot_metric(
        ctx,
        rows,
        "duration",
        "avg_qoe",
        "e3.png",
        "burst duration (share of cycle)",
        "average QoE",
        f"E3 {cfg.profile}",
    )
    gains = _ratios(rows, "duration", "avg_qoe")
    publish(
        ctx,
        "e3",
        cfg,
        rows,
        "E3: average QoE vs burst duration",
        {
            "max_gain": max(gains.values(), default=math.nan),
            "paper_max_gain": paper.MAX_QOE_GAIN_DURATION,
        },
        ["duration", "policy", "avg_qoe", "share_qoe_095", "avg_ttft", "avg_tds"],
    )
    return rows


@experiment(
    "andes",
    "e5",
    "Refiner ablation vs burst duration (Fig. 17)",
    DurationConfig,
    quick={"durations": [0.25, 0.35, 0.45]},
)
def e5(cfg: DurationConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    variants: dict[str, dict[str, Any]] = {
        "andes": {"policy": "andes"},
        # each variant changes one setting of the Andes given (`point.andes`), not of the default
        "andes-no-refiner": {"policy": "andes", "andes": cfg.point.andes | {"refiner": False}},
    }
    rows = policy_sweep(ctx, base, "duration", cfg.durations, [], variants, seeds=cfg.seeds)
    plot_metric(
        ctx,
        rows,
        "duration",
        "avg_qoe",
        "e5_qoe.png",
        "burst duration",
        "average QoE",
        "E5: QoE with and without the refiner",
    )
    plot_metric(
        ctx,
        rows,
        "duration",
        "preemptions_per_request",
        "e5_preemptions.png",
        "burst duration",
        "preemptions / request",
        "E5: preemptions",
    )
    publish(
        ctx,
        "e5",
        cfg,
        rows,
        "E5: overhead-aware refiner ablation",
        columns=["duration", "policy", "avg_qoe", "preemptions_per_request", "avg_ttft"],
    )
    return rows


class AblationConfig(PointSettings):
    profile: str = DEFAULT_PROFILE
    intensities: list[float] = [2.0, 2.5, 2.8]
    seeds: list[int] = [0]
    point: SimPoint = SimPoint()


@experiment(
    "andes",
    "ablation",
    "What each anti-thrash guard buys (spec section 10)",
    AblationConfig,
    quick={"intensities": [2.0, 2.8]},
)
def ablation(cfg: AblationConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    variants = ablation_variants(cfg.point.andes)
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    rows = policy_sweep(ctx, base, "intensity", cfg.intensities, [], variants, seeds=cfg.seeds)
    plot_metric(
        ctx,
        rows,
        "intensity",
        "avg_qoe",
        "ablation.png",
        "burst intensity",
        "average QoE",
        "Guard ablation",
    )
    publish(
        ctx,
        "ablation",
        cfg,
        rows,
        "Anti-thrash guards: QoE and preemptions",
        columns=[
            "intensity",
            "policy",
            "avg_qoe",
            "preemptions_per_request",
            "avg_ttft",
            "ttft_max",
            "qoe_long_prompts",
            "solves",
        ],
    )
    return rows


class HorizonConfig(PointSettings):
    profile: str = DEFAULT_PROFILE
    horizons: list[float] = [1.0, 2.0, 5.0, 10.0, 20.0, 40.0]
    seeds: list[int] = [0]
    point: SimPoint = SimPoint()


@experiment(
    "andes",
    "e7",
    "Sensitivity to Δt (Fig. 19)",
    HorizonConfig,
    quick={"horizons": [2.0, 10.0, 40.0]},
)
def e7(cfg: HorizonConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    variants = {
        f"andes Δt={h:g}": {"policy": "andes", "andes": cfg.point.andes | {"horizon_s": h}}
        for h in cfg.horizons
    }
    rows = policy_sweep(
        ctx,
        base,
        "intensity",
        [base.intensity],
        ["fcfs", "sarathi", "lqsf"],
        variants,
        seeds=cfg.seeds,
    )
    publish(
        ctx,
        "e7",
        cfg,
        rows,
        "E7: average QoE vs Δt (baselines for reference)",
        columns=["policy", "avg_qoe", "share_qoe_095", "avg_ttft", "preemptions_per_request"],
    )
    andes_rows = [r for r in rows if r["policy"].startswith("andes")]
    base_rows = {r["policy"]: r["avg_qoe"] for r in rows if not r["policy"].startswith("andes")}
    save_line_plot(
        ctx.out_dir / "e7.png",
        cfg.horizons,
        {"andes": [r["avg_qoe"] for r in andes_rows]}
        | {p: [q] * len(cfg.horizons) for p, q in base_rows.items()},
        xlabel="Δt (s)",
        ylabel="average QoE",
        title="E7: Δt sensitivity",
    )
    return rows


class PoissonConfig(PointSettings):
    profile: str = DEFAULT_PROFILE
    load_factors: list[float] = [0.4, 0.6, 0.8, 1.0, 1.2]
    policies: list[str] = list(BASELINES)
    seeds: list[int] = [0]
    point: SimPoint = SimPoint(arrival="poisson")


@experiment(
    "andes",
    "e8",
    "Poisson arrival-rate sweep (Fig. 20)",
    PoissonConfig,
    quick={"load_factors": [0.6, 1.0]},
)
def e8(cfg: PoissonConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    base = cfg.point.model_copy(update={"profile": cfg.profile})
    rows = policy_sweep(ctx, base, "load_factor", cfg.load_factors, cfg.policies, seeds=cfg.seeds)
    plot_metric(
        ctx,
        rows,
        "load_factor",
        "avg_qoe",
        "e8.png",
        "arrival rate / sustainable rate",
        "average QoE",
        "E8: Poisson arrivals",
    )
    publish(
        ctx,
        "e8",
        cfg,
        rows,
        "E8: average QoE vs Poisson arrival rate",
        columns=["load_factor", "rate", "policy", "avg_qoe", "share_qoe_095", "avg_ttft"],
    )
    return rows
