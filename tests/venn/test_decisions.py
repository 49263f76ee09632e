"""Venn's decision records: plain data that survives JSON unchanged, and a simulator that
records them decides exactly what it decides without a recorder."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.decisions import Entries, Entry, is_plain
from kairos.venn import decisions as rec
from kairos.venn.decisions import CODEC
from kairos.venn.policies import make_policy
from kairos.venn.simulator import simulate
from kairos.venn.workloads import FleetConfig, make_fleet
from tests.venn.test_simulator import small_jobs

ids = st.text(min_size=1, max_size=12)
reals = st.floats(allow_nan=False, allow_infinity=False, width=64)
counts = st.integers(0, 10**6)
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "job": ids,
    "device": ids,
    "requirement": ids,
    "thresholds": st.dictionaries(ids, reals, max_size=4),
    "skip": st.lists(ids, max_size=4).map(tuple),
    "success": st.booleans(),
}


def _strategy(t: type) -> st.SearchStrategy[Any]:
    """Any record of type `t`: ids, counts and finite floats in every field."""
    kw = {
        f.name: FIELDS.get(f.name, counts if f.type == "int" else reals)
        for f in dataclasses.fields(t)
    }
    return st.builds(t, **kw)


records = st.one_of(*(_strategy(t) for t in (*rec.INPUTS, *rec.DECISIONS)))


@settings(max_examples=300, deadline=None)
@given(record=records, t=reals)
def test_every_record_is_plain_and_round_trips_through_json(record: object, t: float) -> None:
    assert is_plain(record)
    assert CODEC.loads(CODEC.dumps(Entry(t, record))) == Entry(t, record)


def test_every_record_type_is_in_the_codec() -> None:
    assert set(CODEC.types) == {t.__name__ for t in (*rec.INPUTS, *rec.DECISIONS)}
    assert not set(rec.INPUTS) & set(rec.DECISIONS)


def test_a_recorded_simulation_decides_what_an_unrecorded_one_does() -> None:
    """The recorder only represents decisions: the same run with and without it gives the
    same rounds, and the log holds every dispatch, round close and finished job."""
    fleet = make_fleet(FleetConfig(devices=4000), seed=2)
    jobs = small_jobs(np.random.default_rng(2), 5)
    plain = simulate(make_policy("venn", np.random.default_rng(1)), jobs, fleet)
    log = Entries()
    recorded = simulate(make_policy("venn", np.random.default_rng(1)), jobs, fleet, recorder=log)
    assert recorded.rounds == plain.rounds and recorded.job_rows() == plain.job_rows()
    kinds = [type(e.record) for e in log]
    assert kinds.count(rec.Assigned) == plain.assigned > 0
    assert kinds.count(rec.RoundClosed) == len(plain.rounds)
    assert kinds.count(rec.JobFinished) == len(jobs)
    assert kinds.count(rec.CheckedIn) == plain.checkins
    assert [e.t for e in log] == sorted(e.t for e in log)
    assert all(is_plain(e.record) for e in log)
