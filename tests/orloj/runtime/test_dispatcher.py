"""The dispatcher drives unchanged policy objects in real time; the profiler feeds Orloj."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from kairos.orloj.policies.orloj import OrlojPolicy
from kairos.orloj.policy import Batch, Outcome, Request
from kairos.orloj.profiler import Profiler
from kairos.orloj.runtime.calibrate import Calibration, CalibrationConfig
from kairos.orloj.runtime.dispatcher import Completion, Dispatcher, Overloaded
from kairos.orloj.runtime.executor import ThreadExecutor
from kairos.orloj.runtime.models import EarlyExitCNN
from kairos.orloj.systems import make_system

SIZES = (1, 2, 4)
APPS = {"easy": ("exit1",), "hard": ("exit4",)}


@pytest.fixture(scope="module")
def model() -> EarlyExitCNN:
    return EarlyExitCNN(stage_blocks=(2, 4, 4, 6))


@pytest.fixture(scope="module")
def cal(model: EarlyExitCNN) -> Calibration:
    worker = ThreadExecutor(model, warm_sizes=SIZES)
    return worker.calibrate(CalibrationConfig(batch_sizes=SIZES, solo_runs=5, batch_reps=1))


def _dispatcher(model: EarlyExitCNN, cal: Calibration, policy: object, **kw: object) -> Dispatcher:
    return Dispatcher(
        policy,  # type: ignore[arg-type]
        model,
        ThreadExecutor(model, warm_sizes=SIZES),
        offline=cal.app_profile(APPS, 200),
        predict=cal.predict(model),
        **kw,  # type: ignore[arg-type]
    )


async def _serve(
    d: Dispatcher, n: int, slo_ms: float, gap_s: float, apps: tuple[str, ...] = ("hard", "easy")
) -> list[Completion]:
    await d.start()
    try:
        assert d.model is not None
        futs = []
        for i in range(n):
            app = apps[i % len(apps)]
            x = d.model.parse({"exit": 1 if app == "easy" else 4, "seed": i})
            futs.append(d.submit(app, slo_ms, x))
            await asyncio.sleep(gap_s)
        return list(await asyncio.gather(*futs))
    finally:
        await d.stop()


def test_orloj_serves_every_request_once_and_the_profiler_updates_its_histograms(
    model: EarlyExitCNN, cal: Calibration
) -> None:
    policy = OrlojPolicy(batch_model=cal.batch_model, sizes=SIZES)
    profiler = Profiler(sample_rate=1.0, period_ms=200.0, seed=1)
    d = _dispatcher(model, cal, policy, profiler=profiler)
    before = len(policy.windows.samples("hard"))
    version = policy.store.version
    slo = 20 * cal.solo_median("exit4")
    done = asyncio.run(_serve(d, 40, slo, gap_s=0.03))
    ids = sorted(c.request_id for c in done)
    assert ids == list(range(ids[0], ids[0] + 40))  # one each, unique in the process
    assert all(c.outcome is Outcome.OK and c.output is not None for c in done)
    assert all(
        c.output is not None and c.output["exit"] == (1 if c.app == "easy" else 4) for c in done
    )
    assert all(1 <= c.batch_size <= 4 and c.queue_ms >= 0 for c in done)
    # the warm start arrived through on_profile, then measured solo latencies did
    stats = profiler.stats
    assert stats.snapshots >= 1 and 0 < stats.samples <= stats.free + stats.reruns
    assert policy.store.version > version
    assert len(policy.windows.samples("hard")) > before or len(policy.windows.samples("easy")) > 200
    assert d.stats.outcomes["ok"] == 40 and d.stats.batches >= 1
    assert 0.3 < d.stats.busy_ms / d.stats.predicted_ms < 3.0  # drift: same order as calibrated


def test_a_borrowed_profiler_hands_what_it_measured_to_the_policy_at_start(
    model: EarlyExitCNN, cal: Calibration
) -> None:
    """A long-running server's policy and profiler outlive one dispatcher: samples measured
    after the last snapshot reach the policy when the next dispatcher starts."""
    policy = OrlojPolicy(
        batch_model=cal.batch_model, sizes=SIZES, profile=cal.app_profile(APPS, 50)
    )
    profiler = Profiler(period_ms=60_000.0)  # no snapshot timer fires during the test
    profiler.observe(Batch([Request(0, "hard", 0.0, 1.0)]), 123.0)  # a free solo measurement
    before = len(policy.windows.samples("hard"))
    d = Dispatcher(policy, model, ThreadExecutor(model, warm_sizes=SIZES), profiler=profiler)

    async def start_stop() -> None:
        await d.start()
        await d.stop()

    asyncio.run(start_stop())
    assert len(policy.windows.samples("hard")) == before + 1
    assert 123.0 in policy.windows.samples("hard") and profiler.snapshot() is None


def test_profiler_samples_keeps_free_measurements_and_bounds_its_backlog() -> None:
    prof = Profiler(sample_rate=1.0, max_backlog=3, seed=0)
    reqs = [Request(i, "a" if i % 2 else "b", 0.0, 1.0) for i in range(5)]
    prof.observe(Batch(reqs[:1]), 7.0)  # a batch of one is a free solo measurement
    prof.observe(Batch(reqs), 30.0)
    prof.observe(Batch(reqs[:2]), math.nan)  # a rejected batch measured nothing
    assert prof.stats.free == 1 and prof.stats.sampled == 5 and prof.stats.skipped == 2
    assert prof.backlog == 3
    job = prof.next_job()
    assert job is reqs[4]  # newest first
    prof.record(job, 12.5)
    snap = prof.snapshot()
    assert snap is not None and dict(snap.samples) == {"b": [7.0, 12.5]}
    assert prof.snapshot() is None
    none = Profiler(sample_rate=0.0)
    none.observe(Batch(reqs), 10.0)
    assert none.next_job() is None


def test_clockwork_batches_that_miss_latest_start_are_rejected_by_the_worker(
    model: EarlyExitCNN, cal: Calibration
) -> None:
    # Clockwork's offline profile saw only easy inputs, so it plans the next action to start
    # right after a batch it expects to be short; a burst of hard ones overruns that plan,
    # the queued action expires at the worker, and its members fail
    policy = make_system("clockwork", model=cal.batch_model, slo_ms=1e4, sizes=SIZES)
    d = Dispatcher(
        policy,
        model,
        ThreadExecutor(model, warm_sizes=SIZES),
        offline=cal.app_profile({"easy": ("exit1",)}, 200),
    )
    done = asyncio.run(_serve(d, 60, 1e4, gap_s=0.0, apps=("hard",)))
    assert len(done) == 60
    rejected = [c for c in done if c.rejected]
    assert d.stats.rejected_batches >= 1 and rejected
    assert all(c.outcome is Outcome.TIMED_OUT and c.output is None for c in rejected)
    ended = sum(d.stats.outcomes.values())
    assert ended == 60 and d.open_requests == 0


def test_overload_and_stop_are_reported_not_lost(model: EarlyExitCNN, cal: Calibration) -> None:
    policy = make_system("edf", model=cal.batch_model, slo_ms=100.0, sizes=SIZES)
    d = _dispatcher(model, cal, policy, max_open=2)

    async def scenario() -> tuple[list[object], Completion]:
        await d.start()
        x = model.parse({"exit": 4})
        first = d.submit("hard", 1e4, x)
        d.submit("hard", 1e4, x)
        with pytest.raises(Overloaded):
            d.submit("hard", 1e4, x)
        done = await first
        await d.stop()
        return [d.running], done

    flags, done = asyncio.run(scenario())
    assert flags == [False] and done.outcome is Outcome.OK
    assert np.isfinite(done.latency_ms) and done.latency_ms >= done.queue_ms
