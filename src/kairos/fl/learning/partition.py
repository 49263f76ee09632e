"""How samples are dealt out to clients: sample counts, label skew and per-client test splits.

Real federated populations differ in how much data each client has (heavy-tailed: a few
clients hold a lot) and in which labels they see (a phone's photos are not a uniform draw of
all classes). The usual laptop-scale stand-ins are lognormal sample counts and Dirichlet label
proportions (Hsu et al. 2019), which is what the Auxo spec asks for. Every function draws only
from the Generator it is given.
"""

from __future__ import annotations

import numpy as np

from kairos.fl.learning.dataset import ClientData


def lognormal_counts(
    n_clients: int,
    rng: np.random.Generator,
    median: float = 40.0,
    sigma: float = 0.5,
    minimum: int = 2,
    maximum: int | None = None,
) -> np.ndarray:
    """Per-client sample counts ~ LogNormal(log(median), sigma), rounded, clipped to [min, max].

    The floor keeps every client able to train and to hold at least one test sample.
    """
    if n_clients < 0 or minimum < 1 or median <= 0 or sigma < 0:
        raise ValueError("need n_clients >= 0, minimum >= 1, median > 0 and sigma >= 0")
    counts = np.rint(rng.lognormal(np.log(median), sigma, size=n_clients)).astype(np.int64)
    return np.clip(counts, minimum, maximum if maximum is not None else np.iinfo(np.int64).max)


def fit_counts_to_total(counts: np.ndarray, total: int, minimum: int = 2) -> np.ndarray:
    """Scale counts so they sum to at most `total` while keeping their shape and the floor.

    Used when clients share a finite pool (digits has 1,797 samples): the lognormal shape is
    kept, the scale is whatever the pool allows.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if minimum * len(counts) > total:
        raise ValueError(
            f"{len(counts)} clients x {minimum} samples need {minimum * len(counts)}, "
            f"but the pool has only {total}; use fewer clients or a smaller minimum"
        )
    if counts.sum() <= total:
        return counts.astype(np.int64)
    spare = total - minimum * len(counts)
    extra = np.maximum(counts - minimum, 0.0)
    extra = np.floor(extra * spare / max(extra.sum(), 1e-12))
    return (minimum + extra).astype(np.int64)


def dirichlet_take(
    labels: np.ndarray,
    available: np.ndarray,
    count: int,
    proportions: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Take `count` indices of `labels` among `available` (bool mask, updated in place),
    following `proportions` over classes as closely as the remaining pool allows.

    When a class runs dry its share moves to the classes that still have samples, so a client
    never ends up short while the pool still holds data.
    """
    n_classes = len(proportions)
    pools = [np.flatnonzero(available & (labels == k)) for k in range(n_classes)]
    pools = [rng.permutation(p) for p in pools]
    used = np.zeros(n_classes, dtype=np.int64)
    need = count
    while need > 0:
        left = np.array([len(p) for p in pools]) - used
        if left.sum() == 0:
            break
        q = np.where(left > 0, proportions, 0.0)
        q = q / q.sum() if q.sum() > 0 else left / left.sum()
        draw = np.minimum(rng.multinomial(need, q), left)
        used += draw
        need -= int(draw.sum())
    taken = np.concatenate([p[:u] for p, u in zip(pools, used, strict=True)]).astype(np.int64)
    available[taken] = False
    return taken


def dirichlet_partition(
    labels: np.ndarray,
    counts: np.ndarray,
    alpha: float | None,
    rng: np.random.Generator,
    n_classes: int | None = None,
) -> list[np.ndarray]:
    """Split sample indices among clients without replacement: client i gets `counts[i]`
    samples whose labels follow its own Dirichlet(alpha) proportions.

    `alpha=None` deals the samples out uniformly at random (IID). Smaller alpha means more
    skew (0.5 is the spec's default; 100 is close to IID). Clients are filled in a random order
    so that no client systematically gets the leftovers.
    """
    labels = np.asarray(labels, dtype=np.int64)
    k = int(labels.max()) + 1 if n_classes is None else n_classes
    if int(np.sum(counts)) > len(labels):
        raise ValueError(
            f"counts sum to {int(np.sum(counts))} but only {len(labels)} samples exist"
        )
    if alpha is not None and alpha <= 0:
        raise ValueError(f"the Dirichlet concentration must be > 0, got {alpha}")
    out: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(counts)
    if alpha is None:
        order = rng.permutation(len(labels))
        bounds = np.concatenate([[0], np.cumsum(counts)])
        return [order[bounds[i] : bounds[i + 1]] for i in range(len(counts))]
    available = np.ones(len(labels), dtype=bool)
    for i in rng.permutation(len(counts)):
        p = rng.dirichlet(np.full(k, alpha))
        out[i] = dirichlet_take(labels, available, int(counts[i]), p, rng)
    return out


def split_client(
    x: np.ndarray, y: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> ClientData:
    """A client's own train/test split (FedScale uses 80/20 per client).

    A client with at least two samples always keeps one for training and one for testing, so
    per-client accuracy is defined for everyone.
    """
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    n = len(y)
    n_test = round(n * test_fraction)
    if test_fraction > 0 and n >= 2:
        n_test = min(max(n_test, 1), n - 1)
    order = rng.permutation(n)
    te, tr = order[:n_test], order[n_test:]
    return ClientData(x[tr], y[tr], x[te], y[te])


def assign_groups(
    n_clients: int,
    n_groups: int,
    rng: np.random.Generator,
    weights: tuple[float, ...] | None = None,
) -> np.ndarray:
    """Latent group of each client, in a random order: as equal as possible in size, or, with
    `weights`, group g gets about weights[g] / sum(weights) of the clients (largest remainder,
    every group at least one). Real populations are rarely equal groups: a majority that one
    model serves well beside minorities it serves badly is what spreads a single model's
    per-client accuracy (Auxo's Table 3.4), so unequal sizes are an option (the default stays
    equal, drawing exactly what it drew before)."""
    if n_groups < 1 or n_clients < n_groups:
        raise ValueError(f"need 1 <= n_groups <= n_clients, got {n_groups} groups, {n_clients}")
    if weights is None:
        return rng.permutation(np.arange(n_clients) % n_groups).astype(np.int64)
    sizes = group_sizes(n_clients, weights)
    if len(sizes) != n_groups:
        raise ValueError(f"{len(weights)} group weights for {n_groups} groups")
    return rng.permutation(np.repeat(np.arange(n_groups), sizes)).astype(np.int64)


def group_sizes(n_clients: int, weights: tuple[float, ...]) -> np.ndarray:
    """Clients per group in proportion to `weights` (largest remainder; each group >= 1)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) < 1 or np.any(w <= 0) or n_clients < len(w):
        raise ValueError(f"need positive weights, at most one group per client, got {weights}")
    share = n_clients * w / w.sum()
    sizes = np.floor(share).astype(np.int64)
    rest = np.argsort(-(share - sizes), kind="stable")[: n_clients - int(sizes.sum())]
    sizes[rest] += 1
    while np.any(sizes == 0):  # a tiny weight: one client taken from the largest group
        sizes[int(np.argmax(sizes))] -= 1
        sizes[int(np.argmin(sizes))] += 1
    return sizes
