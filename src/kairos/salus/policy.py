"""The policy interface: what a Salus scheduling policy sees and what it decides (spec 3.6-3.8).

A policy makes three kinds of decision, all pure: the order of the admission queue
(`queue_key`) and whether a later job may pass a blocked head (`backfill`); how many lanes
Algorithm 2.1 may open (`lane_mode`); and, at each iteration boundary of a lane, which of the
lane's jobs runs next (`pick`, which may say "nobody": SRTF and FIFO are not work conserving).
It is told when a job joins or leaves a lane and when an iteration ends, so it can keep its
own counters (FAIR's virtual service, PACK's round-robin position). It never reads a clock.

Bring your own: subclass `Policy`, and register a factory under `("salus", name)` in
`kairos.registry.POLICIES` (or through the `kairos.policies` entry point group);
`kairos.salus.policies.make_policy` finds it by name.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kairos.salus.layout import Lane, LaneMode
from kairos.salus.profile import Profile


class JobStatus(enum.Enum):
    QUEUED = "queued"  # waiting for Algorithm 2.1 to find a lane
    ADMITTED = "admitted"  # resident: persistent memory held, in a lane
    DONE = "done"
    CANCELLED = "cancelled"


@dataclass(eq=False)
class JobState:
    """A session as the scheduler keeps it. `profile` gives P, E (bytes), t_iter and u;
    `expected` is T (the exclusive run time, seconds; SRTF needs it); `iterations` the count
    after which the job ends (None: it ends when told). `ready` counts submitted iterations
    not yet started; `service` is S, the GPU seconds its iterations took."""

    id: int
    name: str
    profile: Profile
    arrival: float
    expected: float | None = None
    iterations: int | None = None
    ready: int = 0
    service: float = 0.0
    done: int = 0
    status: JobStatus = JobStatus.QUEUED
    admitted_at: float | None = None
    first_start: float | None = None
    finish: float | None = None
    leaving: bool = False  # asked to leave while an iteration ran
    aux: int = 0  # auxiliary calls waiting (spec 3.7): run ahead of the next main iteration

    @property
    def remaining(self) -> float:
        """R = max(0, T - S); infinite without T (such a job is never the shortest)."""
        if self.expected is None:
            return math.inf
        return max(0.0, self.expected - self.service)

    @property
    def jct(self) -> float | None:
        return None if self.finish is None else self.finish - self.arrival

    @property
    def queuing(self) -> float | None:
        return None if self.first_start is None else self.first_start - self.arrival


class Policy:
    """Defaults are the arrival-ordered, backfilling, SINGLE-lane behaviour the policies share."""

    name: ClassVar[str] = "policy"
    lane_mode: LaneMode = LaneMode.SINGLE
    backfill: bool = True

    def queue_key(self, job: JobState) -> tuple[Any, ...]:
        """Admission order (spec 3.6): arrival order unless a policy says otherwise."""
        return (job.arrival, job.id)

    def on_join(self, lane: Lane, jobs: Sequence[JobState], job: JobState) -> None:
        """`job` was admitted into `lane`; `jobs` are the lane's jobs before it."""

    def on_leave(self, lane: Lane, jobs: Sequence[JobState], job: JobState) -> None:
        """`job` left `lane`; `jobs` are those that remain."""

    def on_iteration(self, job: JobState, duration: float) -> None:
        """One of `job`'s iterations ended after `duration` seconds (already added to S)."""

    def pick(self, lane: Lane, jobs: Sequence[JobState]) -> JobState | None:
        """The job whose next iteration runs in the idle `lane`, or None to leave it idle.
        `jobs` are all the lane's jobs in admission order; those with `ready > 0` can run."""
        raise NotImplementedError
