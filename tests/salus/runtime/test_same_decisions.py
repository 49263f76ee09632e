"""One driver (docs/architecture.md, "One driver per system"): the real service decides what the
simulator's driver decides.

The service runs real PyTorch jobs on the wall clock and writes every decision (grants,
admissions, lane changes, exits) to a decision log. The same `Driver` then runs on simulated
time over a worker that replays the real iterations (each ends when the real one ended and
reports the duration the real one measured), with the jobs arriving when the real ones reached
the driver. Same policy, same inputs: `first_divergence` between the log and the replay must be
None. The comparison is shown able to fail: on the log with one grant altered it names that
grant, and a replay under another policy diverges."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.salus.runtime.stack import DEVICE, TINY, ZOO

from kairos.decisions import DecisionLog, Entries, Entry, altered, first_divergence, read_log
from kairos.salus.decisions import CODEC, Admit, Exit, Grant, LaneCreated, LaneDeleted, Launch
from kairos.salus.driver import Driver, IterationRecord
from kairos.salus.policies import make_policy
from kairos.salus.policy import JobState
from kairos.salus.runtime.service import SalusService
from kairos.salus.runtime.settings import ServiceSettings
from kairos.salus.runtime.spec import JobSpec
from kairos.sim import EventLoop, SimClock

# (name, zoo factory, iterations, expected T in s, seconds after the first submission)
JOBS = [
    ("long", "cnn", 200, 30.0, 0.0),  # still running when the others arrive, however fast
    ("mid", "vae", 25, 3.0, 0.15),
    ("short", "cnn", 8, 0.4, 0.3),
    ("late", "superres", 12, 1.0, 0.6),
]
# A replayed decision is made at the simulated instant the real one's cause happened (an
# arrival, an iteration's end); the real one a little later, in the same callback on the loop.
TIME_TOL = 0.05


class ReplayWorker:
    """Ends each iteration when the recorded one ended, with its recorded duration."""

    def __init__(self, clock: SimClock, recorded: list[IterationRecord]) -> None:
        self.clock = clock
        self.left: dict[int, deque[IterationRecord]] = {}
        for rec in sorted(recorded, key=lambda r: r.start):
            self.left.setdefault(rec.job, deque()).append(rec)

    def launch(self, run: Launch, on_done: Callable[[float], None]) -> None:
        rec = self.left[run.grant.job].popleft()
        self.clock.call_at(max(rec.end, self.clock.now()), on_done, rec.duration)

    def release(self, job: JobState) -> None: ...

    def lane_gone(self, lane: int) -> None: ...


def served(policy: str, log_path: Path) -> tuple[SalusService, list[IterationRecord]]:
    """The real service in process on the wall clock, the jobs submitted on a schedule, its
    decisions written to `log_path`; the measured iterations are returned."""
    log = DecisionLog(log_path, CODEC, "salus", {"policy": policy})
    service = SalusService(
        ServiceSettings(policy=policy, torch_threads=1, device=DEVICE), record=True, recorder=log
    )

    async def main() -> list[IterationRecord]:
        await service.start()
        t0 = time.monotonic()
        ids = []
        for name, factory, n, expected, at in JOBS:
            await asyncio.sleep(max(0.0, t0 + at - time.monotonic()))
            options: dict[str, int | float | bool | str] = {} if factory == "vae" else dict(TINY)
            spec = JobSpec(name=name, factory=f"{ZOO}:{factory}", iterations=n,
                           expected_s=expected, options=options)  # fmt: skip
            ids.append(service.submit(spec).id)
        for i in ids:
            await service.wait(i, timeout_s=120)
        assert service.driver is not None and service.driver.timeline is not None
        timeline = list(service.driver.timeline)
        await service.stop()
        return timeline

    try:
        return service, asyncio.run(main())
    finally:
        log.close()


def replayed(service: SalusService, timeline: list[IterationRecord], policy: str) -> Entries:
    """The decisions of the simulator's driver under `policy`, given the real run's inputs."""
    driver = service.driver
    assert driver is not None
    loop = EventLoop()
    clock = SimClock(loop)
    decided = Entries()
    sim = Driver(clock, ReplayWorker(clock, timeline), make_policy(policy), driver.capacity,
                 verify=True, recorder=decided)  # fmt: skip
    for job in sorted(driver.jobs.values(), key=lambda j: j.arrival):

        def arrive(job: JobState = job) -> None:
            sim.arrive(job.name, job.profile, expected=job.expected, iterations=job.iterations,
                       ready=job.iterations or 0, job_id=job.id)  # fmt: skip

        loop.call_at(job.arrival, arrive)
    loop.run()
    return decided


def grants(entries: list[Entry]) -> list[Grant]:
    return [e.record for e in entries if isinstance(e.record, Grant)]


@pytest.mark.parametrize("policy", ["srtf", "fair", "pack", "fifo"])
def test_the_service_decides_what_the_simulators_driver_decides(
    policy: str, tmp_path: Path
) -> None:
    service, real = served(policy, tmp_path / "decisions.jsonl")
    assert all(r.state.value == "done" for r in service.jobs.values())
    assert service.driver is not None
    recorded = read_log(tmp_path / "decisions.jsonl", CODEC, system="salus").entries
    # every iteration after profiling (the profiler's warm-up and measured ones ran before)
    left = sum(j.iterations or 0 for j in service.driver.jobs.values())
    assert len(grants(recorded)) == len(real) == left > 50
    kinds = {type(e.record) for e in recorded}
    assert {Grant, Admit, Exit, LaneCreated, LaneDeleted} <= kinds

    replay = replayed(service, real, policy)
    divergence = first_divergence(recorded, replay, time_tol=TIME_TOL)
    assert divergence is None, str(divergence)
    assert sum(g.switch for g in grants(replay)) == service.driver.switches

    # the runs were worth comparing: FIFO ran each job in one stretch; the others interleaved
    # (a job preempted and resumed under SRTF, alternation under FAIR, lanes side by side)
    order = [g.job for g in grants(recorded)]
    stretches = [a for a, b in zip(order, [*order[1:], -1], strict=True) if a != b]
    if policy == "fifo":
        assert stretches == sorted(set(order))
    else:
        assert len(stretches) > len(set(order))

    # the comparison notices one altered decision, where it was altered
    at = next(i for i, e in enumerate(recorded) if isinstance(e.record, Grant) and i > 20)
    other = next(g.job for g in grants(recorded) if g.job != recorded[at].record.job)
    mutated = altered(recorded, at, job=other)
    found = first_divergence(mutated, replay, time_tol=TIME_TOL)
    assert found is not None and found.index == at, str(found)


def test_the_comparison_can_fail_another_policy_decides_differently(tmp_path: Path) -> None:
    service, real = served("srtf", tmp_path / "decisions.jsonl")
    recorded = read_log(tmp_path / "decisions.jsonl", CODEC, system="salus").entries
    divergence = first_divergence(recorded, replayed(service, real, "fair"), time_tol=TIME_TOL)
    assert divergence is not None
