"""The planners against the spec's worked cases (spec 6.6) and their invariants (hypothesis)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fluid.core.dynamic import Resize, dynamic_fluid
from kairos.fluid.core.model import Limits, PlanTrial, height
from kairos.fluid.core.placement import Placer
from kairos.fluid.core.static import static_fluid
from kairos.fluid.core.theory import list_schedule

FIG_3_5 = [PlanTrial("a1", 4), PlanTrial("a2", 4), PlanTrial("a3", 12), PlanTrial("a4", 30)]


def test_fig_3_5_widths_and_makespan_against_one_trial_per_gpu() -> None:
    widths = static_fluid(FIG_3_5, 5, Limits(c=2, d=3))
    assert widths == {"a4": 3, "a3": 1, "a1": Fraction(1, 2), "a2": Fraction(1, 2)}
    assert list(widths) == ["a4", "a3", "a1", "a2"]  # placement order: longest work first
    assert list_schedule(sorted(FIG_3_5, key=lambda t: -t.h1), widths, 5, 2) == 12
    fifo = {t.trial_id: Fraction(1) for t in FIG_3_5}
    assert list_schedule(FIG_3_5, fifo, 5, 1) == 30


def test_dynamic_fluid_continues_fig_3_5() -> None:
    limits = Limits(c=2, d=4)
    # t = 4: a1 and a2 are done, a3 has 8 s of work left on its GPU, a4 18 s (on one GPU) on 3.
    at_4 = [PlanTrial("a3", 8), PlanTrial("a4", 18)]
    assert dynamic_fluid(at_4, {"a3": Fraction(1), "a4": Fraction(3)}, 1, limits, eps=1.0) == []
    # t = 10: a4 is done, a3 has 2 s left: widen to d = 4 when 2/4 + eps < 2.
    at_10 = [PlanTrial("a3", 2)]
    grow = dynamic_fluid(at_10, {"a3": Fraction(1)}, 4, limits, eps=1.0)
    assert grow == [Resize("a3", Fraction(1), Fraction(4))]
    assert 10 + height(2, Fraction(4)) + 1.0 == 11.5  # makespan 10.5 + eps
    assert dynamic_fluid(at_10, {"a3": Fraction(1)}, 4, limits, eps=1.5) == []


def test_scale_down_needs_a_smaller_area_and_frees_gpus_for_scale_ups() -> None:
    limits = Limits(c=2, d=4)
    # a short trial on 4 GPUs beside a long one on 1: the short one shrinks (area drops even
    # with eps) and the long one takes the GPUs it frees.
    running = [PlanTrial("short", 1.0, beta=1.2), PlanTrial("long", 30.0)]
    out = dynamic_fluid(running, {"short": Fraction(4), "long": Fraction(1)}, 0, limits, eps=0.1)
    assert out[0] == Resize("short", Fraction(4), Fraction(1, 2))
    assert out[1].trial_id == "long" and out[1].new > 1
    # with a large eps the shrink no longer saves area and nothing moves
    assert dynamic_fluid(running, {"short": Fraction(4), "long": Fraction(1)}, 0, limits, 10) == []


def test_a_scale_up_short_of_gpus_takes_the_largest_width_that_still_pays() -> None:
    out = dynamic_fluid([PlanTrial("a", 8.0)], {"a": Fraction(1)}, 2, Limits(c=1, d=8), eps=0.5)
    assert out == [Resize("a", Fraction(1), Fraction(3))]


def test_nine_equal_half_gpu_trials_use_all_eight_gpus() -> None:
    trials = [PlanTrial(f"t{i}", 10.0) for i in range(9)]
    widths = static_fluid(trials, 8, Limits(c=2, d=2))
    assert set(widths.values()) == {Fraction(1, 2)}
    placer = Placer(8, 2)
    for t in trials:
        assert placer.place(t.trial_id, widths[t.trial_id], 10.0) is not None
    assert placer.idle() == 0
    assert sorted(len(g.slots) for g in placer.gpus) == [1] * 7 + [2]


def test_packing_and_scaling_off_is_one_trial_per_gpu() -> None:
    trials = [PlanTrial(f"t{i}", float(h)) for i, h in enumerate([5, 1, 9, 3, 3, 7])]
    widths = static_fluid(trials, 4, Limits())
    assert set(widths.values()) == {Fraction(1)}


def test_a_gang_needs_whole_free_gpus_and_slots_need_the_slot_width() -> None:
    placer = Placer(2, 2)
    assert placer.place("a", Fraction(1, 2)) is not None
    assert placer.place("b", Fraction(2)) is None  # one GPU is shared now
    assert placer.place("b", Fraction(1)) is not None
    with pytest.raises(ValueError, match="slot 1/2"):
        placer.place("c", Fraction(1, 3))
    with pytest.raises(ValueError, match="already placed"):
        placer.place("a", Fraction(1, 2))
    placer.release("a")
    assert placer.idle() == 1


instances = st.lists(st.floats(0.1, 50.0), min_size=1, max_size=14).map(
    lambda hs: [PlanTrial(f"t{i}", h) for i, h in enumerate(hs)]
)


@settings(max_examples=200, deadline=None)
@given(instances, st.integers(1, 16), st.integers(1, 4), st.integers(1, 8))
def test_static_invariants(trials: list[PlanTrial], n: int, c: int, d: int) -> None:
    limits = Limits(c=c, d=d)
    widths = static_fluid(trials, n, limits)
    total = sum(t.h1 for t in trials)
    large = [widths[t.trial_id] for t in trials if n * t.h1 / total >= 1 - 1e-9]
    assert sum(large) <= n  # every large trial starts at once
    if len(large) < len(trials):  # a small trial exists: a GPU is left for the small set
        assert sum(large) <= n - 1
    assert all(w == limits.slot or (w.denominator == 1 and 1 <= w <= d) for w in widths.values())
    ordered = list(widths)
    works = {t.trial_id: t.h1 for t in trials}
    assert all(works[a] >= works[b] for a, b in itertools.pairwise(ordered))
    assert all(widths[a] >= widths[b] for a, b in itertools.pairwise(ordered))


@settings(max_examples=200, deadline=None)
@given(instances, st.integers(0, 8), st.integers(1, 4), st.integers(1, 6), st.floats(0.0, 20.0))
def test_dynamic_changes_only_what_pays_and_stays_within_capacity(
    trials: list[PlanTrial], n_idle: int, c: int, d: int, eps: float
) -> None:
    limits = Limits(c=c, d=d)
    current = static_fluid(trials, 8, limits)
    resizes = dynamic_fluid(trials, current, n_idle, limits, eps)
    by_id = {t.trial_id: t for t in trials}
    after = dict(current)
    for r in resizes:
        t = by_id[r.trial_id]
        assert r.old == current[r.trial_id] and r.new != r.old
        if r.new > r.old:
            assert t.at(r.new) + eps < t.at(r.old)
        else:
            assert float(r.new) * (t.at(r.new) + eps) < float(r.old) * t.at(r.old)
        after[r.trial_id] = r.new
    whole_before = sum(int(w) for w in current.values() if w >= 1)
    whole_after = sum(int(w) if w >= 1 else 0 for w in after.values())
    fresh_slots = sum(1 for k, w in after.items() if w < 1 and current[k] >= 1)
    assert whole_after <= whole_before + n_idle + fresh_slots
