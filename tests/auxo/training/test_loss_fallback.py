"""Option `loss_fallback`: a client that no explored leaf rewards picks its lowest-loss leaf."""

from __future__ import annotations

import numpy as np

from kairos.auxo.loss_fallback import lowest_loss_leaf, place_by_loss, unplaced
from kairos.auxo.rewards import AffinityEntry
from kairos.auxo.training import CohortTraining
from kairos.fl.learning import federated_synthetic, make_model
from tests.auxo.training.test_training import _params, _runner

LEAVES = ["0.0", "0.1"]


def test_only_a_client_every_explored_leaf_rejects_is_unplaced() -> None:
    bad = {c: AffinityEntry(-0.1, None, True) for c in LEAVES}
    assert unplaced(bad, LEAVES)
    assert not unplaced({**bad, "0.1": AffinityEntry(0.01, None, True)}, LEAVES)
    assert not unplaced({**bad, "0.1": AffinityEntry(-0.1, None, False)}, LEAVES)
    assert not unplaced({"0": AffinityEntry(-0.1, None, True)}, ["0"])


def test_an_unplaced_client_is_rewarded_on_its_lowest_loss_leaf() -> None:
    ds = federated_synthetic(4, np.random.default_rng(0), beta=0.0, min_count=40)
    model = make_model("lr", ds.n_features, ds.n_classes)
    good = model.init(np.random.default_rng(1))
    data = ds.clients[0]
    for _ in range(200):  # a model fitted to this client
        good = good - 0.1 * model.loss_grad(good, data.x_train, data.y_train)[1]
    weights = {"0.0": model.init(np.random.default_rng(2)), "0.1": good}
    assert lowest_loss_leaf(model, weights, data, LEAVES) == "0.1"
    record = {c: AffinityEntry(-0.2, 1, True) for c in LEAVES}
    assert place_by_loss(record, model, weights, data, LEAVES, 0.1) == "0.1"
    assert record["0.1"].reward == 0.1 and record["0.1"].label == 1
    assert record["0.0"].reward == -0.2
    assert place_by_loss(record, model, weights, data, LEAVES, 0.1) is None  # placed now


def test_the_option_is_off_by_default_and_changes_nothing_before_a_split() -> None:
    a = CohortTraining(_runner(), _params(max_leaves=1), seed=1)
    b = CohortTraining(_runner(), _params(max_leaves=1, loss_fallback=True), seed=1)
    a.run(15, 5)
    b.run(15, 5)
    assert np.array_equal(a.states["0"].weights, b.states["0"].weights)
