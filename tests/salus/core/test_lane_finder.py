"""Algorithm 2.1 on the worked cases of spec 3.4 (C = 16 GB; one unit = 1 GB), and the lane
life cycle around it: shrink and delete on exit, Eq. 2.1 after every change."""

from __future__ import annotations

import pytest

from kairos.salus.lane_finder import Action, LaneManager, find_lane
from kairos.salus.layout import LaneMode, MemoryLayout, SafetyViolation

C = 16


def layout_with(p_sum: int, lanes: list[int]) -> MemoryLayout:
    """A layout whose admitted jobs hold `p_sum` persistent units, with lanes of these sizes
    created in this order (older first)."""
    layout = MemoryLayout(C)
    made = [layout.new_lane(size) for size in lanes]
    if p_sum:
        layout.join(1000, p_sum, 0, made[0])
    layout.check()
    return layout


def test_new_lane_when_everything_fits() -> None:
    found = find_lane(layout_with(0, []), 1, 4, LaneMode.MULTI)
    assert found is not None and found.action is Action.NEW and found.size == 4


def test_best_fit_picks_the_smallest_sufficient_lane() -> None:
    layout = layout_with(1, [2, 5, 6])  # base 15: Step 1 fails (19 > 16)
    found = find_lane(layout, 1, 4, LaneMode.MULTI)
    assert found is not None and found.action is Action.JOIN
    assert found.lane is not None and found.lane.size == 5


def test_best_fit_tie_goes_to_the_older_lane() -> None:
    layout = layout_with(1, [2, 5, 5])
    older = list(layout.lanes.values())[1]
    found = find_lane(layout, 1, 4, LaneMode.MULTI)
    assert found is not None and found.lane is older


def test_guard_a_refuses_a_join_that_would_break_eq_2_1() -> None:
    layout = layout_with(3, [6, 6])  # base = 3 + 2 + 12 = 17 > 16
    assert find_lane(layout, 2, 4, LaneMode.MULTI) is None
    # the printed Step 2 alone would have joined a lane of 6 and broken Eq. 2.1:
    lane = next(iter(layout.lanes.values()))
    layout.join(1, 2, 4, lane)
    with pytest.raises(SafetyViolation):
        layout.check()


def test_grow_the_smallest_lane_that_can_grow() -> None:
    layout = layout_with(1, [3, 5])  # base 10: no lane >= 9; 10 - 3 + 9 = 16
    found = find_lane(layout, 1, 9, LaneMode.MULTI)
    assert found is not None and found.action is Action.GROW
    assert found.lane is not None and found.lane.size == 3 and found.size == 9


def test_grow_fails_when_no_lane_can_grow_enough() -> None:
    assert find_lane(layout_with(1, [3, 5]), 1, 12, LaneMode.MULTI) is None


def test_single_lane_mode_grows_the_one_lane() -> None:
    layout = layout_with(2, [4])  # base 7; Step 1 skipped because a lane exists
    found = find_lane(layout, 1, 6, LaneMode.SINGLE)
    assert found is not None and found.action is Action.GROW and found.size == 6
    assert find_lane(layout, 1, 6, LaneMode.MULTI) is not None  # MULTI would open a lane
    assert find_lane(layout, 1, 6, LaneMode.MULTI).action is Action.NEW  # type: ignore[union-attr]


def test_find_lane_changes_nothing() -> None:
    layout = layout_with(1, [3, 5])
    before = (layout.committed(), [lane.size for lane in layout.lanes.values()])
    find_lane(layout, 1, 9, LaneMode.MULTI)
    assert before == (layout.committed(), [lane.size for lane in layout.lanes.values()])


def test_exit_shrinks_then_deletes_the_lane() -> None:
    m = LaneManager(C, LaneMode.SINGLE)
    lane = m.admit(1, 1, 3)
    assert lane is not None and m.admit(2, 1, 7) is lane and lane.size == 7  # grown
    m.leave(2)
    assert lane.size == 3 and m.layout.committed() == 1 + 3  # shrunk to the largest E left
    m.leave(1)
    assert not m.lanes and m.layout.committed() == 0  # deleted
    m.verify()


def test_a_running_job_cannot_leave_its_lane() -> None:
    m = LaneManager(C, LaneMode.MULTI)
    lane = m.admit(1, 1, 3)
    assert lane is not None
    lane.busy = 1
    with pytest.raises(ValueError, match="while its iteration runs"):
        m.leave(1)


def test_pack_opens_a_lane_per_job_while_they_fit() -> None:
    m = LaneManager(C, LaneMode.MULTI)
    lanes = [m.admit(i, 1, 4) for i in range(5)]
    assert len({id(lane) for lane in lanes[:3]}) == 3  # 5 + 5 + 5 = 15: three lanes
    assert lanes[3] is lanes[0]  # base 16: no new lane (20 > 16), joins the oldest of 4
    assert lanes[4] is None  # base 17 > 16: guard (a)
    assert m.layout.committed() == 16
