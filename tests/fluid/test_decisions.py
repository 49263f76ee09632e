"""Fluid's decision records: plain, JSON round-trips unchanged, what the simulator's driver
records, that recording changes no decision, and the replay backend's one rule."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from kairos.decisions import Entries, Entry, is_plain
from kairos.fluid.core.placement import Placement
from kairos.fluid.decisions import CODEC, Devices, Launch, Measured, Resize, Stop, devices
from kairos.fluid.replay import ReplayBackend
from kairos.fluid.simulator import simulate
from kairos.fluid.trial import Trial, TrialSpec
from kairos.fluid.tuners import make_tuner
from kairos.fluid.workloads import preset
from kairos.sim import EventLoop, SimClock

trial_ids = st.text(min_size=1, max_size=12)
finite = st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
placements = st.builds(
    Devices,
    st.lists(st.integers(0, 64), min_size=1, max_size=8).map(tuple),
    st.sampled_from(["1", "2", "4", "1/2", "1/4"]),
)
records = st.one_of(
    st.builds(Launch, trial_ids, placements),
    st.builds(Resize, trial_ids, placements, placements),
    st.builds(Stop, trial_ids, st.sampled_from(["done", "stopped", "failed", "target"])),
    st.builds(Measured, trial_ids, finite, st.none() | finite, st.none() | st.text(max_size=40)),
)


@given(finite, records)
def test_every_record_round_trips_through_json_unchanged_and_is_plain(
    t: float, rec: object
) -> None:
    assert is_plain(rec)
    assert CODEC.loads(CODEC.dumps(Entry(t, rec))) == Entry(t, rec)


def test_a_placement_is_recorded_exactly() -> None:
    assert devices(Placement("t", Fraction(1, 2), (3,))) == Devices((3,), "1/2")
    assert devices(Placement("t", Fraction(2), (0, 1))) == Devices((0, 1), "2")
    assert Fraction(Devices((0,), "1/4").width) == Fraction(1, 4)


def test_a_non_finite_metric_is_logged_as_none_and_replayed_as_nan() -> None:
    m = Measured.of("t0", 0.0, float("nan"), "step raised")
    assert m.metric is None and math.isnan(m.metric_value) and is_plain(m)
    assert Measured.of("t0", 1.5, 0.75, None).metric_value == 0.75


def test_the_simulator_records_every_decision_and_recording_changes_none() -> None:
    w = preset("cifar")
    plain = simulate(w, make_tuner("hyperband", w.dims, 5, 27, 8), 8, True, seed=5)
    decided = Entries()
    logged = simulate(
        w, make_tuner("hyperband", w.dims, 5, 27, 8), 8, True, seed=5, recorder=decided
    )
    assert logged == plain
    kinds = [type(e.record) for e in decided]
    assert kinds.count(Launch) == kinds.count(Stop) > 0
    assert kinds.count(Resize) >= plain.resizes > 0  # a width change in place is one too
    launched = {e.record.trial for e in decided if isinstance(e.record, Launch)}
    assert len(launched) == plain.trials
    assert all(is_plain(e.record) for e in decided)
    assert [e.t for e in decided] == sorted(e.t for e in decided)


def test_an_iteration_the_recorded_run_never_saw_end_does_not_end() -> None:
    loop = EventLoop()
    clock = SimClock(loop)
    backend = ReplayBackend(clock, [Entry(2.0, Measured("a", 0.5, 0.9))])
    ended: list[tuple[float, float]] = []
    trial = Trial(TrialSpec("a", {}, 5), 0)
    backend.run_iteration(trial, lambda o: ended.append((clock.now(), o.metric)))
    backend.run_iteration(trial, lambda o: ended.append((clock.now(), o.metric)))
    loop.run()
    assert ended == [(2.0, 0.9)]
