"""The address-range model of the layout (spec 3.2, 3.5; Tier B of spec 6.3).

Usable memory `[0, C)` is split like a stack and a heap: the persistent region grows from 0
upward (a best-fit allocator over the holes exited jobs leave), the lanes from `C` downward.
A lane's *target* range packs the lanes contiguously from the top in creation order; its
*current* range is where it is now. Moving a lane costs nothing at an iteration boundary (a
lane holds no live data between iterations), so `settle()` moves idle lanes to their targets
there; a lane that cannot move yet because a busy lane's range is in the way stays unplaced,
and the busy lanes in the way are *barred*: they stop at their next boundary until it moves
(spec 3.5's grow barrier; under PACK lanes run back to back and a grow would wait forever).

Invariants (`verify`): persistent blocks are disjoint; current ranges are disjoint and lie
above the persistent region's extent; extent + sum of target sizes <= C.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from kairos.salus.lanes import Lane, SafetyViolation

Range = tuple[int, int]  # [base, end)


def overlaps(a: Range, b: Range) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[0] < a[1] and b[0] < b[1]


class AddressSpace:
    """Persistent blocks and lane ranges inside `[0, capacity)`."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.blocks: dict[int, Range] = {}  # job -> its persistent block
        self.ranges: dict[int, Range] = {}  # lane -> current range; absent = unplaced

    # ---- the persistent region ------------------------------------------------------------------
    def extent(self) -> int:
        """The top of the persistent region (holes included)."""
        return max((end for _, end in self.blocks.values()), default=0)

    def _spot(self, size: int) -> int | None:
        """Best fit: the smallest hole that holds `size` (lowest address on a tie), else the
        top of the region if no lane's current range is in the way; None when blocked."""
        taken = sorted(self.blocks.values())
        best: tuple[int, int] | None = None  # (hole size, base)
        cursor = 0
        for base, end in taken:
            hole = base - cursor
            if hole >= size and (best is None or (hole, cursor) < best):
                best = (hole, cursor)
            cursor = max(cursor, end)
        if best is not None:
            return best[1]
        floor = min((base for base, _ in self.ranges.values()), default=self.capacity)
        return cursor if cursor + size <= floor else None

    def extent_with(self, size: int) -> int | None:
        """The extent after placing a block of `size` bytes, or None if it cannot go anywhere."""
        base = self._spot(size)
        return None if base is None else max(self.extent(), base + size)

    def place(self, job: int, size: int) -> None:
        base = self._spot(size)
        if base is None:
            raise ValueError(f"no address for job {job}'s {size} persistent bytes")
        self.blocks[job] = (base, base + size)

    def free(self, job: int) -> None:
        del self.blocks[job]

    # ---- lanes ----------------------------------------------------------------------------------
    def drop(self, lane: int) -> None:
        self.ranges.pop(lane, None)

    def targets(self, lanes: Sequence[Lane]) -> dict[int, Range]:
        """Lanes packed from the top down in creation order: lane k's base is
        C - sum_{m <= k} size_m."""
        out: dict[int, Range] = {}
        top = self.capacity
        for lane in sorted(lanes, key=lambda lane: lane.id):
            out[lane.id] = (top - lane.size, top)
            top -= lane.size
        return out

    def pending(self, lane: Lane) -> bool:
        """Unplaced, or placed in a range smaller than its size (a grow not applied yet)."""
        r = self.ranges.get(lane.id)
        return r is None or r[1] - r[0] < lane.size

    def barred(self, lane: Lane, lanes: Sequence[Lane]) -> bool:
        """Whether `lane` must not start an iteration: it is pending, or its current range is
        in the way of a pending lane's target (the barrier)."""
        if self.pending(lane):
            return True
        mine = self.ranges[lane.id]
        waiting = [other for other in lanes if other is not lane and self.pending(other)]
        if not waiting:
            return False
        targets = self.targets(lanes)
        return any(overlaps(mine, targets[other.id]) for other in waiting)

    def settle(self, lanes: Sequence[Lane]) -> bool:
        """APPLY_PENDING_LAYOUT: every idle lane away from its target lets go of its range, then
        every unplaced idle lane whose target is clear of the other ranges takes it. Returns
        whether any range changed."""
        targets = self.targets(lanes)
        changed = False
        for lane in lanes:
            r = self.ranges.get(lane.id)
            if lane.idle and r is not None and r != targets[lane.id]:
                del self.ranges[lane.id]
                changed = True
        for lane in lanes:
            if not lane.idle or lane.id in self.ranges:
                continue
            want = targets[lane.id]
            if all(not overlaps(want, r) for r in self.ranges.values()):
                self.ranges[lane.id] = want
                changed = True
        return changed

    # ---- invariants -----------------------------------------------------------------------------
    def verify(self, lanes: Sequence[Lane], ephemeral: Mapping[int, int]) -> None:
        blocks = sorted(self.blocks.values())
        for (_, end), (base, _) in itertools.pairwise(blocks):
            if base < end:
                raise SafetyViolation(f"persistent blocks overlap: {blocks}")
        extent = self.extent()
        if extent + sum(lane.size for lane in lanes) > self.capacity:
            raise SafetyViolation(f"extent {extent} + lane sizes > C {self.capacity}")
        ranges = sorted(self.ranges.items(), key=lambda kv: kv[1])
        for lane_id, (base, end) in ranges:
            if base < extent or end > self.capacity or base > end:
                raise SafetyViolation(f"lane {lane_id} at {base, end} crosses [{extent}, C)")
        for (a, ra), (b, rb) in itertools.pairwise(ranges):
            if overlaps(ra, rb):
                raise SafetyViolation(f"lanes {a} {ra} and {b} {rb} overlap")
        for lane in lanes:
            if lane.busy is not None:
                r = self.ranges.get(lane.id)
                if r is None or r[1] - r[0] < ephemeral.get(lane.busy, 0):
                    raise SafetyViolation(f"lane {lane.id} runs job {lane.busy} in {r}")
