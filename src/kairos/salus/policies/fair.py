"""FAIR (spec 3.8): equalise progress by running, at each boundary, the lane's ready job with the
least service S (GPU seconds, not iterations, since iteration lengths differ); ties go to the
earlier arrival. Work conserving. Admission is in arrival order with backfill.

A newcomer starts at the lane's least S (`reset="min"`, a virtual-time start): starting it at
0 would let it run alone until it caught up, while Fig. 2.9 shows shares dropping to 1/2 and
1/3 at once. `reset="zero"` resets every job of the lane to 0 whenever its membership changes
(the release's older scheduler). The counters are the policy's own: the job's S stays the
service it really received (SRTF and the reports read it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from kairos.registry import POLICIES
from kairos.salus.layout import Lane, LaneMode
from kairos.salus.policy import JobState, Policy


class Fair(Policy):
    name = "fair"

    def __init__(
        self,
        lane_mode: LaneMode = LaneMode.SINGLE,
        backfill: bool = True,
        reset: Literal["min", "zero"] = "min",
    ) -> None:
        if reset not in ("min", "zero"):
            raise ValueError(f"fair reset must be 'min' or 'zero', got {reset!r}")
        self.lane_mode = lane_mode
        self.backfill = backfill
        self.reset = reset
        self._offset: dict[int, float] = {}  # virtual service = S + offset

    def virtual(self, job: JobState) -> float:
        return job.service + self._offset.get(job.id, 0.0)

    def on_join(self, lane: Lane, jobs: Sequence[JobState], job: JobState) -> None:
        if self.reset == "zero":
            for j in [*jobs, job]:
                self._offset[j.id] = -j.service
        else:
            start = min((self.virtual(j) for j in jobs), default=0.0)
            self._offset[job.id] = start - job.service

    def on_leave(self, lane: Lane, jobs: Sequence[JobState], job: JobState) -> None:
        self._offset.pop(job.id, None)
        if self.reset == "zero":
            for j in jobs:
                self._offset[j.id] = -j.service

    def pick(self, lane: Lane, jobs: Sequence[JobState]) -> JobState | None:
        ready = [j for j in jobs if j.ready > 0]
        if not ready:
            return None
        return min(ready, key=lambda j: (self.virtual(j), j.arrival, j.id))


POLICIES.add("salus", "fair", Fair)
