"""Prefill is costed per prompt: the linear terms and the fixed cost on the batch,
attention's quadratic on each prompt's own length (and, for a chunk, its cached context).

A batch of k prompts must cost what the profile says for k prompts, not what it says for one
prompt of their summed length; the simulator must charge that; and the profiler's fit must
recover a per-prompt quadratic from measurements of mixed batches.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.andes.latency import (
    PROFILES,
    LinearProfile,
    RooflineProfile,
    attention_pairs,
    fit_profile,
    prefill_row,
)
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.policies.sarathi import SarathiPolicy
from kairos.andes.request import Request
from kairos.andes.scheduler import SchedulerConfig
from kairos.andes.simulator import Simulator

P0, P1, P2 = 0.02, 1e-4, 2e-8  # a fitted profile with a real quadratic


def fitted() -> LinearProfile:
    return LinearProfile(
        name="fitted",
        decode_coef=(0.01, 1e-4, 1e-7),
        prefill_coef=(P0, P1, P2),
        swap_s_per_token=0.0,
        kv_capacity=1 << 20,
        swap_capacity=0,
    )


def roofline_part(p: RooflineProfile, n: float) -> float:
    """What one prompt of n tokens adds to a compute-bound prefill iteration: its prefill
    alone minus the iteration's fixed cost."""
    return float(p.prefill_time(n)) - p.iteration_overhead_s


@pytest.mark.parametrize("k", [1, 2, 10, 100])
def test_k_prompts_cost_what_the_fitted_profile_says_for_k_prompts(k: int) -> None:
    prof, n = fitted(), 2000
    batch = prof.batch_prefill_time([n] * k)
    assert batch == pytest.approx(P0 + k * (P1 * n + P2 * n * n), rel=1e-12)
    if k > 1:  # not one prompt of their summed length: that pays (k n)^2
        assert batch < float(prof.prefill_time(k * n))
        assert float(prof.prefill_time(k * n)) - batch == pytest.approx(
            P2 * ((k * n) ** 2 - k * n * n), rel=1e-9
        )


@pytest.mark.parametrize("name", list(PROFILES))
def test_k_prompts_cost_what_the_roofline_says_for_k_prompts(name: str) -> None:
    """Compute-bound prompts: one iteration's fixed cost, then each prompt's own FLOPs
    (weights on every token, attention on each prompt's own length)."""
    p = PROFILES[name]
    n, k = 2000, 100
    batch = p.batch_prefill_time([n] * k)
    assert batch == pytest.approx(p.iteration_overhead_s + k * roofline_part(p, n), rel=1e-9)
    assert batch < float(p.prefill_time(k * n))
    mixed = [2000, 3000, 8000]  # unequal (compute-bound) prompts add up the same way
    assert p.batch_prefill_time(mixed) == pytest.approx(
        p.iteration_overhead_s + sum(roofline_part(p, m) for m in mixed), rel=1e-9
    )


def test_the_issues_example_on_the_default_profile() -> None:
    """100 prompts of 2,000 tokens were once charged as one of 200,000 (107 s); costed
    per prompt they take about 38 s, which is 100 x (one prompt's time minus the shared
    iteration cost)."""
    p = PROFILES["llama-3.1-70b"]
    summed, per_prompt = float(p.prefill_time(200_000)), p.batch_prefill_time([2000] * 100)
    assert summed > 2.5 * per_prompt
    assert per_prompt < 100 * float(p.prefill_time(2000))  # the fixed cost is paid once


@given(
    prompt=st.integers(1, 20_000),
    cuts=st.lists(st.integers(1, 19_999), max_size=6),
)
def test_a_prompts_chunks_add_up_to_the_whole_prompts_attention(
    prompt: int, cuts: list[int]
) -> None:
    """Chunk i of n_i tokens after k_i cached attends over (k_i+n_i)^2 - k_i^2 pairs; the
    chunks of one prompt sum to its n^2, whatever the cut points."""
    bounds = sorted({0, prompt, *(c for c in cuts if c < prompt)})
    sizes = np.diff(bounds)
    cached = np.asarray(bounds[:-1])
    assert float(attention_pairs(sizes, cached).sum()) == pytest.approx(float(prompt) ** 2)
    prof = fitted()
    chunked = sum(
        float(prof.prefill_time(int(n), int(k))) for n, k in zip(sizes, cached, strict=True)
    )
    assert chunked == pytest.approx(float(prof.prefill_time(prompt)) + P0 * (len(sizes) - 1))


