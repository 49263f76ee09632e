"""E4 on the real service (Fig. 2.10 at reduced scale): a batch of identical training jobs all
submitted at once, run under FIFO (one job at a time, the paper's TensorFlow baseline) and under
PACK (as many lanes as memory allows), and the batch's makespan compared.

The paper's shape: a large gain for a model that leaves the GPU mostly idle (`superres_128`,
2.38x) and about none for one that saturates it (`resnet50_50`, 1.07x). On a GPU
(`device="cuda"`) the lanes are CUDA streams, so PACK's concurrency is the paper's question. On
CPU the lanes are threads contending for the cores: a functional check only (PACK packs, every
job ends), not a statement about GPU packing. Each repeat runs both policies back to back, so
the FIFO / PACK ratio is paired per repeat (geometric mean with a 95% CI).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.report.stats import paired_ratio
from kairos.salus.experiments.real_jobs import RealJob, calibrate, run_on_service
from kairos.salus.runtime.device import DeviceKind


class Batch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workload: str
    options: dict[str, Any] = Field(default_factory=dict)
    paper: float | None = Field(None, description="the paper's FIFO / PACK for its counterpart")


# a GPU-idle model and a GPU-saturating one, sized for each device: on CPU a few ms a step
CPU_BATCHES = {
    "low": Batch(workload="superres", options={"batch": 4}, paper=2.38),
    "saturating": Batch(workload="cnn", options={"batch": 16, "width": 16, "image": 32},
                        paper=1.07),
}  # fmt: skip
CUDA_BATCHES = {
    "low": Batch(workload="superres", options={"batch": 4, "image": 32}, paper=2.38),
    "saturating": Batch(workload="cnn", options={"batch": 256, "width": 128, "image": 64},
                        paper=1.07),
}  # fmt: skip


class ServiceE4Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    jobs: int = Field(6, ge=2, description="jobs per batch, all submitted at time 0")
    solo_s: float = Field(1.0, gt=0, description="each job's exclusive run time")
    repeats: int = Field(3, ge=1, description="FIFO and PACK runs per batch, paired")
    device: DeviceKind = "cpu"
    batches: dict[str, Batch] | None = Field(None, description="None: the device's defaults")


@experiment(
    "salus",
    "service_e4",
    "E4 on the real service: a batch of jobs under FIFO and PACK, makespans paired",
    ServiceE4Config,
    {"jobs": 3, "solo_s": 0.3, "repeats": 1},
)
def service_e4(cfg: ServiceE4Config, ctx: ExperimentContext) -> dict[str, Any]:
    batches = cfg.batches or (CUDA_BATCHES if cfg.device == "cuda" else CPU_BATCHES)
    rows = []
    for name, batch in batches.items():
        opts = {batch.workload: batch.options}
        t_iter = calibrate([batch.workload], device=cfg.device, options=opts)[batch.workload]
        n = max(1, round(cfg.solo_s / t_iter))
        jobs = [RealJob(batch.workload, n, 0.0, n * t_iter, batch.options)] * cfg.jobs
        spans: dict[str, list[float]] = {"fifo": [], "pack": []}
        lanes: dict[str, int] = {"fifo": 0, "pack": 0}
        states: set[str] = set()
        errors: list[str] = []
        for _ in range(cfg.repeats):
            for policy in spans:
                run = run_on_service(policy, jobs, device=cfg.device)
                spans[policy].append(run.makespan_s)
                lanes[policy] = max(lanes[policy], len({r.lane for r in run.timeline}))
                states |= set(run.states)
                errors += run.errors
        row: dict[str, Any] = {
            "batch": name,
            "workload": batch.workload,
            "t_iter_ms": round(t_iter * 1e3, 3),
            "jobs": cfg.jobs,
            "iterations": n,
            "fifo_makespan_s": round(sum(spans["fifo"]) / cfg.repeats, 3),
            "pack_makespan_s": round(sum(spans["pack"]) / cfg.repeats, 3),
            "pack_lanes": lanes["pack"],
            "states": " ".join(sorted(states)),
            "paper": batch.paper,
        }
        if errors:
            row["first_error"] = errors[0][:200]
        ratios = [f / p for f, p in zip(spans["fifo"], spans["pack"], strict=True)]
        row["fifo_over_pack_per_repeat"] = " ".join(f"{r:.3f}" for r in ratios)
        if cfg.repeats >= 2:
            pr = paired_ratio(spans["fifo"], spans["pack"])
            row |= {"fifo_over_pack": round(pr.geo_mean, 3), "lo": round(pr.lo, 3),
                    "hi": round(pr.hi, 3)}  # fmt: skip
        else:
            row["fifo_over_pack"] = round(ratios[0], 3)
        rows.append(row)
    summary = {"device": cfg.device, "jobs": cfg.jobs, "solo_s": cfg.solo_s,
               "repeats": cfg.repeats}  # fmt: skip
    title = f"E4 on the real service ({cfg.device}): batch makespan FIFO / PACK"
    publish(ctx, "service_e4", cfg, rows, title, summary)
    return {"rows": rows, "summary": summary}
