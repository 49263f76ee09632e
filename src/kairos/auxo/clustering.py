"""Online clustering of client updates inside one cohort (spec 3.2, CLIENTCLUSTERING).

Plain k-means needs every point; mini-batch k-means keeps running centroids. Neither fits: each
round shows a few clients, and their updates depend on that round's model, so a centroid from
one round means nothing in the next. Auxo therefore keeps *labels* per client (on the client in
distributed mode) and recomputes *centroids* every round from the labelled participants of that
round, then relabels everyone present by the nearest centroid.

`cluster_round` is a pure function: the cohort's only clustering state is whether it has been
initialised (`initialised`), and the labels come in as the participants' claimed labels and go
out as their new labels. That is the distributed-mode contract (spec 3.10), and the centralized
policy uses it unchanged. Randomness (k-means++ seeding) comes from the injected generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from kairos.auxo.features import nearest, renormalise
from kairos.auxo.params import AuxoParams

NO_LABEL = -1

Status = Literal["too_few", "waiting", "initialised", "empty_cluster", "frozen", "relabelled"]


def kmeans(
    points: np.ndarray, k: int, rng: np.random.Generator, *, n_init: int = 10, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray, float]:
    """Lloyd's k-means with k-means++ seeding, best of `n_init` by SSE: (labels, centres, sse).

    Written here (numpy only) so the core install needs no scikit-learn and the result depends
    only on the injected generator.
    """
    x = np.asarray(points, dtype=np.float64)
    n = x.shape[0]
    if n < k:
        raise ValueError(f"k-means needs at least k={k} points, got {n}")
    best: tuple[np.ndarray, np.ndarray, float] | None = None
    for _ in range(n_init):
        centres = _plus_plus(x, k, rng)
        labels = nearest(x, centres)
        for _ in range(max_iter):
            new = np.array(
                [
                    x[labels == j].mean(axis=0) if np.any(labels == j) else centres[j]
                    for j in range(k)
                ]
            )
            new_labels = nearest(x, new)
            centres = new
            if np.array_equal(new_labels, labels):
                break
            labels = new_labels
        sse = float(((x - centres[labels]) ** 2).sum())
        if best is None or sse < best[2] - 1e-12:
            best = (labels, centres, sse)
    assert best is not None
    return best


def _plus_plus(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: each next centre drawn with probability proportional to D^2."""
    n = x.shape[0]
    centres = [x[int(rng.integers(n))]]
    d2 = ((x - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        total = float(d2.sum())
        idx = int(rng.integers(n)) if total <= 0 else int(rng.choice(n, p=d2 / total))
        centres.append(x[idx])
        d2 = np.minimum(d2, ((x - x[idx]) ** 2).sum(axis=1))
    return np.array(centres)


def centroids(features: np.ndarray, labels: np.ndarray, k: int, *, unit: bool) -> np.ndarray | None:
    """Per-round centroids of the labelled participants; None if some sub-cluster is empty.

    With unit features (`unit=True`) each centroid is renormalised to unit length (spec 3.1), so
    L2 to it ranks like cosine.
    """
    f = np.asarray(features, dtype=np.float64)
    rows = []
    for j in range(k):
        members = labels == j
        if not np.any(members):
            return None
        rows.append(f[members].mean(axis=0))
    c = np.array(rows)
    return renormalise(c) if unit else c


@dataclass(frozen=True)
class ClusterOutcome:
    """What one CLIENTCLUSTERING call decided for the participants of one cohort-round."""

    labels: np.ndarray  # new label per participant, NO_LABEL = N/A
    initialised: bool  # the cohort's state after the call
    status: Status
    centroids: np.ndarray | None = None


def cluster_round(
    features: np.ndarray,
    claimed: np.ndarray,
    *,
    initialised: bool,
    round_local: int,
    params: AuxoParams,
    rng: np.random.Generator,
) -> ClusterOutcome:
    """One round of CLIENTCLUSTERING for one cohort (spec 3.2).

    `features` are this round's features of the participants (rows), `claimed` their labels for
    this cohort (NO_LABEL for none), `round_local` the cohort's round counter. Returns the new
    labels; the inputs are not modified.
    """
    f = np.asarray(features, dtype=np.float64)
    labels = np.asarray(claimed, dtype=np.int64).copy()
    if f.ndim != 2 or f.shape[0] != labels.shape[0]:
        raise ValueError("features must be (n, d) with one claimed label per row")
    k = params.k
    n = f.shape[0]
    if n < params.min_clients_to_cluster:
        return ClusterOutcome(labels, initialised, "too_few")
    if not initialised:
        if round_local < params.r_start or n < 2 * k:
            return ClusterOutcome(labels, False, "waiting")
        new, centres, _ = kmeans(
            f, k, rng, n_init=params.kmeans_n_init, max_iter=params.kmeans_max_iter
        )
        return ClusterOutcome(new.astype(np.int64), True, "initialised", centres)
    labels[(labels < 0) | (labels >= k)] = NO_LABEL
    c = centroids(f, labels, k, unit=params.feature_norm == "unit")
    if c is None:
        return ClusterOutcome(labels, True, "empty_cluster")
    if round_local > params.r_freeze_labels:
        return ClusterOutcome(labels, True, "frozen", c)
    return ClusterOutcome(nearest(f, c).astype(np.int64), True, "relabelled", c)
