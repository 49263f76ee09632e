"""The real Orloj dispatcher on the wall clock vs the simulator.

The real side: the dispatcher (the one driver, `kairos.orloj.driver.Driver`, on the asyncio
clock) over a TinyDecoder in a worker process, calibrated there first (solo latencies per input
class, the fitted g_k). A recorded bursty open-loop trace of the decoder's three applications
is submitted to the dispatcher at its recorded times (no HTTP: the server adds nothing the
simulator models, and the test stays short), under Orloj (served options: speed feedback on)
and under Clockwork, at two loads. The finish rate is the share of completions that met their
deadline.

The simulated side: `simulate` on exactly the requests that were sent (release times as the
dispatcher stamped them, relative to the first; same apps, same SLO), each with the hidden solo
latency of its input class (the calibration's median: a decoder request costs what its `n_new`
makes it cost), a fresh policy with the same options, and the same offline warm start. Its
worker runs "the simulation with the speed this run actually had", as Andes' serving
experiment does, measured from this very run's batches:

* speed: the calibration's g_k times the worker's speed over time, measured / predicted batch
  time in each `SPEED_WINDOW_MS` window of the run (a shared two-core machine runs the worker
  0.5-1.8x as long as at calibration, and its slow spells come in bursts: with one factor for
  the whole run, `drift`, and independent noise, a CI run saw real batches of 1.93 against 1.24
  simulated, and a loaded run here Orloj finishing 0.22 against 0.37 simulated, drift 1.51);
* spread: lognormal noise with the standard deviation of log(measured / predicted) per batch
  around its window's speed (0.05-0.5), the scale divided by exp(sigma^2 / 2) so that the mean
  batch stays the measured one. Without it the simulator was optimistic by 0.04-0.17: batches
  that overrun make requests late, which the mean alone hides;
* profiler re-runs on the worker (`shadow_profiling=False`): the real one re-runs sampled
  requests itself while idle, and an arrival waits for the re-run. Simulated beside the
  worker (the simulator's default), Orloj at load 0.4 finished 0.12-0.13 more than it did
  (0.856 against 0.724 in one CI run), with smaller batches;
* turnaround: the worker idles ~1-2 ms between back-to-back batches while a result travels to
  the frontend and the next batch back (Clockwork, which queues its next action early, 0.3-1
  ms), added to every simulated batch (the simulated worker starts the next one at once).

The simulated finish rate is the mean over `SIM_SEEDS` noise draws. Load and SLO are set at
the speed of the moment: a warm-up replay measures the drift since calibration, and the trace
rates are divided by it, the SLO multiplied by it and the policies' g_k and warm-start
latencies scaled by it, so a calibration taken while a neighbour slowed the machine does not
turn the test into one where everything (or nothing) finishes.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policy import Outcome, Request
from kairos.orloj.runtime.calibrate import Calibration
from kairos.orloj.runtime.dispatcher import Completion, Dispatcher
from kairos.orloj.runtime.loadgen import TraceItem, make_trace
from kairos.orloj.runtime.models import ServedModel, build_model
from kairos.orloj.runtime.process import ProcessExecutor
from kairos.orloj.simulator import SimConfig, simulate
from kairos.orloj.speed import served_options
from kairos.orloj.systems import make_system
from tests.orloj.runtime.worker_stack import calibrated_worker, raised_priority

# d_model 128: solo latencies of ~3, 10-20 and 30 ms for 4, 16-32 and 48 new tokens; a replay
# of 500 requests takes 2-5 s, the whole test ~20-25 s on two cores (the default decoder is
# 2-3x slower)
MODEL_OPTIONS: dict[str, Any] = {"d_model": 128}
POLICIES = ("orloj", "clockwork")
LOADS = (0.4, 0.7)  # offered load / capacity at batch 16, at the speed measured at warm-up
SLO_MULT = 2.5  # SLO = 2.5 x the costliest class's median solo latency (at warm-up speed)
REQUESTS = 500  # per policy and load
WARM_UP = 60  # requests replayed (and discarded) first: settles the worker, measures its speed
WARM_START = 1000  # offline solo samples per application
SIM_SEEDS = 5  # simulated noise draws averaged per point
SPEED_WINDOW_MS = 250.0  # the speed is replayed as one factor per window of this length
BACK_TO_BACK_MS = 5.0  # a shorter gap between two batches is turnaround, a longer one idling
REPLAY_TIMEOUT_S = 120.0  # a replay whose requests never all end fails instead of hanging
# Absolute, on a finish rate in [0, 1]. The simulated worker is a model of the real one
# (lognormal noise at the run's spread, independent from batch to batch); the real worker is a
# process on a shared machine whose slow batches come in bursts. Over 20 runs of this test (80
# points: a quiet machine, other sessions' work, two or three CPU hogs at the test's priority
# or below), Orloj's |measured - simulated| stayed within 0.05 on a quiet machine and within
# 0.09 where the machine slowed mid-run (drift 1.6, sigma 0.35-0.5): 0.12 bounds that.
# Clockwork's estimate is the maximum of its last ten batch times per size, so the tail of the
# batch-time noise decides how much it drops, and one overrun past its 10 ms action window
# rejects the action queued behind it: its finish rate is chaotic. How chaotic shows twice:
# in the spread of the simulated noise draws of the same point, and in how far two real
# replays of the same trace land apart (on this machine under four other sessions' work,
# load average 5-6 on 2 cores, one Clockwork replay at 0.4 finished 0.596 where its
# simulations gave 0.213 +- 0.049: no fixed tolerance covers that and still means anything).
# Its tolerance is the model error (0.07: most of the runs above) plus 3 standard deviations
# of the simulated draws plus the range of its `REPEATS` real replays, judged on their mean:
# a point gets the room its own measurements show and no more.
TOLERANCE = {"orloj": 0.12, "clockwork": 0.07}
SPREAD_MULT = {"orloj": 0.0, "clockwork": 3.0}
REPEATS = {"orloj": 1, "clockwork": 2}  # real replays per point, every one judged (mean)
# The guards' mutant: a simulator whose batches take this much longer than the run measured
# must disagree at some load for each policy. For Clockwork a latency model 40% off is enough
# (its finish rate fell from 0.57 to 0.13 under it). Orloj's drop rules absorb part of a
# slower worker: at 1.4x its finish rate moved by 0.03-0.26 over runs of this test, and in one
# CI run under load, where the simulator was optimistic by 0.06 and 0.12, the 1.4x mutant lay
# nearer the measurements than the simulator did. So the guard's resolution for Orloj is a
# model twice too slow, not 40%, and that is the mutant it is held to.
STRETCH = {"orloj": 2.0, "clockwork": 1.4}
# Relative, on Orloj's mean batch size. The simulator batches Orloj less than the real run, by
# 0-25% over eight runs of this test on this machine (busy and quiet), and a CI run before the
# speed replay by 36% (1.24 against 1.93); charging the decisions' CPU time (`charge_overhead`)
# moved it by under 5%, so the remaining gap is not the decision time. Simulating the
# profiler's re-runs on the worker closed part of it (5-13% smaller in three runs since). 0.4
# bounds what was seen and still fails a simulator that does not batch (1.0 against 2-5
# measured at load 0.7).
# Clockwork's is not compared: it follows its rejections (above), which moved it by up to 0.6.
BATCH_TOLERANCE = 0.4

Stack = tuple[ServedModel, ProcessExecutor, Calibration]
# what a policy is told: the batch model g_k and the offline solo latencies per application
Known = tuple[BatchLatencyModel, Mapping[str, Sequence[float]]]


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    model = build_model("decoder", **MODEL_OPTIONS)
    with calibrated_worker(model, batch_reps=3) as (worker, cal):
        yield model, worker, cal


@dataclass
class Measured:
    completions: list[Completion]
    finish_rate: float
    mean_batch: float
    drift: float  # measured / predicted batch time, summed over the run
    speed: list[tuple[float, float]]  # (window start ms, measured / predicted in it)
    sigma: float  # standard deviation of log(measured / predicted) per batch around its window's
    turnaround_ms: float  # mean idle time of the worker between back-to-back batches
    rejected: int  # actions the worker rejected (Clockwork's missed windows)


async def _replay(d: Dispatcher, trace: Sequence[TraceItem], slo: float) -> list[Completion]:
    """Submit every item at its recorded time (open loop), wait for every completion."""
    assert d.model is not None
    await d.start()
    try:
        loop = asyncio.get_running_loop()
        first, t0 = trace[0].arrival_ms, loop.time()
        futures = []
        for item in trace:
            delay = (item.arrival_ms - first) / 1e3 - (loop.time() - t0)
            if delay > 0:
                await asyncio.sleep(delay)
            futures.append(d.submit(item.app, item.slo_ms or slo, d.model.parse(item.input)))
        return list(await asyncio.wait_for(asyncio.gather(*futures), REPLAY_TIMEOUT_S))
    finally:
        await d.stop()


def _serve(
    stack: Stack,
    name: str,
    slo: float,
    known: Known,
    trace: Sequence[TraceItem],
) -> Measured:
    """One replay of `trace` on the real worker under a fresh `name` policy that knows `known`."""
    model, worker, cal = stack
    g, offline = known
    policy = make_system(name, model=g, slo_ms=slo, options=served_options(name, {}))
    d = Dispatcher(policy, model, worker, offline=offline, predict=cal.predict(model))
    done = asyncio.run(_replay(d, trace, slo))
    assert len(done) == len(trace) and d.open_requests == 0
    assert {c.outcome for c in done} <= {Outcome.OK, Outcome.LATE, Outcome.TIMED_OUT}
    s = d.stats
    assert s.batches > 0 and s.failed_batches == 0
    timed = [(t, m, p) for t, _, m, p in s.recent if m > 0 and p > 0]
    window = np.array([t // SPEED_WINDOW_MS for t, _, _ in timed])
    measured, predicted = (np.array([x[i] for x in timed]) for i in (1, 2))
    speed = {w: measured[window == w].sum() / predicted[window == w].sum() for w in set(window)}
    residual = np.log(measured / predicted) - np.log([speed[w] for w in window])
    ran = sorted((r for r in s.records if not r.rejected), key=lambda r: r.start)
    gaps = np.array([b.start - a.end for a, b in itertools.pairwise(ran)])
    turnaround = gaps[(gaps >= 0) & (gaps < BACK_TO_BACK_MS)]
    return Measured(
        completions=done,
        finish_rate=sum(c.outcome is Outcome.OK for c in done) / len(done),
        mean_batch=s.batched_requests / s.batches,
        drift=s.busy_ms / s.predicted_ms,
        speed=[(w * SPEED_WINDOW_MS, float(f)) for w, f in sorted(speed.items())],
        sigma=float(np.std(residual)),
        turnaround_ms=float(turnaround.mean()) if turnaround.size else 0.0,
        rejected=s.rejected_batches,
    )


def _as_measured(g: BatchLatencyModel, run: Measured) -> BatchLatencyModel:
    """g_k with the noise's mean at 1 (not its median: the noise is lognormal) plus the
    turnaround on every batch; the run's speed multiplies it in the simulated worker."""
    scaled = g.scaled(1 / float(np.exp(run.sigma**2 / 2)))
    assert scaled.table is not None  # the calibration fits a per-k table
    return BatchLatencyModel(
        table={k: (a + run.turnaround_ms, s) for k, (a, s) in scaled.table.items()}
    )


