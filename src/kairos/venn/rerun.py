"""A recorded Venn run's inputs, fed again through the simulator's driver on a `SimClock`.

A decision log (`kairos.venn.decisions`) holds the inputs the driver was given, at the times it
was given them: job arrivals, round submissions, device check-ins (with the atom the device
proved and the jobs it already served), device results (with the response time measured).
`rerun` schedules each at its recorded time, runs the driver over them on simulated time, and
returns what that driver recorded: for the same policy the same decisions, at the same times,
or the recorded run and the simulator do not decide alike. Its timers (deadlines,
resubmissions) run before inputs recorded at the same instant, the order the service keeps.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from kairos.decisions import DecisionLogError, Entries, LoadedLog
from kairos.fl.requirements import requirement_from
from kairos.fl.timing import RoundRule
from kairos.sim import EventLoop, SimClock
from kairos.venn import decisions as rec
from kairos.venn.driver import Driver, DriverConfig, Job, Round
from kairos.venn.manager import ResourceManager
from kairos.venn.policies.registry import make_policy

INPUT_PRIORITY = 1  # after the driver's timers (priority 0) due at the same instant


class _Impossible(Exception):
    """A recorded job submitted a round the replay still has open (or finished)."""


class _Quiet:
    """A listener that keeps nothing: a replayed job's next round comes from the log."""

    def round_opened(self, rnd: Round) -> None: ...

    def round_closed(self, rnd: Round, now: float, success: bool) -> None: ...

    def next_round(self, job: Job, now: float) -> None: ...

    def job_finished(self, job: Job, now: float) -> None: ...


def rerun(log: LoadedLog, policy: str | None = None) -> Entries:
    """The entries the driver records when fed `log`'s inputs (under `policy`, by default the
    recorded one). A log whose run began from a store with jobs in it is refused: their
    state before the log began is not in it."""
    meta = log.meta
    if meta.get("restored_jobs"):
        raise DecisionLogError(
            f"this decision log began after a restart with {meta['restored_jobs']} jobs already "
            "in the store; only a run from an empty store can be replayed"
        )
    try:
        name = policy or str(meta["policy"])
        manager = ResourceManager(make_policy(name), replan_period_s=meta["replan_period_s"])
        config = DriverConfig(**meta["driver"])
    except (KeyError, TypeError, ValueError) as e:
        raise DecisionLogError(f"the log's header lacks what a replay needs: {e}") from None
    loop = EventLoop(start=log.entries[0].t if log.entries else 0.0)
    out = Entries()
    driver = Driver(manager, SimClock(loop), _Quiet(), config, out)
    served: dict[tuple[str, int, str], Round] = {}

    def apply(r: Any) -> None:
        now = loop.now
        if isinstance(r, rec.JobArrived):
            req = requirement_from(r.requirement, r.thresholds)
            rule = RoundRule(deadline_s=r.deadline_s, min_resp_frac=r.min_resp_frac,
                             overcommit=r.overcommit)  # fmt: skip
            driver.register(now, r.job, req, r.participants, r.rounds, rule)
        elif isinstance(r, rec.RoundOpened):
            if r.job not in driver.jobs:
                raise ValueError(f"job {r.job!r} submits a round before it arrived")
            if driver.jobs[r.job].busy:
                raise _Impossible  # this replay decided otherwise: the log's inputs no longer fit
            driver.submit(now, r.job, r.round, r.participants)
        elif isinstance(r, rec.CheckedIn):
            rnd = driver.checkin(now, r.device, r.atom, r.capability, r.skip)
            if rnd is not None:
                served[(rnd.job.job_id, rnd.idx, r.device)] = rnd
        else:
            rnd = served.get((r.job, r.round, r.device))
            driver.respond(now, r.job, r.round, rnd, r.capability, r.response_s, r.device)

    def feed(index: int, r: Any) -> None:
        try:
            apply(r)
        except ValueError as e:  # a log no driver could have written
            raise DecisionLogError(f"entry {index} ({r!r}) cannot be replayed: {e}") from None

    last = -math.inf
    for index, entry in enumerate(log.entries):
        if entry.t < last:
            raise DecisionLogError(f"entry {index} goes back in time ({entry.t} < {last})")
        last = entry.t
        if isinstance(entry.record, rec.INPUTS):
            loop.call_at(entry.t, feed, index, entry.record, priority=INPUT_PRIORITY)
    if log.entries:  # to the log's end, not on: a starved round would retry forever
        # on _Impossible, what was decided so far: it differs from the log before there
        with contextlib.suppress(_Impossible):
            loop.run(until=log.entries[-1].t)
    return out
