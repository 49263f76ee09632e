"""Acquisition-only replays: single-round jobs, a fixed device sequence, scheduling delay only.

The toy example (Figure 4.3), the ILP comparison and the theory checks all ask one question:
given devices checking in at known times, when does each job hold all the devices it needs?
This drives the real `ResourceManager` (and so the real policies and dispatcher) with no
response phase: a job completes when its last device is dispatched.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kairos.venn.manager import ResourceManager
from kairos.venn.policy import DevicePolicy
from kairos.venn.supply import StaticSupply


@dataclass(frozen=True)
class OneShotJob:
    job_id: str
    group: int
    demand: int
    arrival: float = 0.0


def observed_rates(times: Sequence[float], atoms: Sequence[int]) -> dict[int, float]:
    """Each atom's check-ins per unit time over the sequence (what a monitor would learn)."""
    span = max(float(max(times)) - min(0.0, float(min(times))), 1e-9) if len(times) else 1.0
    values, counts = np.unique(np.asarray(atoms, dtype=np.int64), return_counts=True)
    return {int(a): float(c) / span for a, c in zip(values, counts, strict=True)}


def acquisition_times(
    policy: DevicePolicy,
    jobs: Sequence[OneShotJob],
    times: Sequence[float],
    atoms: Sequence[int],
    rates: Mapping[int, float] | None = None,
    capabilities: Sequence[float] | None = None,
) -> dict[str, float]:
    """Each job's completion time (its last device's check-in), `inf` if never satisfied.

    Devices are offered in time order; jobs arriving at or before a device's time register
    first. `rates` default to the sequence's observed rates (a warm supply monitor).
    """
    order = np.argsort(np.asarray(times, dtype=np.float64), kind="stable")
    mgr = ResourceManager(
        policy, supply=StaticSupply(rates or observed_rates(times, atoms)), replan_period_s=1e18
    )
    waiting = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    got = {j.job_id: 0 for j in jobs}
    need = {j.job_id: j.demand for j in jobs}
    done = {j.job_id: math.inf for j in jobs}
    nxt = 0
    for i in order:
        t = float(times[i])
        while nxt < len(waiting) and waiting[nxt].arrival <= t:
            job = waiting[nxt]
            mgr.register_job(job.job_id, job.group, job.arrival)
            mgr.submit_request(job.job_id, job.demand, job.arrival)
            nxt += 1
        cap = float(capabilities[i]) if capabilities is not None else 1.0
        job_id = mgr.checkin(t, int(atoms[i]), cap)
        if job_id is None:
            continue
        got[job_id] += 1
        if got[job_id] == need[job_id]:
            done[job_id] = t
            mgr.job_finished(job_id, t)
    return done


def mean_delay(done: Mapping[str, float], jobs: Sequence[OneShotJob]) -> float:
    """Average scheduling delay (completion minus arrival) over the jobs."""
    return float(np.mean([done[j.job_id] - j.arrival for j in jobs]))