def _simulate(
    stack: Stack,
    name: str,
    slo: float,
    known: Known,
    trace: Sequence[TraceItem],
    run: Measured,
    stretch: float = 1.0,
) -> dict[str, float]:
    """What the simulator predicts for the requests that were sent, at this run's speed,
    averaged over `SIM_SEEDS` noise draws."""
    model, _, cal = stack
    first = min(c.release_ms for c in run.completions)
    solo = {c: cal.solo_median(c) for c in cal.solo}
    batch_model = _as_measured(cal.batch_model, run)
    speed = tuple((t - first, f * stretch) for t, f in run.speed)
    # a bound on simulated time: every request has ended long before it (the real run took
    # seconds). Needed: now and then Clockwork keeps requests it can no longer serve (its
    # wake-up at a queue front's expiry lands one ulp short of the drop test, and it then asks
    # for no further wake-up), and the profiler's 1 s tick would run the simulation forever;
    # at the horizon they end as timed out, as their deadlines have long passed
    horizon = max(c.release_ms for c in run.completions) - first + 60_000.0
    summaries = []
    for seed in range(SIM_SEEDS):
        requests = [
            Request(
                i,
                c.app,
                c.release_ms - first,
                slo,
                solo_ms=solo[model.class_of(model.parse(item.input))],
            )
            for i, (c, item) in enumerate(zip(run.completions, trace, strict=True))
        ]
        policy = make_system(name, model=known[0], slo_ms=slo, options=served_options(name, {}))
        config = SimConfig(
            batch_model=batch_model,
            noise_sigma=run.sigma,
            speed=speed,
            shadow_profiling=False,  # the real worker re-runs requests itself, when idle
            seed=seed,
            max_time_ms=horizon,
        )
        summaries.append(simulate(policy, requests, config, known[1]).summary())
    keys = ("finish_rate", "mean_batch_size", "rejected_batches")
    out = {k: float(np.mean([s[k] for s in summaries])) for k in keys}
    return out | {"spread": float(np.std([s["finish_rate"] for s in summaries], ddof=1))}


