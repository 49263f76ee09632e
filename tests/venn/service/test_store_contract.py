"""One store contract, run against both backends (the SQLite file and a real PostgreSQL server
started for the session): schema version, idempotent registration, and the guarded writes the
front-ends rely on (a round opened once, a device assigned once per round and never past the
demand, a response counted once, the deadline verdict applied once)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kairos.venn.service.pg_schema import PG_SCHEMA_VERSION
from kairos.venn.service.schema import SCHEMA_VERSION
from kairos.venn.service.store_api import (
    Assign,
    JobRow,
    KeyReusedError,
    NonFiniteError,
    Respond,
    RoundRow,
    VennStore,
)
from kairos.venn.service.stores import is_postgres, open_store


@pytest.fixture()
def store(store_spec: Callable[[], str]) -> Iterator[VennStore]:
    s = open_store(store_spec())
    yield s
    s.close()


def job(job_id: str = "j1", demand: int = 3, rounds: int = 2, deadline_s: float = 10.0) -> JobRow:
    return JobRow(job_id, "kb", {"min_ram_gb": 4.0}, demand, rounds, deadline_s, 0.6, 100.0,
                  0, None)  # fmt: skip


def first_round(j: JobRow, idx: int = 0, opened: float = 100.0) -> RoundRow:
    return RoundRow(j.job_id, idx, j.demand, j.rule.needed(j.demand), opened, 0, 0, None)


def test_fresh_store_is_at_the_current_version_and_reopens_with_its_rows(
    store_spec: Callable[[], str],
) -> None:
    spec = store_spec()
    current = PG_SCHEMA_VERSION if is_postgres(spec) else SCHEMA_VERSION
    s = open_store(spec)
    assert s.version == current
    s.register(job(), None, "")
    s.close()
    again = open_store(spec)  # no step runs twice: the rows stay
    assert again.version == current
    assert [j.job_id for j in again.jobs()] == ["j1"]
    again.close()


def test_registration_is_idempotent_under_a_key(store: VennStore) -> None:
    made, replayed = store.register(job("a"), "key-1", "body-1")
    assert (made.job_id, replayed) == ("a", False)
    # a retry with the same key and body gets the first job, not the second id it carried
    again, replayed = store.register(job("b"), "key-1", "body-1")
    assert (again.job_id, replayed) == ("a", True)
    with pytest.raises(KeyReusedError, match="key-1"):
        store.register(job("c"), "key-1", "another body")
    assert [j.job_id for j in store.jobs()] == ["a"]
    store.register(job("d"), None, "")
    assert [j.job_id for j in store.jobs()] == ["a", "d"]
    assert store.registration("key-1") == ("body-1", "a")


def test_non_finite_numbers_are_refused_before_anything_is_written(store: VennStore) -> None:
    bad = job("nan")
    bad.requirement["min_cpu_ghz"] = float("nan")
    with pytest.raises(NonFiniteError, match=r"requirement\.min_cpu_ghz"):
        store.register(bad, "k", "f")
    assert store.jobs() == [] and store.registration("k") is None


def test_a_round_opens_once_and_only_in_order(store: VennStore) -> None:
    j, _ = store.register(job(), None, "")
    assert not store.try_open(first_round(j, idx=1))  # out of order
    assert store.try_open(first_round(j))
    assert not store.try_open(first_round(j))  # a second front-end posting the same round
    assert store.open_round(j.job_id) == first_round(j)
    assert [(o.job.job_id, o.round) for o in store.snapshot()] == [("j1", first_round(j))]


def test_assignment_guards_demand_and_one_assignment_per_device(store: VennStore) -> None:
    j, _ = store.register(job(demand=2), None, "")
    assert store.try_assign("j1", 0, "d0", 101.0, 1.0) is Assign.CLOSED  # no round yet
    store.try_open(first_round(j))
    assert store.try_assign("j1", 0, "d0", 101.0, 1.0) is Assign.ASSIGNED
    assert store.try_assign("j1", 0, "d0", 101.5, 1.0) is Assign.SERVING
    assert store.try_assign("j1", 0, "d1", 102.0, 2.0) is Assign.ASSIGNED
    assert store.try_assign("j1", 0, "d2", 102.0, 1.0) is Assign.FULL
    rnd = store.open_round("j1")
    assert rnd is not None and rnd.dispatched == 2
    a = store.assignment("j1", 0, "d1")
    assert a is not None and a["assigned"] == 102.0 and a["capability"] == 2.0


def test_responses_count_once_and_close_the_round_at_needed(store: VennStore) -> None:
    j, _ = store.register(job(demand=3, rounds=2), None, "")  # needed = ceil(0.6 * 3) = 2
    store.try_open(first_round(j))
    for d in ("d0", "d1", "d2"):
        store.try_assign("j1", 0, d, 101.0, 1.0)
    assert store.try_respond("j1", 0, "nobody", 102.0) is Respond.UNKNOWN
    assert store.try_respond("j1", 0, "d0", 102.0) is Respond.COUNTED
    assert store.try_respond("j1", 0, "d0", 102.1) is Respond.DUPLICATE
    assert store.try_respond("j1", 0, "d1", 103.0) is Respond.COMPLETED
    assert store.try_respond("j1", 0, "d2", 104.0) is Respond.LATE  # the round had closed
    assert store.open_round("j1") is None
    done = store.job("j1")
    assert done is not None and (done.rounds_done, done.finished) == (1, None)
    assert store.assignment("j1", 0, "d2")["responded"] is None  # type: ignore[index]
    # the last round finishes the job
    store.try_open(first_round(j, idx=1, opened=105.0))
    store.try_assign("j1", 1, "d0", 105.0, 1.0)
    store.try_assign("j1", 1, "d1", 105.0, 1.0)
    store.try_respond("j1", 1, "d0", 106.0)
    assert store.try_respond("j1", 1, "d1", 107.0) is Respond.FINISHED
    done = store.job("j1")
    assert done is not None and (done.rounds_done, done.finished) == (2, 107.0)
    assert store.snapshot() == [] and store.jobs(active_only=True) == []


def test_a_round_closes_no_earlier_than_a_response_it_counted(store: VennStore) -> None:
    """Two front-ends read their clocks before queueing on the round's lock: the closing
    response can carry an earlier clock than one already counted. The close, and the
    response that made it, are stamped at the latest response, never before it."""
    j, _ = store.register(job(demand=3, rounds=1), None, "")  # needed 2
    store.try_open(first_round(j))
    for d in ("d0", "d1"):
        store.try_assign("j1", 0, d, 101.0, 1.0)
    assert store.try_respond("j1", 0, "d0", 103.0) is Respond.COUNTED
    assert store.try_respond("j1", 0, "d1", 102.5) is Respond.FINISHED
    stamps = [store.assignment("j1", 0, d)["responded"] for d in ("d0", "d1")]  # type: ignore[index]
    done = store.job("j1")  # its one round's close is the job's finish
    assert stamps == [103.0, 103.0]
    assert done is not None and done.finished == 103.0


def test_deadline_aborts_and_reopens_or_succeeds_by_the_round_rule(store: VennStore) -> None:
    j, _ = store.register(job(demand=3, rounds=2, deadline_s=10.0), None, "")
    store.try_open(first_round(j))
    store.try_assign("j1", 0, "d0", 101.0, 1.0)
    store.try_respond("j1", 0, "d0", 102.0)
    assert store.judge_deadlines(109.9, resubmit_s=0.5) == []  # not yet due
    # one of three dispatched: the rule aborts; the retry opens 0.5 s after the deadline
    judged = store.judge_deadlines(111.0, resubmit_s=0.5)
    assert [(r.round_idx, r.dispatched, r.responses, ok) for r, ok in judged] == [(0, 1, 1, False)]
    assert store.open_round("j1") == RoundRow("j1", 0, 3, 2, 110.5, 0, 0, None)
    assert store.judge_deadlines(111.0, resubmit_s=0.5) == []  # judged once
    assert store.try_assign("j1", 0, "d1", 110.2, 1.0) is Assign.CLOSED  # not reopened yet
    assert store.try_assign("j1", 0, "d0", 111.0, 1.0) is Assign.SERVING  # served the abort
    for d in ("d1", "d2", "d3"):
        assert store.try_assign("j1", 0, d, 111.0, 1.0) is Assign.ASSIGNED
    assert store.try_respond("j1", 0, "d1", 112.0) is Respond.COUNTED
    # at the retry's deadline 3 of 3 were dispatched but 1 of 3 answered: abort again
    assert [ok for _, ok in store.judge_deadlines(121.0, 0.5)] == [False]
    for d in ("d4", "d5", "d6"):
        store.try_assign("j1", 0, d, 121.0, 1.0)
    store.try_respond("j1", 0, "d4", 122.0)
    store.try_respond("j1", 0, "d5", 122.0)  # 2 of 3: needed reached, closed at once
    assert store.open_round("j1") is None
    done = store.job("j1")
    assert done is not None and done.rounds_done == 1


def test_deadline_success_closes_at_the_due_time(store: VennStore) -> None:
    j, _ = store.register(job(demand=5, rounds=1, deadline_s=10.0), None, "")  # needed 3
    store.try_open(first_round(j))
    for d in ("d0", "d1", "d2"):
        store.try_assign("j1", 0, d, 101.0, 1.0)
    store.try_respond("j1", 0, "d0", 102.0)
    store.try_respond("j1", 0, "d1", 102.0)
    # 3 of 5 dispatched (at least 0.6), 2 of those 3 answered (at least 0.6): the driver's
    # rule passes it at the deadline though it never reached `needed`
    assert j.rule.succeeds_at_deadline(5, 3, 2)
    assert [ok for _, ok in store.judge_deadlines(200.0, 0.1)] == [True]
    done = store.job("j1")
    assert done is not None and (done.rounds_done, done.finished) == (1, 110.0)
    assert store.try_respond("j1", 0, "d2", 201.0) is Respond.LATE


def test_an_attempt_is_over_at_its_deadline_before_it_is_judged(store: VennStore) -> None:
    j, _ = store.register(job(demand=3, deadline_s=10.0), None, "")
    store.try_open(first_round(j))  # opened at 100: due at 110
    store.try_assign("j1", 0, "d0", 109.0, 1.0)
    # the driver runs a deadline before an input at the same instant: so does the store
    assert store.try_assign("j1", 0, "d1", 110.0, 1.0) is Assign.CLOSED
    assert store.try_respond("j1", 0, "d0", 110.0) is Respond.LATE
    rnd = store.open_round("j1")
    assert rnd is not None and (rnd.dispatched, rnd.responses) == (1, 0)


def test_retries_that_passed_their_own_deadlines_abort_empty_in_one_judgement(
    store: VennStore,
) -> None:
    j, _ = store.register(job(demand=3, deadline_s=10.0), None, "")
    store.try_open(first_round(j))  # due at 110; retries open at 110.5, 121, 131.5, ...
    store.try_assign("j1", 0, "d0", 101.0, 1.0)
    # judged first at 135 (a front-end paused for 25 s): the attempt it held and the two
    # retries whose deadlines (120.5, 131) passed unreached abort; the third is open
    judged = store.judge_deadlines(135.0, resubmit_s=0.5)
    assert [(r.opened, r.dispatched, ok) for r, ok in judged] == [
        (100.0, 1, False),
        (110.5, 0, False),
        (121.0, 0, False),
    ]
    assert store.open_round("j1") == RoundRow("j1", 0, 3, 2, 131.5, 0, 0, None)
    assert store.try_assign("j1", 0, "d1", 135.0, 1.0) is Assign.ASSIGNED
    assert store.judge_deadlines(135.0, resubmit_s=0.5) == []
