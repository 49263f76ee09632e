"""Venn's round lifecycle has two writers, and they decide alike.

The driver (`kairos.venn.driver`) runs it for the simulator and for the single-process
service. The stateless front-ends cannot run an in-memory driver: several of them serve one
round, so each step of the lifecycle is one guarded write the database applies atomically
(`try_assign`, `try_respond`, `judge_deadlines`), in SQLite and again in PostgreSQL's server
functions. Here one script of check-ins, responses and quiet spells drives the driver (on a
`SimClock`) and a store, and every outcome must match: each assignment made or refused, each
response counted or late, each attempt's close (its time, success or abort), each
resubmission, the job's finish. Hypothesis writes the scripts against SQLite; a fixed set of
them runs against a real PostgreSQL server. A store whose deadline verdict is off by one
response, or that reopens an aborted round without the resubmission gap, fails here.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fl.timing import RoundRule
from kairos.sim import EventLoop, SimClock
from kairos.venn.driver import Driver, DriverConfig, Job, Round
from kairos.venn.manager import ResourceManager
from kairos.venn.policies.registry import make_policy
from kairos.venn.service.offers import accepted_atom, public_requirement, requirement_of
from kairos.venn.service.store_api import Assign, JobRow, Respond, RoundRow, VennStore
from kairos.venn.service.stores import open_store
from tests.venn.service.postgres_server import PostgresServer

RESUBMIT_S = 0.1
GAPS = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)  # between events: some land on a deadline exactly
JOB_ID = "job-under-test"


@dataclass(frozen=True)
class Script:
    demand: int
    rounds: int
    deadline_s: float
    min_resp_frac: float
    events: tuple[tuple[float, str, int], ...]  # (gap before it, checkin|respond|wait, pick)


@dataclass
class Outcomes:
    """What a writer decided, in a form both can be read into."""

    inputs: list[tuple[float, str, bool]] = field(default_factory=list)  # made/counted or not
    closes: list[tuple[float, int, bool]] = field(default_factory=list)  # (time, round, success)
    finished: float | None = None


def scripts() -> st.SearchStrategy[Script]:
    event = st.tuples(
        st.sampled_from(GAPS),
        st.sampled_from(("checkin", "checkin", "respond", "respond", "wait")),
        st.integers(0, 50),
    )
    return st.builds(
        Script,
        demand=st.integers(1, 4),
        rounds=st.integers(1, 3),
        deadline_s=st.sampled_from((0.5, 1.0)),
        min_resp_frac=st.sampled_from((0.5, 0.8, 1.0)),
        events=st.lists(event, min_size=1, max_size=40).map(tuple),
    )


def _times(script: Script) -> list[float]:
    t, out = 100.0, []
    for gap, _, _ in script.events:
        t = round(t + gap, 6)
        out.append(t)
    return out


class _Listener:
    """The simulator's way: a job submits its next round the moment one succeeds."""

    def __init__(self, out: Outcomes) -> None:
        self.out = out
        self.driver: Driver | None = None

    def round_opened(self, rnd: Round) -> None:
        pass

    def round_closed(self, rnd: Round, now: float, success: bool) -> None:
        self.out.closes.append((now, rnd.idx, success))

    def next_round(self, job: Job, now: float) -> None:
        assert self.driver is not None and job.round is not None
        self.driver.submit(now, job.job_id, job.round.idx + 1)

    def job_finished(self, job: Job, now: float) -> None:
        self.out.finished = now


def by_driver(script: Script) -> Outcomes:
    out = Outcomes()
    listener = _Listener(out)
    manager = ResourceManager(make_policy("venn"))
    config = DriverConfig(resubmit_s=RESUBMIT_S)
    driver = Driver(manager, SimClock(EventLoop(0.0)), listener, config)
    listener.driver = driver
    thresholds = public_requirement({})
    rule = RoundRule(deadline_s=script.deadline_s, min_resp_frac=script.min_resp_frac)
    times = _times(script)
    requirement = requirement_of(thresholds)
    driver.register(times[0], JOB_ID, requirement, script.demand, script.rounds, rule)
    driver.submit(times[0], JOB_ID, 0)
    atom = accepted_atom(manager, thresholds)
    served: list[tuple[str, int, Round]] = []  # devices assigned and not yet answered
    for i, (now, (_, kind, pick)) in enumerate(zip(times, script.events, strict=True)):
        driver.advance(now)
        if kind == "checkin":
            rnd = driver.checkin(now, f"d{i}", atom, 1.0)
            out.inputs.append((now, kind, rnd is not None))
            if rnd is not None:
                served.append((f"d{i}", rnd.idx, rnd))
        elif kind == "respond" and served:
            device, idx, rnd = served.pop(pick % len(served))
            counted = driver.respond(now, JOB_ID, idx, rnd, 1.0, 0.01, device)
            out.inputs.append((now, kind, counted))
    return out


