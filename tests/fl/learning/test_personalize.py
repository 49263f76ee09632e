"""FTFA: every client fine-tunes the model it is served on its own data, then is scored."""

from __future__ import annotations

import numpy as np

from kairos.fl.learning import (
    LocalConfig,
    evaluate_clients,
    federated_synthetic,
    fine_tuned_scores,
    local_train,
    make_model,
)


def test_fine_tuning_scores_each_client_under_its_own_tuned_copy() -> None:
    ds = federated_synthetic(30, np.random.default_rng(0), beta=0.0, min_count=40)
    model = make_model("lr", ds.n_features, ds.n_classes)
    w = [model.init(np.random.default_rng(1)), model.init(np.random.default_rng(2))]
    which = np.arange(30) % 2
    cfg = LocalConfig(lr=0.05, batch_size=20, steps=10)
    got = fine_tuned_scores(model, ds, w, which, cfg, seed=7)
    for i in (0, 5):
        start = w[which[i]]
        mine = (
            start
            - local_train(
                model, start, ds.clients[i], cfg, np.random.default_rng([7, 14, i])
            ).update
        )
        one = evaluate_clients(model, ds, mine, clients=np.array([i]))
        assert got.accuracy[i] == one.accuracy[0]
    before = evaluate_clients(model, ds, w, assignment=which)
    assert np.nanmean(got.accuracy) > np.nanmean(before.accuracy) + 0.1
