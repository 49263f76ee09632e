"""Federated datasets: digits groups, synthetic groups, counts, label skew and splits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fl.learning import (
    LocalConfig,
    LogisticRegression,
    dirichlet_partition,
    federated_digits,
    federated_synthetic,
    load_digits_arrays,
    local_train,
    lognormal_counts,
    split_client,
)
from kairos.fl.learning.dataset import ClientData
from kairos.fl.learning.partition import fit_counts_to_total


def _original_index() -> dict[bytes, int]:
    images, _ = load_digits_arrays()
    return {img.tobytes(): i for i, img in enumerate(images)}


ORIGINAL = _original_index()


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n_clients=st.integers(8, 60), n_groups=st.integers(1, 4))
def test_digits_clients_see_their_groups_permutation(
    seed: int, n_clients: int, n_groups: int
) -> None:
    _, labels = load_digits_arrays()
    ds = federated_digits(n_clients, np.random.default_rng(seed), n_groups=n_groups)
    perms = np.asarray(ds.params["permutations"])
    assert np.array_equal(perms[0], np.arange(10))
    assert all(np.all(p != np.arange(10)) for p in perms[1:])  # derangements: full conflict
    seen: set[int] = set()
    for c, g in zip(ds.clients, ds.groups, strict=True):
        for x, y in ((c.x_train, c.y_train), (c.x_test, c.y_test)):
            orig = np.array([ORIGINAL[row.reshape(8, 8).tobytes()] for row in x], dtype=int)
            assert np.array_equal(y, perms[g][labels[orig]])
            assert not seen & set(orig.tolist())  # each sample goes to one client, once
            seen |= set(orig.tolist())
    assert np.bincount(ds.groups).max() - np.bincount(ds.groups).min() <= 1


def test_digits_rotation_rotates_each_groups_images() -> None:
    _, labels = load_digits_arrays()
    ds = federated_digits(20, np.random.default_rng(3), n_groups=4, transform="rotate")
    for c, g in zip(ds.clients, ds.groups, strict=True):
        back = np.rot90(c.x_train.reshape(-1, 8, 8), k=-int(g), axes=(1, 2))
        orig = [ORIGINAL[img.tobytes()] for img in back]
        assert np.array_equal(c.y_train, labels[orig])  # labels untouched
    with pytest.raises(ValueError, match="at most 4"):
        federated_digits(20, np.random.default_rng(0), n_groups=5, transform="rotate")


def test_generators_are_deterministic_for_a_seed() -> None:
    a = federated_synthetic(30, np.random.default_rng(7), min_count=20)
    b = federated_synthetic(30, np.random.default_rng(7), min_count=20)
    c = federated_synthetic(30, np.random.default_rng(8), min_count=20)
    assert all(
        np.array_equal(x.x_train, y.x_train) for x, y in zip(a.clients, b.clients, strict=True)
    )
    assert not np.array_equal(a.clients[0].x_train, c.clients[0].x_train)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    median=st.floats(5, 500),
    sigma=st.floats(0.05, 1.5),
    minimum=st.integers(1, 5),
)
def test_lognormal_counts_are_positive_and_lognormal(
    seed: int, median: float, sigma: float, minimum: int
) -> None:
    counts = lognormal_counts(4000, np.random.default_rng(seed), median, sigma, minimum)
    assert counts.dtype == np.int64 and np.all(counts >= minimum) and np.all(counts > 0)
    unclipped = counts[counts > max(minimum, 3)]
    if median > 50 and sigma < 1.0:  # no clipping or rounding to speak of: check the shape
        logs = np.log(unclipped)
        assert np.median(logs) == pytest.approx(np.log(median), abs=0.1)
        assert logs.std() == pytest.approx(sigma, rel=0.15, abs=0.02)


def test_fit_counts_keeps_the_floor_and_the_total() -> None:
    counts = lognormal_counts(300, np.random.default_rng(1), 10, 1.0, minimum=4)
    fitted = fit_counts_to_total(counts, 1797, minimum=4)
    assert fitted.sum() <= 1797 and fitted.min() >= 4
    assert np.corrcoef(counts, fitted)[0, 1] > 0.9
    with pytest.raises(ValueError, match="pool has only"):
        fit_counts_to_total(counts, 100, minimum=4)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_clients=st.integers(1, 40))
def test_dirichlet_partition_is_disjoint_and_exact(seed: int, n_clients: int) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=2000)
    counts = lognormal_counts(n_clients, rng, 30, 0.5, minimum=2)
    for alpha in (None, 0.1, 10.0):
        parts = dirichlet_partition(labels, counts, alpha, rng, n_classes=10)
        assert [len(p) for p in parts] == counts.tolist()
        flat = np.concatenate(parts)
        assert len(np.unique(flat)) == len(flat)


def test_small_dirichlet_alpha_skews_labels() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, size=20_000)
    counts = np.full(100, 100)

    def top_share(alpha: float | None) -> float:
        parts = dirichlet_partition(labels, counts, alpha, rng, n_classes=10)
        return float(np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in parts]))

    assert top_share(0.1) > 0.6 > 0.2 > top_share(None)


def test_split_keeps_a_train_and_a_test_sample() -> None:
    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 50):
        c = split_client(np.zeros((n, 3)), np.zeros(n, dtype=np.int64), 0.2, rng)
        assert c.n_train >= 1 and c.n_test >= 1 and c.n_train + c.n_test == n
    with pytest.raises(ValueError, match="equal length"):
        ClientData(np.zeros((3, 2)), np.zeros(2), np.zeros((1, 2)), np.zeros(1))


def _fit(x: np.ndarray, y: np.ndarray, steps: int = 3000) -> float:
    model = LogisticRegression(x.shape[1], 10)
    data = ClientData(x, y, x[:1], y[:1])
    cfg = LocalConfig(lr=0.5, batch_size=64, steps=steps)
    w = -local_train(
        model, model.init(np.random.default_rng(0)), data, cfg, np.random.default_rng(1)
    ).update
    return model.accuracy(w, x, y)


def test_synthetic_groups_share_a_labeller_and_conflict() -> None:
    ds = federated_synthetic(40, np.random.default_rng(2), n_groups=4, min_count=100)
    assert ds.test_counts.min() >= 20  # the spec's ~20 test samples per client
    assert sorted(np.bincount(ds.groups).tolist()) == [10, 10, 10, 10]
    # beta=0: every client draws inputs from one distribution, so only the labeller differs
    # (with beta > 0 each client's inputs sit in their own region, and a centralised model
    # can tell clients apart; in federated training the conflict still shows, see test_rounds)
    ds = federated_synthetic(40, np.random.default_rng(2), n_groups=4, beta=0.0)
    per_group = [_fit(*ds.pooled_train(np.flatnonzero(ds.groups == g))) for g in range(4)]
    pooled = _fit(*ds.pooled_train())
    assert min(per_group) > 0.8  # one linear labeller per group: a linear model fits it
    assert pooled < min(per_group) - 0.3  # four labellers at once: one model cannot


def test_synthetic_shared_structure_brings_groups_closer() -> None:
    def pooled_fit(shared: float) -> float:
        ds = federated_synthetic(40, np.random.default_rng(4), n_groups=4, beta=0.0, shared=shared)
        return _fit(*ds.pooled_train())

    none, half, most = pooled_fit(0.0), pooled_fit(0.5), pooled_fit(0.9)
    assert most > none + 0.25 and half > none + 0.05
