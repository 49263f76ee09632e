"""SRTF (spec 3.8): minimise average JCT by running, at every iteration boundary, the lane's
job with the least remaining time R = max(0, T - S); ties go to the earlier arrival (the
release picks the last of equal minima). A shorter newcomer therefore preempts the running job
at its next boundary. The admission queue is ordered by T (shortest first) and backfills: a job
is admitted whenever its own safety condition holds, without waiting for others to finish.

Strict by default (Fig. 2.8a): if the shortest job has nothing submitted the lane waits;
`work_conserving=True` falls through to the next-shortest ready job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kairos.registry import POLICIES
from kairos.salus.layout import Lane, LaneMode
from kairos.salus.policy import JobState, Policy


def _key(job: JobState) -> tuple[float, float, int]:
    return (job.remaining, job.arrival, job.id)


class Srtf(Policy):
    name = "srtf"

    def __init__(
        self,
        lane_mode: LaneMode = LaneMode.SINGLE,
        backfill: bool = True,
        work_conserving: bool = False,
    ) -> None:
        self.lane_mode = lane_mode
        self.backfill = backfill
        self.work_conserving = work_conserving

    def queue_key(self, job: JobState) -> tuple[Any, ...]:
        return _key(job)

    def pick(self, lane: Lane, jobs: Sequence[JobState]) -> JobState | None:
        pool = [j for j in jobs if j.ready > 0] if self.work_conserving else list(jobs)
        if not pool:
            return None
        best = min(pool, key=_key)
        return best if best.ready > 0 else None


POLICIES.add("salus", "srtf", Srtf)
