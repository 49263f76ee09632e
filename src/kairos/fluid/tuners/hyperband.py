"""HyperBand (brackets running side by side, each rung a TrialGroup) and SyncBOHB (the same
brackets one after another, each sampling new configurations from TPE fitted on everything
reported so far: BOHB's model with synchronous rungs)."""

from __future__ import annotations

from kairos.fluid.tuner import TuningAPI
from kairos.fluid.tuners.sampling import Sampler
from kairos.fluid.tuners.sha import Bracket, hyperband_brackets


class HyperBand:
    def __init__(
        self,
        sampler: Sampler,
        max_t: int = 81,
        eta: int = 3,
        concurrent: bool = True,
        name: str = "hyperband",
    ) -> None:
        self.name = name
        self.sampler = sampler
        self.max_t = max_t
        self.eta = eta
        self.concurrent = concurrent
        self.plan = hyperband_brackets(max_t, eta)
        self.brackets: list[Bracket] = []

    def _open(self, api: TuningAPI, index: int) -> None:
        n, r = self.plan[index]
        follow = None if self.concurrent or index + 1 >= len(self.plan) else index + 1

        def on_end(api: TuningAPI) -> None:
            if follow is not None:
                self._open(api, follow)

        configs = [self.sampler.sample() for _ in range(n)]
        bracket = Bracket(f"b{index}-", configs, r, self.eta, self.max_t, self.sampler, on_end)
        self.brackets.append(bracket)
        bracket.start(api)

    def start(self, api: TuningAPI) -> None:
        for index in range(len(self.plan) if self.concurrent else 1):
            self._open(api, index)

    def _owner(self, trial_id: str) -> Bracket:
        return next(b for b in self.brackets if b.owns(trial_id))

    def on_result(self, api: TuningAPI, trial_id: str, iteration: int, metric: float) -> None:
        self._owner(trial_id).on_result(trial_id, iteration, metric)

    def on_trial_end(self, api: TuningAPI, trial_id: str, stopped: bool) -> None:
        self._owner(trial_id).on_trial_end(api, trial_id)

    def finished(self) -> bool:
        return len(self.brackets) == len(self.plan) and all(b.done for b in self.brackets)
