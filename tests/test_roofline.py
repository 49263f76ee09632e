"""The engine benchmark's roofline (`benchmarks/roofline.py`): the bound it computes is the
sum its docstring states, and each rate it measures is a rate of the operation it names."""

from __future__ import annotations

import pytest
from benchmarks import roofline
from benchmarks.engine_anchor import ANCHOR_MODEL

from kairos.andes.engine.weights import random_model

TINY = ANCHOR_MODEL.model_copy(
    update={"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16}
)  # fmt: skip


def test_decode_bound_reads_the_weights_once_per_step() -> None:
    """Read-bound (infinite FLOP/s): one prefill step and one step per later output
    position, each reading every weight and the running sequences' KV once."""
    layers, vocab = roofline._linear_params(TINY)
    per_layer = 32 * (32 + 2 * 16) + 32 * 32 + 3 * 32 * 64  # q,k,v + o + gate,up,down
    assert layers == 2 * per_layer and vocab == 32 * 64
    weights = (layers + vocab) * 4
    kv = 2 * 2 * 1 * 16 * 4  # k and v, 2 layers, 1 head of 16, float32
    read = 1e9
    got = roofline.bound_s(TINY, [10, 20], [3, 2], flops=float("inf"), read=read)
    # prefill; then position 1 (both running: contexts 11, 21); position 2 (first: 12)
    want = weights / read + (weights + kv * 32) / read + (weights + kv * 12) / read
    assert got == pytest.approx(want)


def test_prefill_bound_is_compute_when_flops_are_scarce() -> None:
    layers, vocab = roofline._linear_params(TINY)
    attn = 4 * 2 * 2 * 16
    flops = 1e6
    got = roofline.bound_s(TINY, [100], [1], flops=flops, read=float("inf"))
    assert got == pytest.approx((2 * layers * 100 + 2 * vocab + attn * 100 * 101 // 2) / flops)
    # over the step budget the prompts split into steps; the FLOPs are the same
    split = roofline.bound_s(TINY, [100, 100], [1, 1], flops=flops, read=float("inf"),
                             step_tokens=150)  # fmt: skip
    assert split == pytest.approx(2 * got)


def test_product_rates_count_one_layers_products_and_the_vocabulary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every product timed at 0.5 s: the rate is one layer's weights (q|k|v, o, gate|up,
    down) plus the vocabulary projection's, in bytes, over 5 x 0.5 s."""
    monkeypatch.setattr(roofline, "best_seconds", lambda fn, reps: (fn(), 0.5)[1])
    rates = roofline.product_read_rates(random_model(TINY, seed=0), rows=4, reps=1)
    layers, vocab = roofline._linear_params(TINY)
    rate = (layers / 2 + vocab) * 4 / 2.5
    assert rates == pytest.approx({"plain": rate, "split": rate, "packed": rate})


def test_measured_rates_are_finite_and_positive() -> None:
    assert 0 < roofline.gemm_flops(n=64, reps=2) < float("inf")
    assert 0 < roofline.read_bytes_per_s(mib=1, reps=2) < float("inf")
