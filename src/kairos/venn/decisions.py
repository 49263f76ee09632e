"""What Venn's driver decides, and what it was told, as plain records keyed by ids.

A Venn run is a sequence of round events. The driver's decisions: a device assigned to a job's
round (`Assigned`), a round closed as a success or an abort (`RoundClosed`), an aborted round
resubmitted (`Resubmitted`), a job finished (`JobFinished`). The inputs those decisions
answer are logged beside them, so a log alone can be replayed: a job arrived (`JobArrived`),
a job submitted a round (`RoundOpened`), a device checked in (`CheckedIn`), a device reported
a result (`Responded`). Records hold job and device ids, numbers and tuples only; the live
jobs and rounds stay in the driver (docs/architecture.md, "one driver per system").
"""

from __future__ import annotations

from dataclasses import dataclass

from kairos.decisions import Codec

SYSTEM = "venn"


@dataclass(frozen=True, slots=True)
class JobArrived:
    """A job registered: its requirement (name and thresholds), size and round rule."""

    job: str
    requirement: str
    thresholds: dict[str, float]
    participants: int
    rounds: int
    deadline_s: float
    min_resp_frac: float
    overcommit: float


@dataclass(frozen=True, slots=True)
class RoundOpened:
    """A job submitted round `round` for `participants`: the driver asked the manager for
    `demand` devices, and the round succeeds at once when `needed` of them respond."""

    job: str
    round: int
    participants: int
    demand: int
    needed: int


@dataclass(frozen=True, slots=True)
class CheckedIn:
    """A device of atom `atom` was offered to the manager (`skip`: jobs whose current round it
    already serves)."""

    device: str
    atom: int
    capability: float
    skip: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Assigned:
    """The device that just checked in serves this job's round."""

    device: str
    job: str
    round: int


@dataclass(frozen=True, slots=True)
class Responded:
    """A device that served the job's round reported its result after `response_s`."""

    device: str
    job: str
    round: int
    capability: float
    response_s: float


@dataclass(frozen=True, slots=True)
class RoundClosed:
    """A round attempt closed: a success (enough responses, or the deadline verdict passed) or
    an abort (the verdict failed; the round is resubmitted)."""

    job: str
    round: int
    success: bool
    dispatched: int
    responses: int


@dataclass(frozen=True, slots=True)
class Resubmitted:
    """An aborted round asked for its devices again, `resubmit_s` after the abort."""

    job: str
    round: int
    demand: int


@dataclass(frozen=True, slots=True)
class JobFinished:
    """The job's last round succeeded."""

    job: str
    rounds: int


INPUTS: tuple[type, ...] = (JobArrived, RoundOpened, CheckedIn, Responded)
DECISIONS: tuple[type, ...] = (Assigned, RoundClosed, Resubmitted, JobFinished)
CODEC = Codec([*INPUTS, *DECISIONS])