@given(
    tokens=st.lists(st.integers(0, 50_000), min_size=1, max_size=8),
    cached=st.lists(st.integers(0, 50_000), min_size=8, max_size=8),
)
def test_the_scalar_path_and_the_batch_path_agree(tokens: list[int], cached: list[int]) -> None:
    prof = fitted()
    k = cached[: len(tokens)]
    alone = [float(prof.prefill_time(n, c)) for n, c in zip(tokens, k, strict=True)]
    arrays = prof.prefill_time(np.asarray(tokens), np.asarray(k))
    assert np.allclose(alone, arrays, rtol=1e-12)
    nonzero = [i for i, n in enumerate(tokens) if n > 0]
    together = prof.batch_prefill_time(tokens, k)
    # one iteration: the fixed cost once, everything else as if each ran alone
    expected = sum(alone[i] - P0 for i in nonzero) + (P0 if nonzero else 0.0)
    assert together == pytest.approx(expected, rel=1e-9, abs=1e-12)


@given(
    tokens=st.lists(st.integers(0, 50_000), max_size=40),
    cached=st.lists(st.integers(0, 50_000), min_size=40, max_size=40),
    roof=st.booleans(),
)
def test_every_prefix_of_an_admission_costs_its_batch_prefill_exactly(
    tokens: list[int], cached: list[int], roof: bool
) -> None:
    """Pacing asks for all prefixes in one call (`prefix_prefill_times`): each must be the
    very number `batch_prefill_time` gives that prefix, so admissions do not change."""
    prof = PROFILES["llama-3.1-70b"] if roof else fitted()
    k = cached[: len(tokens)]
    prefixes = prof.prefix_prefill_times(tokens, k).tolist()
    assert prefixes == [
        prof.batch_prefill_time(tokens[:i], k[:i]) for i in range(1, len(tokens) + 1)
    ]


@pytest.mark.parametrize("profile", [fitted(), PROFILES["llama-3.1-70b"]], ids=["fitted", "roof"])
def test_the_simulator_charges_a_batched_prefill_per_prompt(
    profile: LinearProfile | RooflineProfile,
) -> None:
    """Ten prompts arriving together are prefilled in one vLLM-0.6 iteration: every first
    token comes at what the profile says for those ten prompts."""
    prompts = [500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000]
    sim = Simulator(FCFSPolicy(), profile, SchedulerConfig(max_num_seqs=64))
    for i, n in enumerate(prompts):
        sim.add(Request(f"r{i}", 0.0, n, 2, ttft_s=1.0, tokens_per_s=5.0), 2)
    first = [r.token_times[0] for r in sim.run().requests]
    assert first == pytest.approx([profile.batch_prefill_time(prompts)] * len(prompts), rel=1e-9)
    assert first[0] < float(profile.prefill_time(sum(prompts)))


def test_chunked_prefill_charges_each_chunk_its_cached_context() -> None:
    """One prompt of 1,500 tokens under Sarathi (chunks of 512): three iterations, chunk i
    attending over the chunks before it; together they cost three fixed costs plus the
    whole prompt's linear and quadratic terms."""
    prof = fitted()
    sim = Simulator(SarathiPolicy(), prof, SchedulerConfig(chunk_size=512))
    sim.add(Request("r", 0.0, 1500, 1, ttft_s=1.0, tokens_per_s=5.0), 1)
    (r,) = sim.run().requests
    assert r.token_times[0] == pytest.approx(3 * P0 + P1 * 1500 + P2 * 1500**2, rel=1e-9)


def test_the_fit_recovers_a_per_prompt_quadratic_from_mixed_batches() -> None:
    """Synthetic measurements of iterations prefilling 1-16 prompts (and chunks after a
    cached context), timed by a known per-prompt model with noise. The fit recovers it; a
    fit that treats each iteration as one prompt of the summed length does not."""
    rng = np.random.default_rng(7)
    rows, summed = [], []
    for _ in range(300):
        k = int(rng.integers(1, 17))
        n = rng.integers(16, 4000, k)
        c = np.where(rng.random(k) < 0.3, rng.integers(0, 4000, k), 0)
        s = P0 + P1 * n.sum() + P2 * float(((c + n) ** 2 - c**2).sum())
        s *= 1 + rng.normal(0, 0.01)
        rows.append(prefill_row(n.tolist(), c.tolist(), s))
        summed.append((float(n.sum()), s))
    dec = np.array([[1, 100, 0.01], [8, 800, 0.02], [64, 6400, 0.05], [32, 9000, 0.04]])
    prof = fit_profile("synthetic", dec, np.array(rows), kv_capacity=1 << 20)
    assert prof.prefill_coef == pytest.approx((P0, P1, P2), rel=0.1)
    wrong = fit_profile("summed", dec, np.array(summed), kv_capacity=1 << 20)
    assert abs(wrong.prefill_coef[2] / P2 - 1) > 0.5


def test_prefill_rows_keep_their_shape_rules() -> None:
    dec = np.array([[1, 100, 0.01], [8, 800, 0.02], [64, 6400, 0.05]])
    assert prefill_row([3, 4], [0, 5]) == (7.0, 9.0 + 4 * 14.0, 0.0)
    with pytest.raises(ValueError, match="prefill_samples"):
        fit_profile("bad", dec, np.ones((5, 4)), kv_capacity=1)
