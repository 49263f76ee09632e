"""Where configurations come from: uniform random, or Optuna's TPE (the model-based part of
BOHB) fitted on the results reported so far. Configurations live in the unit cube."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

Config = dict[str, Any]


class Sampler(Protocol):
    def sample(self) -> Config: ...

    def observe(self, config: Config, budget: int, metric: float) -> None: ...


class RandomSampler:
    def __init__(self, dims: int, seed: int) -> None:
        self.dims = dims
        self.rng = np.random.default_rng(seed)

    def sample(self) -> Config:
        return {f"x{i}": float(v) for i, v in enumerate(self.rng.random(self.dims))}

    def observe(self, config: Config, budget: int, metric: float) -> None:
        pass


class TPESampler:
    """BOHB's model (Falkner et al.) through Optuna's TPE: a study per budget, and new
    configurations drawn from the largest budget with enough observations (dims + 2)."""

    def __init__(self, dims: int, seed: int, warmup: int | None = None) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self.dims = dims
        self.seed = seed
        self.warmup = warmup or dims + 2
        self.studies: dict[int, Any] = {}
        self.random = RandomSampler(dims, seed)

    def _study(self, budget: int) -> Any:
        study = self.studies.get(budget)
        if study is None:
            sampler = self._optuna.samplers.TPESampler(seed=self.seed + budget, n_startup_trials=0)
            study = self._optuna.create_study(direction="maximize", sampler=sampler)
            self.studies[budget] = study
        return study

    def _distributions(self) -> dict[str, Any]:
        return {
            f"x{i}": self._optuna.distributions.FloatDistribution(0.0, 1.0)
            for i in range(self.dims)
        }

    def sample(self) -> Config:
        ready = [b for b, s in self.studies.items() if len(s.trials) >= self.warmup]
        if not ready:
            return self.random.sample()
        study = self.studies[max(ready)]
        trial = study.ask(self._distributions())
        config = dict(trial.params)
        study.tell(trial, state=self._optuna.trial.TrialState.FAIL)  # asked only to sample
        return config

    def observe(self, config: Config, budget: int, metric: float) -> None:
        if not np.isfinite(metric):
            return
        study = self._study(budget)
        study.add_trial(
            self._optuna.trial.create_trial(
                params=config, distributions=self._distributions(), value=metric
            )
        )
