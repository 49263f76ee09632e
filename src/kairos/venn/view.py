"""What a Venn policy sees: a frozen snapshot of the resource manager's state.

Policies are pure (docs/architecture.md, "a policy decides"): they read a `ManagerView` and
return a `Plan` (see `plans.py`). The view carries only what a real resource manager knows: the
pending resource requests, the supply rate of every device atom (signature), how many jobs are
in the system, and the response-time profiles the jobs have reported. It never carries a job's
future (true response times, remaining rounds unless the job says so).

A device atom is an int bitmask: bit g is set iff the device meets requirement g. Job group g
is the set of jobs with requirement g, so a device of atom `a` can serve group g iff
`a >> g & 1`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

Tier = tuple[float, float]  # a capability band [lo, hi): a tiered request takes only these


def eligible(atom: int, group: int) -> bool:
    return bool(atom >> group & 1)


@dataclass(frozen=True, slots=True)
class Profile:
    """(capability, response time) of completed tasks: what tiering learns from."""

    capability: np.ndarray
    response_s: np.ndarray

    def __len__(self) -> int:
        return len(self.capability)


EMPTY_PROFILE = Profile(np.empty(0), np.empty(0))


class RequestView(NamedTuple):
    """One open resource request (one round attempt of one job) with undispatched demand.

    A NamedTuple: immutable like the rest of the view, and cheap to build on every plan.
    """

    request_id: int
    job_id: str
    group: int  # the job's requirement index
    arrival: float  # the job's arrival
    submitted: float  # this request's submission
    demand: int
    remaining: int  # undispatched devices
    round_idx: int
    rounds: int | None  # total rounds, when the job tells the manager
    served: int  # devices the job has received over its life
    attained_s: float  # seconds the job has held dispatched devices (attained service)
    deadline_s: float
    tier: Tier | None = None
    tier_decided: bool = False
    memo: float | None = None  # a value the policy asked the manager to keep (see Plan.memos)
    profile: Profile = EMPTY_PROFILE

    @property
    def started(self) -> bool:
        return self.remaining < self.demand


@dataclass(frozen=True)
class ManagerView:
    now: float
    requests: tuple[RequestView, ...]  # pending requests, in submission order
    rates: Mapping[int, float]  # atom -> check-ins per second (the supply monitor's estimate)
    jobs_in_system: int = 0
    idle_jobs: Mapping[int, int] = field(default_factory=dict)  # group -> jobs not asking now
    pooled: Profile = EMPTY_PROFILE  # recent samples of all jobs together

    def groups(self) -> dict[int, list[RequestView]]:
        """Pending requests by group, in submission order."""
        out: dict[int, list[RequestView]] = {}
        for r in self.requests:
            out.setdefault(r.group, []).append(r)
        return out

    def eligible_rate(self, group: int) -> float:
        """|S_g|: check-ins per second that group g can use."""
        return sum(rate for atom, rate in self.rates.items() if atom >> group & 1)
