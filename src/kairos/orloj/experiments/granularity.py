"""Why a superset of batch sizes can cost Orloj at a tight SLO, measured.

Algorithm 4.1 takes the largest batch size whose queue can be filled and fills it with the
top-scored requests. With every size 1-16 it can add "one more" member far more often than
with S = {1, 2, 4, 8, 16}, and at 1.5x P99 that member is often a long application's request:
the batch runs for the long request, its short members (admitted because their slack covered
the mean batch latency) end late, and the short application loses. `batch_mix` runs one point
and reports what that story predicts: batch sizes, the share of batches (and of worker time)
that mix applications, drops vs late, late requests inside mixed batches, and the shortest and
longest application's finish rates. `granularity_rows` averages it over workloads and seeds
with 95% CIs over the seeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from kairos.orloj.arrivals import ArrivalKind
from kairos.orloj.experiments.fairness import C1_WORKLOADS, size_label
from kairos.orloj.experiments.point import SimPoint, point_policy, point_recording
from kairos.orloj.policy import Outcome
from kairos.orloj.simulator import SimConfig, simulate
from kairos.orloj.workloads import get_workload
from kairos.report.stats import mean_ci
from kairos.sim import RngStreams

COLUMNS = (
    "finish_rate",
    "timed_out",
    "late",
    "mean_batch",
    "mixed_batches",
    "mixed_time",
    "late_in_mixed",
    "short_app",
    "long_app",
)


def batch_mix(p: SimPoint) -> dict[str, float]:
    """One point's batch composition and outcomes (`p.system` must be a batch policy)."""
    w = get_workload(p.workload, p.scale)
    rec = point_recording(p)
    slo = p.slo_mult * w.p99_ms
    rate = float(rec.meta["rate_per_ms"])
    policy = point_policy(p, slo, rate)
    offline = w.offline_profile(p.offline_samples, RngStreams(p.seed).stream("offline"))
    config = SimConfig(
        batch_model=p.batch_model, profile_sample_rate=p.profile_sample_rate, seed=p.seed
    )
    res = simulate(policy, rec.requests(slo), config, offline)
    reqs = {r.request_id: r for r in res.requests}
    summary = res.summary()
    n = summary["requests"]
    ran = [b for b in res.batches if not b.rejected]
    mixed = [b for b in ran if len({reqs[i].app for i in b.ids}) > 1]
    late = sum(r.outcome is Outcome.LATE for r in res.requests)
    late_mixed = sum(reqs[i].outcome is Outcome.LATE for b in mixed for i in b.ids)
    busy = sum(b.end - b.start for b in ran)
    by_app = summary["finish_rate_by_app"]
    solo: dict[str, list[float]] = {}
    for r in res.requests:
        solo.setdefault(r.app, []).append(float(r.solo_ms or 0.0))
    apps = sorted(by_app, key=lambda a: float(np.mean(solo[a])))  # shortest first
    return {
        "finish_rate": summary["finish_rate"],
        "timed_out": summary["timed_out"] / n,
        "late": late / n,
        "mean_batch": summary["mean_batch_size"],
        "mixed_batches": len(mixed) / max(1, len(ran)),
        "mixed_time": sum(b.end - b.start for b in mixed) / busy if busy else 0.0,
        "late_in_mixed": late_mixed / late if late else 0.0,
        "short_app": by_app[apps[0]],
        "long_app": by_app[apps[-1]],
    }


def _mix(p: SimPoint) -> dict[str, float]:
    return batch_mix(p)


def granularity_rows(
    variants: Mapping[str, tuple[dict[str, Any], Sequence[int]]],
    workloads: Sequence[str] = C1_WORKLOADS,
    slo_mult: float = 1.5,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    n_requests: int = 5000,
    arrival: ArrivalKind = "bursty",
    jobs: int = 2,
) -> list[dict[str, Any]]:
    """One row per Orloj variant (label -> (options, sizes)): every column of `batch_mix`
    averaged over the workloads per seed, then its mean and 95% CI over the seeds."""
    points = {
        (label, w, s): SimPoint(
            workload=w,
            slo_mult=slo_mult,
            options=opts,
            seed=s,
            n_requests=n_requests,
            arrival=arrival,
            batch_sizes=tuple(sizes),
        )
        for label, (opts, sizes) in variants.items()
        for w in workloads
        for s in seeds
    }
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        done = dict(zip(points, ex.map(_mix, points.values()), strict=True))
    rows = []
    for label, (opts, sizes) in variants.items():
        row: dict[str, Any] = {
            "variant": label,
            "sizes": size_label(sizes),
            "options": opts,
            "slo_mult": slo_mult,
            "arrival": arrival,
            "workloads": len(workloads),
            "seeds": len(seeds),
        }
        for col in COLUMNS:
            per_seed = [
                float(np.mean([done[(label, w, s)][col] for w in workloads])) for s in seeds
            ]
            row[col], row[f"{col}_ci95"] = mean_ci(per_seed)
        rows.append(row)
    return rows
