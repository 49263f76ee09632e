"""ASHA (asynchronous successive halving, Li et al.) and, with a TPE sampler, async BOHB.

A rolling TrialGroup of `concurrency` live trials (spec 2.2): each trial runs toward `max_t`
and is stopped at a rung milestone (`grace * eta^k`) unless it is in the top `1/eta` of what
that rung has recorded so far, the rule of Ray Tune's `AsyncHyperBandScheduler`, with one
difference: Ray cuts from the first record on, we wait for two before stopping anyone
(tests/fluid/test_schedules_vs_ray_tune.py pins both). When a trial leaves, the next sampled
configuration joins the same group, until `n` have been tried.
"""

from __future__ import annotations

import numpy as np

from kairos.fluid.trial import TrialSpec
from kairos.fluid.tuner import TuningAPI
from kairos.fluid.tuners.sampling import Config, Sampler


def milestones(grace: int, eta: int, max_t: int) -> list[int]:
    out, r = [], grace
    while r < max_t:
        out.append(r)
        r *= eta
    return out


class ASHA:
    def __init__(
        self,
        sampler: Sampler,
        max_t: int,
        concurrency: int,
        n: int,
        eta: int = 3,
        grace: int = 1,
        name: str = "asha",
    ) -> None:
        self.name = name
        self.sampler = sampler
        self.max_t = max_t
        self.concurrency = concurrency
        self.n = n
        self.eta = eta
        self.rungs = {m: [] for m in milestones(grace, eta, max_t)}  # type: dict[int, list[float]]
        self.configs: dict[str, Config] = {}
        self.live = 0
        self.group = -1
        # a group refilled as trials leave keeps `concurrency` live (core/gate.py)
        self.steady_live = concurrency if n > concurrency else None

    def _next(self) -> TrialSpec:
        trial_id = f"t{len(self.configs)}"
        self.configs[trial_id] = self.sampler.sample()
        return TrialSpec(trial_id, self.configs[trial_id], self.max_t)

    def start(self, api: TuningAPI) -> None:
        first = [self._next() for _ in range(min(self.concurrency, self.n))]
        self.live = len(first)
        self.group = api.submit_group(first)

    def cutoff(self, milestone: int) -> float | None:
        recorded = self.rungs[milestone]
        if len(recorded) < 2:
            return None
        return float(np.percentile(recorded, (1 - 1 / self.eta) * 100))

    def on_result(self, api: TuningAPI, trial_id: str, iteration: int, metric: float) -> None:
        if iteration not in self.rungs:
            return
        self.sampler.observe(self.configs[trial_id], iteration, metric)
        cut = self.cutoff(iteration)
        self.rungs[iteration].append(metric)
        if cut is not None and metric < cut:
            api.stop(trial_id)

    def on_trial_end(self, api: TuningAPI, trial_id: str, stopped: bool) -> None:
        self.live -= 1
        if len(self.configs) < self.n:
            self.live += 1
            api.add_to_group(self.group, [self._next()])

    def finished(self) -> bool:
        return self.live == 0 and len(self.configs) >= self.n
