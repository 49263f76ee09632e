from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kairos.orloj.batchdist import MIXTURE_KEY, BatchLatencyModel
from kairos.orloj.config import OrlojConfig
from kairos.orloj.policies.orloj import OrlojPolicy
from kairos.orloj.policy import Batch, Outcome, ProfileSnapshot, Request
from kairos.orloj.store import POOLED_KEY

APPS = {"a": (5.0, 15.0), "b": (40.0, 60.0), "c": (90.0, 110.0)}  # solo latency ranges (ms)
MODEL = BatchLatencyModel()


def offline(seed: int = 0, n: int = 400) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    return {a: rng.uniform(lo, hi, n).tolist() for a, (lo, hi) in APPS.items()}


def policy(**options: Any) -> OrlojPolicy:
    """The unit tests below hand-check Algorithm 4.1's steps on S = {1, 2, 4, 8, 16} with the
    mean drop estimate (the old defaults), so they pin both; the default's own
    sizes and estimator are checked in test_default_sizes.py."""
    base: dict[str, Any] = {"batch_sizes": (1, 2, 4, 8, 16), "drop_estimator": "mean"}
    return OrlojPolicy(OrlojConfig(**(base | options)), profile=offline())


def request(rid: int, app: str, t: float, slo: float, solo: float = 10.0, **kw: Any) -> Request:
    return Request(rid, app, t, slo, solo_ms=solo, **kw)


def last_deadline(r: Request) -> float:
    return r.cost_steps[-1][0] if r.cost_steps else r.deadline


@dataclass
class Record:
    ended: dict[int, tuple[Outcome, float]] = field(default_factory=dict)
    batches: list[list[int]] = field(default_factory=list)
    drops: list[tuple[float, int]] = field(default_factory=list)


def play(
    pol: OrlojPolicy, reqs: list[Request], profile_every: float | None = None, check: bool = True
) -> Record:
    """Arrivals and batch completions in time order (completion first on a tie), checking the
    policy's contract after every call (`check`: also its internal queues, O(n) a call).
    Batch time = g_k(longest member's solo time)."""
    rec = Record()
    sizes = set(pol.sizes)
    running: Batch | None = None
    busy_until = math.inf
    next_profile = profile_every if profile_every else math.inf
    finished_solo: dict[str, list[float]] = {}
    i = 0

    def end(r: Request, outcome: Outcome, t: float) -> None:
        assert r.request_id not in rec.ended, f"request {r.request_id} ended twice"
        rec.ended[r.request_id] = (outcome, t)

    def dispatch(t: float) -> None:
        nonlocal running, busy_until
        batch, dropped = pol.next_batch(t)
        for r in dropped:  # dropped only when even a batch of one cannot make it
            assert t + pol.estimate(r.app, 1) > last_deadline(r)
            rec.drops.append((t, r.request_id))
            end(r, Outcome.TIMED_OUT, t)
        if check:
            pol.check_invariants()
        if batch is None:
            assert pol.pending() == 0  # work conservation: idle only when nothing is pending
            return
        ids = [r.request_id for r in batch.requests]
        assert len(set(ids)) == len(ids) and not set(ids) & set(rec.ended)
        assert batch.size in sizes and batch.size <= batch.meta["queue_len"]
        rec.batches.append(ids)
        running = batch
        busy_until = t + float(MODEL.g(batch.size, max(r.solo_ms or 0.0 for r in batch.requests)))

    while i < len(reqs) or running is not None:
        t_arrival = reqs[i].release if i < len(reqs) else math.inf
        t = min(t_arrival, busy_until, next_profile)
        if t == next_profile:
            pol.on_profile(ProfileSnapshot(finished_solo))
            finished_solo = {}
            next_profile += profile_every or math.inf
            pol.check_invariants()
        elif running is not None and busy_until <= t_arrival:
            batch, running, busy_until = running, None, math.inf
            pol.on_batch_done(batch, t, t - batch.meta["t_sched"])
            for r in batch.requests:
                end(r, Outcome.OK if t <= r.deadline else Outcome.LATE, t)
                finished_solo.setdefault(r.app, []).append(r.solo_ms or 0.0)
            dispatch(t)
        else:
            r = reqs[i]
            i += 1
            for rejected in pol.on_arrival(r, t):
                assert rejected is r and t + pol.estimate(r.app, 1) > last_deadline(r)
                end(r, Outcome.TIMED_OUT, t)
            if check:
                pol.check_invariants()
            if running is None:
                dispatch(t)
    assert set(rec.ended) == {r.request_id for r in reqs}  # every request ended exactly once
    assert pol.pending() == 0
    return rec


