"""Andes decision records: plain data that survive JSON unchanged, the same decisions with a
recorder as without, and the simulator's `--decision-log` file."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from kairos.andes.decisions import CODEC, SYSTEM, Iteration, Step, Swap
from kairos.andes.latency import load_profile
from kairos.andes.policies.registry import make_policy
from kairos.andes.simulator import Simulator, requests_from_trace
from kairos.andes.workload import SimPoint, build_trace
from kairos.cli import app
from kairos.decisions import Entries, Entry, is_plain, read_log

ids = st.text(min_size=1, max_size=8)
counts = st.integers(min_value=0, max_value=2**40)
steps = st.builds(Step, ids, counts, counts, st.booleans())
swaps = st.builds(
    Swap,
    ids,
    st.sampled_from(["out", "in"]),
    st.lists(st.tuples(counts, counts), max_size=6).map(tuple),
)
iterations = st.builds(
    Iteration,
    st.lists(steps, max_size=6).map(tuple),
    st.lists(ids, max_size=4).map(tuple),
    st.lists(swaps, max_size=4).map(tuple),
    st.lists(ids, max_size=3).map(tuple),
)
times = st.floats(min_value=0, max_value=1e7, allow_nan=False)


@given(record=iterations, t=times)
def test_every_record_is_plain_and_survives_json(record: Iteration, t: float) -> None:
    assert is_plain(record)
    back = CODEC.loads(CODEC.dumps(Entry(t, record)))
    assert back == Entry(t, record)
    assert isinstance(back.record.swaps, tuple) and all(
        isinstance(s.blocks, tuple) for s in back.record.swaps
    )


def _simulated(recorder: Entries | None) -> list[tuple[float, tuple[float, ...], int]]:
    # bursts past the sustainable rate on a 70B profile: vLLM's policy runs out of KV blocks
    # and preempts (swaps are in the real run's replay test, e2e/test_same_decisions.py)
    p = SimPoint(policy="fcfs", load_factor=2.0, intensity=2.8, cycle_s=60.0, span_s=45.0)
    trace, speeds = build_trace(p)
    sim = Simulator(make_policy(p.policy), load_profile(p.profile), recorder=recorder)
    for req, n in requests_from_trace(trace, speeds):
        sim.add(req, n)
    res = sim.run()
    return [(r.finish_time, tuple(r.token_times), r.preemptions) for r in res.requests]


def test_a_recorded_simulation_decides_as_an_unrecorded_one_in_plain_records() -> None:
    entries = Entries()
    assert _simulated(entries) == _simulated(None)
    records = [e.record for e in entries]
    assert all(isinstance(r, Iteration) and is_plain(r) for r in records)
    assert any(r.preempted for r in records)
    assert [CODEC.loads(CODEC.dumps(e)) for e in entries] == list(entries)


runner = CliRunner(env={"COLUMNS": "200"})
SIMULATE = ["andes", "simulate", "--policy", "andes", "--span", "60", "--intensity", "2.5"]


def test_simulate_writes_a_decision_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "decisions.jsonl"
    args = [*SIMULATE, "--out", str(tmp_path), "--decision-log", str(log)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    loaded = read_log(log, CODEC, system=SYSTEM)
    assert loaded.meta["mode"] == "simulate" and loaded.meta["point"]["policy"] == "andes"
    iterations = sum(bool(e.record.steps or e.record.swaps) for e in loaded.entries)
    assert iterations > 50
    assert [e.t for e in loaded.entries] == sorted(e.t for e in loaded.entries)


def test_simulate_names_a_decision_log_it_cannot_write(tmp_path: Path) -> None:
    args = [*SIMULATE, "--out", str(tmp_path), "--decision-log", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "--decision-log" in result.output and str(tmp_path) in result.output
