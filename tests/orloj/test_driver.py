"""One driver: the real server's dispatcher, run in virtual time over the simulated worker,
decides exactly what the simulator decides on the same seed."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policy import Outcome, Request
from kairos.orloj.recording import record
from kairos.orloj.runtime.dispatcher import Completion, Dispatcher
from kairos.orloj.simulator import SimConfig, SimResult, SimWorker, sim_profiler, sim_worker
from kairos.orloj.systems import make_system
from kairos.orloj.workloads import get_workload
from kairos.sim import AsyncioClock, VirtualTimeLoop

MODEL = BatchLatencyModel()


class VirtualWorker:
    """The simulated worker behind the dispatcher's serving interface, in virtual time."""

    def __init__(self, inner: SimWorker) -> None:
        self.inner = inner
        self.shadow_profiling = inner.shadow_profiling
        self.origin = 0.0  # the virtual loop's time 0 is the simulator's time 0
        self.alive = True
        self.outstanding = 0

    @property
    def deliver(self):  # type: ignore[no-untyped-def]
        return self.inner.deliver

    @deliver.setter
    def deliver(self, fn) -> None:  # type: ignore[no-untyped-def]
        self.inner.deliver = fn

    def submit(self, batch, not_before_ms: float = -math.inf) -> None:  # type: ignore[no-untyped-def]
        self.inner.submit(batch, not_before_ms)

    def submit_solo(self, request: Request) -> None:
        self.inner.submit_solo(request)

    def start(self) -> None: ...

    def stop(self) -> None: ...


def _setup(system: str, n: int, seed: int) -> tuple[list[Request], object, dict, SimConfig]:
    rec = record(get_workload("three-modal"), n, seed, MODEL)
    slo = 2.0 * float(rec.meta["p99_ms"])
    rate = float(rec.meta["rate_per_ms"])
    offline = get_workload("three-modal").offline_profile(300, np.random.default_rng(seed))
    config = SimConfig(seed=seed, noise_sigma=0.1, profile_sample_rate=0.2)
    policy = make_system(system, model=MODEL, slo_ms=slo, rate_per_ms=rate)
    return rec.requests(slo), policy, offline, config


def _served(system: str, n: int, seed: int) -> tuple[list[Completion], list[tuple]]:
    """The dispatcher over the simulated worker on a virtual-time asyncio loop."""
    requests, policy, offline, config = _setup(system, n, seed)

    async def main() -> tuple[list[Completion], list[tuple]]:
        loop = asyncio.get_running_loop()
        worker = VirtualWorker(sim_worker(AsyncioClock(loop, origin=0.0), config))
        d = Dispatcher(
            policy,  # type: ignore[arg-type]
            None,
            worker,
            profiler=sim_profiler(config),
            offline=offline,
        )
        await d.start()
        futures: list[asyncio.Future[Completion]] = []
        ids: dict[int, int] = {}

        def arrive(group: Sequence[Request]) -> None:
            for r in group:  # one callback per instant: asyncio does not order equal timers
                fut = d.submit(r.app, r.slo, r.solo_ms)
                futures.append(fut)
                ids[len(futures) - 1] = r.request_id

        for t, group in itertools.groupby(requests, key=lambda r: r.release):
            loop.call_at(t / 1e3, arrive, list(group))
        await asyncio.sleep(requests[-1].release / 1e3 + 1.0)
        done = list(await asyncio.gather(*futures))
        by_served = {c.request_id: ids[i] for i, c in enumerate(done)}
        assert d.driver is not None
        batches = [
            (b.start, b.end, tuple(by_served[i] for i in b.ids), b.rejected)
            for b in sorted(d.driver.stats.records, key=lambda b: (b.start, b.decided))
        ]
        await d.stop()
        return done, batches

    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def _simulated(system: str, n: int, seed: int) -> SimResult:
    from kairos.orloj.simulator import simulate

    requests, policy, offline, config = _setup(system, n, seed)
    return simulate(policy, requests, config, offline)  # type: ignore[arg-type]


@pytest.mark.parametrize("system", ["orloj", "clockwork"])
def test_the_server_in_virtual_time_decides_what_the_simulator_decides(system: str) -> None:
    sim = _simulated(system, 1500, seed=3)
    done, batches = _served(system, 1500, seed=3)
    expected = [(b.start, b.end, b.ids, b.rejected) for b in sim.batches]
    assert len(expected) > 100 and any(len(b[2]) > 1 for b in expected)
    assert batches == expected  # same batches, same members, same start and end times
    served = sorted(done, key=lambda c: c.release_ms)
    by_release = sorted(sim.requests, key=lambda r: (r.release, r.request_id))
    assert [c.outcome for c in served] == [r.outcome for r in by_release]
    assert [c.finish_ms for c in served] == [r.finish for r in by_release]
    outcomes = {r.outcome for r in sim.requests}
    assert Outcome.OK in outcomes and len(outcomes) >= 2  # a bursty run that misses some


def test_the_comparison_can_fail_a_different_seed_decides_differently() -> None:
    sim = _simulated("orloj", 600, seed=3)
    _, batches = _served("orloj", 600, seed=4)
    assert batches != [(b.start, b.end, b.ids, b.rejected) for b in sim.batches]
