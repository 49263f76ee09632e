"""Fluid's decisions as plain records, keyed by trial ids.

The driver decides where a queued trial starts (`Launch`: its devices and width), when a running
trial moves to another width at an iteration boundary (`Resize`: old and new devices), and when
a trial stops (`Stop`). A recorder also receives each iteration's `Measured` outcome as it
reaches the driver: not a decision but the input the next ones are made from, so that a log
alone can be replayed through the simulator's driver (`kairos.fluid.replay`). `CODEC` writes
and reads them (`kairos fluid run --decision-log PATH`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kairos.decisions import Codec
from kairos.fluid.core.placement import Placement


@dataclass(frozen=True, slots=True)
class Devices:
    """Where a trial runs: the devices it holds and its width, exact ("2" a gang of two, "1"
    a whole device, "1/2" one of two slots on `gpus[0]`)."""

    gpus: tuple[int, ...]
    width: str


def devices(placement: Placement) -> Devices:
    return Devices(tuple(placement.gpus), str(placement.width))


@dataclass(frozen=True, slots=True)
class Launch:
    """A queued trial starts (or resumes from its checkpoint) on `placement`."""

    trial: str
    placement: Devices


@dataclass(frozen=True, slots=True)
class Resize:
    """A running trial moves from `old` to `new` at its iteration boundary."""

    trial: str
    old: Devices
    new: Devices


@dataclass(frozen=True, slots=True)
class Stop:
    """A trial leaves its devices (or the queue): `reason` is "done" (its budget ran out),
    "stopped" (by its tuning algorithm), "failed" (its iteration raised) or "target" (another
    trial reached the run's target metric)."""

    trial: str
    reason: str


@dataclass(frozen=True, slots=True)
class Measured:
    """An iteration of `trial` ended: its duration (seconds, at the trial's width), the metric
    it reported (None when it reported none or a non-finite one), or the error that ended it."""

    trial: str
    duration: float
    metric: float | None
    error: str | None = None

    @staticmethod
    def of(trial: str, duration: float, metric: float, error: str | None) -> Measured:
        return Measured(trial, duration, metric if math.isfinite(metric) else None, error)

    @property
    def metric_value(self) -> float:
        return float("nan") if self.metric is None else self.metric


Decision = Launch | Resize | Stop
CODEC = Codec([Launch, Resize, Stop, Measured])
