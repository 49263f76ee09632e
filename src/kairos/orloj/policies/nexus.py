"""The Nexus baseline: a batch-size plan from the *mean* latency (spec section 4.1, [D + P]).

Nexus's squishy bin packing, reduced to one model on one GPU, picks the batch size b whose
duty cycle fits the SLO: collecting b requests takes b/lambda, running them takes l(b) =
g_b(E[X]); the plan is the largest b in S with b/lambda + l(b) <= SLO (a request waits at most
one cycle, then runs) and l(b) <= b/lambda (the GPU keeps up). Under overload no b satisfies
both; the fallback is the largest b with 2 l(b) <= SLO, and at least 1. The plan is redone
every 10 s from the measured arrival rate. At run time requests wait in one FIFO queue; when
the worker is free, requests at the head that cannot finish even if started now
(now + l(b) > deadline) are dropped early, and up to b of the rest run (any size up to b, as
Nexus profiles every batch size; `fixed_sizes=True`: the largest size in S not above the queue
length and b, to compare with Clockwork at equal granularity). Variance makes real
batches longer than l(b), so the queue never settles: this is why Nexus collapses on dynamic
DNNs.
"""

from __future__ import annotations

from collections.abc import Sequence

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policies.base import OneBatchPolicy
from kairos.orloj.policies.common import (
    DEFAULT_BATCH_SIZES,
    batch_sizes,
    largest_size,
    pooled_mean,
)
from kairos.orloj.policy import Batch, ProfileSnapshot, Request


def plan_batch_size(
    sizes: Sequence[int], exec_ms: Sequence[float], slo_ms: float, rate_per_ms: float | None
) -> int:
    """The Nexus plan for one model on one GPU; `exec_ms[i]` is l(sizes[i])."""
    pairs = list(zip(sizes, exec_ms, strict=True))
    if rate_per_ms is not None and rate_per_ms > 0:
        fits = [b for b, ell in pairs if b / rate_per_ms + ell <= slo_ms and ell <= b / rate_per_ms]
        if fits:
            return max(fits)
    overload = [b for b, ell in pairs if 2 * ell <= slo_ms]
    return max(overload, default=1)


class NexusPolicy(OneBatchPolicy):
    name = "nexus"

    def __init__(
        self,
        model: BatchLatencyModel,
        slo_ms: float,
        sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
        *,
        rate_per_ms: float | None = None,
        replan_ms: float = 10_000.0,
        mean_ms: float | None = None,
        fixed_sizes: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        self.fixed_sizes = fixed_sizes
        self.slo_ms = slo_ms
        self.sizes = batch_sizes(sizes)
        self.replan_ms = replan_ms
        self.rate_per_ms = rate_per_ms  # the expected load the first plan is made for
        self.mean_ms = mean_ms
        self.plan = 1
        self.plans: list[tuple[float, int]] = []  # (time, b): the plan history
        self._arrived_since_plan = 0
        self._planned_at = 0.0
        self._replan(0.0)

    def exec_ms(self, b: int) -> float:
        """l(b): the planned batch time, g_b at the mean solo latency."""
        return float(self.model.g(b, self.mean_ms if self.mean_ms is not None else 0.0))

    def _replan(self, now: float) -> None:
        self.plan = plan_batch_size(
            self.sizes, [self.exec_ms(b) for b in self.sizes], self.slo_ms, self.rate_per_ms
        )
        self.plans.append((now, self.plan))
        self._planned_at = now
        self._arrived_since_plan = 0

    def _maybe_replan(self, now: float) -> None:
        if now - self._planned_at >= self.replan_ms:
            self.rate_per_ms = self._arrived_since_plan / (now - self._planned_at)
            self._replan(now)

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        if self.mean_ms is None:  # Nexus profiles offline, once
            self.mean_ms = pooled_mean(snapshot)
            if self.mean_ms is not None:
                self._replan(self._planned_at)

    def on_arrival(self, request: Request, now: float) -> list[Request]:
        self._maybe_replan(now)
        self._arrived_since_plan += 1
        return super().on_arrival(request, now)

    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        self._maybe_replan(now)  # also while a batch is out: the plan follows the clock
        return super().next_batch(now)

    def drop(self, now: float) -> list[Request]:
        ell = self.exec_ms(self.plan)
        return self.queue.drop_front(lambda r: now + ell > r.deadline)

    def size(self, now: float) -> int:
        n = min(len(self.queue), self.plan)
        return largest_size(self.sizes, n) if self.fixed_sizes else n

    def meta(self) -> dict[str, float]:
        return {"plan": float(self.plan)}
