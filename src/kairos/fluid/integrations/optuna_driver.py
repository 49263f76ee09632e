"""An Optuna study's trials run through the Fluid driver: the study decides which
configurations (its sampler) and which to stop early (its pruner); Fluid decides how wide each
runs. Trials form one rolling TrialGroup of `concurrency` live trials, as in spec 2.2.

    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner())
    space = {f"x{i}": FloatDistribution(0, 1) for i in range(workload.dims)}  # all dimensions
    tuner = OptunaTuner(study, space, max_t=27, n_trials=32)
    simulate(workload, tuner, 8, fluid=True, seed=0)   # or tune_local(tuner, pool, ...)

A simulated workload's configuration is a point of its unit cube, so the space must name
exactly `x0`..`x{dims-1}` in [0, 1]; anything else is refused at the first trial.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kairos.fluid.trial import TrialSpec
from kairos.fluid.tuner import TuningAPI


class OptunaTuner:
    def __init__(
        self,
        study: Any,
        space: Mapping[str, Any],
        max_t: int,
        n_trials: int,
        concurrency: int = 8,
    ) -> None:
        import optuna

        if study.direction != optuna.study.StudyDirection.MAXIMIZE:
            raise ValueError(
                "Fluid maximises its metric: create the study with direction='maximize'"
            )
        self.name = "optuna"
        self._optuna = optuna
        self.study = study
        self.space = dict(space)
        self.max_t = max_t
        self.n_trials = n_trials
        self.concurrency = concurrency
        self.live: dict[str, Any] = {}  # our trial id -> optuna trial
        self.last: dict[str, float] = {}
        self.pruned: set[str] = set()
        self.asked = 0
        self.group = -1
        # a group refilled as trials leave keeps `concurrency` live (core/gate.py)
        self.steady_live = concurrency if n_trials > concurrency else None

    def _ask(self) -> TrialSpec:
        trial = self.study.ask(self.space)
        self.asked += 1
        trial_id = f"o{trial.number}"
        self.live[trial_id] = trial
        return TrialSpec(trial_id, dict(trial.params), self.max_t)

    def start(self, api: TuningAPI) -> None:
        first = [self._ask() for _ in range(min(self.concurrency, self.n_trials))]
        self.group = api.submit_group(first)

    def on_result(self, api: TuningAPI, trial_id: str, iteration: int, metric: float) -> None:
        trial = self.live[trial_id]
        self.last[trial_id] = metric
        trial.report(metric, iteration)
        if trial.should_prune():
            self.pruned.add(trial_id)
            api.stop(trial_id)

    def on_trial_end(self, api: TuningAPI, trial_id: str, stopped: bool) -> None:
        trial = self.live.pop(trial_id)
        state = self._optuna.trial.TrialState
        if trial_id in self.pruned:
            self.study.tell(trial, state=state.PRUNED)
        elif stopped or trial_id not in self.last:
            self.study.tell(trial, state=state.FAIL)
        else:
            self.study.tell(trial, self.last[trial_id])
        if self.asked < self.n_trials:
            api.add_to_group(self.group, [self._ask()])

    def finished(self) -> bool:
        return not self.live and self.asked >= self.n_trials
