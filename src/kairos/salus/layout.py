"""GPU memory as Salus lays it out: resident persistent memory plus a set of lanes (spec 3.2-3.3).

This is the accounting view (Tier A, spec 6.3): a lane is a byte budget `L_l`, the size its
largest job's ephemeral peak needs, and the safety condition Eq. 2.1

    sum_{admitted i} P_i  +  sum_{lanes l} L_l  <=  C,     L_l >= max_{j in l} E_j

is the whole reason no job can run out of memory or deadlock: every lane can hold the peak of
whichever of its jobs runs, and only one iteration runs per lane. `check()` tests it in O(1)
from running totals after every change; `verify()` recomputes it from scratch (for tests).
With `addresses=True` the layout also keeps the address-range model (Tier B,
`kairos.salus.addresses`) and refuses a persistent placement the ranges cannot hold.
"""

from __future__ import annotations

import itertools

from kairos.salus.addresses import AddressSpace
from kairos.salus.lanes import Lane, LaneMode, SafetyViolation

__all__ = ["Lane", "LaneMode", "MemoryLayout", "SafetyViolation"]


class MemoryLayout:
    """Persistent bytes of admitted jobs and the lanes, on a device of `capacity` bytes."""

    def __init__(self, capacity: int, addresses: bool = False) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be > 0 bytes, got {capacity}")
        self.capacity = int(capacity)
        self.persistent: dict[int, int] = {}
        self.ephemeral: dict[int, int] = {}
        self.lane_of: dict[int, Lane] = {}
        self.lanes: dict[int, Lane] = {}  # creation order
        self.p_total = 0
        self.l_total = 0
        self.space = AddressSpace(self.capacity) if addresses else None
        self._ids = itertools.count()

    # ---- what admission reads -----------------------------------------------------------------
    def committed(self) -> int:
        """sum P + sum L: Eq. 2.1's left-hand side."""
        return self.p_total + self.l_total

    def persistent_after(self, p: int) -> int | None:
        """The persistent part of the left-hand side if a job of `p` bytes joined: sum P + p,
        or with addresses the persistent region's extent after placing it (never less, and None
        when no address can take it right now)."""
        if self.space is None:
            return self.p_total + p
        extent = self.space.extent_with(p)
        return None if extent is None else max(extent, self.p_total + p)

    # ---- changes --------------------------------------------------------------------------------
    def new_lane(self, size: int) -> Lane:
        lane = Lane(next(self._ids), int(size))
        self.lanes[lane.id] = lane
        self.l_total += lane.size
        return lane

    def resize(self, lane: Lane, size: int) -> None:
        """Grow or shrink a lane's reservation; with addresses the move happens at a boundary."""
        self.l_total += int(size) - lane.size
        lane.size = int(size)

    def join(self, job: int, p: int, e: int, lane: Lane) -> None:
        if job in self.persistent:
            raise ValueError(f"job {job} is already admitted")
        if e > lane.size:
            raise SafetyViolation(f"job {job} (E={e}) joined lane {lane.id} of {lane.size}")
        if self.space is not None:
            self.space.place(job, p)
        self.persistent[job] = int(p)
        self.ephemeral[job] = int(e)
        self.p_total += int(p)
        self.lane_of[job] = lane
        lane.jobs.append(job)

    def leave(self, job: int) -> Lane:
        """Free the job's persistent memory and take it out of its lane; the lane shrinks to its
        remaining jobs' largest E, or is deleted when empty (spec 3.5 JOB_EXIT). A job whose
        iteration is running cannot leave: its ephemeral memory is still in use (the driver
        defers the exit to the iteration's end)."""
        lane = self.lane_of[job]
        if lane.busy == job:
            raise ValueError(f"job {job} cannot leave while its iteration runs")
        del self.lane_of[job]
        self.p_total -= self.persistent.pop(job)
        del self.ephemeral[job]
        if self.space is not None:
            self.space.free(job)
        lane.jobs.remove(job)
        if lane.jobs:
            self.resize(lane, max(self.ephemeral[j] for j in lane.jobs))
        else:  # an empty lane runs nothing (its only job was not running)
            self.delete(lane)
        return lane

    def delete(self, lane: Lane) -> None:
        self.l_total -= lane.size
        del self.lanes[lane.id]
        if self.space is not None:
            self.space.drop(lane.id)

    # ---- the invariant --------------------------------------------------------------------------
    def check(self) -> None:
        """Eq. 2.1 on the running totals: O(1), run after every state change."""
        if self.p_total + self.l_total > self.capacity:
            raise SafetyViolation(
                f"Eq. 2.1 broken: sum P {self.p_total} + sum L {self.l_total} > C {self.capacity}"
            )

    def verify(self) -> None:
        """Eq. 2.1 recomputed from the jobs and lanes, each lane covering its jobs' peaks, and
        (with addresses) the range invariants."""
        p = sum(self.persistent.values())
        sizes = sum(lane.size for lane in self.lanes.values())
        if (p, sizes) != (self.p_total, self.l_total):
            raise SafetyViolation(f"totals drifted: {p, sizes} vs {self.p_total, self.l_total}")
        if p + sizes > self.capacity:
            raise SafetyViolation(f"Eq. 2.1 broken: {p} + {sizes} > {self.capacity}")
        for lane in self.lanes.values():
            need = max((self.ephemeral[j] for j in lane.jobs), default=0)
            if lane.size < need:
                raise SafetyViolation(f"lane {lane.id} of {lane.size} holds a job of E={need}")
            if any(self.lane_of.get(j) is not lane for j in lane.jobs):
                raise SafetyViolation(f"lane {lane.id} lists a job that is not in it")
        if self.space is not None:
            self.space.verify(list(self.lanes.values()), self.ephemeral)
