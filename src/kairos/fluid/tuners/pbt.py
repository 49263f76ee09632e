"""Population-based training (Jaderberg et al.) as one long-lived TrialGroup.

Every `interval` iterations a member in the bottom quarter of the population is replaced by a
new trial that starts from a top-quarter member's checkpoint with that member's configuration
perturbed (x0.8 or x1.2, clipped to the unit cube): exploit and explore.
"""

from __future__ import annotations

import numpy as np

from kairos.fluid.trial import TrialSpec
from kairos.fluid.tuner import TuningAPI
from kairos.fluid.tuners.sampling import Config, Sampler


class PBT:
    def __init__(
        self, sampler: Sampler, max_t: int, population: int = 8, interval: int = 10, seed: int = 0
    ) -> None:
        self.name = "pbt"
        self.sampler = sampler
        self.max_t = max_t
        self.population = population
        self.interval = interval
        self.rng = np.random.default_rng(seed)
        self.latest: dict[str, tuple[int, float]] = {}  # live member -> (iteration, metric)
        self.configs: dict[str, Config] = {}
        self.group = -1
        self.count = 0
        self.steady_live = population  # a replaced member's successor joins at once

    def _spec(self, config: Config, parent: str | None = None, at: int = 0) -> TrialSpec:
        trial_id = f"p{self.count}"
        self.count += 1
        self.configs[trial_id] = config
        self.latest[trial_id] = (at, float("-inf"))
        return TrialSpec(trial_id, config, self.max_t, parent=parent, resume_at=at)

    def start(self, api: TuningAPI) -> None:
        self.group = api.submit_group(
            [self._spec(self.sampler.sample()) for _ in range(self.population)]
        )

    def on_result(self, api: TuningAPI, trial_id: str, iteration: int, metric: float) -> None:
        self.latest[trial_id] = (iteration, metric)
        if iteration % self.interval or iteration >= self.max_t:
            return
        ranked = sorted(self.latest, key=lambda i: self.latest[i][1])
        quarter = max(1, len(ranked) // 4)
        if trial_id not in ranked[:quarter]:
            return
        donor = ranked[-1 - int(self.rng.integers(quarter))]
        at = self.latest[donor][0]
        if donor == trial_id or at >= self.max_t:
            return
        config = {
            k: float(np.clip(v * self.rng.choice([0.8, 1.2]), 0.0, 1.0))
            for k, v in self.configs[donor].items()
        }
        api.stop(trial_id)
        api.add_to_group(self.group, [self._spec(config, parent=donor, at=at)])

    def on_trial_end(self, api: TuningAPI, trial_id: str, stopped: bool) -> None:
        self.latest.pop(trial_id, None)

    def finished(self) -> bool:
        return not self.latest
