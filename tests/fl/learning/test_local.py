"""Local training and per-client evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from kairos.fl.learning import (
    ClientData,
    FederatedDataset,
    LocalConfig,
    LogisticRegression,
    evaluate_clients,
    federated_digits,
    local_train,
)


def _client(seed: int = 0, n: int = 60) -> ClientData:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    y = (x[:, 0] > 0).astype(np.int64)
    return ClientData(x, y, x[:10], y[:10])


def test_local_sgd_lowers_the_loss_and_returns_a_pseudo_gradient() -> None:
    model = LogisticRegression(4, 2)
    data = _client()
    w0 = model.init(np.random.default_rng(0))
    res = local_train(model, w0, data, LocalConfig(lr=0.5, steps=20), np.random.default_rng(1))
    w_local = w0 - res.update  # u = w_global - w_local
    assert model.loss(w_local, data.x_train, data.y_train) < res.loss_before
    assert res.loss_before == pytest.approx(np.log(2))
    assert res.n_samples == 60 and res.work == 20 * 20


def test_steps_epochs_and_work() -> None:
    cfg = LocalConfig(batch_size=20, steps=10)
    assert cfg.steps_for(7) == 10 and cfg.work(7) == 70 and cfg.work(100) == 200
    ep = LocalConfig(batch_size=20, epochs=2)
    assert ep.steps_for(45) == 6 and ep.work(45) == 120


def test_fedprox_term_pulls_towards_the_global_model() -> None:
    model = LogisticRegression(4, 2)
    data = _client()
    w0 = model.init(np.random.default_rng(0))
    free = local_train(model, w0, data, LocalConfig(lr=0.5, steps=30), np.random.default_rng(1))
    prox = local_train(
        model, w0, data, LocalConfig(lr=0.5, steps=30, mu=1.0), np.random.default_rng(1)
    )
    assert np.linalg.norm(prox.update) < 0.8 * np.linalg.norm(free.update)


def test_local_training_is_deterministic_and_needs_data() -> None:
    model = LogisticRegression(4, 2)
    data = _client()
    w0 = model.init(np.random.default_rng(0))
    a = local_train(model, w0, data, LocalConfig(), np.random.default_rng(5))
    b = local_train(model, w0, data, LocalConfig(), np.random.default_rng(5))
    assert np.array_equal(a.update, b.update)
    empty = ClientData(
        np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros((0, 4)), np.zeros(0, np.int64)
    )
    with pytest.raises(ValueError, match="no training samples"):
        local_train(model, w0, empty, LocalConfig(), np.random.default_rng(0))


def test_evaluate_clients_per_model_matches_a_loop() -> None:
    ds = federated_digits(12, np.random.default_rng(0), n_groups=3)
    model = LogisticRegression(64, 10)
    rng = np.random.default_rng(1)
    models = [rng.normal(size=model.n_params) for _ in range(3)]
    scores = evaluate_clients(model, ds, models, assignment=ds.groups)
    for i, c in enumerate(ds.clients):
        w = models[ds.groups[i]]
        assert scores.accuracy[i] == pytest.approx(model.accuracy(w, c.x_test, c.y_test))
        assert scores.loss[i] == pytest.approx(model.loss(w, c.x_test, c.y_test))
    some = evaluate_clients(model, ds, models[0], clients=np.array([3, 1]))
    assert some.accuracy[0] == pytest.approx(
        model.accuracy(models[0], ds.clients[3].x_test, ds.clients[3].y_test)
    )


def test_client_without_test_data_has_nan_accuracy() -> None:
    c = _client()
    bare = ClientData(c.x_train, c.y_train, np.zeros((0, 4)), np.zeros(0, np.int64))
    ds = FederatedDataset((c, bare), np.zeros(2, np.int64), n_features=4, n_classes=2)
    scores = evaluate_clients(LogisticRegression(4, 2), ds, np.zeros(10))
    assert not np.isnan(scores.accuracy[0]) and np.isnan(scores.accuracy[1])
