"""The real server, real requests, Orloj against Clockwork.

One TinyDecoder worker process serves three applications whose requests decode 4, 16-32 and
48 tokens (solo latencies of roughly 10, 30-60 and 90 ms on one CPU core): a three-modal mix
where a point estimate of latency is wrong for almost every request. The same recorded,
bursty, open-loop trace is replayed over HTTP against the same worker under each policy, at a
moderate and a high load (0.6 and 0.9 x capacity at batch 16), with SLO = 2 x P99 of solo
latency. (At 0.4 x the bursts decide most outcomes and the two policies can tie within noise:
one CI run gave 0.693 vs 0.700, local runs 0.77-0.88 vs 0.66-0.67.) Judged by the client on
receipt (loadgen stamps each send; the server's own verdict is printed beside it), Orloj must
not finish fewer requests by their deadline than Clockwork by more than `MARGIN`: the lower
end of the 95% CI of the per-segment paired differences, pooled over both loads, lies above
-MARGIN. That is what a few minutes on a shared machine can show. The claim that Orloj
finishes *more* (a CI above 0 at each load, over many alternating runs, some with a CPU-bound
neighbour) is `python -m kairos.orloj.runtime.duel`'s, which needs a quiet machine.

The worker (and this process, the frontend) ask for a higher CPU priority, as the paper ran
its serving threads; without the privilege they run at the default priority. Each trace is
replayed in four segments, policies alternating A B, B A, A B, B A (after a discarded warm-up
under each policy before the first load), so a slow change in the speed of a shared machine
hits both alike. Each policy object (and Orloj's online profiler) lives through all its
replays, as in one long-running server. Orloj runs with its speed feedback, as `kairos orloj
serve` does: one CI run found the worker 35% slower at 0.9 x capacity than at calibration,
and Orloj without feedback fell to 0.225 against Clockwork's 0.245 there (0.53 vs 0.23 on a
quiet machine); the simulator's drift experiment shows the same effect without the noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import httpx
import numpy as np
import pytest

from kairos.orloj.policy import Batch
from kairos.orloj.profiler import Profiler
from kairos.orloj.runtime.calibrate import Calibration
from kairos.orloj.runtime.dispatcher import Dispatcher
from kairos.orloj.runtime.loadgen import make_trace, run_load
from kairos.orloj.runtime.models import ServedModel, build_model
from kairos.orloj.runtime.process import ProcessExecutor
from kairos.orloj.runtime.server import create_app
from kairos.orloj.speed import served_options
from kairos.orloj.systems import make_system
from kairos.report.stats import mean_ci
from kairos.runtime.http import BackgroundServer
from tests.orloj.runtime.worker_stack import calibrated_worker, raised_priority

LOADS = (0.6, 0.9)  # offered load / capacity at batch size 16
SLO_MULT = 2.0
REQUESTS = 400  # per load and policy
SEGMENTS = 8  # the trace is replayed in this many pieces, policies alternating A B, B A, ...
WARM_UP = 40  # requests replayed (and discarded) under each policy before measuring
POLICIES = ("orloj", "clockwork")
WARM_START = 1000  # offline solo samples per application
# Non-inferiority margin on Orloj - Clockwork (finish rate). Two runs of this test on a quiet
# machine minutes apart (4 segments of 100 requests then, docs/orloj.md "Online correction"):
# the per-segment paired difference had a standard deviation of 0.075-0.105, so 16 pooled
# 50-request segments give a 95% half-width of about 0.07. The run whose calibration erred by
# 3.7% led by +0.10, the one that erred by 23% by -0.01 (lower end about -0.085). 0.10 passes
# both and fails Orloj trailing by its claimed lead with the same spread (the mutant below).
MARGIN = 0.10
CLAIMED_LEAD = 0.15  # docs/orloj.md: +0.152 +- 0.030 over 15 paired runs

Stack = tuple[ServedModel, ProcessExecutor, Calibration]


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    model = build_model("decoder")
    with calibrated_worker(model, batch_reps=5) as (worker, cal):
        yield model, worker, cal


def test_decoder_calibration_fits_g_k(stack: Stack) -> None:
    _, _, cal = stack
    check = cal.check()
    pad = check["padded_vs_homogeneous_median"]
    print(
        f"\ndecoder g_k: {check['within_tolerance']:.0%} of {check['points']} batches within 10%"
        f" (median error {check['median_rel_error']:.1%}); solo medians "
        f"{check['solo_median_ms']} ms; padded/homogeneous {pad:+.1%}"
    )
    # the spec's 10% check holds on a quiet machine (printed above); a test run shares two
    # cores with other work, so it bounds what a wrong model would break, not noise
    assert check["median_rel_error"] <= 0.35
    # the fastest of each class's interleaved solo runs (other work on the machine only adds
    # time; one loaded run had medians of 53 and 58 ms for 32 and 48 tokens), compared with
    # each other, never with a wall-clock number (the ~10-100 ms regime on one core is
    # reported by benchmarks/bench_timing_claims.py)
    solo = {c: min(runs) for c, runs in cal.solo.items()}
    assert solo["new4"] < solo["new16"] < solo["new32"] < solo["new48"]
    # 48 decode steps against 4: a model that did not pay per generated token would be flat
    assert solo["new48"] > 3 * solo["new4"]
    # padding (Eq 4.4): one long member among short ones costs what k long ones do. Measured
    # within +-10% of each other; the bound is wide for a shared 2-core box, while a batch
    # costing its members' average length would be 30-70% cheaper than the homogeneous one
    assert abs(check["padded_vs_homogeneous_median"]) <= 0.25


class Served:
    """One policy as a long-running server keeps it: the policy object and its online profiler
    live across every replay (each replay is a fresh HTTP server over them), so what Orloj's
    profiler measured and what Clockwork's last-10 window saw carry over from replay to replay.
    Only the first replay hands the policy the offline warm start."""

    def __init__(
        self,
        stack: Stack,
        name: str,
        slo: float,
        offline: Mapping[str, Sequence[float]],
        predict: Callable[[Batch], float],
    ) -> None:
        self.stack, self.slo, self.predict = stack, slo, predict
        # each policy as `kairos orloj serve` runs it: Orloj follows the machine's speed
        options = served_options(name, {})
        self.policy = make_system(name, model=stack[2].batch_model, slo_ms=slo, options=options)
        self.profiler = Profiler()
        self.offline: Mapping[str, Sequence[float]] | None = offline  # handed over once

    def run(self, trace: list[Any]) -> dict[str, Any]:
        """One replay of `trace` over a fresh server on the shared worker."""
        model, worker, _ = self.stack
        d = Dispatcher(
            self.policy,
            model,
            worker,
            profiler=self.profiler,
            offline=self.offline,
            predict=self.predict,
        )
        self.offline = None
        with BackgroundServer(create_app(d, model.default_apps())) as srv:
            report = run_load(srv.url, trace, self.slo)
            stats = httpx.get(srv.url + "/v1/stats").json()
            assert httpx.get(srv.url + "/health").json()["status"] == "ok"
        return _summary(report, stats, len(trace))


def _summary(report: Any, stats: dict[str, Any], n: int) -> dict[str, Any]:
    s = report.summary()
    assert s["requests"] == n and sum(s["outcomes"].values()) == n
    assert set(s["outcomes"]) <= {"ok", "late", "timed_out"}  # every request answered 200
    assert stats["ended"] == n and stats["open"] == 0
    return {
        "ok": round(s["finish_rate"] * n),  # the client's verdict: answered ok within the SLO
        "server_ok": s["outcomes"].get("ok", 0),
        "late": s["outcomes"].get("late", 0),
        "timed_out": s["outcomes"].get("timed_out", 0),
        "n": n,
        "rejected_batches": stats["rejected_batches"],
        "batches": stats["batches"],
        "batched": stats["mean_batch_size"] * stats["batches"],
        "drift": stats["drift"],
        "sched_us": stats["scheduler_cpu_us_mean"],
        "lag_ms": s["send_lag_p99_ms"],
    }


def test_orloj_finishes_no_fewer_than_clockwork_within_a_margin_at_two_loads(stack: Stack) -> None:
    model, _, cal = stack
    apps = model.default_apps()
    solo_ms = np.concatenate([np.asarray(v) for v in cal.app_profile(apps, 4000).values()])
    slo = SLO_MULT * float(np.percentile(solo_ms, 99))
    capacity = cal.capacity_per_s(apps, 16)
    offline = cal.app_profile(apps, WARM_START, seed=0)
    served = {name: Served(stack, name, slo, offline, cal.predict(model)) for name in POLICIES}
    runs: dict[tuple[float, str], list[dict[str, Any]]] = {}
    with raised_priority(-10):
        for i, rho in enumerate(LOADS):
            trace = make_trace(model, apps, rho * capacity, REQUESTS, seed=11 + i)
            if i == 0:  # first batches of each size, allocator and thread pools settle here
                for name in POLICIES:
                    served[name].run(_rebase(trace[:WARM_UP]))
            # each segment is replayed under both policies, in A B then B A order: a slow
            # change of the machine's speed (other work on a shared box) hits both alike
            size = len(trace) // SEGMENTS
            for seg in range(SEGMENTS):
                piece = _rebase(trace[seg * size : (seg + 1) * size])
                for name in POLICIES if seg % 2 == 0 else POLICIES[::-1]:
                    runs.setdefault((rho, name), []).append(served[name].run(piece))
    rows = [_row(rho, name, parts) for (rho, name), parts in runs.items()]
    print(
        f"\nSLO {slo:.0f} ms ({SLO_MULT} x P99 solo), capacity {capacity:.0f} req/s at batch 16, "
        f"{REQUESTS} requests per policy and load"
    )
    for r in rows:
        print(
            "  "
            + "  ".join(
                f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()
            )
        )
    pooled: list[float] = []
    for rho in LOADS:
        fr = {r["policy"]: r["finish_rate"] for r in rows if r["load"] == rho}
        # a load where both finish everything (or nothing) ties the policies trivially: one
        # must finish something and one must miss something (a loaded run: Clockwork 0.000
        # at 0.9 x, Orloj 0.410)
        assert max(fr.values()) > 0.05 and min(fr.values()) < 0.98, f"load {rho}: {fr}"
        diffs = [
            (o["ok"] - c["ok"]) / o["n"]
            for o, c in zip(runs[(rho, "orloj")], runs[(rho, "clockwork")], strict=True)
        ]
        mean, half = mean_ci(diffs)
        print(f"  load {rho}: Orloj - Clockwork per segment {mean:+.3f} +- {half:.3f}")
        pooled += diffs
    mean, half = mean_ci(pooled)
    print(
        f"  both loads: {mean:+.3f} +- {half:.3f} over {len(pooled)} segments; calibration "
        f"median error {cal.median_error():.1%}"
    )
    assert not_behind(pooled), f"Orloj - Clockwork per segment: {pooled}"
    # the guard's mutant: the same spread, Orloj trailing by the lead it claims
    assert not not_behind([d - mean - CLAIMED_LEAD for d in pooled])


def not_behind(diffs: Sequence[float]) -> bool:
    """The lower end of the 95% CI of the paired differences lies above -MARGIN."""
    mean, half = mean_ci(diffs)
    return mean - half > -MARGIN


def _rebase(items: list[Any]) -> list[Any]:
    """The same requests, arrival times shifted to start at 0."""
    t0 = items[0].arrival_ms
    return [replace(it, arrival_ms=it.arrival_ms - t0) for it in items]


def _row(rho: float, name: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    total = {
        k: sum(p[k] for p in parts)
        for k in (
            "ok",
            "server_ok",
            "late",
            "timed_out",
            "n",
            "batches",
            "batched",
            "rejected_batches",
        )
    }
    return {
        "load": rho,
        "policy": name,
        "finish_rate": total["ok"] / total["n"],  # the client's (the headline)
        "server_finish_rate": total["server_ok"] / total["n"],
        "late": total["late"],
        "timed_out": total["timed_out"],
        "rejected_batches": total["rejected_batches"],
        "mean_batch": total["batched"] / max(total["batches"], 1),
        # a diagnostic: /v1/stats says null when the calibration's g_k could not predict (NaN)
        "drift": float(np.mean([math.nan if p["drift"] is None else p["drift"] for p in parts])),
        "sched_us": float(np.mean([p["sched_us"] for p in parts])),
        "lag_p99_ms": max(p["lag_ms"] for p in parts),
    }