def by_store(script: Script, store: VennStore) -> Outcomes:
    """The front-ends' guarded writes, with a front-end's tick (judge what is due) before every
    input, as often as it takes: the driver runs every due timer before an input."""
    out = Outcomes()
    times = _times(script)
    job = JobRow(JOB_ID, "j", public_requirement({}), script.demand, script.rounds,
                 script.deadline_s, script.min_resp_frac, times[0], 0, None)  # fmt: skip
    store.register(job, None, "")

    def open_next(idx: int, at: float) -> None:
        row = RoundRow(JOB_ID, idx, job.demand, job.rule.needed(job.demand), at, 0, 0, None)
        assert store.try_open(row)

    def closed(at: float, idx: int, success: bool) -> None:
        out.closes.append((at, idx, success))
        if success and idx + 1 < script.rounds:
            open_next(idx + 1, at)

    open_next(0, times[0])
    served: list[tuple[str, int]] = []
    for i, (now, (_, kind, pick)) in enumerate(zip(times, script.events, strict=True)):
        while judged := store.judge_deadlines(now, RESUBMIT_S):  # a next round may be due too
            for rnd, ok in judged:
                closed(rnd.opened + script.deadline_s, rnd.round_idx, ok)
        if kind == "checkin":
            current = store.open_round(JOB_ID)
            made = current is not None and (
                store.try_assign(JOB_ID, current.round_idx, f"d{i}", now, 1.0) is Assign.ASSIGNED
            )
            out.inputs.append((now, kind, made))
            if made:
                assert current is not None
                served.append((f"d{i}", current.round_idx))
        elif kind == "respond" and served:
            device, idx = served.pop(pick % len(served))
            got = store.try_respond(JOB_ID, idx, device, now)
            assert got is not Respond.UNKNOWN and got is not Respond.DUPLICATE, got
            out.inputs.append((now, kind, got is not Respond.LATE))
            if got in (Respond.COMPLETED, Respond.FINISHED):
                closed(now, idx, True)
    stored = store.job(JOB_ID)
    assert stored is not None
    out.finished = stored.finished
    return out


@settings(max_examples=300, deadline=None)
@given(scripts())
def test_the_sqlite_stores_lifecycle_is_the_drivers(script: Script) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "venn.sqlite"))
        try:
            assert by_store(script, store) == by_driver(script)
        finally:
            store.close()


def _fixed_scripts(n: int, seed: int) -> list[Script]:
    """Scripts drawn the way hypothesis draws them, for a backend too slow to run hundreds."""
    rng = random.Random(seed)
    kinds = ("checkin", "checkin", "respond", "respond", "wait")

    def events() -> tuple[tuple[float, str, int], ...]:
        size = rng.randint(10, 40)
        return tuple((rng.choice(GAPS), rng.choice(kinds), rng.randint(0, 50)) for _ in range(size))

    return [
        Script(
            rng.randint(1, 4),
            rng.randint(1, 3),
            rng.choice((0.5, 1.0)),
            rng.choice((0.5, 0.8, 1.0)),
            events(),
        )
        for _ in range(n)
    ]


def test_the_postgresql_stores_lifecycle_is_the_drivers(postgres: PostgresServer) -> None:
    for i, script in enumerate(_fixed_scripts(12, seed=0)):
        store = open_store(postgres.database(f"lifecycle_{i}"))
        try:
            assert by_store(script, store) == by_driver(script), script
        finally:
            store.close()


def _disagreements(scripts: Sequence[Script]) -> int:
    found = 0
    for script in scripts:
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(str(Path(tmp) / "venn.sqlite"))
            try:
                found += by_store(script, store) != by_driver(script)
            finally:
                store.close()
    return found


def test_a_store_that_decides_otherwise_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from kairos.venn.service import sqlite_guarded

    scripts = _fixed_scripts(40, seed=1)
    assert _disagreements(scripts) == 0
    # a deadline verdict that counts one response more than the round got
    real = sqlite_guarded.verdict
    monkeypatch.setattr(
        sqlite_guarded,
        "verdict",
        lambda job, rnd: real(job, replace(rnd, responses=rnd.responses + 1)),
    )
    assert _disagreements(scripts) > 0
    monkeypatch.undo()
    # an aborted round asked for again at once, without the resubmission gap
    real_retries = sqlite_guarded.retries
    monkeypatch.setattr(
        sqlite_guarded,
        "retries",
        lambda due, deadline_s, _, now: real_retries(due, deadline_s, 0.0, now),
    )
    assert _disagreements(scripts) > 0
