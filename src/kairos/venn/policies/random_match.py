"""Random matching, the production baseline, in its optimised and plain forms.

`RandomPolicy` is the paper's optimised Random: every request draws a fresh random priority when
it is submitted, and a request that has started to receive devices stays first until it is
satisfied, so rounds are not starved by being interleaved (fewer aborts). The priority is kept
as a plan memo: the manager stores it on the request, the policy stays stateless.
`RandomPurePolicy` gives each device to a uniformly random eligible request (Meta's design);
`mode="demand"` weighs by remaining demand (jobs sample devices, Google's design) and
`mode="client"` lets each device pick among all eligible unfinished jobs (Apple's design).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from kairos.venn.plans import OrderPlan, Plan, RandomPlan
from kairos.venn.view import ManagerView


class RandomPolicy:
    name = "random"

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def plan(self, view: ManagerView) -> Plan:
        memos: dict[int, float] = {}
        keyed = []
        for r in view.requests:
            prio = r.memo
            if prio is None:
                prio = memos[r.request_id] = float(self.rng.random())
            keyed.append((0 if r.started else 1, prio, r.request_id, r.group))
        keyed.sort()
        return OrderPlan(order=[(rid, g) for _, _, rid, g in keyed], memos=memos)


class RandomPurePolicy:
    def __init__(
        self,
        mode: Literal["uniform", "demand", "client"] = "uniform",
        rng: np.random.Generator | None = None,
    ) -> None:
        self.mode = mode
        self.name = {"uniform": "random-pure", "demand": "random-job", "client": "random-client"}[
            mode
        ]
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def plan(self, view: ManagerView) -> Plan:
        return RandomPlan(
            requests=view.requests, idle_jobs=view.idle_jobs, mode=self.mode, rng=self.rng
        )
