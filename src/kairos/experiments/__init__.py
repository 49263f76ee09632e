"""Experiments as data: a pydantic config, a run function, and a cached parallel sweep."""

from kairos.experiments.registry import (
    Experiment,
    ExperimentContext,
    experiment,
    get_experiment,
    list_experiments,
)
from kairos.experiments.sweep import Sweep, SweepError, grid, point_key

__all__ = [
    "Experiment",
    "ExperimentContext",
    "Sweep",
    "SweepError",
    "experiment",
    "get_experiment",
    "grid",
    "list_experiments",
    "point_key",
]
