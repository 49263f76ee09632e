"""Salus's decision records: plain, JSON round-trips unchanged, what the simulator's driver
records, and that recording changes no decision."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from kairos.cli import app
from kairos.decisions import Entries, Entry, is_plain
from kairos.salus.catalog import load_workloads
from kairos.salus.decisions import (
    CODEC,
    Admit,
    Exit,
    Grant,
    LaneCreated,
    LaneDeleted,
    LaneResized,
    Launch,
    lane_changes,
)
from kairos.salus.policies import make_policy
from kairos.salus.profile import Profile
from kairos.salus.simulator import SimConfig, simulate
from kairos.salus.workloads import E1Trace, TraceJob, e1_trace

ids = st.integers(0, 2**31)
sizes = st.integers(0, 2**40)
records = st.one_of(
    st.builds(Grant, ids, ids, sizes, st.booleans(), st.booleans()),
    st.builds(Admit, ids, ids, sizes, sizes),
    st.builds(Exit, ids, st.sampled_from(["done", "cancelled"])),
    st.builds(LaneCreated, ids, sizes),
    st.builds(LaneResized, ids, sizes, sizes),
    st.builds(LaneDeleted, ids, sizes),
)
times = st.floats(0, 1e9, allow_nan=False, allow_infinity=False)


@given(times, records)
def test_every_record_round_trips_through_json_unchanged_and_is_plain(
    t: float, rec: object
) -> None:
    assert is_plain(rec)
    assert CODEC.loads(CODEC.dumps(Entry(t, rec))) == Entry(t, rec)


def test_what_the_worker_is_handed_is_plain_too() -> None:
    launch = Launch(Grant(3, 0, 1024, True), Profile("cnn", 10, 20, 0.5, 0.8), 1.5)
    assert is_plain(launch)


def test_lane_changes_name_each_created_resized_and_deleted_lane() -> None:
    before = {0: 100, 1: 50, 2: 70}
    after = {0: 100, 1: 80, 3: 30}
    assert lane_changes(before, after) == [
        LaneResized(1, 50, 80),
        LaneDeleted(2, 70),
        LaneCreated(3, 30),
    ]
    assert lane_changes(before, before) == []


def test_the_simulator_records_every_decision_and_recording_changes_none() -> None:
    profiles = load_workloads()
    trace: list[TraceJob] = e1_trace(E1Trace(jobs=12, time_scale=0.01), profiles, seed=3)
    cfg = SimConfig(record=True)
    plain = simulate(trace, make_policy("pack"), profiles, cfg)
    decided = Entries()
    logged = simulate(trace, make_policy("pack"), profiles, cfg, recorder=decided)
    assert logged.timeline == plain.timeline
    assert logged.summary() == plain.summary()
    grants = [e.record for e in decided if isinstance(e.record, Grant)]
    assert len(grants) == len(plain.timeline)
    assert [(g.job, g.lane) for g in grants] == [
        (r.job, r.lane) for r in sorted(plain.timeline, key=lambda r: (r.start, r.lane))
    ]
    admits = [e.record.job for e in decided if isinstance(e.record, Admit)]
    exits = [e.record for e in decided if isinstance(e.record, Exit)]
    assert sorted(admits) == sorted(j.job_id for j in trace)
    assert sorted(x.job for x in exits) == sorted(admits) and {x.status for x in exits} == {"done"}
    # every lane created is deleted once empty: the lane changes account for the whole layout
    created = [e.record.lane for e in decided if isinstance(e.record, LaneCreated)]
    deleted = [e.record.lane for e in decided if isinstance(e.record, LaneDeleted)]
    assert sorted(created) == sorted(deleted) and created
    assert all(is_plain(e.record) for e in decided)
    assert [e.t for e in decided] == sorted(e.t for e in decided)


def test_serve_names_a_decision_log_it_cannot_write(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = CliRunner().invoke(
        app, ["salus", "serve", "--decision-log", str(blocker / "decisions.jsonl")]
    )
    assert result.exit_code == 2
    flat = "".join(result.output.replace("│", "").split())  # as the error box wraps it
    assert "cannotwritethedecisionlog" in flat and "a-file" in flat, result.output
