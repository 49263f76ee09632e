"""The interface between a tuning algorithm and the driver (spec 2.2).

An algorithm only says which trials run, grouped, and for how many iterations; it never says
where or on how many GPUs. It hears every intermediate result and every trial's end, and may
stop a trial, submit a new group, or grow a group (the rolling groups of ASHA, BOHB and PBT).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kairos.fluid.trial import TrialSpec


class TuningAPI(Protocol):
    def submit_group(self, trials: Sequence[TrialSpec]) -> int: ...

    def add_to_group(self, group: int, trials: Sequence[TrialSpec]) -> None: ...

    def stop(self, trial_id: str) -> None: ...

    def now(self) -> float: ...


class Tuner(Protocol):
    """A tuning algorithm. `metric` is to be maximised (negate a loss)."""

    name: str

    def start(self, api: TuningAPI) -> None: ...

    def on_result(self, api: TuningAPI, trial_id: str, iteration: int, metric: float) -> None:
        """After each iteration; may call `api.stop(trial_id)`."""

    def on_trial_end(self, api: TuningAPI, trial_id: str, stopped: bool) -> None:
        """The trial reached its budget (`stopped` False) or was stopped or failed."""

    def finished(self) -> bool:
        """No more trials will be submitted (the driver stops once nothing runs)."""
