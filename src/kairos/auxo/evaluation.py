"""Evaluating a cohort run the way the paper does (spec 3.8, 4 "Metrics").

Each client is tested on its own test split under the model of its membership leaf (the leaf
of highest reward, `AuxoPolicy.membership`); with one leaf that is the single global model.
The run's resources are its own counters (`Usage`), not the leaves': a child inherits its
parent's counters, so summing over leaves would count the parent's rounds twice.

How well the cohorts match the latent groups (ARI/NMI against `FederatedDataset.groups`) is
scored here, after training, and only here: nothing during training reads the true groups.
Beside the score over all clients, `evidence_scores` scores only the clients whose membership
Auxo decided from their own updates (see there): a client that never returned a rewarded update
in its final leaf sits there by inherited or predicted reward, which is not Auxo finding it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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


class KeptRound(Protocol):
    """What `evidence_scores` reads of one cohort-round (`policy.RoundReport` satisfies it):
    the cohort, the clients whose updates were kept (aggregated), and their rewards (None when
    the round gave none: one leaf, or too few known members)."""

    @property
    def cohort(self) -> str: ...

    @property
    def client_ids(self) -> tuple[int, ...]: ...

    @property
    def deltas(self) -> tuple[float, ...] | None: ...


@dataclass(frozen=True)
class CoveredScores:
    """ARI/NMI over a subset of clients, and the share of all clients the subset covers."""

    ari: float  # NaN when the subset is empty
    nmi: float
    coverage: float

    def columns(self, suffix: str) -> dict[str, float]:
        return {
            f"ari_{suffix}": self.ari,
            f"nmi_{suffix}": self.nmi,
            f"coverage_{suffix}": self.coverage,
        }


def sampled_mask(rounds: Iterable[KeptRound], n: int) -> np.ndarray:
    """Clients with at least one kept update anywhere in the run: E0's "sampled clients"
    (tests/auxo/core/test_e0_playground.py scores the clients it ever sampled)."""
    mask = np.zeros(n, dtype=bool)
    for r in rounds:
        mask[list(r.client_ids)] = True
    return mask


def evidence_mask(
    rounds: Iterable[KeptRound], leaves: Sequence[str], membership: np.ndarray
) -> np.ndarray:
    """Clients placed by evidence: at least one kept, rewarded update in the leaf they end in.

    Why this and not E0's "ever sampled": under an availability trace nearly every client is
    sampled before the first split, so "sampled" covers clients whose final leaf holds only
    an inherited or predicted reward. A leaf is never split again, so every round of it comes
    after the last split that created it: the reward there is the client's own evidence for
    that leaf. In E0 (every client sampled about 50 times, splits early) the two coincide."""
    m = np.asarray(membership)
    mask = np.zeros(m.size, dtype=bool)
    pos = {c: j for j, c in enumerate(leaves)}
    for r in rounds:
        if r.deltas is None or r.cohort not in pos:
            continue
        ids = np.asarray(r.client_ids, dtype=np.int64)
        mask[ids[m[ids] == pos[r.cohort]]] = True
    return mask


def covered_scores(groups: np.ndarray, membership: np.ndarray, mask: np.ndarray) -> CoveredScores:
    """`cluster_scores` over the clients in `mask` (NaN scores when it is empty)."""
    keep = np.asarray(mask, dtype=bool)
    coverage = float(keep.mean()) if keep.size else 0.0
    if not keep.any():
        return CoveredScores(float("nan"), float("nan"), coverage)
    s = cluster_scores(np.asarray(groups)[keep], np.asarray(membership)[keep])
    return CoveredScores(s.ari, s.nmi, coverage)


def membership_columns(
    groups: np.ndarray, membership: np.ndarray, leaves: Sequence[str], rounds: Sequence[KeptRound]
) -> dict[str, float]:
    """A run's cohort scores: ARI/NMI over all clients (`ari`, `nmi`), over the clients placed
    by evidence (`*_evidence`) and over the sampled ones (`*_sampled`), each with its coverage."""
    every = cluster_scores(groups, membership)
    evidence = covered_scores(groups, membership, evidence_mask(rounds, leaves, membership))
    sampled = covered_scores(groups, membership, sampled_mask(rounds, len(membership)))
    return {
        "ari": every.ari,
        "nmi": every.nmi,
        **evidence.columns("evidence"),
        **sampled.columns("sampled"),
    }
