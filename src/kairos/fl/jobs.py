"""Collaborative-learning jobs: what a job asks of the device pool.

A synchronous FL job runs `rounds` rounds; each round needs `participants` eligible devices
(its requirement) and closes under its `RoundRule` (deadline, minimum response fraction,
over-commitment). Schedulers may or may not be told the number of rounds; the job knows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kairos.fl.requirements import Requirement
from kairos.fl.timing import RoundRule


@dataclass(frozen=True)
class FLJob:
    job_id: str
    arrival: float
    participants: int  # target devices per round (D)
    rounds: int  # R
    requirement: Requirement
    rule: RoundRule = field(default_factory=RoundRule)
    template: str = ""  # where the job came from (a trace template), for reports

    def __post_init__(self) -> None:
        if self.participants < 1:
            raise ValueError(f"job {self.job_id}: participants must be >= 1")
        if self.rounds < 1:
            raise ValueError(f"job {self.job_id}: rounds must be >= 1")
        if self.arrival < 0:
            raise ValueError(f"job {self.job_id}: arrival must be >= 0")

    @property
    def total_demand(self) -> int:
        """Device-tasks over the job's life (participants x rounds)."""
        return self.participants * self.rounds

    @property
    def request_size(self) -> int:
        return self.rule.request_size(self.participants)

    @property
    def needed(self) -> int:
        return self.rule.needed(self.participants)
