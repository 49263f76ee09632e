"""LEAF's Synthetic(alpha, beta) generator, extended with latent groups that share a labeller.

In LEAF (Caldas et al. 2018, after Shamir et al.) every client k has its own softmax labeller
y = argmax(W_k x + b_k) with W_k ~ N(u_k, 1), u_k ~ N(0, alpha): alpha controls how much the
labellers differ (model heterogeneity); its features x ~ N(v_k, Sigma) with v_k ~ N(B_k, 1),
B_k ~ N(0, beta), Sigma_jj = j^-1.2: beta controls how much the inputs differ. The Auxo spec
wants *groups*: here the labeller belongs to the group (every client of group g uses W_g,
b_g), so clients of one group agree on the task and groups conflict, while beta still shifts
each client's inputs. `shared` mixes a common matrix into every group's (sqrt(s)*W_0 +
sqrt(1-s)*W_g), for experiments whose groups should share structure (spec E5).
"""

from __future__ import annotations

import numpy as np

from kairos.fl.learning.dataset import ClientData, FederatedDataset
from kairos.fl.learning.partition import (
    assign_groups,
    dirichlet_take,
    lognormal_counts,
    split_client,
)


def _labeller(
    rng: np.random.Generator, dim: int, n_classes: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """One LEAF labeller: W ~ N(u, 1) (dim x classes), b ~ N(u, 1), u ~ N(0, alpha)."""
    u = rng.normal(0.0, np.sqrt(alpha)) if alpha > 0 else 0.0
    return rng.normal(u, 1.0, size=(dim, n_classes)), rng.normal(u, 1.0, size=n_classes)


def federated_synthetic(
    n_clients: int,
    rng: np.random.Generator,
    n_groups: int = 4,
    alpha: float = 1.0,
    beta: float = 1.0,
    dim: int = 60,
    n_classes: int = 10,
    shared: float = 0.0,
    label_alpha: float | None = None,
    group_weights: tuple[float, ...] | None = None,
    count_median: float = 120.0,
    count_sigma: float = 0.5,
    min_count: int = 100,
    max_count: int | None = 1000,
    test_fraction: float = 0.2,
) -> FederatedDataset:
    """`n_clients` clients in `n_groups` groups of the grouped Synthetic(alpha, beta) task.

    Counts are lognormal (median `count_median`, sigma `count_sigma`, at least `min_count`:
    the default 100 keeps about 20 test samples per client, as the spec asks). `label_alpha`
    adds Dirichlet label skew on top of the natural skew of the generator: each client draws
    four times its count and keeps a Dirichlet-proportioned subset. `beta=0` departs from
    LEAF on purpose: every client then draws inputs from the same N(0, Sigma) (LEAF would
    still give each client its own N(0, 1) mean), so `n_groups=1, alpha=beta=0` is a truly
    IID control and `beta=0` with groups isolates the labeller conflict. `group_weights`
    makes the groups unequal in size (see `assign_groups`; None: equal).
    """
    if not 0.0 <= shared <= 1.0:
        raise ValueError(f"shared must be in [0, 1], got {shared}")
    if alpha < 0 or beta < 0:
        raise ValueError("alpha and beta are variances and must be >= 0")
    groups = assign_groups(n_clients, n_groups, rng, group_weights)
    w0, b0 = _labeller(rng, dim, n_classes, alpha)
    labellers = []
    for _ in range(n_groups):
        w, b = _labeller(rng, dim, n_classes, alpha)
        labellers.append(
            (
                np.sqrt(shared) * w0 + np.sqrt(1 - shared) * w,
                np.sqrt(shared) * b0 + np.sqrt(1 - shared) * b,
            )
        )
    scale = np.arange(1, dim + 1, dtype=np.float64) ** -0.6  # sqrt of Sigma_jj = j^-1.2
    counts = lognormal_counts(
        n_clients, rng, median=count_median, sigma=count_sigma, minimum=min_count, maximum=max_count
    )
    clients: list[ClientData] = []
    for i in range(n_clients):
        w, b = labellers[int(groups[i])]
        shift = rng.normal(0.0, np.sqrt(beta)) if beta > 0 else 0.0
        mean = rng.normal(shift, 1.0, size=dim) if beta > 0 else np.zeros(dim)
        n = int(counts[i]) * (4 if label_alpha is not None else 1)
        x = mean + rng.normal(size=(n, dim)) * scale
        y = np.argmax(x @ w + b, axis=1).astype(np.int64)
        if label_alpha is not None:
            p = rng.dirichlet(np.full(n_classes, label_alpha))
            keep = dirichlet_take(y, np.ones(n, dtype=bool), int(counts[i]), p, rng)
            x, y = x[keep], y[keep]
        clients.append(split_client(x, y, test_fraction, rng))
    return FederatedDataset(
        clients=tuple(clients),
        groups=groups,
        n_features=dim,
        n_classes=n_classes,
        name="synthetic",
        params={
            "n_groups": n_groups,
            "alpha": alpha,
            "beta": beta,
            "shared": shared,
            "label_alpha": label_alpha,
            "group_weights": group_weights,
            "count_median": count_median,
            "count_sigma": count_sigma,
        },
    )
