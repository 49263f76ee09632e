"""The paper's measures of a federated run: speed, resource use and fairness across clients.

Auxo reports time-to-accuracy (simulated seconds until the mean per-client test accuracy first
reaches a target), participant-rounds (the client training jobs spent to get there: resource
efficiency), and the distribution of per-client accuracy (mean, worst 10%, variance: bias).
The paper's Table 3.4 writes accuracy in percent and variance in percent squared; here
accuracies are fractions, so multiply a variance by 1e4 to compare.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class AccuracyStats:
    """Summary of per-client accuracies (clients without test data are left out)."""

    mean: float
    p10: float  # 10th percentile: the worst-off clients
    p90: float
    variance: float
    clients: int

    @staticmethod
    def of(accuracy: np.ndarray, weights: np.ndarray | None = None) -> AccuracyStats:
        """Stats of `accuracy` (NaN entries ignored). `weights` (e.g. test-set sizes) turns
        the mean into the pooled accuracy; percentiles and variance stay per client."""
        a = np.asarray(accuracy, dtype=np.float64)
        ok = ~np.isnan(a)
        if not ok.any():
            nan = float("nan")
            return AccuracyStats(nan, nan, nan, nan, 0)
        w = None if weights is None else np.asarray(weights, dtype=np.float64)[ok]
        mean = (
            float(np.average(a[ok], weights=w))
            if w is not None and w.sum() > 0
            else float(a[ok].mean())
        )
        return AccuracyStats(
            mean=mean,
            p10=float(np.percentile(a[ok], 10)),
            p90=float(np.percentile(a[ok], 90)),
            variance=float(a[ok].var()),
            clients=int(ok.sum()),
        )


@dataclass(frozen=True)
class EvalPoint:
    """One evaluation of a run: where it was (round, simulated time, resources) and scores."""

    round: int
    time: float
    participant_rounds: int  # cumulative updates aggregated
    dispatched: int  # cumulative tasks sent out (stragglers and failures included)
    stats: AccuracyStats
    loss: float  # mean per-client test loss


@dataclass
class History:
    """The evaluation points of one run, in order; the metrics read off it."""

    points: list[EvalPoint] = field(default_factory=list)

    def append(self, point: EvalPoint) -> None:
        self.points.append(point)

    def column(self, name: str) -> np.ndarray:
        """A field along the run: 'round', 'time', 'participant_rounds', 'dispatched', 'loss',
        or an accuracy stat ('mean', 'p10', 'p90', 'variance')."""
        if name in ("mean", "p10", "p90", "variance"):
            return np.array([getattr(p.stats, name) for p in self.points])
        return np.array([getattr(p, name) for p in self.points], dtype=np.float64)

    @property
    def final(self) -> EvalPoint:
        if not self.points:
            raise ValueError("the run has no evaluation points")
        return self.points[-1]

    def best(self, stat: str = "mean") -> float:
        return float(np.nanmax(self.column(stat))) if self.points else float("nan")


def first_reaching(values: np.ndarray, target: float) -> int | None:
    """Index of the first value >= target, or None if never reached."""
    hit = np.flatnonzero(np.asarray(values) >= target)
    return int(hit[0]) if hit.size else None


def time_to_accuracy(history: History, target: float, stat: str = "mean") -> float | None:
    """Simulated seconds until `stat` of per-client accuracy first reaches `target` (None:
    never). Only evaluation points count, so evaluate often enough for the resolution needed."""
    i = first_reaching(history.column(stat), target)
    return None if i is None else float(history.points[i].time)


def participant_rounds_to_accuracy(
    history: History, target: float, stat: str = "mean", dispatched: bool = False
) -> int | None:
    """Client training jobs spent until the target is first reached (None: never).

    `dispatched=True` counts every task sent (stragglers and failed clients also used their
    device), `False` only the updates that were aggregated."""
    i = first_reaching(history.column(stat), target)
    if i is None:
        return None
    p = history.points[i]
    return p.dispatched if dispatched else p.participant_rounds


def speedup(baseline: float | None, candidate: float | None) -> float | None:
    """baseline / candidate for times or resources to a target (None if either never got
    there): > 1 means the candidate is faster."""
    if baseline is None or candidate is None or candidate <= 0:
        return None
    return baseline / candidate
