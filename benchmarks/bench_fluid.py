"""Fluid benchmarks: planning time for 1,000 trials on 64 GPUs (StaticFluid, and DynamicFluid
over the same group while it runs), the simulator's speed on the Fig 3.7 matrix, and the full
trend experiments (Figs 3.7, 3.11-3.13 with 10 paired seeds), whose rows land in the results.
Quick mode: 200 trials, 2 seeds, the cifar workload only."""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from kairos.experiments import ExperimentContext, get_experiment
from kairos.fluid.core.dynamic import dynamic_fluid
from kairos.fluid.core.model import Limits, PlanTrial
from kairos.fluid.core.static import static_fluid
from kairos.fluid.experiments.common import run as side
from kairos.fluid.experiments.matrix import must_show
from kairos.fluid.workloads import preset


def planning(trials: int, gpus: int, repeats: int = 20) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    plan = [PlanTrial(f"t{i}", float(h)) for i, h in enumerate(rng.lognormal(3, 1, trials))]
    limits = Limits(c=4, d=8)
    start = time.perf_counter()
    for _ in range(repeats):
        widths = static_fluid(plan, gpus, limits)
    static_ms = (time.perf_counter() - start) / repeats * 1e3
    running = plan[: gpus * 2]  # the tail of a group: a few trials per GPU still running
    current = {t.trial_id: widths[t.trial_id] for t in running}
    start = time.perf_counter()
    for _ in range(repeats):
        dynamic_fluid(running, current, gpus // 4, limits, eps=10.0)
    dynamic_ms = (time.perf_counter() - start) / repeats * 1e3
    whole = sum(w for w in widths.values() if w >= 1) if widths else Fraction(0)
    return [
        {
            "case": f"static_fluid {trials} trials / {gpus} GPUs",
            "ms": round(static_ms, 3),
            "whole_gpus": int(whole),
        },
        {"case": f"dynamic_fluid {len(running)} running / {gpus} GPUs", "ms": round(dynamic_ms, 3)},
    ]


def simulator_speed(workloads: tuple[str, ...], seeds: int) -> dict[str, Any]:
    runs = iterations = 0
    start = time.perf_counter()
    for wl in workloads:
        w = preset(wl)
        for tuner in ("syncbohb", "hyperband", "asha", "bohb", "pbt"):
            for fluid in (False, True):
                for seed in range(seeds):
                    r = side(w, tuner, 8, fluid, 8)(seed)
                    runs += 1
                    iterations += r.trials
    elapsed = time.perf_counter() - start
    return {
        "case": f"simulator, Fig 3.7 matrix ({runs} runs)",
        "s": round(elapsed, 2),
        "runs_per_s": round(runs / elapsed, 2),
    }


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    rows = planning(200 if quick else 1000, 64)
    rows.append(
        simulator_speed(("cifar",) if quick else ("cifar", "wlm", "dcgan"), 2 if quick else 5)
    )
    ctx = ExperimentContext(out_dir=out_dir / "fluid", progress=False, cache=False)
    for name in ("fig3_7", "fig3_11", "fig3_12", "fig3_13a", "fig3_13b", "theory"):
        exp = get_experiment("fluid", name)
        start = time.perf_counter()
        out = exp.run(exp.config(quick=quick), ctx)
        rows.append({"case": f"experiment {name}", "s": round(time.perf_counter() - start, 1)})
        if name == "fig3_7":  # min lo >= 0.98, the order, a setting's lo > 1, per workload
            rows.append({"case": "fig3_7 claims", **must_show(out)})
    return rows
