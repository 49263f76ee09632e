"""Venn's round lifecycle (`kairos.venn.driver`) on a SimClock: the deadline verdict both ways,
the retry after an abort, stragglers, and `advance` (how the service runs late timers)."""

from __future__ import annotations

from kairos.decisions import Entries
from kairos.fl.requirements import Requirement
from kairos.fl.timing import RoundRule
from kairos.sim import EventLoop, SimClock
from kairos.venn import decisions as rec
from kairos.venn.driver import Driver, DriverConfig, Job, Round
from kairos.venn.manager import ResourceManager
from kairos.venn.policies import make_policy

ANY = Requirement(name="any")
RULE = RoundRule(deadline_s=10.0, min_resp_frac=0.5)  # 4 participants: 2 responses needed


class Heard:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, float]] = []

    def round_opened(self, rnd: Round) -> None:
        self.events.append(("opened", rnd.job.job_id, rnd.submit))

    def round_closed(self, rnd: Round, now: float, success: bool) -> None:
        self.events.append(("success" if success else "abort", rnd.job.job_id, now))

    def next_round(self, job: Job, now: float) -> None:
        self.events.append(("next", job.job_id, now))

    def job_finished(self, job: Job, now: float) -> None:
        self.events.append(("finished", job.job_id, now))


def _driver(rounds: int = 2) -> tuple[EventLoop, Driver, Heard, Entries]:
    loop, heard, log = EventLoop(), Heard(), Entries()
    manager = ResourceManager(make_policy("fifo"), [ANY])
    driver = Driver(manager, SimClock(loop), heard, DriverConfig(resubmit_s=0.5), log)
    driver.register(0.0, "j", ANY, 4, rounds, RULE)
    driver.submit(0.0, "j", 0)
    return loop, driver, heard, log


def test_a_short_round_succeeds_at_its_deadline_when_the_verdict_passes() -> None:
    loop, driver, heard, log = _driver()
    a = driver.checkin(1.0, "d1", 1, 1.0)
    b = driver.checkin(2.0, "d2", 1, 1.0)
    assert a is not None and a is b and a.dispatched == 2
    assert driver.respond(3.0, "j", 0, a, 1.0, 2.0, "d1")  # 1 of 2 needed: stays open
    loop.run(until=20.0)
    # 2 of 4 dispatched (>= 0.5 * 4) and 1 of those 2 answered (>= 0.5 * 2): a success
    assert heard.events == [("opened", "j", 0.0), ("success", "j", 10.0), ("next", "j", 10.0)]
    assert log[-1] == (10.0, rec.RoundClosed("j", 0, True, 2, 1))
    assert not driver.respond(12.0, "j", 0, a, 1.0, 11.0, "d2")  # a straggler


def test_a_failed_verdict_aborts_and_the_round_is_asked_for_again() -> None:
    loop, driver, heard, log = _driver()
    old = driver.checkin(1.0, "d1", 1, 1.0)  # 1 of 4 dispatched: < 0.5 * 4
    loop.run(until=10.0)
    assert heard.events[-1] == ("abort", "j", 10.0)
    assert driver.checkin(10.2, "d2", 1, 1.0) is None  # nothing wanted while it waits
    loop.run(until=10.5)
    retry = driver.jobs["j"].round
    assert retry is not None and retry is not old and retry.open and retry.submit == 10.5
    assert retry.idx == 0 and retry.dispatched == 0 and retry.demand == 4
    assert [e.record for e in log if isinstance(e.record, rec.Resubmitted)] == [
        rec.Resubmitted("j", 0, 4)
    ]
    assert not driver.respond(11.0, "j", 0, old, 1.0, 10.0, "d1")  # the aborted attempt's
    assert retry.responses == 0
    loop.run(until=20.5)  # the retry's own deadline counts from its submission
    assert heard.events[-1] == ("abort", "j", 20.5)


def test_enough_responses_close_at_once_and_the_last_round_finishes_the_job() -> None:
    loop, driver, heard, log = _driver(rounds=1)
    rnd = driver.checkin(1.0, "d1", 1, 1.0)
    driver.checkin(1.0, "d2", 1, 1.0)
    driver.respond(4.0, "j", 0, rnd, 1.0, 3.0, "d1")
    driver.respond(5.0, "j", 0, rnd, 1.0, 4.0, "d2")
    assert heard.events[1:] == [("success", "j", 5.0), ("finished", "j", 5.0)]
    assert log[-1] == (5.0, rec.JobFinished("j", 1))
    assert loop.run(until=100.0) == 0  # the deadline was cancelled: nothing fires


def test_advance_runs_due_timers_at_their_times_before_a_late_input() -> None:
    """The service's clock: nothing fires by itself here (the loop is never run), as when an
    asyncio timer is late; the next request's `advance` runs what is due, in order."""
    loop, driver, heard, _ = _driver()
    driver.checkin(1.0, "d1", 1, 1.0)
    now = driver.advance(30.0)  # deadline 10 (abort), retry 10.5, its deadline 20.5 (abort)
    assert now == 30.0
    assert [e for e in heard.events if e[0] != "opened"] == [
        ("abort", "j", 10.0),
        ("abort", "j", 20.5),
    ]
    assert driver.jobs["j"].resubmit_at == 21.0 and driver.advance(20.9) == 30.0  # never back
    assert driver.advance(30.0) == 30.0
    retry = driver.jobs["j"].round
    assert retry is not None and retry.open and retry.submit == 21.0
    # the handles advance cancelled never fire: the loop's first event is the retry's deadline
    assert loop.run(until=30.9) == 0 and loop.run(until=31.0) == 1
    assert heard.events[-1] == ("abort", "j", 31.0)


def test_a_restored_round_that_had_its_responses_closes_at_once() -> None:
    loop, heard = EventLoop(start=50.0), Heard()
    driver = Driver(ResourceManager(make_policy("fifo"), [ANY]), SimClock(loop), heard)
    driver.register(0.0, "j", ANY, 4, 1, RULE)
    driver.restore(50.0, "j", 0, 4, 45.0, 3, 2)
    assert heard.events == [("success", "j", 50.0), ("finished", "j", 50.0)]
    driver.register(0.0, "k", ANY, 4, 1, RULE)
    kept = driver.restore(50.0, "k", 0, 4, 45.0, 3, 1)
    assert kept.open and kept.due == 55.0 and driver.manager.open_requests() == 1
    # a round the file says is to be asked for again at 50.1 (it aborted just before)
    driver.register(0.0, "r", ANY, 4, 1, RULE)
    waiting = driver.restore(50.0, "r", 0, 4, 50.1, 0, 0)
    assert not waiting.open and driver.jobs["r"].busy and driver.manager.open_requests() == 1
    loop.run(until=50.1)
    retry = driver.jobs["r"].round
    assert retry is not None and retry.open and retry.submit == 50.1
    assert driver.manager.open_requests() == 2
