"""Fluid on real trials on this machine: grid search and SHA over a real PyTorch model on 2
virtual devices, with Fluid and one trial per device. Iteration times are emulated by the
device model (CPU cores are not GPUs: packing two CPU-bound trials on one core gains nothing),
so the timing is a demonstration and is labelled as such; the training and the choice of the
best configuration are real."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.progress import progress
from kairos.experiments.publish import publish
from kairos.fluid.core.model import Limits
from kairos.fluid.device_model import DeviceModel
from kairos.fluid.driver import DriverConfig
from kairos.fluid.runtime.local import DIGITS, Emulation, WorkerPool, tune_local
from kairos.fluid.tuners.grid import GridSearch
from kairos.fluid.tuners.sampling import RandomSampler
from kairos.fluid.tuners.sha import SuccessiveHalving


class LocalConfig(BaseModel):
    devices: int = Field(2, ge=1, le=8)
    configs: int = Field(9, ge=1, le=81)
    max_t: int = Field(9, ge=1)
    emulated_t1_s: float = Field(1.0, gt=0, description="emulated seconds per iteration alone")
    seed: int = 0


@experiment(
    "fluid",
    "local",
    "Real trials on virtual devices: grid and SHA, Fluid vs one per device (emulated timing)",
    LocalConfig,
    {"configs": 4, "max_t": 3},
)
def local(cfg: LocalConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    emulate = Emulation(DeviceModel(), cfg.emulated_t1_s, util=0.45)
    rows = []
    with (
        WorkerPool(cfg.devices, 2, DIGITS) as pool,
        tempfile.TemporaryDirectory() as tmp,
        progress("fluid local: tuning runs", 4, ctx.progress) as advance,
    ):
        for algorithm in ("grid", "sha"):
            for label, driver_cfg in (
                (
                    "fluid",
                    DriverConfig(
                        Limits(c=2, d=2), eps=cfg.emulated_t1_s, t1_prior=cfg.emulated_t1_s
                    ),
                ),
                ("one-per-device", DriverConfig.baseline()),
            ):
                sampler = RandomSampler(2, cfg.seed)
                if algorithm == "grid":
                    tuner: Any = GridSearch(2, cfg.max_t, sampler=sampler, n=cfg.configs)
                else:
                    tuner = SuccessiveHalving(sampler, n=cfg.configs, r_min=1, max_t=cfg.max_t)
                run = tune_local(
                    tuner, pool, driver_cfg, Path(tmp) / f"{algorithm}-{label}", emulate=emulate
                )
                advance(1)
                best = run.stats.best_trial
                rows.append(
                    {
                        "algorithm": algorithm,
                        "engine": label,
                        "best_trial": best,
                        "best_config": run.driver.trials[best].spec.config if best else None,
                        "best_accuracy": round(run.stats.best, 4),
                        "time_s": round(run.stats.end, 2),
                        "allocation": round(run.allocation, 3),
                        "resizes": run.stats.resizes,
                        "failures": len(run.stats.failures),
                        "timing": "emulated",
                    }
                )
    publish(
        ctx,
        "local",
        cfg,
        rows,
        "Real trials, emulated device timing (2 virtual devices x 2 slots)",
        columns=[
            "algorithm",
            "engine",
            "best_trial",
            "best_accuracy",
            "time_s",
            "allocation",
            "resizes",
        ],
    )
    return rows
