"""One driver (issue 12's rule, issue 14): the real service decides what the simulator's driver
decides. The service runs real PyTorch jobs on the wall clock and records every iteration; the
same `Driver` then runs on simulated time over a worker that replays those iterations (each
ends when the real one ended and reports the duration the real one measured), with the jobs
arriving when the real ones were admitted to the queue. Same policy, same events: the same
iterations must run in the same lanes in the same order. Replaying under another policy must
not, or the comparison could not fail."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

import pytest
from tests.salus.runtime.stack import DEVICE, TINY, ZOO

from kairos.salus.driver import Driver, IterationRecord, Launch
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


class ReplayWorker:
    """Ends each iteration when the recorded one ended, with its recorded duration."""

    def __init__(self, clock: SimClock, recorded: list[IterationRecord]) -> None:
        self.clock = clock
        self.left: dict[int, deque[IterationRecord]] = {}
        for rec in sorted(recorded, key=lambda r: r.start):
            self.left.setdefault(rec.job, deque()).append(rec)

    def launch(self, run: Launch, on_done: Callable[[float], None]) -> None:
        rec = self.left[run.job.id].popleft()
        self.clock.call_at(max(rec.end, self.clock.now()), on_done, rec.duration)

    def release(self, job: JobState) -> None: ...

    def lane_gone(self, lane: int) -> None: ...


def served(policy: str) -> tuple[SalusService, list[IterationRecord]]:
    """The real service in process on the wall clock, the jobs submitted on a schedule."""
    service = SalusService(
        ServiceSettings(policy=policy, torch_threads=1, device=DEVICE), record=True
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

    return service, asyncio.run(main())


def replayed(service: SalusService, timeline: list[IterationRecord], policy: str) -> Driver:
    driver = service.driver
    assert driver is not None
    loop = EventLoop()
    clock = SimClock(loop)
    sim = Driver(clock, ReplayWorker(clock, timeline), make_policy(policy), driver.capacity,
                 verify=True, record=True)  # fmt: skip
    for job in sorted(driver.jobs.values(), key=lambda j: j.arrival):

        def arrive(job: JobState = job) -> None:
            sim.arrive(job.name, job.profile, expected=job.expected, iterations=job.iterations,
                       ready=job.iterations or 0, job_id=job.id)  # fmt: skip

        loop.call_at(job.arrival, arrive)
    loop.run()
    return sim


def decisions(timeline: list[IterationRecord]) -> list[tuple[int, int, float]]:
    """(job, lane, end) of every iteration in the order they started."""
    return [(r.job, r.lane, r.end) for r in sorted(timeline, key=lambda r: (r.start, r.lane))]


@pytest.mark.parametrize("policy", ["srtf", "fair", "pack", "fifo"])
def test_the_service_decides_what_the_simulators_driver_decides(policy: str) -> None:
    service, real = served(policy)
    assert all(r.state.value == "done" for r in service.jobs.values())
    assert service.driver is not None
    # every iteration after profiling (the profiler's warm-up and measured ones ran before)
    assert len(real) == sum(j.iterations or 0 for j in service.driver.jobs.values()) > 50
    sim = replayed(service, real, policy)
    assert sim.timeline is not None
    assert decisions(sim.timeline) == decisions(real)
    assert sim.switches == service.driver.switches
    # the runs were worth comparing: FIFO ran each job in one stretch; the others interleaved
    # (a job preempted and resumed under SRTF, alternation under FAIR, lanes side by side)
    order = [r.job for r in sorted(real, key=lambda r: r.start)]
    stretches = [a for a, b in zip(order, [*order[1:], -1], strict=True) if a != b]
    if policy == "fifo":
        assert stretches == sorted(set(order))
    else:
        assert len(stretches) > len(set(order))


def test_the_comparison_can_fail_another_policy_decides_differently() -> None:
    service, real = served("srtf")
    sim = replayed(service, real, "fair")
    assert sim.timeline is not None
    assert decisions(sim.timeline) != decisions(real)
