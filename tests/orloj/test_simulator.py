"""The simulator: determinism, conservation and worker invariants under every baseline."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policy import Batch, BatchPolicy, Outcome, ProfileSnapshot, Request
from kairos.orloj.recording import Recording, record
from kairos.orloj.simulator import PolicyError, SimConfig, SimResult, simulate
from kairos.orloj.systems import make_system, native_sizes
from kairos.orloj.workloads import get_workload
from kairos.workloads import TraceFormatError

MODEL = BatchLatencyModel()
SYSTEMS = ("orloj", "clockwork", "nexus", "clipper", "clipper-drop", "edf", "timeout")


def check(result: SimResult, model: BatchLatencyModel = MODEL, noise: bool = False) -> None:
    """Every invariant a correct run must satisfy, whatever the policy decided."""
    reqs = {r.request_id: r for r in result.requests}
    assert result.stranded == 0
    seen: dict[int, int] = {}
    ran = sorted((b for b in result.batches if not b.rejected), key=lambda b: b.start)
    for b in result.batches:
        assert b.size >= 1
        for i in b.ids:
            assert i not in seen, f"request {i} in two batches"
            seen[i] = b.size
        assert b.start >= b.decided >= max(reqs[i].release for i in b.ids)
    for prev, nxt in itertools.pairwise(ran):
        assert nxt.start >= prev.end - 1e-9, "two batches overlap on the worker"
    for b in ran:
        longest = max(reqs[i].solo_ms or 0.0 for i in b.ids)
        if not noise:
            assert b.end - b.start == pytest.approx(float(model.g(b.size, longest)))
        for i in b.ids:
            r = reqs[i]
            assert r.finish == pytest.approx(b.end) and r.batch_size == b.size
            assert r.outcome is (Outcome.OK if b.end <= r.deadline else Outcome.LATE)
    rejected = {i for b in result.batches if b.rejected for i in b.ids}
    for i, r in reqs.items():
        assert r.outcome is not None
        if i not in seen or i in rejected:
            assert r.outcome is Outcome.TIMED_OUT and r.finish >= r.release
    s = result.summary()
    assert s["ok"] + s["late"] + s["timed_out"] == s["requests"] == len(reqs)
    assert s["finish_rate"] == pytest.approx(s["ok"] / len(reqs))
    assert 0.0 <= s["utilisation"] <= 1.0


def small_recording(n: int = 3000, name: str = "three-modal", seed: int = 0) -> Recording:
    return record(get_workload(name), n, seed, MODEL)


def run(
    system: str,
    rec: Recording,
    mult: float = 2.0,
    options: dict[str, object] | None = None,
    **cfg: object,
) -> SimResult:
    p99 = float(rec.meta["p99_ms"])
    rate = float(rec.meta["rate_per_ms"])
    policy = make_system(system, model=MODEL, slo_ms=mult * p99, rate_per_ms=rate, options=options)
    offline = get_workload(str(rec.meta["workload"])).offline_profile(
        1000, np.random.default_rng(1)
    )
    return simulate(policy, rec.requests(mult * p99), SimConfig(**cfg), offline)


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_system_conserves_requests_on_a_bursty_workload(system: str) -> None:
    result = run(system, small_recording())
    check(result)
    if system in ("orloj", "clockwork", "edf"):  # only the sizes the system supports
        assert {b.size for b in result.batches} <= set(native_sizes(system))


def test_a_policy_scheduling_ahead_queues_batches_at_the_worker() -> None:
    result = run("orloj", small_recording(1500), options={"schedule_ahead_ms": 20.0})
    check(result)
    ran = sorted(result.batches, key=lambda b: b.start)
    ahead = [b for prev, b in itertools.pairwise(ran) if b.decided < prev.end]
    assert ahead, "no batch was decided while the worker was busy"
    assert all(b.start >= b.decided for b in ahead)


def test_same_seed_same_run_and_noise_seed_changes_it() -> None:
    rec = small_recording(1500)

    def fingerprint(seed: int) -> list[tuple[str, float]]:
        res = run("clockwork", rec, noise_sigma=0.05, seed=seed)
        check(res, noise=True)
        return [(str(r.outcome), r.finish) for r in res.requests]

    assert fingerprint(3) == fingerprint(3)
    assert fingerprint(3) != fingerprint(4)
    assert record(get_workload("std-1"), 500, 9, MODEL).arrival_ms.tolist() == (
        record(get_workload("std-1"), 500, 9, MODEL).arrival_ms.tolist()
    )


@dataclass
class Spy:
    """Wraps a policy and records what it was told."""

    inner: BatchPolicy
    snapshots: list[tuple[float, ProfileSnapshot]] = field(default_factory=list)
    now: float = 0.0
    name: str = "spy"

    def on_arrival(self, request: Request, now: float) -> list[Request]:
        self.now = now
        return self.inner.on_arrival(request, now)

    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        self.now = now
        return self.inner.next_batch(now)

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        self.now = now
        self.inner.on_batch_done(batch, now, measured_ms)

    def next_wakeup(self, now: float) -> float | None:
        return self.inner.next_wakeup(now)

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        self.snapshots.append((self.now, snapshot))
        self.inner.on_profile(snapshot)

    def pending(self) -> int:
        return self.inner.pending()


def test_profiler_warm_starts_then_delivers_sampled_solo_latencies_after_they_ran() -> None:
    rec = small_recording(2000, "std-1")
    slo = 3 * float(rec.meta["p99_ms"])
    spy = Spy(make_system("clipper", model=MODEL, slo_ms=slo))
    offline = {"mode0": [1.0] * 1000, "mode1": [2.0] * 1000}
    reqs = rec.requests(slo)
    simulate(spy, reqs, SimConfig(profile_sample_rate=0.5), offline)
    _, first = spy.snapshots[0]
    assert dict(first.samples) == offline
    solo = {r.request_id: r for r in reqs}
    delivered = [v for _, s in spy.snapshots[1:] for vs in s.samples.values() for v in vs]
    ran = [r for r in reqs if r.batch_size > 0]
    assert 0.3 * len(ran) < len(delivered) < 0.7 * len(ran) + sum(r.batch_size == 1 for r in ran)
    truth = {round(r.solo_ms or 0.0, 9) for r in solo.values()}
    assert all(round(v, 9) in truth for v in delivered)
    # each sample arrives no earlier than its request's finish + its solo latency
    finish_plus_solo = sorted((r.finish + (r.solo_ms or 0.0)) for r in ran)
    for t, snap in spy.snapshots[1:]:
        n = sum(len(v) for v in snap.samples.values())
        assert n <= sum(x <= t for x in finish_plus_solo)


def test_a_policy_that_ends_a_request_twice_is_caught() -> None:
    class Twice:
        name = "twice"

        def __init__(self) -> None:
            self.q: list[Request] = []

        def on_arrival(self, request: Request, now: float) -> list[Request]:
            self.q.append(request)
            return []

        def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
            return (Batch(list(self.q)), list(self.q)) if self.q else (None, [])

        def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None: ...
        def next_wakeup(self, now: float) -> float | None:
            return None

        def on_profile(self, snapshot: ProfileSnapshot) -> None: ...
        def pending(self) -> int:
            return len(self.q)

    with pytest.raises(PolicyError, match="batched twice"):
        simulate(Twice(), [Request(0, "a", 0.0, 10.0, solo_ms=1.0)])


def test_charged_overhead_delays_batches_by_the_decision_time() -> None:
    rec = small_recording(300, "one-modal")
    free = run("edf", rec)
    charged = run("edf", rec, charge_overhead=True, overhead_factor=1000.0)
    check(charged)
    delays = [b.start - b.decided for b in charged.batches]
    assert max(delays) > 0  # each batch waited for its (inflated) decision time
    assert all(b.start == b.decided for b in free.batches)  # uncharged: starts when decided


def test_a_recorded_speed_scales_each_batch_by_the_factor_at_its_start() -> None:
    rec = small_recording(300, "one-modal")
    plain = run("edf", rec)
    middle = plain.batches[len(plain.batches) // 2].start
    slowed = run("edf", rec, speed=((0.0, 1.0), (middle, 3.0)))
    check(slowed, noise=True)
    reqs = {r.request_id: r for r in slowed.requests}
    for b in (b for b in slowed.batches if not b.rejected):
        g = float(MODEL.g(b.size, max(reqs[i].solo_ms or 0.0 for i in b.ids)))
        assert b.end - b.start == pytest.approx(g * (3.0 if b.start >= middle else 1.0))
    assert slowed.summary()["finish_rate"] < plain.summary()["finish_rate"]
    with pytest.raises(ValueError, match="increasing time order"):
        SimConfig(speed=((5.0, 1.0), (1.0, 2.0)))
    with pytest.raises(ValueError, match="> 0"):
        SimConfig(speed=((0.0, 0.0),))


def test_reruns_on_the_worker_hold_back_an_arrival_until_they_end() -> None:
    """The real single-worker runtime re-runs sampled requests itself, while idle and nothing
    is pending; `shadow_profiling=False` simulates that. Requests 1 and 2 run as a batch of two
    (10.5-22 ms), both sampled (rate 1): the first re-run takes the worker 22-32 ms, so request
    3, arriving at 23 ms, starts at 32 ms instead of at once; the second re-run waits, as
    something is pending then."""
    starts = {}
    for shadow in (True, False):
        reqs = [Request(i, "a", t, 500.0, solo_ms=10.0) for i, t in enumerate((0, 1, 2, 23.0))]
        policy = make_system("edf", model=MODEL, slo_ms=500.0)
        config = SimConfig(profile_sample_rate=1.0, shadow_profiling=shadow)
        result = simulate(policy, reqs, config)
        check(result)
        assert [b.ids for b in result.batches] == [(0,), (1, 2), (3,)]
        assert result.batches[1].end == pytest.approx(10.5 + float(MODEL.g(2, 10.0)))
        starts[shadow] = result.batches[2].start
    assert starts[True] == pytest.approx(23.0)
    assert starts[False] == pytest.approx(10.5 + float(MODEL.g(2, 10.0)) + 10.0)


def test_recording_round_trips_through_csv_and_bad_files_are_named(tmp_path: Path) -> None:
    rec = record(get_workload("std-0.5/2"), 200, 1, MODEL)
    back = Recording.load_csv(rec.save_csv(tmp_path / "rec.csv"))
    assert np.array_equal(back.arrival_ms, rec.arrival_ms)
    assert np.array_equal(back.solo_ms, rec.solo_ms)
    assert [back.app_names[i] for i in back.app] == [rec.app_names[i] for i in rec.app]
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_ms,app,solo_ms\n1.0,a,2.0\n2.0,b,-1\n")
    with pytest.raises(TraceFormatError, match="line 3"):
        Recording.load_csv(bad)


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[Request], str, float]:
    n = draw(st.integers(1, 40))
    gaps = draw(st.lists(st.floats(0.0, 30.0), min_size=n, max_size=n))
    solos = draw(st.lists(st.floats(0.5, 80.0), min_size=n, max_size=n))
    apps = draw(st.lists(st.sampled_from(["x", "y"]), min_size=n, max_size=n))
    slo = draw(st.floats(5.0, 400.0))
    times = np.cumsum(gaps)
    reqs = [Request(i, apps[i], float(times[i]), slo, solo_ms=solos[i]) for i in range(n)]
    return reqs, draw(st.sampled_from(SYSTEMS)), slo


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.floats(0.0, 1.0))
def test_invariants_hold_for_any_arrivals_and_latencies(
    case: tuple[list[Request], str, float], sample_rate: float
) -> None:
    reqs, system, slo = case
    policy = make_system(system, model=MODEL, slo_ms=slo, rate_per_ms=0.05)
    offline = {"x": [10.0, 20.0], "y": [40.0]}
    check(simulate(policy, reqs, SimConfig(profile_sample_rate=sample_rate), offline))
