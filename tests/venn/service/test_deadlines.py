"""The service's round rule is the simulator's (`kairos.venn.driver`): at a deadline a short
round succeeds by its `RoundRule` verdict or aborts and is asked for again; the store follows,
across a restart too. The service runs here on a `SimClock` the test moves."""

from __future__ import annotations

from pathlib import Path

from kairos.sim import EventLoop, SimClock
from kairos.venn.service.core import VennService
from kairos.venn.service.store import RoundRow, Store


def _service(path: Path, loop: EventLoop) -> VennService:
    return VennService(Store(path), policy="fifo", clock=SimClock(loop))


def test_a_short_round_passes_the_verdict_at_its_deadline(tmp_path: Path) -> None:
    loop = EventLoop(start=100.0)
    s = _service(tmp_path / "v.sqlite", loop)
    job, _ = s.register("j", {}, demand=4, rounds=2, deadline_s=10.0, min_resp_frac=0.5)
    s.post_round(job.job_id, 0, None)
    for dev in ("d1", "d2"):
        assert s.accept(f"{job.job_id}.r0", dev, 1.0)["assigned"]
    assert s.result("d1", job.job_id, 0)["round_complete"] is False  # 1 of 2 needed
    loop.run(until=110.0)
    # 2 of 4 dispatched, 1 of those 2 answered: the verdict (0.5) passes
    assert s.describe(s.job(job.job_id))["state"] == "waiting"
    assert s.job(job.job_id).rounds_done == 1 and s.store.open_round(job.job_id) is None
    late = s.result("d2", job.job_id, 0)
    assert late == {"accepted": False, "reason": "the round had already completed"}
    s.post_round(job.job_id, 1, None)  # the job posts its next round itself
    s.store.close()


def test_a_failed_verdict_aborts_and_asks_other_devices_again(tmp_path: Path) -> None:
    loop, path = EventLoop(start=100.0), tmp_path / "v.sqlite"
    s = _service(path, loop)
    job, _ = s.register("j", {}, demand=4, rounds=1, deadline_s=10.0, min_resp_frac=0.5)
    jid = job.job_id
    s.post_round(jid, 0, None)
    assert s.accept(f"{jid}.r0", "d1", 1.0)["assigned"]  # 1 of 4: < 0.5 * 4
    loop.run(until=110.0)
    assert s.counters.aborted == 1 and s.offers() == []  # asked for again 0.1 s later
    assert s.store.open_round(jid) == RoundRow(jid, 0, 4, 2, 110.1, 0, 0, None)
    loop.run(until=111.0)
    assert [o["offer_id"] for o in s.offers()] == [f"{jid}.r0"]
    # the device served the aborted attempt: its result is a straggler's, and it is not
    # asked again for this round
    assert s.result("d1", jid, 0)["accepted"] is False
    assert s.accept(f"{jid}.r0", "d1", 1.0)["assigned"] is False
    assert s.accept(f"{jid}.r0", "d2", 1.0)["assigned"] is True
    # a restart resumes the retry where the file left it: d2 dispatched, deadline 120.1
    s.store.close()
    s = _service(path, loop := EventLoop(start=112.0))
    assert s.rounds[jid] == RoundRow(jid, 0, 4, 2, 110.1, 1, 0, None)
    loop.run(until=120.0)
    assert s.counters.aborted == 0
    loop.run(until=120.1)
    assert s.counters.aborted == 1  # 1 of 4 again
    s.store.close()
