"""Evaluating a cohort run the way the paper does (spec 3.8, 4 "Metrics").

Each client is tested on its own test split under the model of its membership leaf (the leaf
of highest reward, `AuxoEngine.membership`); with one leaf that is the single global model.
The run's resources are its own counters (`Usage`), not the leaves': a child inherits its
parent's counters, so summing over leaves would count the parent's rounds twice.

How well the cohorts match the latent groups (ARI/NMI against `FederatedDataset.groups`) is
scored here, after training, and only here: nothing during training reads the true groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kairos.auxo.assignment import oracle_assignment
from kairos.fl.learning import (
    AccuracyStats,
    EvalPoint,
    FederatedDataset,
    Model,
    TrainingState,
    evaluate_clients,
)

FLOAT_BYTES = 4  # models travel as float32 (FedScale); affinity values too
INT_BYTES = 4


def message_bytes(cohort: str) -> int:
    """Bytes of one affinity message (client id or dR, L, R and the cohort's dotted id)."""
    return 3 * INT_BYTES + len(cohort.encode())


@dataclass
class Usage:
    """Resources spent by the whole run (children inherit their parent's counters, so summing
    leaves' counters would count the parent's rounds twice: these are the run's own)."""

    cohort_rounds: int = 0
    participant_rounds: int = 0
    dispatched: int = 0
    model_bytes: int = 0
    affinity_bytes: int = 0


class CohortRun(Protocol):
    """What evaluation reads of a run (`CohortTraining` satisfies it)."""

    states: dict[str, TrainingState]
    usage: Usage

    def leaves(self) -> list[str]: ...

    def memberships(self) -> np.ndarray: ...

    @property
    def model(self) -> Model: ...

    @property
    def dataset(self) -> FederatedDataset: ...


@dataclass(frozen=True)
class CohortEval:
    """One evaluation: the summary point, and per client its accuracy and leaf index."""

    point: EvalPoint
    accuracy: np.ndarray
    membership: np.ndarray  # index into `leaves`
    leaves: tuple[str, ...]


def evaluate_cohorts(run: CohortRun, round: int, time: float) -> CohortEval:
    """Per-client accuracy of every client on its membership leaf's model."""
    leaves = run.leaves()
    which = run.memberships()
    weights = [run.states[c].weights for c in leaves]
    scores = evaluate_clients(run.model, run.dataset, weights, assignment=which)
    point = EvalPoint(
        round=round,
        time=time,
        participant_rounds=run.usage.participant_rounds,
        dispatched=run.usage.dispatched,
        stats=AccuracyStats.of(scores.accuracy),
        loss=float(np.nanmean(scores.loss)),
    )
    return CohortEval(point, scores.accuracy, which, tuple(leaves))


def oracle_membership(run: CohortRun) -> np.ndarray:
    """Diagnostic, not Auxo (spec 3.9): each client's leaf whose model has the lowest loss on
    the client's *training* data (ties: first id), as an index into `leaves()`. Scoring the
    run under it separates what the cohort models can do from how well Auxo assigns clients."""
    leaves = run.leaves()
    model = run.model
    pos = {c: j for j, c in enumerate(leaves)}
    out = np.zeros(len(run.dataset), dtype=np.int64)
    for i, data in enumerate(run.dataset.clients):
        if data.n_train == 0:
            continue
        losses = {c: model.loss(run.states[c].weights, data.x_train, data.y_train) for c in leaves}
        out[i] = pos[oracle_assignment(losses)]
    return out


def evaluate_under(run: CohortRun, membership: np.ndarray) -> AccuracyStats:
    """Per-client accuracy statistics with client i scored on leaf `membership[i]`'s model."""
    weights = [run.states[c].weights for c in run.leaves()]
    scores = evaluate_clients(run.model, run.dataset, weights, assignment=membership)
    return AccuracyStats.of(scores.accuracy)


def membership_index(membership: Mapping[int, str], leaves: Sequence[str], n: int) -> np.ndarray:
    """Client i's leaf as an index into `leaves` (clients 0..n-1)."""
    pos = {c: j for j, c in enumerate(leaves)}
    return np.array([pos[membership[i]] for i in range(n)], dtype=np.int64)


@dataclass(frozen=True)
class ClusterScores:
    """Agreement of cohort membership with the latent groups (1 = identical partitions)."""

    ari: float
    nmi: float
    leaves: int


def cluster_scores(groups: np.ndarray, membership: np.ndarray) -> ClusterScores:
    """ARI and NMI of membership against the true groups (scikit-learn's definitions)."""
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    g = np.asarray(groups)
    m = np.asarray(membership)
    return ClusterScores(
        float(adjusted_rand_score(g, m)),
        float(normalized_mutual_info_score(g, m)),
        int(np.unique(m).size),
    )
