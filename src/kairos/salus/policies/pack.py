"""PACK (spec 3.8): maximise utilisation by admitting as many jobs as Eq. 2.1 allows, each in a
lane of its own whenever Algorithm 2.1's Step 1 succeeds (MULTI lane mode), so their
iterations run concurrently. Lanes are not balanced against each other. Inside a shared lane
(the text gives no rule) jobs take turns: round robin over the ready jobs in admission order.
Work conserving.
"""

from __future__ import annotations

from collections.abc import Sequence

from kairos.registry import POLICIES
from kairos.salus.layout import Lane, LaneMode
from kairos.salus.policy import JobState, Policy


class Pack(Policy):
    name = "pack"

    def __init__(self, lane_mode: LaneMode = LaneMode.MULTI, backfill: bool = True) -> None:
        self.lane_mode = lane_mode
        self.backfill = backfill

    def pick(self, lane: Lane, jobs: Sequence[JobState]) -> JobState | None:
        ready = [j for j in jobs if j.ready > 0]
        if not ready:
            return None
        if lane.last is None:
            return ready[0]
        order = [j.id for j in jobs]
        after = order.index(lane.last) if lane.last in order else -1
        # the first ready job after the one that ran last, wrapping round
        later = [j for j in ready if order.index(j.id) > after]
        return later[0] if later else ready[0]


POLICIES.add("salus", "pack", Pack)
