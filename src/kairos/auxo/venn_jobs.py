"""Auxo's cohorts on a shared device fleet, scheduled by Venn's resource manager.

Two ways to deploy one Auxo application (P_total participants a round, R rounds, splitting
along a given plan) beside other FL jobs on one fleet:

* `"one_job"`: Auxo registers one Venn job of P_total devices a round for R rounds; its cohorts
  share that job's devices (each round's devices train whichever cohort they belong to), so the
  cohorts advance in lockstep and Venn sees one job;
* `"cohort_jobs"`: every cohort is its own Venn job. The root registers with P_total devices a
  round; when it splits, it finishes and its K children register (at that moment, as Venn jobs
  arriving) with P_total / M devices each for the rounds left, and so on down the plan. A
  child's devices are only its members: its requirement is the root's AND membership of the
  cohort (`CohortRequirement`).

Membership is a pseudo-random digit string per device (digit d: the child taken at depth d), so
each leaf holds 1/M of the devices independently of their hardware: Auxo's cohorts are defined
by data, which the fleet's hardware classes know nothing about. That is an assumption of this
model, stated, not measured.

A cohort job only exists from the time its parent finishes, which the simulation itself
decides; `kairos.venn.simulator` takes a fixed job list, so the run is built in phases: simulate,
read the finish times of the cohorts due to split, add the children of the earliest one as jobs
arriving then, and simulate again until no cohort is left to add. The simulation is
deterministic and a job that has not yet arrived does not touch the manager, so each phase
replays the previous one exactly up to the new arrivals, and every finish before them stands;
the last phase is one simulator run with every cohort registered as a job when it appears.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from kairos.fl.devices import DevicePopulation
from kairos.fl.jobs import FLJob
from kairos.fl.requirements import Requirement
from kairos.fl.timing import RoundRule
from kairos.venn.fleet import Fleet
from kairos.venn.policy import DevicePolicy
from kairos.venn.results import SimResult
from kairos.venn.simulator import SimConfig, simulate

Mode = Literal["one_job", "cohort_jobs"]
JOB_PREFIX = "auxo:"
_HASH_STREAM = 0xC0407


def cohort_digits(n_devices: int, salt: int) -> np.ndarray:
    """Each device's membership code: a uniform 52-bit integer (exact as the float attribute a
    device reports), the same for every cohort."""
    return np.random.default_rng([salt, _HASH_STREAM]).integers(0, 2**52, size=n_devices)


def path_of(cohort: str) -> tuple[int, ...]:
    """'0.1.0' -> (1, 0): the child index taken at each depth below the root."""
    return tuple(int(p) for p in cohort.split(".")[1:])


def in_cohort(code: np.ndarray | int, path: Sequence[int], k: int) -> np.ndarray | bool:
    """Whether the codes' base-k digits (least significant first) start with `path`."""
    c = np.asarray(code, dtype=np.int64)
    ok = np.ones(c.shape, dtype=bool)
    for depth, child in enumerate(path):
        ok &= (c // k**depth) % k == child
    return ok if ok.ndim else bool(ok)


def membership(path: Sequence[int], k: int) -> tuple[int, int]:
    """`in_cohort` as (modulus, residue): a code is in cohort `path` iff code % modulus ==
    residue (its first len(path) base-k digits are the path)."""
    return k ** len(path), sum(d * k**i for i, d in enumerate(path))


class CohortRequirement(Requirement):
    """A base requirement AND membership of one cohort (the devices that may serve its job)."""

    path: tuple[int, ...] = ()
    k: int = 2
    salt: int = 0

    def mask(self, pop: DevicePopulation) -> np.ndarray:
        member = in_cohort(cohort_digits(len(pop), self.salt), self.path, self.k)
        return super().mask(pop) & np.asarray(member, dtype=bool)

    def admits(self, attrs: Mapping[str, float]) -> bool:
        """At check-in a device reports its membership code as `cohort_code`."""
        code = int(attrs.get("cohort_code", -1))
        return super().admits(attrs) and code >= 0 and bool(in_cohort(code, self.path, self.k))


@dataclass(frozen=True)
class AuxoApp:
    """The Auxo application: budget, rounds, the split plan, and how its rounds are judged."""

    p_total: int
    rounds: int
    splits: Mapping[str, int]  # cohort -> the cohort-local round at which it splits
    requirement: Requirement
    rule: RoundRule
    arrival: float = 0.0
    k: int = 2

    def leaves(self) -> list[str]:
        """The leaves once every planned split has happened."""
        out, todo = [], ["0"]
        while todo:
            c = todo.pop(0)
            if c in self.splits:
                todo += [f"{c}.{j}" for j in range(self.k)]
            else:
                out.append(c)
        return sorted(out)

    def requirements(self, salt: int) -> list[Requirement]:
        """Every cohort's requirement (the root's is the app's own)."""
        reqs: list[Requirement] = [self.requirement]
        todo = [f"0.{j}" for j in range(self.k)] if "0" in self.splits else []
        while todo:
            c = todo.pop(0)
            base = self.requirement.model_dump()
            base["name"] = f"{self.requirement.name}|cohort {c}"
            reqs.append(CohortRequirement(**base, path=path_of(c), k=self.k, salt=salt))
            if c in self.splits:
                todo += [f"{c}.{j}" for j in range(self.k)]
        return reqs


def _job(app: AuxoApp, cohort: str, arrival: float, p: int, rounds: int, req: Requirement) -> FLJob:
    return FLJob(f"{JOB_PREFIX}{cohort}", arrival, p, rounds, req, app.rule, template="auxo")


def run_deployment(
    mode: Mode,
    app: AuxoApp,
    others: Sequence[FLJob],
    fleet: Fleet,
    policy: DevicePolicy,
    config: SimConfig | None = None,
    salt: int = 0,
) -> SimResult:
    """Simulate Auxo deployed in `mode` beside `others` on `fleet` under `policy`.

    `fleet` must list every requirement of `app.requirements(salt)` (see `with_cohorts`).
    A child job gets its parent's devices per round divided by K, so the total budget is kept
    at every moment (a Venn job's demand is fixed once registered, so Auxo's rebalancing to
    P_total / M is exact only when the tree is balanced, as the default plan's is). `policy`
    must be fresh: each phase runs a copy of it."""

    if mode == "one_job":
        job = _job(app, "0", app.arrival, app.p_total, app.rounds, app.requirement)
        return simulate(copy.deepcopy(policy), [*others, job], fleet, config)
    reqs = {r.name: r for r in app.requirements(salt)}
    jobs = {"0": _job(app, "0", app.arrival, app.p_total, _rounds(app, "0", 0), app.requirement)}
    while True:
        res = simulate(copy.deepcopy(policy), [*others, *jobs.values()], fleet, config)
        finish = {r.job_id[len(JOB_PREFIX) :]: r.finish for r in res.jobs}
        due = [c for c in jobs if c in app.splits and f"{c}.0" not in jobs]
        due = [c for c in due if np.isfinite(finish[c])]
        if not due:
            return res
        # only the earliest split per phase: children arriving at t can change every finish
        # after t (seen with two cohorts splitting in one phase: the second parent's finish
        # moved by 3 s, and its children had been registered at the stale time)
        parent = min(due, key=lambda c: finish[c])
        p = max(1, jobs[parent].participants // app.k)  # the split keeps the total budget
        for j in range(app.k):
            child = f"{parent}.{j}"
            req = reqs[f"{app.requirement.name}|cohort {child}"]
            rounds = _rounds(app, child, app.splits[parent])
            jobs[child] = _job(app, child, finish[parent] + 1e-6, p, rounds, req)


def _rounds(app: AuxoApp, cohort: str, first: int) -> int:
    """Rounds the cohort's job runs: until its own split, or to the end."""
    end = app.splits.get(cohort, app.rounds)
    return max(1, end - first)


def with_cohorts(fleet: Fleet, app: AuxoApp, salt: int = 0) -> Fleet:
    """The same fleet (devices, check-ins, response times) that also knows every cohort's
    requirement. Cohort requirements go last, so the other jobs' requirement bits keep their
    positions."""
    extra = [r for r in app.requirements(salt) if r not in fleet.requirements]
    return Fleet(
        fleet.population,
        (*fleet.requirements, *extra),
        fleet.source,
        fleet.response,
        fleet.dispatch_delay_s,
        fleet.seed,
    )


def app_finish(res: SimResult) -> float:
    """When the Auxo application finished: its last job's finish (NaN if any is unfinished)."""
    mine = [r.finish for r in res.jobs if r.job_id.startswith(JOB_PREFIX)]
    return float(max(mine)) if mine and all(np.isfinite(mine)) else float("nan")


def others_jct(res: SimResult) -> np.ndarray:
    """JCTs of the jobs that are not Auxo's (NaN for unfinished ones)."""
    return np.array([r.jct for r in res.jobs if not r.job_id.startswith(JOB_PREFIX)])
