"""Label-flipping clients (E6): who is flipped, what changes, and what must not."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fl.learning import federated_synthetic, flip_labels, flipped_label


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 40), st.lists(st.integers(0, 1000), min_size=1, max_size=30))
def test_the_flip_is_an_involution_and_moves_every_label_when_classes_are_even(
    half: int, raw: list[int]
) -> None:
    c = 2 * half
    y = np.array(raw) % c
    once = flipped_label(y, c)
    assert np.array_equal(flipped_label(once, c), y)
    assert np.all((once >= 0) & (once < c)) and np.all(once != y)


def test_flip_labels_flips_the_training_labels_of_exactly_the_chosen_share() -> None:
    ds = federated_synthetic(50, np.random.default_rng(0), min_count=20)
    out, chosen = flip_labels(ds, 0.2, np.random.default_rng(1))
    assert len(chosen) == 10 and len(set(chosen.tolist())) == 10
    for i, (a, b) in enumerate(zip(ds.clients, out.clients, strict=True)):
        assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_test, b.y_test)
        flipped = i in set(chosen.tolist())
        assert np.array_equal(b.y_train, flipped_label(a.y_train, 10)) == flipped
        assert np.array_equal(b.y_train, a.y_train) == (not flipped)
    assert np.array_equal(out.groups, ds.groups) and out.params["flip_fraction"] == 0.2


def test_no_flip_leaves_the_dataset_unchanged() -> None:
    ds = federated_synthetic(20, np.random.default_rng(0), min_count=20)
    out, chosen = flip_labels(ds, 0.0, np.random.default_rng(1))
    assert len(chosen) == 0
    assert all(
        np.array_equal(a.y_train, b.y_train) for a, b in zip(ds.clients, out.clients, strict=True)
    )
