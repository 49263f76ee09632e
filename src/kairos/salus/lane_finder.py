"""Algorithm 2.1 (find a GPU lane for a job) and the lane life cycle around it (spec 3.4-3.5).

`find_lane` is the algorithm exactly as spec 3.4 restates it, with its three resolutions:
(a) the guard `base <= C` before reusing or growing a lane (the printed Step 2 would let a
joining job's P break Eq. 2.1), (b) best fit among the lanes that are large enough (smallest,
then oldest), (c) SINGLE lane mode, where Step 1 opens a lane only when none exists. It decides
and changes nothing, so the worked cases are plain function calls.

`LaneManager` carries the decisions out on a `MemoryLayout` and checks Eq. 2.1 after every
change: admission (new lane, join, grow), exit (shrink, delete), and the iteration boundary
(auto-defragmentation: idle lanes move to their packed targets in the address model).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kairos.salus.layout import Lane, LaneMode, MemoryLayout


class Action(enum.Enum):
    NEW = "new"  # Step 1: open a lane of size E
    JOIN = "join"  # Step 2: share the best-fitting existing lane
    GROW = "grow"  # Step 3: grow the smallest lane that can grow to E


@dataclass(frozen=True)
class Found:
    """Where a job goes: `lane` is None for a new lane; `size` is the lane's size afterwards."""

    action: Action
    lane: Lane | None
    size: int


def find_lane(layout: MemoryLayout, p: int, e: int, mode: LaneMode) -> Found | None:
    """FIND_LANE(P, E) of spec 3.4; None is NOT_FOUND (the caller queues the job)."""
    persistent = layout.persistent_after(p)
    if persistent is None:  # address model: no room for the persistent block right now
        return None
    c = layout.capacity
    base = persistent + layout.l_total
    lanes = list(layout.lanes.values())
    if (mode is LaneMode.MULTI or not lanes) and base + e <= c:  # Step 1
        return Found(Action.NEW, None, e)
    if base > c:  # guard (a)
        return None
    fits = [lane for lane in lanes if lane.size >= e]
    if fits:  # best fit (b): smallest sufficient lane, the oldest on a tie
        best = min(fits, key=lambda lane: (lane.size, lane.id))
        return Found(Action.JOIN, best, best.size)
    for lane in sorted(lanes, key=lambda lane: (lane.size, lane.id)):
        if base - lane.size + e <= c:  # its jobs all have E_j <= L < E: still fine
            return Found(Action.GROW, lane, e)
    return None


class LaneManager:
    """The memory manager: admits jobs into lanes, releases them, defragments at boundaries."""

    def __init__(self, capacity: int, mode: LaneMode, addresses: bool = False) -> None:
        self.layout = MemoryLayout(capacity, addresses=addresses)
        self.mode = mode

    @property
    def lanes(self) -> list[Lane]:
        return list(self.layout.lanes.values())

    def lane_of(self, job: int) -> Lane:
        return self.layout.lane_of[job]

    def fits(self, p: int, e: int) -> bool:
        return find_lane(self.layout, p, e, self.mode) is not None

    def admit(self, job: int, p: int, e: int) -> Lane | None:
        """Place the job (Algorithm 2.1) and reserve its memory; None when it must wait."""
        found = find_lane(self.layout, p, e, self.mode)
        if found is None:
            return None
        if found.lane is None:
            lane = self.layout.new_lane(found.size)
        else:
            lane = found.lane
            if found.action is Action.GROW:
                self.layout.resize(lane, found.size)
        self.layout.join(job, p, e, lane)
        self.layout.check()
        if self.layout.space is not None:
            self.layout.space.settle(self.lanes)  # a new idle lane takes its range at once
        return lane

    def leave(self, job: int) -> Lane:
        """JOB_EXIT: free P, leave the lane, shrink it (or delete it when empty)."""
        lane = self.layout.leave(job)
        self.layout.check()
        if self.layout.space is not None:
            self.layout.space.settle(self.lanes)
        return lane

    def boundary(self) -> bool:
        """ITERATION_END (or any other change): apply the pending layout to the idle lanes.
        Returns whether a lane moved, which may let a queued job in or a lane start."""
        space = self.layout.space
        if space is None:
            return False  # byte budgets: a resize took effect when it was decided
        moved = space.settle(self.lanes)
        self.layout.check()
        return moved

    def runnable(self, lane: Lane) -> bool:
        """Idle, placed at its full size, and not in the way of a pending grow."""
        if not lane.idle:
            return False
        space = self.layout.space
        return space is None or not space.barred(lane, self.lanes)

    def verify(self) -> None:
        self.layout.verify()
