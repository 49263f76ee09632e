"""CCL / CFL (Sattler et al., "Clustered Federated Learning: Model-Agnostic Distributed
Multitask Optimization Under Privacy Constraints", IEEE TNNLS 2020).

Every client of a cluster takes part in every round of that cluster (full participation; the
spec runs it on about 100 clients). A cluster keeps training as plain FL until it reaches a
stationary point of the federated objective while its clients still disagree:

    || sum_i (n_i / n) u_i || < eps1   (the averaged update has almost vanished)   and
    max_i || u_i ||         > eps2   (some clients are still far from their optimum).

Then it is bi-partitioned by the cosine similarity of this round's updates: the optimal
bipartition minimises the largest cross-similarity, which the authors compute by agglomerative
clustering on the similarity matrix with complete linkage (`linkage="single"` gives the exact
minimiser of the stated objective, at the price of peeling off single outliers). Both parts
continue from the parent's weights and optimizer state and are tested again later, so the
partition is recursive and late. A split also needs `min_rounds` of training since the cluster
was created and `min_size` clients on each side; `max_cross_similarity` (off by default) is
the paper's optional check that the parts are really separated.

eps1 and eps2 depend on the model's scale; `relative=True` (default) reads them as multiples of
the norm of the cluster's averaged update in its first round (the federated gradient it started
from), so one setting works across models and data.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from kairos.auxo.baselines.common import BaselineResult, ClusterSet
from kairos.auxo.features import unit_rows
from kairos.fl.learning import RoundRunner, weighted_mean


class CCLConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: int = Field(300, ge=1)
    eps1: float = Field(0.4, gt=0)
    eps2: float = Field(1.6, gt=0)
    relative: bool = True
    min_rounds: int = Field(20, ge=1)  # rounds a cluster trains before it may split
    min_size: int = Field(2, ge=1)
    max_clusters: int = Field(8, ge=1)
    linkage: Literal["complete", "single", "average"] = "complete"
    max_cross_similarity: float | None = Field(None, ge=-1, le=1)
    eval_every: int = Field(10, ge=1)


def cosine_matrix(updates: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarity of the rows (an all-zero row is similar to nothing)."""
    u = unit_rows(np.asarray(updates, dtype=np.float64))
    return np.clip(u @ u.T, -1.0, 1.0)


def bipartition(updates: np.ndarray, method: str = "complete") -> tuple[np.ndarray, float]:
    """Two-way split of the rows by cosine similarity (labels 0/1) and the largest
    similarity between the two parts."""
    sim = cosine_matrix(updates)
    dist = 1.0 - sim
    np.fill_diagonal(dist, 0.0)
    tree = linkage(squareform(dist, checks=False), method=method)
    labels = (fcluster(tree, t=2, criterion="maxclust") - 1).astype(np.int64)
    a, b = labels == 0, labels == 1
    cross = float(sim[np.ix_(a, b)].max()) if a.any() and b.any() else 1.0
    return labels, cross


def stationary(updates: np.ndarray, counts: np.ndarray, eps1: float, eps2: float) -> bool:
    """Sattler's split condition: small averaged update, large individual ones."""
    mean_norm = float(np.linalg.norm(weighted_mean(updates, counts)))
    max_norm = float(np.linalg.norm(updates, axis=1).max())
    return mean_norm < eps1 and max_norm > eps2


def run_ccl(runner: RoundRunner, cfg: CCLConfig, rng: np.random.Generator) -> BaselineResult:
    """Full-participation FL with recursive, late bi-partitioning of clusters."""
    cs = ClusterSet.single(runner, rng)
    cs.evaluate()
    born = [0]  # round each cluster was created
    scale: list[float | None] = [None]  # averaged-update norm in each cluster's first round
    splits: list[dict[str, object]] = []
    while cs.round < cfg.rounds:
        members = [cs.members(k) for k in range(cs.n_models)]
        results = cs.run(rng, members, [len(m) for m in members])
        for k, res in enumerate(list(results)):
            if res is None or not res.aggregated or len(res.participants) < 2 * cfg.min_size:
                continue
            if scale[k] is None:
                scale[k] = float(np.linalg.norm(weighted_mean(res.updates, res.counts)))
            first = scale[k]
            unit = first if cfg.relative and first else 1.0
            ready = cs.round - born[k] >= cfg.min_rounds and cs.n_models < cfg.max_clusters
            if not ready or not stationary(
                res.updates, res.counts, cfg.eps1 * unit, cfg.eps2 * unit
            ):
                continue
            labels, cross = bipartition(res.updates, cfg.linkage)
            sizes = np.bincount(labels, minlength=2)
            if sizes.min() < cfg.min_size:
                continue
            if cfg.max_cross_similarity is not None and cross > cfg.max_cross_similarity:
                continue
            parts = cs.split(k, labels, res.participants)
            for _ in parts[1:]:
                born.append(cs.round)
                scale.append(None)
            born[k], scale[k] = cs.round, None
            splits.append(
                {"round": cs.round, "cluster": k, "sizes": sizes.tolist(), "cross": cross}
            )
        if cs.round % cfg.eval_every == 0:
            cs.evaluate()
    return cs.result("ccl", {"splits": splits, "clusters": cs.n_models})
