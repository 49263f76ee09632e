"""FIFO, the baseline (spec 3.8): one job at a time in arrival order, each to completion.

The paper's baseline is the framework alone with an exclusive GPU; inside Salus the same
semantics are one lane whose `pick` is always the earliest-admitted job, and an admission queue
that never lets a later job pass the head (`backfill=False`). Not work conserving: if the
earliest job has nothing submitted, the lane waits for it (a job runs to completion first).
"""

from __future__ import annotations

from collections.abc import Sequence

from kairos.registry import POLICIES
from kairos.salus.layout import Lane, LaneMode
from kairos.salus.policy import JobState, Policy


class Fifo(Policy):
    name = "fifo"

    def __init__(self, lane_mode: LaneMode = LaneMode.SINGLE, backfill: bool = False) -> None:
        self.lane_mode = lane_mode
        self.backfill = backfill

    def pick(self, lane: Lane, jobs: Sequence[JobState]) -> JobState | None:
        if not jobs:
            return None
        first = jobs[0]  # admission order
        return first if first.ready > 0 else None


POLICIES.add("salus", "fifo", Fifo)