@pytest.mark.slow
def test_the_simulator_predicts_the_real_dispatchers_finish_rate(stack: Stack) -> None:
    model, _, cal = stack
    apps = model.default_apps()
    # from the median of the costliest class, not the P99 of ten solo runs per class (one
    # slow run under other work moves that by 50%); a batch of 16 holds one almost surely
    longest = cal.solo_median(list(model.classes())[-1])
    capacity = 16 / float(cal.batch_model.g(16, longest)) * 1e3  # requests/s at calibration
    offline = cal.app_profile(apps, WARM_START, seed=0)
    rows: list[dict[str, Any]] = []
    with raised_priority(-10):
        warm = make_trace(model, apps, 0.5 * capacity, WARM_UP, seed=99)
        speed = _serve(stack, "orloj", SLO_MULT * longest, (cal.batch_model, offline), warm).drift
        slo = SLO_MULT * longest * speed
        # the policies are told the calibration at that speed too, as a fresh calibration
        # would tell them: with the SLO rescaled but the profile not, a calibration taken
        # while a neighbour slowed the machine (warm-up drift 0.62 in a CI-like run) left
        # every batch predicted 1.6x too long against the SLO, and Clockwork dropped almost
        # everything (finish rate 0.016, simulated 0.027: agreement on a load that tests nothing)
        known = (
            cal.batch_model.scaled(speed),
            {app: [v * speed for v in solo] for app, solo in offline.items()},
        )
        for i, rho in enumerate(LOADS):
            trace = make_trace(model, apps, rho * capacity / speed, REQUESTS, seed=11 + i)
            rows += [_point(stack, name, rho, slo, known, trace) for name in POLICIES]
    print(
        f"\nSLO {slo:.0f} ms, capacity {capacity:.0f} req/s at batch 16 (calibrated), "
        f"warm-up drift {speed:.2f}, {REQUESTS} requests per point"
    )
    for r in rows:
        print("  " + "  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in r.items()))  # fmt: skip
    # loads that matter: agreement at a finish rate of 1 (or 0) alone would be trivial, so
    # every policy and every load needs a point in between. Not every point: on a fast host
    # (solo medians 1.6-13 ms, capacity 739 req/s) the worker ran 1.8x slower than
    # calibrated under Clockwork at 0.7, which then finished 0.002 (simulated 0.028, in
    # agreement), while Orloj finished 0.364 there and Clockwork 0.426 at 0.4
    between = [r for r in rows if 0.1 < r["measured"] < 0.95]
    assert {r["policy"] for r in between} == set(POLICIES), rows
    assert {r["load"] for r in between} == set(LOADS), rows
    for r in rows:
        assert _agrees(r), r
    # the mutant: the same runs simulated with every batch STRETCH[policy] x as long are told apart
    for name in POLICIES:
        mine = [r for r in rows if r["policy"] == name]
        assert _tells_apart(mine), mine


def _point(
    stack: Stack, name: str, rho: float, slo: float, known: Known, trace: Sequence[TraceItem]
) -> dict[str, Any]:
    """`REPEATS` replays of `trace` under `name` and their simulations, side by side (means)."""
    reals = [_serve(stack, name, slo, known, trace) for _ in range(REPEATS[name])]
    sims = [_simulate(stack, name, slo, known, trace, real) for real in reals]
    real, sim = reals[0], sims[0]
    stretched = _simulate(stack, name, slo, known, trace, real, STRETCH[name])
    measured = [r.finish_rate for r in reals]
    return {
        "load": rho,
        "policy": name,
        "measured": float(np.mean(measured)),
        "simulated": float(np.mean([s["finish_rate"] for s in sims])),
        "spread": max(s["spread"] for s in sims),
        "real_range": max(measured) - min(measured),
        "stretched": stretched["finish_rate"],
        "batch": real.mean_batch,
        "sim_batch": sim["mean_batch_size"],
        "rejected": real.rejected,
        "sim_rejected": sim["rejected_batches"],
        "drift": real.drift,
        "sigma": real.sigma,
        "turnaround_ms": real.turnaround_ms,
    }


def _tells_apart(rows: Sequence[dict[str, Any]]) -> bool:
    """Whether the guard rejects the stretched simulator on these points of one policy.

    It disagrees at some point, or it is farther from the measurements than the simulator is
    over all of them. The second reading is for Clockwork: its tolerance grows with the spread
    of its own simulated draws, and at a spread of 0.10 (tolerance 0.45) a stretched run at
    0.05 against 0.30 measured (simulated 0.24) stays inside it while being four times as far off.
    """
    if not all(_agrees(r | {"simulated": r["stretched"]}) for r in rows):
        return True
    ours = sum(abs(r["measured"] - r["simulated"]) for r in rows)
    mutant = sum(abs(r["measured"] - r["stretched"]) for r in rows)
    return mutant > 2 * ours


def _agrees(r: dict[str, Any]) -> bool:
    """The finish rates within the policy's tolerance, and Orloj's mean batch within its own."""
    tolerance = TOLERANCE[r["policy"]] + SPREAD_MULT[r["policy"]] * r["spread"] + r["real_range"]
    if abs(r["measured"] - r["simulated"]) > tolerance:
        return False
    return (
        r["policy"] != "orloj" or abs(r["batch"] - r["sim_batch"]) / r["batch"] <= BATCH_TOLERANCE
    )


def test_a_wide_clockwork_tolerance_still_tells_the_stretched_simulator_apart() -> None:
    # two Clockwork points of a loaded CI run: the stretched simulator inside the tolerance at
    # both (0.45 and 0.20), four times as far from the measurements as the simulator
    rows = [
        {"policy": "clockwork", "measured": 0.300, "simulated": 0.240, "stretched": 0.051,
         "spread": 0.104, "real_range": 0.064},
        {"policy": "clockwork", "measured": 0.174, "simulated": 0.135, "stretched": 0.021,
         "spread": 0.042, "real_range": 0.008},
    ]  # fmt: skip
    assert all(_agrees(r | {"simulated": r["stretched"]}) for r in rows)
    assert _tells_apart(rows)
    # a stretch that changes nothing cannot be told apart
    assert not _tells_apart([r | {"stretched": r["simulated"]} for r in rows])
