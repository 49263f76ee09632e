"""What a running Orloj server reports: `/v1/stats` (JSON) and `/metrics` (Prometheus, through
prometheus-client).

Both read one dispatcher at one moment. The headline is the paper's metric, the finish rate
(requests that met their deadline / requests that ended); then what explains it: outcomes per
application, batches run and rejected, mean batch size, worker busy time, scheduler CPU time
per iteration, and how much the profiler measured.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from kairos.orloj.policy import Outcome
from kairos.orloj.runtime.dispatcher import Dispatcher
from kairos.orloj.speed import SpeedTracker
from kairos.report.stats import percentile_summary
from kairos.runtime.prometheus import Families, SnapshotCollector

PREFIX = "kairos_orloj_"
OUTCOMES = tuple(o.value for o in Outcome)


def _rate(counts: Counter[str]) -> float:
    ended = sum(counts.values())
    return counts[Outcome.OK.value] / ended if ended else math.nan


def json_safe(value: Any) -> Any:
    """NaN and infinities as null (JSON has no such numbers), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def speed_factor(d: Dispatcher) -> float | None:
    """Orloj's speed feedback: what it scales g_k by now (None: the policy has none)."""
    tracker = getattr(d.policy, "speed", None)
    return tracker.factor if isinstance(tracker, SpeedTracker) else None


def summary(d: Dispatcher) -> dict[str, Any]:
    """The `/v1/stats` body."""
    s = d.stats
    now = d.now()
    up_ms = now - d.started_ms if math.isfinite(d.started_ms) else 0.0
    cpu = percentile_summary(np.asarray(s.decide_cpu_s) * 1e6, (99,), empty=0.0)
    return {
        "policy": d.policy.name,
        "model": d.model.kind if d.model is not None else "simulated",
        "uptime_s": up_ms / 1e3,
        "finish_rate": _rate(s.outcomes),
        "ended": sum(s.outcomes.values()),
        "outcomes": {o: s.outcomes[o] for o in OUTCOMES},
        "by_app": {
            app: {"finish_rate": _rate(c), **{o: c[o] for o in OUTCOMES}}
            for app, c in sorted(s.by_app.items())
        },
        "open": d.open_requests,
        "pending": d.policy.pending(),
        "batches": s.batches,
        "rejected_batches": s.rejected_batches,
        "failed_batches": s.failed_batches,
        "mean_batch_size": s.batched_requests / s.batches if s.batches else 0.0,
        "utilisation": min(1.0, s.busy_ms / up_ms) if up_ms > 0 else 0.0,
        "drift": s.busy_ms / s.predicted_ms if s.predicted_ms > 0 else math.nan,
        "speed_factor": speed_factor(d),
        "scheduler_iterations": s.decisions,
        "scheduler_cpu_us_mean": cpu["mean"],
        "scheduler_cpu_us_p99": cpu["p99"],
        "profile_cpu_s": s.profile_cpu_s,
        "profiler": {**vars(d.profiler.stats), "backlog": d.profiler.backlog},
    }


class OrlojCollector(SnapshotCollector):
    """`/metrics`: reads the dispatcher, its policy and profiler and the HTTP counts once per
    scrape."""

    prefix = PREFIX

    def __init__(self, dispatcher: Dispatcher, http_responses: Counter[int]) -> None:
        self.dispatcher = dispatcher
        self.http_responses = http_responses

    def snapshot(self, out: Families) -> None:
        d = self.dispatcher
        s = d.stats
        out.labelled(
            "requests",
            "counter",
            "Requests ended, by outcome.",
            "outcome",
            {o: s.outcomes[o] for o in OUTCOMES},
        )
        out.gauge("requests_open", "Requests accepted and not yet answered.", d.open_requests)
        out.gauge("requests_pending", "Requests queued in the policy.", d.policy.pending())
        out.gauge(
            "finish_rate", "Requests that met their deadline / requests ended.", _rate(s.outcomes)
        )
        out.counter("batches", "Batches run by the worker.", s.batches)
        out.counter(
            "batches_rejected", "Batches the worker rejected (late start).", s.rejected_batches
        )
        out.counter("batched_requests", "Requests run in batches.", s.batched_requests)
        out.counter("busy_seconds", "Worker time spent running batches.", s.busy_ms / 1e3)
        out.counter(
            "predicted_busy_seconds",
            "The calibrated g_k for the same batches (drift = the ratio to busy_seconds).",
            s.predicted_ms / 1e3,
        )
        factor = speed_factor(d)
        if factor is not None:
            out.gauge("speed_factor", "What Orloj's speed feedback scales g_k by now.", factor)
        out.counter("scheduler_iterations", "Calls of the policy's next_batch.", s.decisions)
        out.counter("scheduler_cpu_seconds", "CPU time spent in next_batch.", s.decide_cpu_total_s)
        p = d.profiler.stats
        out.counter("profile_reruns", "Solo re-runs measured by the profiler.", p.reruns)
        out.counter("profile_samples", "Solo latencies handed to the policy.", p.samples)
        out.counter("profile_snapshots", "Profile snapshots handed to the policy.", p.snapshots)
        out.labelled(
            "http_requests",
            "counter",
            "HTTP responses by status code.",
            "code",
            {str(c): n for c, n in sorted(self.http_responses.items())},
        )
