"""Server algorithms: FedAvg, q-FedAvg, FedYoGi and the Algorithm bundle (FedProx)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kairos.fl.learning import FedAvg, FedYoGi, LocalConfig, QFedAvg, make_algorithm

finite = st.floats(-10, 10, allow_nan=False, width=64)
vec = arrays(np.float64, st.integers(1, 12), elements=finite)


@settings(max_examples=40, deadline=None)
@given(w=vec, k=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_identical_updates_aggregate_to_that_update(w: np.ndarray, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    u = rng.normal(size=len(w))
    updates = np.tile(u, (k, 1))
    counts = rng.integers(1, 100, size=k)
    for agg in (FedAvg(), QFedAvg(q=0.0)):
        assert np.allclose(agg.aggregate(w, updates, counts, np.ones(k)), w - u)
    assert np.allclose(FedAvg(server_lr=0.5).aggregate(w, updates, counts, np.ones(k)), w - u / 2)


@settings(max_examples=40, deadline=None)
@given(w=vec, seed=st.integers(0, 2**32 - 1), k=st.integers(1, 8))
def test_fedavg_weights_by_counts(w: np.ndarray, seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    updates = rng.normal(size=(k, len(w)))
    counts = rng.integers(1, 50, size=k)
    expect = w - (counts[:, None] * updates).sum(axis=0) / counts.sum()
    assert np.allclose(FedAvg().aggregate(w, updates, counts, np.ones(k)), expect)
    # a client's weight is its count: duplicating a client equals doubling its count
    dup = FedAvg().aggregate(
        w, np.vstack([updates, updates[:1]]), np.r_[counts, counts[0]], np.ones(k + 1)
    )
    doubled = FedAvg().aggregate(w, updates, np.r_[2 * counts[0], counts[1:]], np.ones(k))
    assert np.allclose(dup, doubled)


@settings(max_examples=40, deadline=None)
@given(w=vec, seed=st.integers(0, 2**32 - 1), k=st.integers(1, 8), lip=st.floats(0.1, 100))
def test_q0_qfedavg_equals_fedavg_with_equal_weights(
    w: np.ndarray, seed: int, k: int, lip: float
) -> None:
    rng = np.random.default_rng(seed)
    updates = rng.normal(size=(k, len(w)))
    losses = rng.uniform(0.01, 5, size=k)
    equal = np.full(k, 7)
    q0 = QFedAvg(q=0.0, lipschitz=lip).aggregate(w, updates, rng.integers(1, 9, size=k), losses)
    assert np.allclose(q0, FedAvg().aggregate(w, updates, equal, losses))


def test_qfedavg_leans_towards_high_loss_clients() -> None:
    w = np.zeros(2)
    updates = np.array([[1.0, 0.0], [0.0, 1.0]])
    step = w - QFedAvg(q=2.0, lipschitz=1.0).aggregate(w, updates, np.ones(2), np.array([0.5, 2.0]))
    assert step[1] > step[0] > 0  # the worse-off client moves the model more
    with pytest.raises(ValueError, match="one loss per update"):
        QFedAvg().aggregate(w, updates, np.ones(2), np.ones(3))


@settings(max_examples=40, deadline=None)
@given(w=vec, k=st.integers(1, 5), init=st.sampled_from(["reddi", "fedscale"]))
def test_yogi_zero_update_keeps_weights(w: np.ndarray, k: int, init: str) -> None:
    yogi = FedYoGi(init=init)  # type: ignore[arg-type]
    out = yogi.aggregate(w, np.zeros((k, len(w))), np.ones(k), np.ones(k))
    assert np.array_equal(out, w)


def test_yogi_moves_against_the_update_with_bounded_steps() -> None:
    w = np.zeros(3)
    u = np.array([[1.0, -2.0, 0.0]])
    yogi = FedYoGi(eta=0.01, init="fedscale")
    w1 = yogi.aggregate(w, u, np.ones(1), np.ones(1))
    assert np.allclose(w1, [-0.01, 0.01, 0.0], atol=1e-4)  # first step ~ -eta * sign(u)
    clone = yogi.clone()
    assert isinstance(clone, FedYoGi)
    w2 = yogi.aggregate(w1, u, np.ones(1), np.ones(1))
    assert np.array_equal(clone.aggregate(w1, u, np.ones(1), np.ones(1)), w2)  # state copied
    assert yogi.m is not None and clone.m is not None and yogi.m is not clone.m
    reddi = FedYoGi(eta=0.01)
    assert np.all(np.abs(reddi.aggregate(w, u, np.ones(1), np.ones(1))) <= 0.01 + 1e-12)


def test_algorithms_by_name() -> None:
    base = LocalConfig()
    prox = make_algorithm("fedprox", mu=0.1)
    assert prox.local(base).mu == 0.1 and isinstance(prox.aggregator, FedAvg)
    assert make_algorithm("fedavg").local(base) is base
    q = make_algorithm("qfedavg", lr=0.05)
    assert isinstance(q.aggregator, QFedAvg) and q.aggregator.lipschitz == pytest.approx(20.0)
    y = make_algorithm("yogi")
    assert y.fresh() is not y.aggregator
    with pytest.raises(ValueError, match="unknown algorithm"):
        make_algorithm("scaffold")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no updates"):
        FedAvg().aggregate(np.zeros(2), np.zeros((0, 2)), np.zeros(0), np.zeros(0))
