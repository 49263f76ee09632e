"""FlexCFL-lite (Duan et al., "Flexible Clustered Federated Learning for Client-Level Data
Distribution Shift", IEEE TPDS 2021), the part the Auxo comparison exercises.

Cold start at round 0: every client pre-trains from the initial model and uploads its update.
The server decomposes the update matrix (truncated SVD, K directions) and describes each
client by the cosine similarity of its update to each direction ("Euclidean distance of
decomposed cosine similarity", EDC); k-means on those descriptions gives K groups. Each group
model starts from the initial weights plus its members' pre-training step (the FedAvg of their
updates), then trains independently with a share of P proportional to its size.
A client that was not clustered (a newcomer) joins the group whose model has the lowest loss
on its training data (`assign_newcomers`).

"Lite": the paper's inter-group aggregation (each group model also takes a small step along
the other groups' updates) and its client migration on distribution shift are left out; the
spec's comparison is about when and how groups are formed (early, one-shot), which is kept.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.auxo.baselines.common import (
    BaselineResult,
    ClusterSet,
    client_losses,
)
from kairos.auxo.clustering import kmeans
from kairos.auxo.features import unit_rows
from kairos.fl.learning import RoundRunner, weighted_mean


class FlexCFLConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    k: int = Field(4, ge=1)  # groups, and SVD directions kept
    rounds: int = Field(300, ge=1)  # total, the pre-training round included
    eval_every: int = Field(10, ge=1)
    kmeans_n_init: int = Field(10, ge=1)


def edc_features(updates: np.ndarray, k: int) -> np.ndarray:
    """EDC descriptions: cosine of each update (row) with the top-k right singular vectors of
    the update matrix, shape (n, min(k, rank-limit))."""
    u = np.asarray(updates, dtype=np.float64)
    _, _, vt = np.linalg.svd(u, full_matrices=False)
    directions = vt[: min(k, vt.shape[0])]  # unit rows already
    return np.asarray(unit_rows(u) @ directions.T)


def edc_labels(
    updates: np.ndarray, k: int, rng: np.random.Generator, n_init: int = 10
) -> np.ndarray:
    """FlexCFL's grouping: k-means (k-means++, best of `n_init`) on the EDC descriptions."""
    feats = edc_features(updates, k)
    if len(feats) < k:
        return np.arange(len(feats), dtype=np.int64)
    labels, _, _ = kmeans(feats, k, rng, n_init=n_init)
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def assign_newcomers(runner: RoundRunner, cs: ClusterSet, clients: np.ndarray) -> np.ndarray:
    """Cold start for clients that were not clustered: the group whose model fits best."""
    losses = client_losses(runner, [s.weights for s in cs.states], clients)
    picks = np.argmin(losses, axis=1).astype(np.int64)
    cs.assignment[np.asarray(clients, dtype=np.int64)] = picks
    return picks


def run_flexcfl(
    runner: RoundRunner,
    cfg: FlexCFLConfig,
    rng: np.random.Generator,
    clustered: np.ndarray | None = None,
) -> BaselineResult:
    """Pre-train and group `clustered` clients (all by default) at round 0, place the rest as
    newcomers, then train the group models."""
    n = len(runner.dataset)
    members = np.arange(n) if clustered is None else np.asarray(clustered, dtype=np.int64)
    cs = ClusterSet.single(runner, rng)
    cs.evaluate()
    start = cs.states[0].weights.copy()
    updates = cs.collect_updates(0, members, rng)
    labels = edc_labels(updates, cfg.k, rng, cfg.kmeans_n_init)
    idx = cs.split(0, labels, members)
    counts = runner.dataset.train_counts[members]
    for v, j in enumerate(idx):
        rows = labels == v
        cs.states[j].weights = start - weighted_mean(updates[rows], counts[rows])
    newcomers = np.setdiff1d(np.arange(n), members)
    if len(newcomers):
        assign_newcomers(runner, cs, newcomers)
    p = runner.config.participants
    cs.train_until(cfg.rounds, p, rng, cfg.eval_every)
    return cs.result("flexcfl", {"groups": cs.n_models, "newcomers": len(newcomers)})
