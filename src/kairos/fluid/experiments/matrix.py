"""Tuning algorithms with and without Fluid: Figs 3.7/3.8 (five algorithms x three workloads),
Fig 3.9 (SyncBOHB on 4/8/16 GPUs), Fig 3.10 (ASHA, Fluid's K = 8), Fig 3.3 (ASHA's
concurrency) and Table 3.2 (SHA's utilisation as GPUs grow)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

import kairos.fluid.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.fluid.experiments.common import SeedsConfig, paired_cell, run, tuner_factory
from kairos.fluid.simulator import simulate
from kairos.fluid.workloads import preset
from kairos.report.stats import mean_ci

COLUMNS = ["speedup", "speedup_lo", "speedup_hi", "fluid_faster_on", "util_base", "util_fluid"]


class MatrixConfig(SeedsConfig):
    gpus: int = Field(8, ge=1, le=256)
    tuners: tuple[str, ...] = ("syncbohb", "hyperband", "asha", "bohb", "pbt")
    workloads: tuple[str, ...] = ("cifar", "wlm", "dcgan")
    concurrency: int = Field(8, ge=1, description="K: live trials of the rolling groups")


@experiment(
    "fluid",
    "fig3_7",
    "Figs 3.7/3.8: time-to-target speed-up per algorithm and workload (8 GPUs)",
    MatrixConfig,
    {"seeds": 4, "workloads": ("cifar",)},
)
def fig3_7(cfg: MatrixConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    rows = []
    seeds = range(cfg.first_seed, cfg.first_seed + cfg.seeds)
    for wl in cfg.workloads:
        w = preset(wl)
        for name in cfg.tuners:
            cell = paired_cell(
                seeds,
                run(w, name, cfg.gpus, False),
                run(w, name, cfg.gpus, True, cfg.concurrency),
            )
            rows.append(
                {"workload": wl, "tuner": name, **cell, "source": paper.SPEEDUP_BY_ALGORITHM[name]}
            )
    publish(
        ctx,
        "fig3_7",
        cfg,
        rows,
        f"Figs 3.7/3.8: baseline time-to-target / Fluid's, {cfg.seeds} paired seeds "
        f"(source overall: {paper.SPEEDUP_OVERALL})",
        columns=["workload", "tuner", *COLUMNS],
    )
    return rows


class ScaleConfig(SeedsConfig):
    gpus: tuple[int, ...] = (4, 8, 16)
    workload: str = "cifar"
    tuner: str = "syncbohb"
    concurrency: int = 8


def _scale(cfg: ScaleConfig, ctx: ExperimentContext, name: str, title: str) -> list[dict[str, Any]]:
    w = preset(cfg.workload)
    seeds = range(cfg.first_seed, cfg.first_seed + cfg.seeds)
    rows = []
    for n in cfg.gpus:
        base = [
            simulate(w, tuner_factory(cfg.tuner, w.dims, n)(s), n, False, seed=s) for s in seeds
        ]
        ours = [
            simulate(w, tuner_factory(cfg.tuner, w.dims, cfg.concurrency)(s), n, True, seed=s)
            for s in seeds
        ]
        for label, runs in (("baseline", base), ("fluid", ours)):
            mean, ci = mean_ci([r.makespan / 3600 for r in runs])
            rows.append(
                {
                    "gpus": n,
                    "engine": label,
                    "makespan_h": round(mean, 3),
                    "ci_h": round(ci, 3),
                    "util": round(sum(r.utilisation for r in runs) / len(runs), 3),
                }
            )
    publish(ctx, name, cfg, rows, title)
    return rows


@experiment("fluid", "fig3_9", "Fig 3.9: SyncBOHB on 4/8/16 GPUs", ScaleConfig, {"seeds": 3})
def fig3_9(cfg: ScaleConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    return _scale(cfg, ctx, "fig3_9", "Fig 3.9: SyncBOHB time-to-target (h) as GPUs grow")


class AshaScaleConfig(ScaleConfig):
    tuner: str = "asha"


@experiment(
    "fluid", "fig3_10", "Fig 3.10: ASHA on 4/8/16 GPUs (Fluid K = 8)", AshaScaleConfig, {"seeds": 3}
)
def fig3_10(cfg: AshaScaleConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    return _scale(
        cfg, ctx, "fig3_10", "Fig 3.10: ASHA time-to-target (h); source: Fluid@4 ~ baseline@8"
    )


class ConcurrencyConfig(SeedsConfig):
    levels: tuple[int, ...] = (4, 8, 16, 32)
    workload: str = "cifar"


@experiment(
    "fluid",
    "fig3_3",
    "Fig 3.3: ASHA concurrency vs time and GPU-seconds",
    ConcurrencyConfig,
    {"seeds": 3},
)
def fig3_3(cfg: ConcurrencyConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    w = preset(cfg.workload)
    seeds = range(cfg.first_seed, cfg.first_seed + cfg.seeds)
    rows = []
    for k in cfg.levels:
        runs = [simulate(w, tuner_factory("asha", w.dims, k)(s), k, False, seed=s) for s in seeds]
        t, t_ci = mean_ci([r.makespan / 3600 for r in runs])
        g, g_ci = mean_ci([r.gpu_seconds / 3600 for r in runs])
        rows.append(
            {
                "concurrency": k,
                "time_to_target_h": round(t, 3),
                "ci_h": round(t_ci, 3),
                "gpu_hours": round(g, 3),
                "gpu_hours_ci": round(g_ci, 3),
            }
        )
    publish(ctx, "fig3_3", cfg, rows, "Fig 3.3: ASHA without Fluid, one trial per GPU")
    return rows


class ShaConfig(SeedsConfig):
    workers: tuple[int, ...] = (2, 4, 8, 16, 32)
    workload: str = "cifar"
    configs: int = 81


@experiment(
    "fluid",
    "table3_2",
    "Table 3.2: SHA utilisation and runtime as workers grow",
    ShaConfig,
    {"seeds": 3},
)
def table3_2(cfg: ShaConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    w = preset(cfg.workload)
    seeds = range(cfg.first_seed, cfg.first_seed + cfg.seeds)
    rows = []
    for n in cfg.workers:
        runs = [
            simulate(
                w,
                tuner_factory("sha", w.dims, n, n=cfg.configs, r_min=1)(s),
                n,
                False,
                seed=s,
                to_target=False,
            )
            for s in seeds
        ]
        util, _ = mean_ci([100 * r.utilisation for r in runs])
        held, _ = mean_ci([100 * r.allocation for r in runs])
        t, t_ci = mean_ci([r.makespan for r in runs])
        src_util, src_time = paper.TABLE_3_2.get(n, (float("nan"), float("nan")))
        rows.append(
            {
                "workers": n,
                "held_pct": round(held, 1),
                "busy_pct": round(util, 1),
                "runtime_s": round(t),
                "ci_s": round(t_ci),
                "source_util_pct": src_util,
                "source_runtime": src_time,
            }
        )
    publish(
        ctx,
        "table3_2",
        cfg,
        rows,
        "Table 3.2: SHA without Fluid (our runtime in s; the source's unit is not stated)",
    )
    return rows