arrival = st.tuples(
    st.floats(0.0, 40.0),  # gap to the previous arrival (ms); zeros make bursts
    st.sampled_from(["a", "b", "c", "z"]),  # z has no profile: it uses the mixture
    st.floats(0.3, 6.0),  # SLO as a multiple of 110 ms
    st.floats(0.0, 1.0),  # where in its app's range the solo latency falls
    st.booleans(),  # a three-step cost instead of one step
)
configs = st.fixed_dictionaries(
    {
        "index": st.sampled_from(["hull", "bruteforce"]),
        "bs_order": st.sampled_from(["paper", "clockwork_priority", "earliest_deadline"]),
        "drop_estimator": st.sampled_from(["mean", "min", "quantile:0.9"]),
        "batch_dist_mode": st.sampled_from(["own+mixture", "mixture", "cyclic"]),
        "pooled": st.booleans(),
    }
)


def stream(rows: list[tuple[float, str, float, float, bool]]) -> list[Request]:
    t, out = 0.0, []
    for rid, (gap, app, mult, frac, steps) in enumerate(rows):
        t += gap
        lo, hi = APPS.get(app, (20.0, 80.0))
        slo = 110.0 * mult
        cost = ((t + slo, 1.0), (t + 1.2 * slo, 2.0), (t + 1.5 * slo, 3.0)) if steps else None
        out.append(request(rid, app, t, slo, lo + frac * (hi - lo), cost_steps=cost))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(arrival, min_size=1, max_size=150), options=configs)
def test_invariants_hold_on_generated_arrival_streams(
    rows: list[tuple[float, str, float, float, bool]], options: dict[str, Any]
) -> None:
    play(policy(**options), stream(rows), profile_every=250.0)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(arrival, min_size=1, max_size=150), options=configs)
def test_hull_and_bruteforce_schedulers_choose_identical_batches(
    rows: list[tuple[float, str, float, float, bool]], options: dict[str, Any]
) -> None:
    runs = [
        play(policy(**{**options, "index": kind}), stream(rows), profile_every=300.0)
        for kind in ("hull", "bruteforce")
    ]
    assert runs[0].batches == runs[1].batches
    assert runs[0].ended == runs[1].ended


def poisson_stream(seed: int, n: int, rate: float, slo: float) -> list[Request]:
    rng = np.random.default_rng(seed)
    t, out = 0.0, []
    for rid in range(n):
        t += rng.exponential(1 / rate)
        app = str(rng.choice(list(APPS)))
        lo, hi = APPS[app]
        out.append(request(rid, app, t, slo, float(rng.uniform(lo, hi))))
    return out


def test_long_runs_rebase_the_time_base_without_changing_decisions() -> None:
    reqs = poisson_stream(1, 2500, rate=0.01, slo=330.0)  # ~250 s
    assert reqs[-1].release > 200_000
    lazy = policy(b=1e-2, reset_exponent=600)  # b·t reaches ~2500: e^2500 needs resets
    eager = policy(b=1e-2, reset_exponent=20)  # a new base every 2 s
    runs = [play(p, reqs, check=False) for p in (lazy, eager)]
    assert lazy.time_base > 180_000 and eager.time_base > reqs[-1].release - 2500
    assert runs[0].batches == runs[1].batches
    ok = sum(o == Outcome.OK for o, _ in runs[0].ended.values()) / len(reqs)
    assert ok > 0.8


def test_a_long_default_run_far_past_1000_seconds() -> None:
    reqs = poisson_stream(2, 1200, rate=0.0005, slo=330.0)  # ~2400 s at b = 1e-4
    assert reqs[-1].release > 2_000_000
    pol = policy()
    rec = play(pol, reqs, check=False)
    assert pol.time_base > 0  # the base moved at least once
    assert sum(o == Outcome.OK for o, _ in rec.ended.values()) / len(reqs) > 0.95


# -- Algorithm 4.1 on hand-built queues ---------------------------------------------------------
def test_paper_order_runs_the_largest_fillable_batch_by_score() -> None:
    pol = policy()
    for rid in range(20):
        assert pol.on_arrival(request(rid, "a", 0.0, 5000.0 + rid), 0.0) == []
    batch, dropped = pol.next_batch(0.0)
    assert batch is not None and batch.size == 16 and dropped == []
    # all the same app and state: the score favours the earlier deadline
    assert [r.request_id for r in batch.requests] == list(range(16))
    pol.on_batch_done(batch, 100.0, 100.0)
    batch, _ = pol.next_batch(100.0)
    assert batch is not None and batch.size == 4


