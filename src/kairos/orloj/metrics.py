"""What a run achieved: finish rate first (the paper's metric), then the [P] extras.

Finish rate = requests completed by their deadline / all requests; dropped, rejected and late
requests all count as failures (spec section 4). Goodput is the same count per second of the
run. Scheduler CPU time is reported per iteration (one `next_batch` call), as the paper's
overhead discussion does.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import numpy as np

from kairos.orloj.policy import Outcome, Request
from kairos.orloj.worker import BatchRecord


class Run(Protocol):
    """What a run left behind (a `SimResult` is one)."""

    policy: str
    requests: list[Request]
    batches: list[BatchRecord]
    decide_s: list[float]
    arrival_s: list[float]
    stranded: int
    end_time: float


def summarize(result: Run) -> dict[str, Any]:
    reqs = result.requests
    n = len(reqs)
    outcomes = Counter(r.outcome for r in reqs)
    ok = outcomes[Outcome.OK]
    ran = [b for b in result.batches if not b.rejected]
    rejected = [b for b in result.batches if b.rejected]
    start = min((r.release for r in reqs), default=0.0)
    span_ms = max(result.end_time - start, 1e-9)
    busy = sum(b.end - b.start for b in ran)
    decide_us = np.asarray(result.decide_s) * 1e6
    by_app: dict[str, list[bool]] = {}
    for r in reqs:
        by_app.setdefault(r.app, []).append(r.outcome is Outcome.OK)
    return {
        "policy": result.policy,
        "requests": n,
        "finish_rate": ok / n if n else float("nan"),
        "ok": ok,
        "late": outcomes[Outcome.LATE],
        "timed_out": outcomes[Outcome.TIMED_OUT],
        "rejected": sum(b.size for b in rejected),
        "rejected_batches": len(rejected),
        "stranded": result.stranded,
        "goodput_rps": ok / (span_ms / 1e3),
        "batches": len(ran),
        "mean_batch_size": float(np.mean([b.size for b in ran])) if ran else 0.0,
        "utilisation": min(1.0, busy / span_ms),
        "sched_us_mean": float(decide_us.mean()) if decide_us.size else 0.0,
        "sched_us_p99": float(np.percentile(decide_us, 99)) if decide_us.size else 0.0,
        "arrival_us_mean": float(np.mean(result.arrival_s) * 1e6) if result.arrival_s else 0.0,
        "finish_rate_by_app": {a: float(np.mean(v)) for a, v in sorted(by_app.items())},
        "span_s": span_ms / 1e3,
    }
