"""Venn benchmarks: how many device check-ins the resource manager matches per second.

The setting of the brief: 100 jobs with open requests and 100,000 devices (AI Benchmark
models, the four eligibility classes). Devices check in one after another (0.5/s of simulated
time, so the 24 h supply monitor is exercised) and each check-in asks the real
`ResourceManager` for a job: a supply-monitor record, a re-plan when a trigger fired, and a
dispatch from the plan. When a request gets all its devices, its job closes the round and
submits the next at once, so 100 jobs stay active and re-planning keeps happening (about one
plan per fully dispatched request). Reported per policy: check-ins per second (the decision
rate), matches per second, plans and mean plan time. Quick mode streams 20,000 devices.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from kairos.fl import aibenchmark_specs, population_from_specs, signatures
from kairos.report import save_line_plot
from kairos.venn.manager import ResourceManager
from kairos.venn.policies import make_policy
from kairos.venn.workloads import CLASSES, WorkloadConfig, make_jobs

JOBS = 100
DEVICES = 100_000
POLICIES = ("random", "fifo", "srsf", "venn")


def decisions(policy: str, devices: int, jobs: int = JOBS, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    pop = population_from_specs(aibenchmark_specs(), devices, rng)
    atoms = signatures(pop, CLASSES).tolist()
    caps = pop.capability.tolist()
    times = np.cumsum(rng.exponential(2.0, size=devices)).tolist()
    mgr = ResourceManager(make_policy(policy, np.random.default_rng(seed)), CLASSES)
    demand: dict[str, int] = {}
    left: dict[str, int] = {}
    for job in make_jobs(WorkloadConfig(jobs=jobs), rng):
        mgr.register_job(job.job_id, job.requirement, 0.0, deadline_s=job.rule.deadline_s)
        mgr.submit_request(job.job_id, job.request_size, 0.0)
        demand[job.job_id] = left[job.job_id] = job.request_size
    matched = rounds = 0
    start = time.perf_counter()
    for t, atom, cap in zip(times, atoms, caps, strict=True):
        job_id = mgr.checkin(t, atom, cap)
        if job_id is None:
            continue
        matched += 1
        left[job_id] -= 1
        if left[job_id] == 0:  # round fully dispatched: close it, ask for the next
            mgr.close_request(job_id, t)
            mgr.submit_request(job_id, demand[job_id], t)
            left[job_id] = demand[job_id]
            rounds += 1
    wall = time.perf_counter() - start
    return {
        "case": f"checkins {policy}",
        "policy": policy,
        "jobs": jobs,
        "devices": devices,
        "checkins_per_s": devices / wall,
        "matched_per_s": matched / wall,
        "matched_frac": matched / devices,
        "rounds_dispatched": rounds,
        "plans": mgr.stats.plans,
        "plan_ms_mean": 1e3 * mgr.stats.plan_s / max(mgr.stats.plans, 1),
        "plan_share_of_time": mgr.stats.plan_s / wall,
        "wall_s": wall,
    }


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    devices = 20_000 if quick else DEVICES
    rows = [decisions(p, devices) for p in POLICIES]
    save_line_plot(
        Path(out_dir) / "venn_checkins_per_s.png",
        list(range(len(rows))),
        {"check-ins/s": [r["checkins_per_s"] for r in rows]},
        xlabel=" / ".join(f"{i}={r['policy']}" for i, r in enumerate(rows)),
        ylabel="check-ins matched per second",
        title=f"Venn manager, {JOBS} jobs, {devices} devices",
    )
    return rows


if __name__ == "__main__":
    from kairos.report import print_table

    print_table(run(Path("results/bench"), quick=True), title="bench_venn (quick)")