def test_tight_requests_only_fit_small_batches_and_clockwork_order_serves_them_first() -> None:
    # earliest_deadline (the paper's prose): the largest fillable size at which the most
    # urgent request is still viable (1 here; 2 in the next test)
    for order, expected in (("paper", 16), ("clockwork_priority", 1), ("earliest_deadline", 1)):
        pol = policy(bs_order=order)
        for rid in range(16):
            pol.on_arrival(request(rid, "b", 0.0, 10_000.0), 0.0)
        pol.on_arrival(request(99, "a", 0.0, 30.0), 0.0)  # viable for bs 1 and 2 only
        assert pol.queue_ids(1) >= {99} and 99 not in pol.queue_ids(4)
        batch, _ = pol.next_batch(0.0)
        assert batch is not None and batch.size == expected
        if expected == 1:
            assert batch.requests[0].request_id == 99


def test_earliest_deadline_order_runs_the_largest_size_the_most_urgent_request_fits() -> None:
    pol = policy(bs_order="earliest_deadline")
    slo = pol.estimate("a", 2) + 5.0  # viable at 1 and 2, not at 4 or above
    for rid in range(16):
        pol.on_arrival(request(rid, "b", 0.0, 10_000.0), 0.0)
    pol.on_arrival(request(99, "a", 0.0, slo), 0.0)
    assert 99 in pol.queue_ids(2) and 99 not in pol.queue_ids(4)
    batch, _ = pol.next_batch(0.0)
    assert batch is not None and batch.size == 2  # the paper's literal order would run 16
    assert 99 in [r.request_id for r in batch.requests]  # its score leads the queue of 2


def test_requests_are_rejected_or_dropped_exactly_when_a_lone_run_is_too_late() -> None:
    pol = policy()
    est1 = pol.estimate("c", 1)
    assert pol.on_arrival(request(1, "c", 0.0, est1 - 0.01), 0.0)[0].request_id == 1
    assert pol.on_arrival(request(2, "c", 0.0, est1 + 5.0), 0.0) == []
    assert pol.on_arrival(request(3, "a", 0.0, 500.0), 0.0) == []
    batch, dropped = pol.next_batch(4.99)  # request 2 can still make it alone
    assert dropped == [] and batch is not None
    # Q_2 holds only request 3, so one request runs: the cheap, sure one scores higher than
    # the long coin-flip (P(L <= s) / E[L]: about 1/10 against 0.5/100)
    assert [r.request_id for r in batch.requests] == [3]
    pol.on_batch_done(batch, 6.0, 6.0)
    batch, dropped = pol.next_batch(6.0)
    assert batch is None and [r.request_id for r in dropped] == [2]


def test_schedule_ahead_plans_the_next_batch_before_the_worker_is_free() -> None:
    pol = policy(schedule_ahead_ms=5.0)
    for rid in range(3):
        pol.on_arrival(request(rid, "b", 0.0, 1000.0), 0.0)
    first, _ = pol.next_batch(0.0)
    assert first is not None and first.size == 2
    busy = first.meta["est_ms"]
    assert pol.next_wakeup(0.0) == pytest.approx(busy - 5.0)
    assert pol.next_batch(1.0) == (None, [])  # too early
    second, _ = pol.next_batch(busy - 4.0)
    assert second is not None and second.meta["t_sched"] == pytest.approx(busy)
    assert pol.next_batch(busy - 3.0) == (None, [])  # one batch queued at most
    no_ahead = policy()
    no_ahead.on_arrival(request(1, "a", 0.0, 1000.0), 0.0)
    no_ahead.on_arrival(request(2, "a", 0.0, 1000.0), 0.0)
    assert no_ahead.next_batch(0.0)[0] is not None
    no_ahead.on_arrival(request(3, "a", 1.0, 1000.0), 1.0)
    assert no_ahead.next_batch(1.0) == (None, []) and no_ahead.next_wakeup(1.0) is None


# -- profiles, keys and configuration --------------------------------------------------------
def test_profile_snapshots_rebuild_tables_and_rescore_pending_requests() -> None:
    pol = OrlojPolicy(OrlojConfig(min_window_samples=5))
    with pytest.raises(RuntimeError, match="profile"):
        pol.on_arrival(request(0, "a", 0.0, 100.0), 0.0)
    pol.on_profile(ProfileSnapshot(offline()))  # the simulator's warm start
    for rid in range(10):
        pol.on_arrival(request(rid, "new", float(rid), 400.0), float(rid))
    assert pol.store.key("new") == MIXTURE_KEY
    before = pol.estimate("new", 1)
    version = pol.store.version
    pol.on_profile(ProfileSnapshot({}))  # nothing changed: no rebuild
    assert pol.store.version == version
    pol.on_profile(ProfileSnapshot({"new": [1.0] * 50}))
    assert pol.store.key("new") == "new" and pol.estimate("new", 1) < before
    pol.check_invariants()
    assert pol.queue_ids(16) == set(range(10))  # cheaper estimates widened the viable sets
    batch, _ = pol.next_batch(10.0)
    assert batch is not None and batch.size == 10  # every pending one (default sizes 1-16)


