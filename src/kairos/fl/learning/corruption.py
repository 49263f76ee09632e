"""Label-flipping clients (spec 3.11 and E6): a share of the population trains on wrong labels.

The classic flip maps label y to C - 1 - y. Only the *training* labels of the chosen clients
are flipped: they poison what they upload, while their test labels stay the task's true ones,
so the models are still judged on serving every client correctly. The flipped clients are
returned beside the dataset so an experiment can also score the honest clients alone. Nothing
in training learns which clients were chosen.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kairos.fl.learning.dataset import FederatedDataset


def flipped_label(y: np.ndarray, n_classes: int) -> np.ndarray:
    """y -> C - 1 - y: an involution without fixed points when C is even."""
    return (n_classes - 1 - np.asarray(y)).astype(np.asarray(y).dtype)


def flip_labels(
    dataset: FederatedDataset, fraction: float, rng: np.random.Generator
) -> tuple[FederatedDataset, np.ndarray]:
    """A copy of `dataset` where round(fraction * N) clients, drawn uniformly, have their
    training labels flipped; returns it and the sorted ids of the flipped clients."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError("fraction must be in [0, 1]")
    n = len(dataset)
    k = round(fraction * n)
    chosen = np.sort(rng.choice(n, size=k, replace=False)) if k else np.zeros(0, dtype=np.int64)
    flipped = set(chosen.tolist())
    clients = tuple(
        replace(c, y_train=flipped_label(c.y_train, dataset.n_classes)) if i in flipped else c
        for i, c in enumerate(dataset.clients)
    )
    params = {**dataset.params, "flip_fraction": fraction}
    return replace(dataset, clients=clients, params=params), chosen.astype(np.int64)
