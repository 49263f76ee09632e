"""Clustering features (spec 3.1) and property 3 of spec 7: unit-norm distances."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kairos.auxo.clustering import centroids
from kairos.auxo.features import (
    build_features,
    compress,
    cosine,
    nearest,
    pseudo_gradient,
    unit_rows,
)

finite = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, (2, 6), elements=finite))
def test_unit_norm_distance_is_two_minus_two_cosine(x: np.ndarray) -> None:
    a, b = unit_rows(x)
    if np.linalg.norm(a) == 0 or np.linalg.norm(b) == 0:
        return
    assert np.isclose(np.sum((a - b) ** 2), 2 - 2 * cosine(a, b), atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, (12, 5), elements=finite),
    st.lists(st.integers(0, 2), min_size=12, max_size=12),
)
def test_nearest_renormalised_centroid_is_highest_cosine(x: np.ndarray, lab: list[int]) -> None:
    f = unit_rows(x)
    labels = np.array(lab)
    if np.any(np.linalg.norm(f, axis=1) == 0):
        return
    c = centroids(f, labels, 3, unit=True)
    if c is None or np.any(np.linalg.norm(c, axis=1) < 1e-6):
        return
    assert np.allclose(np.linalg.norm(c, axis=1), 1.0)
    by_l2 = nearest(f, c)
    cos = f @ c.T
    # the L2-nearest unit centroid has the highest cosine (up to float ties)
    assert np.allclose(cos[np.arange(len(f)), by_l2], cos.max(axis=1), atol=1e-9)


def test_plain_mean_centroid_can_disagree_with_cosine_which_is_why_we_renormalise() -> None:
    # Two centroids of unit features: a short one pointing at f, and a unit one slightly off.
    f = np.array([[1.0, 0.0]])
    short = np.array([0.3, 0.0])  # cosine 1 with f, but far in L2
    unit_off = unit_rows(np.array([[1.0, 0.3]]))[0]  # cosine < 1, near in L2
    c = np.stack([short, unit_off])
    assert nearest(f, c)[0] == 1  # L2 to raw means picks the worse direction
    assert nearest(f, unit_rows(c))[0] == 0  # renormalised: L2 agrees with cosine


def test_compression_keeps_the_last_half_as_float16() -> None:
    u = np.arange(10, dtype=np.float64)
    out = compress(u, 0.5, "float16")
    assert out.dtype == np.float16
    assert out.tolist() == [5, 6, 7, 8, 9]
    assert compress(np.arange(7.0), 0.5).tolist() == [4, 5, 6]  # floor(7/2) = 3 coordinates
    assert compress(u, 1.0, "float64").tolist() == u.tolist()


def test_pseudo_gradient_is_global_minus_local() -> None:
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    w = np.array([0.5, 2.5, 3.0, 1.0])
    assert pseudo_gradient(g, w).tolist() == [0.5, -0.5, 0.0, 3.0]


def test_unit_features_are_centred_on_the_round_mean_and_unit_length() -> None:
    rng = np.random.default_rng(0)
    u = rng.normal(size=(8, 40)) + 5.0  # a shared offset that centring must remove
    frame = build_features(u, grad_fraction=1.0, dtype="float64", norm="unit")
    assert np.allclose(np.linalg.norm(frame.features, axis=1), 1.0)
    assert np.allclose(frame.mean, u.mean(axis=0))
    expected = unit_rows(u - u.mean(axis=0))
    assert np.allclose(frame.features, expected)
    # a later update placed in the same frame lands where it would have
    assert np.allclose(frame.place(u[3]), frame.features[3])


def test_identical_updates_give_zero_features_not_nan() -> None:
    frame = build_features(np.ones((4, 6)), grad_fraction=1.0, norm="unit")
    assert np.all(np.isfinite(frame.features))
    assert np.all(frame.features == 0)
