"""The load definition (sustainable rate on a trace's own lengths, checked by simulation),
the operating-point search, the tail metrics, and E4 on a synthetic long-prompt trace at its
own operating point."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kairos.andes.capacity import sustainable_rate
from kairos.andes.latency import PROFILES
from kairos.andes.metrics import tail_metrics
from kairos.andes.operating_point import (
    PAPER_FCFS_QOE,
    find_load,
    simulated_throughput,
    trace_sustainable_rate,
)
from kairos.experiments import ExperimentContext, get_experiment
from kairos.workloads import read_azure_csv

PROFILE = PROFILES["llama-3.1-70b"]


def test_equal_lengths_give_the_mean_based_rate() -> None:
    p, o = np.full(50, 1200), np.full(50, 200)
    assert trace_sustainable_rate(PROFILE, p, o) == pytest.approx(
        sustainable_rate(PROFILE, 1200.0, 200.0), rel=1e-12
    )


def test_spread_prompts_cost_more_than_their_mean() -> None:
    """Attention is quadratic per prompt: the mean of the prefills exceeds the prefill of the
    mean, so a long-tailed trace sustains less than the mean-based estimate says (on the 70B
    roofline, 3% for these lengths: the weights' FLOPs dominate a 3,000-token prefill)."""
    rng = np.random.default_rng(0)
    p = np.clip(rng.lognormal(np.log(3000), 0.8, 2000), 100, 30000).astype(int)
    o = rng.integers(8, 64, 2000)
    spread = trace_sustainable_rate(PROFILE, p, o)
    assert spread < 0.99 * sustainable_rate(PROFILE, float(p.mean()), float(o.mean()))


@pytest.mark.parametrize("kind", ["conversation", "long prompts"])
def test_a_short_simulation_confirms_the_sustainable_rate(kind: str, data_dir: Path) -> None:
    if kind == "conversation":
        t = read_azure_csv(data_dir / "azure_llm_conv_1h.csv")
        p, o = t.prompt_tokens, t.output_tokens
    else:
        p, o = long_prompt_lengths(np.random.default_rng(1), 1000)
    analytic = trace_sustainable_rate(PROFILE, p, o)
    measured = simulated_throughput(PROFILE, p, o, sample=600)
    assert measured == pytest.approx(analytic, rel=0.15)


@settings(max_examples=60, deadline=None)
@given(
    mid=st.floats(0.2, 3.0),
    steep=st.floats(1.0, 20.0),
    target=st.floats(0.3, 0.95),
)
def test_find_load_lands_on_the_target(mid: float, steep: float, target: float) -> None:
    """On any QoE that falls smoothly with load (a logistic here) the search ends within its
    tolerance of the target, widening its bracket when the crossing lies outside it."""

    def qoe(load: float) -> float:
        return 1.0 / (1.0 + math.exp(steep * (load - mid)))

    assume(qoe(0.02) > target + 0.02)  # reachable at a positive load (the bracket halves to it)
    found = find_load(qoe, target, tol=0.01, max_probes=30)
    assert found.converged
    assert abs(qoe(found.load) - target) <= 0.01
    assert found.value == qoe(found.load)
    assert found.probes[-1] in found.probes


def test_find_load_reports_a_miss_instead_of_pretending() -> None:
    found = find_load(lambda load: 0.5, 0.88, max_probes=6)  # never reaches 0.88
    assert not found.converged and len(found.probes) <= 6


def test_tail_metrics_name_the_longest_decile() -> None:
    prompts = np.arange(1, 21)  # the decile: prompts 19 and 20 (>= the 90th percentile, 18.1)
    qoe = np.where(prompts >= 19, 0.2, 1.0)
    ttft = np.linspace(0.0, 19.0, 20)
    tails = tail_metrics(qoe, ttft, prompts)
    assert tails["qoe_long_prompts"] == pytest.approx(0.2)
    assert tails["qoe_other_prompts"] == pytest.approx(1.0)
    assert tails["ttft_max"] == 19.0 and tails["ttft_p50"] == pytest.approx(9.5)
    assert tails["ttft_p99"] <= tails["ttft_max"] and tails["ttft_p90"] <= tails["ttft_p99"]


def long_prompt_lengths(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Thousands of prompt tokens, tens of output tokens: the trace shape that collapsed
    every policy at the old load definition."""
    prompts = np.clip(rng.lognormal(np.log(3000), 0.6, n), 500, 16000).astype(int)
    return prompts, rng.integers(8, 64, n)


def write_long_prompt_trace(path: Path, n: int = 600) -> Path:
    rng = np.random.default_rng(7)
    arrivals = np.cumsum(rng.exponential(1.0, n))
    prompts, outputs = long_prompt_lengths(rng, n)
    lines = ["arrived_at,num_prefill_tokens,num_decode_tokens"]
    lines += [f"{a:.4f},{p},{o}" for a, p, o in zip(arrivals, prompts, outputs, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_e4_on_a_long_prompt_trace_at_its_own_operating_point(tmp_path: Path) -> None:
    """The same table as E4 on the conversation trace: FCFS placed at the paper's QoE by the
    search, Andes above it, nobody collapsed (no request left without QoE at 0.95)."""
    exp = get_experiment("andes", "e4")
    trace = write_long_prompt_trace(tmp_path / "long.csv")
    cfg = exp.config(quick=True).model_validate(
        exp.config(quick=True).model_dump() | {"trace": str(trace), "span_s": 300.0}
    )
    ctx = ExperimentContext(out_dir=tmp_path / "andes" / "e4", jobs=1, progress=False)
    rows = {r["policy"]: r for r in exp.run(cfg, ctx)}
    fcfs, andes = rows["fcfs"], rows["andes"]
    assert abs(fcfs["avg_qoe"] - PAPER_FCFS_QOE) <= 0.05
    assert andes["avg_qoe"] > fcfs["avg_qoe"]
    assert andes["share_qoe_095"] > 0.5 and fcfs["share_qoe_095"] > 0.4
    assert andes["ttft_max"] <= 2.0 * fcfs["ttft_max"]
    assert andes["qoe_long_prompts"] >= 0.9 * fcfs["qoe_long_prompts"]
