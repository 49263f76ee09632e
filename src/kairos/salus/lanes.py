"""A lane, the lane modes, and the error an invariant breach raises (spec 3.2-3.4).

A lane is a slice of the ephemeral region with its own stream: iterations in it run one at a
time, which is what makes sharing it safe. Kept apart from the layout so the address model and
the policies can name a lane without importing the layout.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class LaneMode(enum.Enum):
    """MULTI opens a new lane for a job whenever it fits (PACK: parallelism); SINGLE keeps one
    lane that every job shares (SRTF/FAIR/FIFO: time sharing), spec 3.4 note (c)."""

    SINGLE = "single"
    MULTI = "multi"


class SafetyViolation(AssertionError):
    """Eq. 2.1 (or, with addresses, a range invariant) broke: a bug, never a user error."""


@dataclass(eq=False)
class Lane:
    """A slice of the ephemeral region with its own stream: iterations in it run one at a time.

    `size` is the reservation Eq. 2.1 counts (the target size after grows and shrinks); `jobs`
    are in admission order (PACK's round robin and FIFO read it); `busy` holds the job whose
    iteration runs; `last` the job that ran last (a switch is a different job next).
    """

    id: int
    size: int
    jobs: list[int] = field(default_factory=list)
    busy: int | None = None
    last: int | None = None

    @property
    def idle(self) -> bool:
        return self.busy is None
