"""Grid-search micro-benchmarks (each group run to its makespan, not to a target): packing-only
and scaling-only gains by group size and model size (Fig 3.11), runtime variance (Fig 3.12),
packing overhead (Fig 3.13a) and scaling overhead (Fig 3.13b)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.fluid.core.model import Limits
from kairos.fluid.device_model import DeviceModel
from kairos.fluid.experiments.common import SeedsConfig, paired_cell, run
from kairos.fluid.experiments.figures import speedup_bars
from kairos.fluid.simulator import profile_session
from kairos.fluid.workloads import Workload, preset

# Fig 3.11's model sizes: (utilisation range, work factor, parameter factor). Bigger models use
# more of a GPU (less to gain from packing) and their compute grows faster than their gradients
# (more to gain from scaling).
SIZES: dict[str, tuple[tuple[float, float], float, float]] = {
    "small": ((0.2, 0.4), 0.5, 0.7),
    "medium": ((0.4, 0.6), 1.0, 1.0),
    "large": ((0.7, 0.9), 2.5, 1.5),
}


def sized(name: str, size: str, **changes: Any) -> Workload:
    base = preset(name)
    util, work, params = SIZES[size]
    return preset(
        name,
        util=util,
        t1=base.t1 * work,
        params=base.params * params,
        max_t=27,
        **changes,
    )


class PackScaleConfig(SeedsConfig):
    gpus: int = Field(8, ge=1, le=256)
    workload: str = "cifar"
    packing_configs: tuple[int, ...] = (9, 27, 81)
    scaling_configs: tuple[int, ...] = (1, 2, 4, 6)
    sizes: tuple[str, ...] = ("small", "medium", "large")


@experiment(
    "fluid",
    "fig3_11",
    "Fig 3.11: packing-only and scaling-only gains",
    PackScaleConfig,
    {"seeds": 3, "sizes": ("small", "large")},
)
def fig3_11(cfg: PackScaleConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    seeds = range(cfg.first_seed, cfg.first_seed + cfg.seeds)
    rows = []
    for size in cfg.sizes:
        w = sized(cfg.workload, size)
        prof = profile_session(w, DeviceModel(), cfg.first_seed)
        for mode, counts, limits in (
            ("packing-only", cfg.packing_configs, Limits(c=prof.limits.c, d=1)),
            ("scaling-only", cfg.scaling_configs, Limits(c=1, d=prof.limits.d)),
        ):
            for n in counts:
                kw: dict[str, Any] = {"to_target": False}
                cell = paired_cell(
                    seeds,
                    run(w, "random", cfg.gpus, False, tuner_kw={"n": n}, **kw),
                    run(w, "random", cfg.gpus, True, tuner_kw={"n": n}, limits=limits, **kw),
                )
                rows.append({"mode": mode, "size": size, "configs": n, **cell})
    publish(
        ctx,
        "fig3_11",
        cfg,
        rows,
        "Fig 3.11: group makespan, baseline / Fluid",
        columns=["mode", "size", "configs", "speedup", "speedup_lo", "speedup_hi", "c", "d"],
    )
    speedup_bars(
        ctx,
        "fig3_11",
        rows,
        lambda r: f"{r['mode']}, {r['configs']} configs",
        lambda r: str(r["size"]),
        "Fig 3.11: group makespan, baseline / Fluid, 95% CI",
    )
    return rows


class VarianceConfig(SeedsConfig):
    gpus: int = 8
    configs: int = 9
    cvs: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0)
    workload: str = "cifar"


@experiment(
    "fluid",
    "fig3_12",
    "Fig 3.12: speed-up vs trial-runtime variance (and StaticFluid only)",
    VarianceConfig,
    {"seeds": 4},
)
def fig3_12(cfg: VarianceConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    seeds = range(cfg.first_seed, cfg.first_seed + cfg.seeds)
    rows = []
    for cv in cfg.cvs:
        w = preset(cfg.workload, runtime_cv=cv, max_t=27)
        kw: dict[str, Any] = {"to_target": False, "tuner_kw": {"n": cfg.configs}}
        extras: tuple[tuple[str, dict[str, Any]], ...] = (
            ("fluid", {}),
            ("static-only", {"dynamic": False}),
        )
        for engine, extra in extras:
            cell = paired_cell(
                seeds,
                run(w, "random", cfg.gpus, False, **kw),
                run(w, "random", cfg.gpus, True, **kw, **extra),
            )
            rows.append({"runtime_cv": cv, "engine": engine, **cell})
    publish(
        ctx,
        "fig3_12",
        cfg,
        rows,
        "Fig 3.12: group makespan, baseline / Fluid, by runtime spread",
        columns=["runtime_cv", "engine", "speedup", "speedup_lo", "speedup_hi", "fluid_faster_on"],
    )
    speedup_bars(
        ctx,
        "fig3_12",
        rows,
        lambda r: f"runtime CV {r['runtime_cv']}",
        lambda r: str(r["engine"]),
        "Fig 3.12: speed-up by trial-runtime spread, 95% CI",
    )
    return rows


class OverheadConfig(SeedsConfig):
    gpus: int = 8
    configs: int = 27
    multipliers: tuple[float, ...] = (1.0, 1.5, 2.0, 10.0)
    workload: str = "cifar"


@experiment(
    "fluid",
    "fig3_13a",
    "Fig 3.13a: packing overhead x1/1.5/2/10, scaling off",
    OverheadConfig,
    {"seeds": 3},
)
def fig3_13a(cfg: OverheadConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    seeds = range(cfg.first_seed, cfg.first_seed + cfg.seeds)
    w = preset(cfg.workload, max_t=27)
    rows = []
    for k in cfg.multipliers:
        device = DeviceModel(k=k)
        c = profile_session(w, device, cfg.first_seed).limits.c
        kw: dict[str, Any] = {"to_target": False, "tuner_kw": {"n": cfg.configs}, "device": device}
        cell = paired_cell(
            seeds,
            run(w, "random", cfg.gpus, False, **kw),
            run(w, "random", cfg.gpus, True, limits=Limits(c=c, d=1), **kw),
        )
        rows.append({"overhead_x": k, **cell})
    publish(
        ctx,
        "fig3_13a",
        cfg,
        rows,
        "Fig 3.13a: makespan ratio; at 10x packing switches itself off (c = 1)",
        columns=["overhead_x", "c", "speedup", "speedup_lo", "speedup_hi"],
    )
    speedup_bars(
        ctx,
        "fig3_13a",
        rows,
        lambda r: f"overhead x{r['overhead_x']} (c = {r['c']})",
        lambda r: "packing only",
        "Fig 3.13a: packing overhead, 95% CI",
    )
    return rows


class ScalingOverheadConfig(SeedsConfig):
    gpus: tuple[int, ...] = (4, 8, 16)
    configs: int = 3
    workloads: tuple[str, ...] = ("cifar", "wlm", "dcgan")


@experiment(
    "fluid",
    "fig3_13b",
    "Fig 3.13b: scaling on 4/8/16 GPUs, packing off",
    ScalingOverheadConfig,
    {"seeds": 3, "workloads": ("cifar", "wlm")},
)
def fig3_13b(cfg: ScalingOverheadConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    seeds = range(cfg.first_seed, cfg.first_seed + cfg.seeds)
    rows = []
    for wl in cfg.workloads:
        w = preset(wl, max_t=27)
        d = profile_session(w, DeviceModel(), cfg.first_seed).limits.d
        for n in cfg.gpus:
            kw: dict[str, Any] = {"to_target": False, "tuner_kw": {"n": cfg.configs}}
            cell = paired_cell(
                seeds,
                run(w, "random", n, False, **kw),
                run(w, "random", n, True, limits=Limits(c=1, d=d), **kw),
            )
            rows.append({"workload": wl, "gpus": n, **cell})
    publish(
        ctx,
        "fig3_13b",
        cfg,
        rows,
        "Fig 3.13b: 3 configurations, makespan ratio (d caps the width)",
        columns=[
            "workload",
            "gpus",
            "d",
            "speedup",
            "speedup_lo",
            "speedup_hi",
            "makespan_fluid_h",
        ],
    )
    speedup_bars(
        ctx,
        "fig3_13b",
        rows,
        lambda r: f"{r['gpus']} GPUs",
        lambda r: str(r["workload"]),
        "Fig 3.13b: scaling only (packing off), 95% CI",
    )
    return rows
