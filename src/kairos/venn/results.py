"""What a Venn simulation reports: per-job JCTs, per-round timings, and device accounting.

Metrics follow spec §4: average JCT (over all jobs; unfinished ones are counted separately and
reported, never silently dropped), per-round scheduling delay (submission until enough devices
for the minimum response fraction are dispatched), response collection time (from then until
the round closes), round abort rate, device utilisation and wasted responses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class JobRecord:
    job_id: str
    template: str
    requirement: str
    arrival: float
    participants: int
    rounds: int
    finish: float = math.nan
    attempts: int = 0
    aborts: int = 0

    @property
    def jct(self) -> float:
        return self.finish - self.arrival

    @property
    def total_demand(self) -> int:
        return self.participants * self.rounds


@dataclass
class SimResult:
    policy: str
    jobs: list[JobRecord]
    # one entry per round attempt:
    # (job index, round, submit, sched_delay, close, success, devices dispatched)
    rounds: list[tuple[int, int, float, float, float, bool, int]] = field(default_factory=list)
    checkins: int = 0
    assigned: int = 0
    failed: int = 0  # dispatched tasks whose device went offline first
    completed: int = 0  # tasks that reported back
    wasted: int = 0  # responses of stragglers and of aborted rounds
    plans: int = 0
    plan_s: float = 0.0
    end_time: float = 0.0
    wall_s: float = 0.0

    def jct(self) -> np.ndarray:
        return np.array([j.jct for j in self.jobs], dtype=np.float64)

    def finished(self) -> np.ndarray:
        return np.isfinite(self.jct())

    def round_arrays(self) -> dict[str, np.ndarray]:
        if not self.rounds:
            return {k: np.empty(0) for k in ("sched", "collect", "success", "dispatched")}
        arr = np.array([r[2:] for r in self.rounds], dtype=np.float64)
        submit, sched, close, ok, dispatched = arr.T
        collect = np.where(np.isfinite(sched), close - submit - sched, np.nan)
        return {
            "sched": sched,
            "collect": collect,
            "success": ok.astype(bool),
            "dispatched": dispatched,
        }

    def summary(self) -> dict[str, Any]:
        jct = self.jct()
        done = np.isfinite(jct)
        r = self.round_arrays()
        ok = r["success"]
        return {
            "policy": self.policy,
            "jobs": len(self.jobs),
            "unfinished": int((~done).sum()),
            "avg_jct": float(jct[done].mean()) if done.any() else math.nan,
            "median_jct": float(np.median(jct[done])) if done.any() else math.nan,
            "makespan": float(np.nanmax([j.finish for j in self.jobs])) if done.any() else math.nan,
            "rounds": int(ok.sum()),
            "abort_rate": float(1 - ok.mean()) if ok.size else math.nan,
            # aborts of attempts that had received devices (the costly ones; an attempt that
            # timed out waiting in the queue wastes nothing)
            "wasteful_aborts": int((~ok & (r["dispatched"] > 0)).sum()),
            "avg_sched_delay": _nanmean(r["sched"][ok]),
            "avg_collect": _nanmean(r["collect"][ok]),
            "checkins": self.checkins,
            "utilisation": self.assigned / self.checkins if self.checkins else 0.0,
            "failed_frac": self.failed / self.assigned if self.assigned else 0.0,
            "wasted_frac": self.wasted / self.completed if self.completed else 0.0,
            "plans": self.plans,
            "plan_ms": 1e3 * self.plan_s / self.plans if self.plans else 0.0,
            "sim_days": self.end_time / 86_400.0,
            "wall_s": self.wall_s,
        }

    def job_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "job_id": j.job_id,
                "template": j.template,
                "requirement": j.requirement,
                "arrival": j.arrival,
                "participants": j.participants,
                "rounds": j.rounds,
                "total_demand": j.total_demand,
                "jct": j.jct if math.isfinite(j.jct) else None,
                "attempts": j.attempts,
                "aborts": j.aborts,
            }
            for j in self.jobs
        ]


def _nanmean(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan
