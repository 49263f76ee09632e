"""scikit-learn's bundled digits (8x8 images, 1,797 samples) dealt out to clients in groups.

Each latent group sees the same images through its own lens: a label permutation (group g
calls a "3" whatever `perms[g][3]` says: a strong conflict, since one model cannot satisfy two
groups at once) or a rotation by g*90 degrees (a milder conflict, since the shapes survive).
This gives the clustered population Auxo looks for without downloading anything. With 1,797
samples this suits tens of clients, not hundreds (the spec's E1 then uses `synthetic`).
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np

from kairos.fl.learning.dataset import ClientData, FederatedDataset
from kairos.fl.learning.partition import (
    assign_groups,
    dirichlet_partition,
    fit_counts_to_total,
    lognormal_counts,
    split_client,
)

Transform = Literal["permute", "rotate", "none"]


@functools.cache
def load_digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """Digits as (images (n, 8, 8) scaled to [0, 1], labels), read-only and loaded once.

    scikit-learn ships the file, so nothing is downloaded; it is imported here because it is
    an optional extra (`fl`)."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = np.asarray(bunch.images, dtype=np.float64) / 16.0
    labels = np.asarray(bunch.target, dtype=np.int64)
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def group_permutations(n_groups: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """One label permutation per group: identity for group 0, then distinct derangements.

    Derangements (no label maps to itself) make every non-zero group disagree with group 0 on
    every class, so the conflict is as strong as it can be and tests can rely on it.
    """
    perms = [np.arange(n_classes)]
    for _ in range(10_000 * n_groups):
        if len(perms) == n_groups:
            break
        p = rng.permutation(n_classes)
        if np.any(p == np.arange(n_classes)) or any(np.array_equal(p, q) for q in perms):
            continue
        perms.append(p)
    if len(perms) < n_groups:
        raise ValueError(f"cannot find {n_groups} distinct derangements of {n_classes} labels")
    return np.stack(perms).astype(np.int64)


def federated_digits(
    n_clients: int,
    rng: np.random.Generator,
    n_groups: int = 4,
    transform: Transform = "permute",
    label_alpha: float | None = 0.5,
    count_sigma: float = 0.5,
    min_count: int = 4,
    test_fraction: float = 0.2,
) -> FederatedDataset:
    """Digits over `n_clients` clients in `n_groups` latent groups.

    Sample counts are lognormal (sigma `count_sigma`) scaled to the 1,797 samples available;
    labels within a client follow Dirichlet(`label_alpha`) proportions (None: IID). The group
    transform is applied after dealing, so the skew is over the original digits. Features are
    the 64 pixel intensities in [0, 1].
    """
    images, labels = load_digits_arrays()
    if transform == "rotate" and n_groups > 4:
        raise ValueError("rotation gives at most 4 distinct groups (0/90/180/270 degrees)")
    if transform not in ("permute", "rotate", "none"):
        raise ValueError(f"unknown transform {transform!r}; use 'permute', 'rotate' or 'none'")
    n_classes = 10
    groups = assign_groups(n_clients, n_groups, rng)
    perms = group_permutations(n_groups, n_classes, rng)
    median = len(labels) / max(n_clients, 1) / np.exp(count_sigma**2 / 2)
    counts = lognormal_counts(n_clients, rng, median=median, sigma=count_sigma, minimum=min_count)
    counts = fit_counts_to_total(counts, len(labels), minimum=min_count)
    parts = dirichlet_partition(labels, counts, label_alpha, rng, n_classes=n_classes)
    clients: list[ClientData] = []
    for i, idx in enumerate(parts):
        g = int(groups[i])
        img, y = images[idx], labels[idx]
        if transform == "permute":
            y = perms[g][y]
        elif transform == "rotate":
            img = np.rot90(img, k=g, axes=(1, 2))
        clients.append(split_client(img.reshape(len(idx), -1), y, test_fraction, rng))
    return FederatedDataset(
        clients=tuple(clients),
        groups=groups,
        n_features=64,
        n_classes=n_classes,
        name="digits",
        params={
            "n_groups": n_groups,
            "transform": transform,
            "label_alpha": label_alpha,
            "count_sigma": count_sigma,
            "permutations": perms.tolist(),
        },
    )
