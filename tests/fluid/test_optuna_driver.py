"""The Optuna ask/tell driver runs a study to completion through Fluid's driver."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import FloatDistribution

from kairos.fluid.integrations.optuna_driver import OptunaTuner
from kairos.fluid.simulator import simulate
from kairos.fluid.workloads import preset


def test_a_study_runs_to_completion_with_pruning_under_fluid() -> None:
    w = preset("dcgan")
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=0),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=4, n_warmup_steps=3),
    )
    space = {f"x{i}": FloatDistribution(0.0, 1.0) for i in range(w.dims)}
    tuner = OptunaTuner(study, space, max_t=27, n_trials=24, concurrency=8)
    result = simulate(w, tuner, 4, True, seed=0, to_target=False)
    states = [t.state for t in study.trials]
    assert len(states) == 24
    assert all(
        s in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED) for s in states
    )
    assert states.count(optuna.trial.TrialState.PRUNED) > 0  # the study's pruner did act
    assert result.trials == 24
    completed = [t for t in study.trials if t.state is optuna.trial.TrialState.COMPLETE]
    assert all(len(t.intermediate_values) == 27 for t in completed)
    assert study.best_value <= result.best  # the best final value is one the driver saw


def test_a_minimising_study_is_refused_with_the_fix() -> None:
    study = optuna.create_study(direction="minimize")
    with pytest.raises(ValueError, match="direction='maximize'"):
        OptunaTuner(study, {}, 3, 1)


def test_a_space_that_does_not_name_the_workloads_dimensions_is_refused() -> None:
    w = preset("cifar")  # four dimensions: x0..x3
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(0))
    short = OptunaTuner(study, {"x0": FloatDistribution(0, 1)}, max_t=3, n_trials=2)
    with pytest.raises(ValueError, match="must name exactly x0, x1, x2, x3"):
        simulate(w, short, 8, True, seed=0)
    wide = {f"x{i}": FloatDistribution(0, 2) for i in range(w.dims)}
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        simulate(w, OptunaTuner(study, wide, max_t=3, n_trials=16, concurrency=2), 8, True, seed=0)
    full = {f"x{i}": FloatDistribution(0, 1) for i in range(w.dims)}
    result = simulate(w, OptunaTuner(study, full, max_t=3, n_trials=2), 8, True, seed=0)
    assert result.trials == 2  # the same study, with the space named right, runs
