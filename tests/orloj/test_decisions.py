"""Orloj's decision records: plain, unchanged by a JSON round trip, written by the simulator's
driver without changing a decision, and to a log file from the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from kairos.decisions import DecisionLog, DecisionLogError, Entries, Entry, is_plain, read_log
from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.decisions import CODEC, BatchDecision, Drop
from kairos.orloj.policy import Request
from kairos.orloj.simulator import SimConfig, simulate
from kairos.orloj.systems import make_system
from kairos.orloj.workloads import get_workload
from tests.orloj.test_cli import orloj_app

ids = st.lists(st.integers(0, 2**53), min_size=1, max_size=16, unique=True).map(tuple)
times = st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False)
apps = st.text(max_size=12)


@st.composite
def batches(draw: st.DrawFn) -> BatchDecision:
    members = draw(ids)
    names = tuple(draw(apps) for _ in members)
    latest = draw(st.none() | times)
    return BatchDecision(members, names, len(members), draw(times), latest)


records = batches() | st.builds(Drop, ids, st.booleans())


@given(times, records)
def test_every_record_is_plain_and_survives_json_unchanged(t: float, record: object) -> None:
    assert is_plain(record)
    back = CODEC.loads(CODEC.dumps(Entry(t, record)))
    assert back == Entry(t, record) and type(back.record) is type(record)


def test_a_batch_names_as_many_requests_and_apps_as_its_size() -> None:
    with pytest.raises(ValueError, match="size 2"):
        BatchDecision((1, 2), ("a",), 2, 0.0)
    with pytest.raises(ValueError, match="size 3"):
        BatchDecision((1, 2), ("a", "b"), 3, 0.0)


def _run(system: str, recorder: Entries | None) -> list[tuple[float, tuple[int, ...]]]:
    w = get_workload("std-1")
    rng = np.random.default_rng(3)
    times = np.cumsum(rng.exponential(1.0, 400))
    app, solo = w.sample(400, rng)
    requests = [Request(i, w.app_names[int(a)], float(t), 3 * w.p99_ms, solo_ms=float(s))
                for i, (t, a, s) in enumerate(zip(times, app, solo, strict=True))]  # fmt: skip
    policy = make_system(system, model=BatchLatencyModel(), slo_ms=3 * w.p99_ms, rate_per_ms=1.0)
    offline = w.offline_profile(200, np.random.default_rng(0))
    result = simulate(policy, requests, SimConfig(seed=1), offline, recorder)
    return [(b.decided, b.ids) for b in result.batches]


@pytest.mark.parametrize("system", ["orloj", "clockwork", "nexus", "clipper-drop", "edf"])
def test_recording_changes_no_decision_and_records_each_request_once(system: str) -> None:
    recorded = Entries()
    assert _run(system, recorded) == _run(system, None)
    batches = [(e.t, e.record) for e in recorded if isinstance(e.record, BatchDecision)]
    drops = [e.record for e in recorded if isinstance(e.record, Drop)]
    assert [(round(t * 1e3, 6), b.ids) for t, b in batches] == [
        (round(t, 6), i) for t, i in _run(system, None)
    ]
    decided = [i for _, b in batches for i in b.ids] + [i for d in drops for i in d.ids]
    assert sorted(decided) == list(range(400))
    assert drops, "the load must make the policy drop some requests"
    assert [e.t for e in recorded] == sorted(e.t for e in recorded)


def test_simulate_writes_a_decision_log_and_names_a_path_it_cannot_write(tmp_path: Path) -> None:
    runner = CliRunner()
    log = tmp_path / "logs" / "orloj.jsonl"
    args = ["orloj", "simulate", "--requests", "300", "--rho", "1.5", "--decision-log"]
    ok = runner.invoke(orloj_app(), [*args, str(log)])
    assert ok.exit_code == 0, ok.output
    loaded = read_log(log, CODEC, system="orloj")
    assert loaded.meta["system"] == "orloj" and loaded.meta["n_requests"] == 300
    decided = [i for e in loaded.entries for i in e.record.ids]
    assert sorted(decided) == list(range(300))
    blocked = tmp_path / "file"
    blocked.write_text("")
    bad = runner.invoke(orloj_app(), [*args, str(blocked / "log.jsonl")])
    assert bad.exit_code == 2 and "cannot write the decision log" in bad.output


def test_a_log_with_an_inconsistent_batch_names_its_line(tmp_path: Path) -> None:
    log = tmp_path / "orloj.jsonl"
    with DecisionLog(log, CODEC, "orloj") as out:
        out.record(0.5, BatchDecision((1, 2), ("a", "b"), 2, 500.0))
    good = log.read_text()
    log.write_text(good + good.splitlines()[1].replace('"size":2', '"size":3') + "\n")
    broken = r"(?s)orloj.jsonl:3: a malformed BatchDecision.*size 3"
    with pytest.raises(DecisionLogError, match=broken):
        read_log(log, CODEC, system="orloj")
    log.write_text(good)
    assert [e.record.size for e in read_log(log, CODEC, system="orloj").entries] == [2]
