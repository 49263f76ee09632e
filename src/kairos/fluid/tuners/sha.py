"""Synchronous Successive Halving: each rung is one TrialGroup; after the rung's barrier the
best `1/eta` continue (same trial, resumed) at `eta` times the budget. HyperBand and SyncBOHB
are sets of these brackets."""

from __future__ import annotations

import math
from collections.abc import Callable

from kairos.fluid.trial import TrialSpec
from kairos.fluid.tuner import TuningAPI
from kairos.fluid.tuners.sampling import Config, Sampler


class Bracket:
    """One SHA bracket: `n` configurations starting at budget `r`."""

    def __init__(
        self,
        prefix: str,
        configs: list[Config],
        r: int,
        eta: int,
        max_t: int,
        sampler: Sampler,
        on_end: Callable[[TuningAPI], None] | None = None,
    ) -> None:
        self.prefix = prefix
        self.configs = {f"{prefix}t{i}": c for i, c in enumerate(configs)}
        self.budget = r
        self.eta = eta
        self.max_t = max_t
        self.sampler = sampler
        self.on_end = on_end
        self.rung: dict[str, float] = {}  # live rung members -> metric at the rung's budget
        self.pending = 0
        self.promotions: list[list[str]] = []  # per rung, who went on (for tests)

    def start(self, api: TuningAPI) -> None:
        self._submit(api, list(self.configs))

    def _submit(self, api: TuningAPI, ids: list[str]) -> None:
        self.rung = {i: float("-inf") for i in ids}
        self.pending = len(ids)
        api.submit_group([TrialSpec(i, self.configs[i], self.budget) for i in ids])

    def owns(self, trial_id: str) -> bool:
        return trial_id in self.configs

    def on_result(self, trial_id: str, iteration: int, metric: float) -> None:
        if iteration == self.budget and trial_id in self.rung:
            self.rung[trial_id] = metric
            self.sampler.observe(self.configs[trial_id], self.budget, metric)

    def on_trial_end(self, api: TuningAPI, trial_id: str) -> None:
        self.pending -= 1
        if self.pending > 0:
            return
        keep = len(self.rung) // self.eta
        nxt = min(self.budget * self.eta, self.max_t)
        if keep < 1 or nxt <= self.budget:
            self.rung = {}
            if self.on_end is not None:
                self.on_end(api)
            return
        ranked = sorted(self.rung, key=lambda i: (-self.rung[i], i))[:keep]
        self.promotions.append(ranked)
        self.budget = nxt
        self._submit(api, ranked)

    @property
    def done(self) -> bool:
        return self.pending == 0 and not self.rung


class SuccessiveHalving:
    def __init__(self, sampler: Sampler, n: int, r_min: int, max_t: int, eta: int = 3) -> None:
        self.name = "sha"
        self.bracket = Bracket("", [sampler.sample() for _ in range(n)], r_min, eta, max_t, sampler)

    def start(self, api: TuningAPI) -> None:
        self.bracket.start(api)

    def on_result(self, api: TuningAPI, trial_id: str, iteration: int, metric: float) -> None:
        self.bracket.on_result(trial_id, iteration, metric)

    def on_trial_end(self, api: TuningAPI, trial_id: str, stopped: bool) -> None:
        self.bracket.on_trial_end(api, trial_id)

    def finished(self) -> bool:
        return self.bracket.done


def hyperband_brackets(max_t: int, eta: int, r_min: int = 1) -> list[tuple[int, int]]:
    """(n, r) per bracket, most aggressive first (Li et al.): s_max = floor(log_eta(max_t))."""
    s_max = math.floor(math.log(max_t / r_min, eta) + 1e-9)
    out = []
    for s in range(s_max, -1, -1):
        n = math.ceil((s_max + 1) / (s + 1) * eta**s)
        r = max(r_min, round(max_t * eta ** (-s)))
        out.append((n, r))
    return out
