"""The generator option behind E1's "unequal" variant: latent groups of unequal sizes."""

from __future__ import annotations

import numpy as np
import pytest

from kairos.auxo.experiments.runs import RunConfig, build_dataset
from kairos.fl.learning import federated_synthetic
from kairos.fl.learning.partition import assign_groups, group_sizes


def test_sizes_follow_the_weights_and_sum_to_the_population() -> None:
    assert group_sizes(200, (0.7, 0.1, 0.1, 0.1)).tolist() == [140, 20, 20, 20]
    assert group_sizes(400, (0.55, 0.25, 0.12, 0.08)).tolist() == [220, 100, 48, 32]
    sizes = group_sizes(7, (3.0, 1.0, 1.0))
    assert sizes.sum() == 7 and sizes[0] > sizes[1] >= 1
    assert group_sizes(4, (100.0, 1.0, 1.0, 1.0)).tolist() == [1, 1, 1, 1]  # none empty
    with pytest.raises(ValueError):
        group_sizes(10, (1.0, -1.0))


def test_equal_groups_draw_exactly_what_they_drew_before() -> None:
    a = assign_groups(50, 4, np.random.default_rng(3))
    b = np.random.default_rng(3).permutation(np.arange(50) % 4)
    assert np.array_equal(a, b)
    with pytest.raises(ValueError):
        assign_groups(50, 3, np.random.default_rng(3), (0.5, 0.5))


def test_the_synthetic_population_has_the_stated_groups() -> None:
    ds = federated_synthetic(
        100, np.random.default_rng(0), beta=0.0, min_count=20, group_weights=(0.7, 0.1, 0.1, 0.1)
    )
    assert np.bincount(ds.groups).tolist() == [70, 10, 10, 10]
    assert ds.params["group_weights"] == (0.7, 0.1, 0.1, 0.1)
    cfg = RunConfig.model_validate({"data": {"n_clients": 100, "group_weights": [0.4, 0.6]}})
    with pytest.raises(ValueError):
        build_dataset(cfg)  # two weights for the default four groups