def test_pooled_ablation_ignores_app_tags() -> None:
    pol = policy(pooled=True)
    assert pol.store.key("a") == pol.store.key("c") == POOLED_KEY
    assert pol.estimate("a", 4) == pol.estimate("c", 4)
    tagged = policy()
    assert tagged.estimate("a", 1) < pol.estimate("a", 1) < tagged.estimate("c", 1)


def test_config_is_validated_and_keyword_shortcuts_override_it() -> None:
    with pytest.raises(ValidationError, match="include 1"):
        OrlojConfig(batch_sizes=(2, 4))
    with pytest.raises(ValidationError, match="increasing"):
        OrlojConfig(batch_sizes=(1, 4, 2))
    with pytest.raises(ValidationError, match="drop_estimator"):
        OrlojConfig(drop_estimator="p99")
    with pytest.raises(ValidationError, match="extra"):
        OrlojConfig(colour="blue")  # type: ignore[call-arg]
    model = BatchLatencyModel.paper(c0=1.0, c1=0.2)
    pol = OrlojPolicy(batch_model=model, sizes=[1, 2, 4], b=1e-3, profile=offline())
    assert pol.config.batch_model == model and pol.sizes == [1, 2, 4] and pol.config.b == 1e-3
    assert pol.on_arrival(request(1, "a", 0.0, 500.0), 0.0) == []
    with pytest.raises(ValueError, match="already pending"):
        pol.on_arrival(request(1, "a", 0.0, 500.0), 0.0)


def direct_score(pol: OrlojPolicy, r: Request, key: str, j: int, t: float) -> float:
    """Eq 4.2 summed over the cost steps, straight from the (app, bs) table."""
    table = pol.store.tables[key][j]
    prev, total = 0.0, 0.0
    for d, c in r.cost_steps or ((r.deadline, 1.0),):
        total += table.score_direct(d, t, c - prev)
        prev = c
    return total


@pytest.mark.parametrize("index", ["hull", "bruteforce"])
def test_batches_are_the_top_scores_at_dispatch_time(index: str) -> None:
    """An oracle independent of coordinates, milestones and resets: at each dispatch recompute
    viability, the candidate size and every score from Eq 4.2 directly, and compare."""
    rng = np.random.default_rng(5)
    pol = OrlojPolicy(
        OrlojConfig(index=index, b=1e-3, reset_exponent=0.4, min_window_samples=20),
        profile=offline(),
    )
    reqs = []
    for rid, t in enumerate(np.sort(rng.uniform(0, 3000, 400))):
        app = str(rng.choice(["a", "b", "c", "z"]))
        slo = float(rng.uniform(20, 900))
        steps = ((t + slo, 1.0), (t + 1.3 * slo, 2.5)) if rng.random() < 0.3 else None
        reqs.append(request(rid, app, float(t), slo, cost_steps=steps))
    pending: dict[int, Request] = {}
    checked = 0
    for i, r in enumerate(reqs):
        if not pol.on_arrival(r, r.release):
            pending[r.request_id] = r
        if i % 150 == 149:  # new samples mid-run: tables rebuilt, everyone rescored
            pol.on_profile(ProfileSnapshot({"a": rng.uniform(8, 30, 40).tolist()}))
        if i % 7:
            continue
        t = r.release + 0.5
        keys = {rid: pol.store.key(q.app) for rid, q in pending.items()}
        viable = {
            rid: sum(t + est <= last_deadline(q) for est in pol.store.estimates[keys[rid]])
            for rid, q in pending.items()
        }
        j = max(
            (j for j, bs in enumerate(pol.sizes) if sum(m > j for m in viable.values()) >= bs),
            default=None,
        )

        def score(rid: int, j: int, t: float = t, keys: dict[int, str] = keys) -> float:
            return direct_score(pol, pending[rid], keys[rid], j, t)

        batch, dropped = pol.next_batch(t)
        assert {q.request_id for q in dropped} == {rid for rid, m in viable.items() if m == 0}
        if j is None:
            assert batch is None
            continue
        assert batch is not None and batch.size == pol.sizes[j]
        ranked = sorted(
            (rid for rid, m in viable.items() if m > j),
            key=lambda rid: (-score(rid, j), pending[rid].deadline, rid),
        )
        got = [q.request_id for q in batch.requests]
        if got != ranked[: batch.size]:  # only a floating-point near-tie may differ
            assert sorted(score(rid, j) for rid in got) == pytest.approx(
                sorted(score(rid, j) for rid in ranked[: batch.size]), rel=1e-9
            )
        for rid in got + [q.request_id for q in dropped]:
            pending.pop(rid)
        pol.on_batch_done(batch, t, 0.0)
        checked += 1
    assert checked > 40
