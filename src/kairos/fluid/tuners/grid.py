"""Grid and random search: one TrialGroup holding every configuration at the full budget."""

from __future__ import annotations

import itertools

from kairos.fluid.trial import TrialSpec
from kairos.fluid.tuner import TuningAPI
from kairos.fluid.tuners.sampling import Config, Sampler


class GridSearch:
    def __init__(
        self,
        dims: int,
        max_t: int,
        points: int = 3,
        sampler: Sampler | None = None,
        n: int = 0,
        configs: list[Config] | None = None,
    ) -> None:
        self.name = "grid" if sampler is None else "random"
        if configs is not None:
            self.configs = configs
        elif sampler is not None:
            self.configs = [sampler.sample() for _ in range(n)]
        else:
            axis = [(i + 0.5) / points for i in range(points)]
            self.configs = [
                {f"x{i}": v for i, v in enumerate(combo)}
                for combo in itertools.product(axis, repeat=dims)
            ]
        self.max_t = max_t
        self.live = 0

    def start(self, api: TuningAPI) -> None:
        specs = [TrialSpec(f"t{i}", c, self.max_t) for i, c in enumerate(self.configs)]
        self.live = len(specs)
        api.submit_group(specs)

    def on_result(self, api: TuningAPI, trial_id: str, iteration: int, metric: float) -> None:
        pass

    def on_trial_end(self, api: TuningAPI, trial_id: str, stopped: bool) -> None:
        self.live -= 1

    def finished(self) -> bool:
        return self.live == 0
