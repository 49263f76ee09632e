"""The Venn policy interface: `plan(view) -> Plan`, pure and deterministic.

A policy reads a `ManagerView` snapshot and returns a `Plan`; it does no I/O, reads no clock
(time is `view.now`) and draws randomness only from the `numpy.random.Generator` it was built
with. The same object therefore drives the simulator and a real resource-manager service: the
manager calls `plan` on every trigger (request submitted, fully dispatched, closed; job
finished; periodically) and answers each device check-in from the current plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from kairos.venn.matching import TierMatcher
from kairos.venn.plans import OrderPlan, Plan
from kairos.venn.view import ManagerView, RequestView


class DevicePolicy(Protocol):
    name: str

    def plan(self, view: ManagerView) -> Plan: ...


def apply_tiers(
    plan: Plan, view: ManagerView, matcher: TierMatcher | None, rng: np.random.Generator
) -> None:
    """Decide the tier of every head request whose tier is still open (Algorithm 4).

    Heads are the requests first in line for some atom (the "currently served" ones); the
    supply reaching a head is the rate of those atoms (for Venn: its group's allocation; a
    group whose atoms all went to others is not being served and is not tiered).
    """
    if matcher is None:
        return
    heads = plan.heads(view.rates)
    by_id = {r.request_id: r for r in view.requests}
    backlog: dict[int, int] = {}
    for r in view.requests:
        backlog[r.group] = backlog.get(r.group, 0) + r.remaining
    for rid, rate in sorted(heads.items()):
        req = by_id.get(rid)
        if req is None or req.tier_decided:
            continue
        plan.tiers[rid] = matcher.decide(req, rate, view.pooled, rng, backlog[req.group])


class OrderedPolicy:
    """A policy that is one global priority order (smallest key first), plus optional tiers."""

    name = "ordered"

    def __init__(
        self, matcher: TierMatcher | None = None, rng: np.random.Generator | None = None
    ) -> None:
        self.matcher = matcher
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def sort_key(self, req: RequestView) -> tuple[float, ...]:
        raise NotImplementedError

    def ordered(self, view: ManagerView) -> Sequence[RequestView]:
        return sorted(view.requests, key=self.sort_key)

    def plan(self, view: ManagerView) -> Plan:
        order = self.ordered(view)
        plan = OrderPlan(order=[(r.request_id, r.group) for r in order])
        apply_tiers(plan, view, self.matcher, self.rng)
        return plan


def by(*fields: Callable[[RequestView], float]) -> Callable[[RequestView], tuple[float, ...]]:
    """A sort key from several fields, ending with arrival and job id for determinism."""

    def key(r: RequestView) -> tuple[float, ...]:
        return (*(f(r) for f in fields), r.arrival, float(r.request_id))

    return key
