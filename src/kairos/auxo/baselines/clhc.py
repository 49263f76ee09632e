"""CL+HC (Briggs et al., "Federated learning with hierarchical clustering of local updates to
improve training on non-IID data", IJCNN 2020).

Plain FL trains one global model for `warmup_rounds` (the paper's n rounds before clustering).
Then, once, every client trains from the global model and the server clusters all of their
updates with agglomerative (hierarchical) clustering; each cluster then trains its own model,
starting from the global weights, independently for the rest of the run. The clustering round
needs every client, so it is repeated for the clients that were offline or failed until all
have reported, and all of it is counted (spec 4: "one-shot; every client must take part").

Where the cut is made: the paper cuts the dendrogram at a distance threshold it tunes per
dataset; here the default cuts into `n_clusters` (the number of latent groups, the same
hand-tuned knowledge IFCA and FlexCFL get), and `distance_threshold` gives the paper's form.
Linkage and metric follow the paper's options (Ward on Euclidean distance by default;
average/complete with cosine or Manhattan are the alternatives it compares).
Per-round budget: P is split over the clusters in proportion to their sizes, so the total
matches plain FL's.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.cluster.hierarchy import fcluster, linkage

from kairos.auxo.baselines.common import BaselineResult, ClusterSet
from kairos.fl.learning import RoundRunner


class CLHCConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: int = Field(300, ge=1)  # total, warm-up and clustering round included
    warmup_rounds: int = Field(30, ge=0)  # r_c
    n_clusters: int | None = Field(4, ge=1)
    distance_threshold: float | None = Field(None, gt=0)  # used when n_clusters is None
    linkage: Literal["ward", "average", "complete", "single"] = "ward"
    metric: Literal["euclidean", "cosine", "cityblock"] = "euclidean"
    eval_every: int = Field(10, ge=1)


def hierarchical_labels(updates: np.ndarray, cfg: CLHCConfig) -> np.ndarray:
    """Agglomerative clustering of the rows of `updates`: labels 0..C-1, one per row."""
    u = np.asarray(updates, dtype=np.float64)
    if len(u) < 2:
        return np.zeros(len(u), dtype=np.int64)
    if cfg.linkage == "ward" and cfg.metric != "euclidean":
        raise ValueError("Ward linkage is defined for Euclidean distances only")
    tree = linkage(u, method=cfg.linkage, metric=cfg.metric)
    if cfg.n_clusters is not None:
        raw = fcluster(tree, t=min(cfg.n_clusters, len(u)), criterion="maxclust")
    elif cfg.distance_threshold is not None:
        raw = fcluster(tree, t=cfg.distance_threshold, criterion="distance")
    else:
        raise ValueError("set n_clusters or distance_threshold")
    return np.unique(raw, return_inverse=True)[1].astype(np.int64)


def run_clhc(runner: RoundRunner, cfg: CLHCConfig, rng: np.random.Generator) -> BaselineResult:
    """Warm up, cluster every client once, then train the cluster models."""
    if cfg.warmup_rounds + 1 > cfg.rounds:
        raise ValueError("rounds must leave room for the warm-up and the clustering round")
    cs = ClusterSet.single(runner, rng)
    cs.evaluate()
    p = runner.config.participants
    everyone = np.arange(len(runner.dataset))
    for _ in range(cfg.warmup_rounds):
        cs.run(rng, [everyone], [p])
        if cs.round % cfg.eval_every == 0:
            cs.evaluate()
    updates = cs.collect_updates(0, everyone, rng)
    labels = hierarchical_labels(updates, cfg)
    cs.split(0, labels, everyone)
    clustered_at = cs.round
    cs.train_until(cfg.rounds, p, rng, cfg.eval_every)
    return cs.result("clhc", {"clustered_at_round": clustered_at, "clusters": cs.n_models})
