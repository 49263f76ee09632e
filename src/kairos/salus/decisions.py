"""Salus's decisions as plain records: what the driver decides, keyed by job and lane ids.

The driver makes three kinds of decision (docs/architecture.md, "One driver per system"):
which job's iteration an idle lane runs next (a `Grant`, also what the worker is handed), where
a job is admitted (an `Admit`, with the lane sizes Algorithm 2.1 changed: `LaneCreated`,
`LaneResized`, `LaneDeleted`), and a job's end (`Exit`, with the shrink or delete of its lane).
With a recorder the driver hands each one to it as it decides; `CODEC` writes them to a
decision log (`kairos salus serve --decision-log PATH`) and reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass

from kairos.decisions import Codec
from kairos.salus.profile import Profile


@dataclass(frozen=True, slots=True)
class Grant:
    """Job `job`'s next iteration runs in lane `lane`, with `size` bytes of ephemeral budget;
    `switch` when the lane last ran another job; `aux` for an auxiliary call (reading or
    saving the model), which is no policy pick and no switch."""

    job: int
    lane: int
    size: int
    switch: bool
    aux: bool = False


@dataclass(frozen=True, slots=True)
class Admit:
    """Job `job` is admitted to lane `lane`, reserving `persistent` bytes (P) and needing
    `ephemeral` bytes (E) of the lane whenever it runs."""

    job: int
    lane: int
    persistent: int
    ephemeral: int


@dataclass(frozen=True, slots=True)
class Exit:
    """Job `job` left the device: `status` is "done" (its last iteration ran) or "cancelled"
    (by request; a queued job leaves without ever having had a lane)."""

    job: int
    status: str


@dataclass(frozen=True, slots=True)
class LaneCreated:
    lane: int
    size: int


@dataclass(frozen=True, slots=True)
class LaneResized:
    """A lane grew for a joining job or shrank to its remaining jobs' largest E."""

    lane: int
    old: int
    new: int


@dataclass(frozen=True, slots=True)
class LaneDeleted:
    """A lane's last job left; `size` is what it held until then."""

    lane: int
    size: int


LaneChange = LaneCreated | LaneResized | LaneDeleted
Decision = Grant | Admit | Exit | LaneChange


@dataclass(frozen=True, slots=True)
class Launch:
    """What the worker is handed: the grant, the job's profile (plain numbers: the simulated
    worker times the iteration from it) and the time it was decided."""

    grant: Grant
    profile: Profile
    start: float


def lane_changes(before: dict[int, int], after: dict[int, int]) -> list[LaneChange]:
    """The changes from one map of lane id -> size to the next, in lane id order."""
    out: list[LaneChange] = []
    for lane in sorted(before.keys() | after.keys()):
        old, new = before.get(lane), after.get(lane)
        if old is None and new is not None:
            out.append(LaneCreated(lane, new))
        elif new is None and old is not None:
            out.append(LaneDeleted(lane, old))
        elif old != new and old is not None and new is not None:
            out.append(LaneResized(lane, old, new))
    return out


CODEC = Codec([Grant, Admit, Exit, LaneCreated, LaneResized, LaneDeleted])
