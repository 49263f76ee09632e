"""Flat-vector models: gradients match finite differences; layout and initialisation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fl.learning import MLP, LogisticRegression, Model, make_model


def _numeric_grad(model: Model, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    eps = 1e-6
    g = np.zeros_like(w)
    for i in range(len(w)):
        d = np.zeros_like(w)
        d[i] = eps
        g[i] = (model.loss(w + d, x, y) - model.loss(w - d, x, y)) / (2 * eps)
    return g


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(["lr", "mlp"]))
def test_gradient_matches_finite_differences(seed: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    model = make_model(kind, 5, 3, hidden=4)
    w = rng.normal(0, 0.5, size=model.n_params)
    x = rng.normal(size=(7, 5))
    y = rng.integers(0, 3, size=7)
    loss, grad = model.loss_grad(w, x, y)
    assert loss == pytest.approx(model.loss(w, x, y))
    assert np.allclose(grad, _numeric_grad(model, w, x, y), atol=1e-5)


def test_layout_sizes_and_output_layer_last() -> None:
    lr = LogisticRegression(64, 10)
    mlp = MLP(64, 10, hidden=32)
    assert lr.n_params == 650 and mlp.n_params == 64 * 32 + 32 + 32 * 10 + 10
    rng = np.random.default_rng(0)
    assert np.array_equal(lr.init(rng), np.zeros(650))
    w = mlp.init(np.random.default_rng(1))
    assert np.array_equal(w, mlp.init(np.random.default_rng(1)))
    # the output bias is the tail of the vector: shifting it shifts the logits
    x = np.random.default_rng(2).normal(size=(4, 64))
    w2 = w.copy()
    w2[-10:] += np.arange(10)
    assert np.allclose(mlp.logits(w2, x) - mlp.logits(w, x), np.arange(10))
    with pytest.raises(ValueError, match="shape"):
        mlp.logits(np.zeros(5), x)
    with pytest.raises(ValueError, match="unknown model"):
        make_model("cnn", 4, 2)


def test_empty_sets_are_not_perfect() -> None:
    model = LogisticRegression(3, 2)
    w = model.init(np.random.default_rng(0))
    assert np.isnan(model.accuracy(w, np.zeros((0, 3)), np.zeros(0, dtype=np.int64)))
    assert model.loss(w, np.zeros((0, 3)), np.zeros(0, dtype=np.int64)) == 0.0


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["lr", "mlp"]),
    models=st.integers(1, 5),
    rows=st.integers(0, 40),
)
def test_stacked_maths_gives_the_bits_of_one_model_at_a_time(
    seed: int, kind: str, models: int, rows: int
) -> None:
    """A round trains its clients as one stack and IFCA scores K models at once; both must be
    the numbers the one-model methods give, to the bit, so batching never changes a result."""
    rng = np.random.default_rng(seed)
    model = make_model(kind, 6, 4, hidden=5)
    w = rng.normal(0, 0.5, size=(models, model.n_params))
    x = rng.normal(size=(models, rows, 6))
    y = rng.integers(0, 4, size=(models, rows))
    losses, grads = model.loss_grad_stack(w, x, y)
    shared = model.loss_stack(w, x[0], y[0])
    for k in range(models):
        loss, grad = model.loss_grad(w[k], x[k], y[k])
        assert losses[k] == loss and np.array_equal(grads[k], grad)
        assert shared[k] == model.loss(w[k], x[0], y[0])
