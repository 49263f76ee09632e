"""Local training and per-client evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fl.learning import (
    ClientData,
    FederatedDataset,
    LocalConfig,
    LogisticRegression,
    Model,
    evaluate_clients,
    federated_digits,
    local_train,
    local_train_many,
    make_model,
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


def _one_by_one(
    model: Model, w0: np.ndarray, data: ClientData, cfg: LocalConfig, rng: np.random.Generator
) -> tuple[np.ndarray, float, float]:
    """The textbook loop local training must reproduce bit for bit: one client, one minibatch
    at a time, with `Model.loss_grad` (not the stacked path)."""
    n = data.n_train
    steps = cfg.steps_for(n)
    if cfg.batch_size >= n:
        batches = [np.arange(n)] * steps
    else:
        batches, order, pos = [], rng.permutation(n), 0
        for _ in range(steps):
            if pos + cfg.batch_size > n:
                order, pos = rng.permutation(n), 0
            batches.append(order[pos : pos + cfg.batch_size])
            pos += cfg.batch_size
    w, losses = w0.copy(), []
    for idx in batches:
        loss, g = model.loss_grad(w, data.x_train[idx], data.y_train[idx])
        g = g + cfg.mu * (w - w0) if cfg.mu else g
        g = g + cfg.weight_decay * w if cfg.weight_decay else g
        if cfg.clip is not None and np.linalg.norm(g) > cfg.clip:
            g = g * (cfg.clip / float(np.linalg.norm(g)))
        w -= cfg.lr * g
        losses.append(loss)
    return w0 - w, float(np.mean(losses)), model.loss(w0, data.x_train, data.y_train)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    kind=st.sampled_from(["lr", "mlp"]),
    sizes=st.lists(st.integers(1, 70), min_size=1, max_size=9),
    batch=st.integers(1, 25),
    epochs=st.sampled_from([None, 1, 2]),
    mu=st.sampled_from([0.0, 0.1]),
    decay=st.sampled_from([0.0, 1e-3]),
    clip=st.sampled_from([None, 0.05, 10.0]),
)
def test_stacked_round_training_gives_the_bits_of_one_by_one_training(
    seed: int,
    kind: str,
    sizes: list[int],
    batch: int,
    epochs: int | None,
    mu: float,
    decay: float,
    clip: float | None,
) -> None:
    rng = np.random.default_rng(seed)
    model = make_model(kind, 5, 3, hidden=4)
    clients = []
    for n in sizes:
        x = rng.normal(size=(n, 5))
        clients.append(ClientData(x, rng.integers(0, 3, n), x[:1], np.zeros(1, np.int64)))
    w0 = model.init(rng) + rng.normal(scale=0.1, size=model.n_params)
    cfg = LocalConfig(
        lr=0.3, batch_size=batch, steps=4, epochs=epochs, mu=mu, weight_decay=decay, clip=clip
    )
    stacked_rng = np.random.default_rng(seed)
    stacked = local_train_many(model, w0, clients, cfg, stacked_rng)
    ref_rng = np.random.default_rng(seed)
    for data, got in zip(clients, stacked, strict=True):
        update, train_loss, loss_before = _one_by_one(model, w0, data, cfg, ref_rng)
        assert np.array_equal(got.update, update)
        assert got.train_loss == train_loss and got.loss_before == loss_before
        assert got.n_samples == data.n_train and got.work == cfg.work(data.n_train)
    # the generator is left where one-by-one training leaves it, so later draws are unchanged
    assert stacked_rng.bit_generator.state == ref_rng.bit_generator.state
