"""Model demonstrations, not reproductions (spec 6.9): E4 (Fig. 2.10) and E5 (Fig. 2.11).

E4: 300 jobs of one workload all submitted at once; makespan under FIFO / under PACK. Capped
processor sharing makes the answer follow from the busy fraction u: about 1x for resnet50_50
(u = 1, measured as compute bound) and up to 1/u for a small model such as superres_128, whose
u = 0.4 is our assumption (the source states none). Job length (60 s solo) is assumed too.

E5: 42 inference instances (Table A.1's 14 models but overfeat, 3 instances each, batch 1,
1 request/s) packed onto GPUs: Salus admits them by Algorithm 2.1 (PACK, MULTI lanes) until a
GPU is full; MPS-like sharing gives each process a static reservation of its own peak plus a
per-process overhead (context and framework pool: an assumption, swept); no sharing needs one
GPU per instance. Inference profiles are derived from the training ones by stated rules.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

import kairos.salus.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.salus.catalog import PARAMS_M, load_workloads
from kairos.salus.experiments.figures import plot_e4
from kairos.salus.lane_finder import LaneManager
from kairos.salus.layout import LaneMode
from kairos.salus.policies import make_policy
from kairos.salus.profile import GIB, MIB, Profile
from kairos.salus.simulator import SimConfig, simulate
from kairos.salus.workloads import TraceJob


class HyperConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workloads: tuple[str, ...] = ("resnet50_50", "superres_128")
    jobs: int = Field(300, ge=1)
    job_s: float = Field(60.0, gt=0, description="solo length of each job (assumed)")


@experiment(
    "salus",
    "fig2_10",
    "Fig. 2.10 (E4, model demonstration): FIFO vs PACK makespan",
    HyperConfig,
    {"jobs": 30, "job_s": 10.0},
)
def fig2_10(cfg: HyperConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    profiles = load_workloads()
    rows = []
    for name in cfg.workloads:
        p = profiles[name]
        n = max(1, round(cfg.job_s / p.t_iter))
        trace = [TraceJob(i, name, n, 0.0, n * p.t_iter) for i in range(cfg.jobs)]
        spans = {
            pol: simulate(trace, make_policy(pol), profiles, SimConfig()).makespan
            for pol in ("fifo", "pack")
        }
        rows.append(
            {
                "workload": name,
                "busy_u": p.busy,
                "u_source": "measured (compute bound)" if p.source == "csv" else "assumed",
                "fifo_min": round(spans["fifo"] / 60, 2),
                "pack_min": round(spans["pack"] / 60, 2),
                "speedup": round(spans["fifo"] / spans["pack"], 3),
                "paper_speedup": paper.FIG_2_10.get(name),
            }
        )
    publish(ctx, "fig2_10", cfg, rows, "Fig. 2.10 (E4): makespan FIFO / PACK (model demo)")
    plot_e4(ctx, rows)
    return rows


class InferenceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instances_per_model: int = Field(3, ge=1)
    capacity_gib: float = Field(16.0, gt=0)
    rate_per_s: float = Field(1.0, gt=0, description="requests/s per instance")
    overheads_mib: tuple[float, ...] = (300.0, 1024.0, 2048.0)


def inference_profile(train: Profile) -> Profile:
    """Batch 1, forward only (stated rules): P = fp32 weights (the training P for the models
    without a parameter count); E = the training activations
    per sample / 3 (no backward, no gradients); t_iter = training time per sample / 3."""
    model = train.model
    weights = round(PARAMS_M[model] * 4e6) if model in PARAMS_M else train.persistent
    per_sample_e = train.ephemeral / (int(train.batch) if train.batch.isdigit() else 32)
    per_sample_t = train.t_iter / (int(train.batch) if train.batch.isdigit() else 32)
    return Profile(
        f"{model}_infer",
        weights,
        max(MIB, round(per_sample_e / 3)),
        per_sample_t / 3,
        train.busy,
        "assumed",
    )


def pack_gpus(profiles: list[Profile], capacity: int) -> int:
    """GPUs Salus needs: first fit, each GPU admitting by Algorithm 2.1 (MULTI lanes)."""
    gpus: list[LaneManager] = []
    for i, p in enumerate(profiles):
        for gpu in gpus:
            if gpu.admit(i, p.persistent, p.ephemeral) is not None:
                break
        else:
            gpus.append(LaneManager(capacity, LaneMode.MULTI))
            assert gpus[-1].admit(i, p.persistent, p.ephemeral) is not None
    return len(gpus)


@experiment(
    "salus",
    "fig2_11",
    "Fig. 2.11 (E5, model demonstration): GPUs for 42 inference instances",
    InferenceConfig,
)
def fig2_11(cfg: InferenceConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    train = load_workloads()
    smallest: dict[str, Profile] = {}
    for p in train.values():  # each model's smallest-batch training profile
        if p.model != "overfeat" and (p.model not in smallest or p.peak < smallest[p.model].peak):
            smallest[p.model] = p
    models = [inference_profile(p) for _, p in sorted(smallest.items())]
    instances = [m for m in models for _ in range(cfg.instances_per_model)]
    capacity = int(cfg.capacity_gib * GIB)
    salus = pack_gpus(instances, capacity)
    load = sum(cfg.rate_per_s * m.t_iter * m.busy for m in instances)  # GPU-seconds per second
    rows: list[dict[str, Any]] = [
        {
            "scheme": "no sharing",
            "overhead_mib": 0,
            "gpus": len(instances),
            "paper_gpus": paper.FIG_2_11["no_sharing"],
        },
        {
            "scheme": "salus (PACK)",
            "overhead_mib": 0,
            "gpus": salus,
            "gpu_load": round(load, 3),
            "paper_gpus": paper.FIG_2_11["salus"],
        },
    ]
    for over in cfg.overheads_mib:
        bins: list[int] = []  # bytes reserved per GPU; static reservations, first fit
        for m in instances:
            need = m.peak + round(over * MIB)
            k = next((i for i, used in enumerate(bins) if used + need <= capacity), len(bins))
            bins[k:k] = [] if k < len(bins) else [0]
            bins[k] += need
        rows.append(
            {
                "scheme": "mps-like",
                "overhead_mib": over,
                "gpus": len(bins),
                "paper_gpus": paper.FIG_2_11["mps"],
            }
        )
    publish(
        ctx,
        "fig2_11",
        cfg,
        rows,
        f"Fig. 2.11 (E5): GPUs for {len(instances)} instances (model demo; the text's "
        "'7x over MPS' is 42/6, MPS vs no sharing; 6 -> 1 is 6x)",
    )
    return rows
