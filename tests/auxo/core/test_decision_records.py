"""Auxo's decision records: plain, JSON round-trips unchanged, what the policy records
(recording changes no decision), and the replay command's answers on good and bad logs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from kairos.auxo import AuxoParams, AuxoPolicy
from kairos.auxo.decisions import (
    CODEC,
    Claim,
    CohortRound,
    LateRewards,
    Merge,
    Split,
    open_log,
)
from kairos.auxo.policy import RoundReport
from kairos.auxo.replay import log_meta, replay_log
from kairos.cli import app
from kairos.decisions import DecisionLogError, Entries, Entry, LoadedLog, altered, is_plain

ids = st.integers(0, 2**31)
cohorts = st.lists(st.integers(0, 7), min_size=1, max_size=4).map(
    lambda p: ".".join(["0", *map(str, p)])
)
reals = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
claims = st.builds(Claim, ids, st.none() | st.integers(0, 7), st.none() | reals)
records = st.one_of(
    st.builds(
        CohortRound,
        cohorts,
        st.integers(0, 10**6),
        st.lists(claims, max_size=5).map(tuple),
        st.lists(st.lists(reals, max_size=4).map(tuple), max_size=5).map(tuple),
        st.lists(st.integers(-1, 7), max_size=5).map(tuple),
        st.none() | st.lists(reals, max_size=5).map(tuple),
        st.sampled_from(["too_few", "waiting", "initialised", "relabelled", "frozen"]),
        st.none() | st.dictionaries(st.text(max_size=8), st.booleans(), max_size=4),
        st.booleans(),
    ),
    st.builds(
        Split,
        cohorts,
        st.lists(cohorts, min_size=2, max_size=4).map(tuple),
        st.integers(0, 10**6),
        st.dictionaries(cohorts, st.lists(ids, max_size=5).map(tuple), max_size=4),
    ),
    st.builds(Merge, cohorts),
    st.builds(
        LateRewards,
        cohorts,
        st.lists(ids, max_size=5).map(tuple),
        st.lists(st.lists(reals, max_size=4).map(tuple), max_size=5).map(tuple),
        st.lists(reals, max_size=5).map(tuple),
    ),
)
times = st.floats(0, 1e9, allow_nan=False, allow_infinity=False)


@given(times, records)
def test_every_record_round_trips_through_json_unchanged_and_is_plain(
    t: float, rec: object
) -> None:
    assert is_plain(rec)
    assert CODEC.loads(CODEC.dumps(Entry(t, rec))) == Entry(t, rec)


PARAMS = AuxoParams(
    total_rounds=100,
    p_total=40,
    n_clients=200,
    grad_fraction=0.5,
    feature_dtype="float16",
    feature_norm="center",
    partition_schedule=(10, 20),
)


def _drive(recorder: Entries | None, soft: bool = False) -> list[RoundReport]:
    """Two well-separated groups through the policy: centralized (its own record
    table), or soft state (each round fed the participants' claims, as a Flower server)."""
    rng = np.random.default_rng(4)
    centre = np.where(np.arange(200)[:, None] < 100, 5.0, -5.0)
    policy = AuxoPolicy(PARAMS, seed=4, recorder=recorder)
    claimed: dict[int, dict[str, tuple[int | None, float]]] = {}
    reports: list[RoundReport] = []
    for r in range(30):
        picked = [int(c) for c in rng.choice(200, 40, replace=False)]
        choice = {c: policy.select(c, r) for c in picked}
        for leaf in policy.tree.leaves():
            mine = [c for c in picked if choice[c] == leaf]
            if len(mine) < 2:
                continue
            x = centre[mine] + rng.normal(size=(len(mine), 6))
            if not soft:
                reports.append(policy.observe(leaf, r, mine, x, t=float(r)))
                continue
            asked = [claimed.get(c, {}).get(leaf) for c in mine]
            cs = [
                Claim(c, None, None) if a is None else Claim(c, a[0], a[1])
                for c, a in zip(mine, asked, strict=True)
            ]
            rows = x[:, 3:].astype(np.float16).astype(np.float64)  # grad_fraction 0.5
            rep = policy.observe_claims(leaf, r, cs, rows, t=float(r))
            for c, lab, d in zip(mine, rep.labels, rep.deltas or [0.0] * len(mine), strict=True):
                claimed.setdefault(c, {})[leaf] = (None if lab < 0 else lab, 0.1 + d)
            reports.append(rep)
    return reports


def test_recording_changes_no_decision_and_records_each_one() -> None:
    plain = _drive(None)
    decided = Entries()
    assert _drive(decided) == plain
    rounds = [e.record for e in decided if isinstance(e.record, CohortRound)]
    splits = [e.record for e in decided if isinstance(e.record, Split)]
    assert len(rounds) == len(plain)
    for rec, rep in zip(rounds, plain, strict=True):
        assert (rec.cohort, rec.clients, rec.labels, rec.rewards) == (
            rep.cohort,
            rep.client_ids,
            rep.labels,
            rep.deltas,
        )
        assert len(rec.rows[0]) == 3  # the compressed rows: half of each 6-vector
    assert [(s.parent, s.round) for s in splits] == [
        (rep.split.parent, rep.split.round) for rep in plain if rep.split is not None
    ]
    assert [s.round for s in splits] == [10, 20, 20]  # the root, then both children
    assert all(is_plain(e.record) for e in decided)
    assert [CODEC.loads(CODEC.dumps(e)) for e in decided] == list(decided)


def _soft_log(path: Path) -> Entries:
    decided = Entries()
    _drive(decided, soft=True)
    with open_log(path, log_meta(PARAMS, 4)) as log:
        for t, rec in decided:
            log.record(t, rec)
    return decided


def test_the_replay_command_agrees_with_a_soft_state_log_and_names_a_change(
    tmp_path: Path,
) -> None:
    path = tmp_path / "decisions.jsonl"
    decided = _soft_log(path)
    assert any(isinstance(e.record, Split) for e in decided)
    runner = CliRunner()
    ok = runner.invoke(app, ["auxo", "replay", str(path)])
    assert ok.exit_code == 0, ok.output
    assert f"{len(decided)} decisions replayed" in ok.output

    at = next(i for i, e in enumerate(decided) if isinstance(e.record, Split)) - 1
    changed = altered(decided, at, split=False)
    with open_log(path, log_meta(PARAMS, 4)) as log:
        for t, rec in changed:
            log.record(t, rec)
    bad = runner.invoke(app, ["auxo", "replay", str(path)])
    assert bad.exit_code == 1, bad.output
    assert f"decision {at} differs" in bad.output


def test_bad_logs_and_paths_get_a_clear_error(tmp_path: Path) -> None:
    runner = CliRunner()
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"kairos_decision_log": 1, "system": "auxo", "meta": {}}\n{oops\n{}\n')
    out = runner.invoke(app, ["auxo", "replay", str(broken)])
    assert out.exit_code == 2 and "broken.jsonl:2" in out.output, out.output
    headless = LoadedLog("auxo", {"seed": 1}, [])
    try:
        replay_log(headless)
    except DecisionLogError as e:
        assert "'params'" in str(e)
    else:
        raise AssertionError("a log without params replayed")
    short = tmp_path / "short.jsonl"  # two claims, one update row
    claims = (Claim(1, None, None), Claim(2, None, None))
    with open_log(short, log_meta(PARAMS, 4)) as log:
        log.record(1.0, CohortRound("0", 1, claims, ((0.5, 1.0),), (), None, "", None, False))
    out = runner.invoke(app, ["auxo", "replay", str(short)])
    assert out.exit_code == 2 and "decision 0" in out.output, out.output
    assert "one row per client" in out.output
    out = runner.invoke(app, ["auxo", "run", "--decision-log", str(tmp_path)])  # a folder
    assert out.exit_code == 2 and "decision log" in out.output, out.output
