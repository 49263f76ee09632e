"""What a tuning algorithm hands Fluid (a `TrialSpec` in a TrialGroup) and what Fluid keeps
about each trial while it runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction
from typing import Any

from kairos.fluid.core.placement import Placement


@dataclass(frozen=True)
class TrialSpec:
    """Run `trial_id` with `config` until it has done `budget` iterations in total. A trial
    promoted to a later rung is submitted again with the same id and a larger budget: it
    resumes from its checkpoint."""

    trial_id: str
    config: dict[str, Any]
    budget: int
    parent: str | None = None  # PBT's exploit: start from this trial's checkpoint...
    resume_at: int = 0  # ...taken after this many iterations

    def __post_init__(self) -> None:
        if self.budget <= self.resume_at:
            raise ValueError(
                f"trial {self.trial_id}: budget {self.budget} must exceed resume_at "
                f"{self.resume_at}"
            )


class State(Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"  # reached its budget (may be submitted again with a larger one)
    STOPPED = "stopped"  # the algorithm stopped it, or it failed


@dataclass
class Trial:
    spec: TrialSpec
    group: int
    done: int = 0
    t1: float | None = None  # estimated seconds per iteration at width 1
    width: Fraction = Fraction(1)
    placement: Placement | None = None
    state: State = State.QUEUED
    pending_width: Fraction | None = None
    error: str | None = None
    history: list[tuple[float, Fraction]] = field(default_factory=list)  # (time, width)

    @property
    def trial_id(self) -> str:
        return self.spec.trial_id

    @property
    def remaining(self) -> int:
        return self.spec.budget - self.done
