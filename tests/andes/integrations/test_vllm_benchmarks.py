"""The vLLM benchmarks' measuring and summarising functions on tiny cases (no timing claims):
the overhead benchmark times every step of both schedulers and every Andes decision; the burst
benchmark's summary pairs seeds and compares the two engines' gains."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchmarks.bench_vllm_bursts import PAIRS, SERVERS, summarize


def runs(gains: dict[str, list[float]], base: float = 0.5) -> list[dict[str, Any]]:
    """Per-seed runs where each engine's Andes has `gains[engine][seed]` x the baseline QoE."""
    out: list[dict[str, Any]] = []
    for engine, ratios in gains.items():
        ours, theirs = PAIRS[engine]
        for seed, g in enumerate(ratios):
            for server, qoe in ((theirs, base), (ours, base * g)):
                out.append(
                    {
                        "server": server,
                        "seed": seed,
                        "avg_qoe": qoe,
                        "share_qoe_095": 0.0,
                        "ttft_p50_s": 1.0,
                        "ttft_p99_s": 2.0,
                        "output_tok_s": 10.0,
                        "preemptions": 3.0,
                        "failed": 0,
                    }
                )
    return out


def test_burst_summary_pairs_seeds_and_compares_the_gains() -> None:
    table, summary = summarize(runs({"vllm": [1.2, 1.3, 1.25], "kairos": [1.1, 1.4, 1.3]}))
    assert [r["server"] for r in table] == list(SERVERS)
    assert summary["vllm_seeds"] == 3
    assert summary["vllm_gain_ratios"] == pytest.approx([1.2, 1.3, 1.25])
    assert summary["vllm_gain"] == pytest.approx(np.exp(np.mean(np.log([1.2, 1.3, 1.25]))))
    assert summary["kairos_gain_lo"] < summary["vllm_gain"] < summary["kairos_gain_hi"]
    assert summary["vllm_gain_within_kairos_ci"] == 1
    assert summary["vllm_default_loses_qoe"] == 1
    # a vLLM gain far outside kairos's interval is reported as such
    _, apart = summarize(runs({"vllm": [2.0, 2.1, 2.05], "kairos": [1.1, 1.2, 1.15]}))
    assert apart["vllm_gain_within_kairos_ci"] == 0


def test_burst_summary_pairs_by_seed_not_by_position() -> None:
    """Runs arrive in alternating server order; a ratio must divide the same seed's runs."""
    shuffled = runs({"vllm": [1.0, 2.0], "kairos": [1.0, 1.0]})[::-1]
    _, summary = summarize(shuffled)
    assert sorted(summary["vllm_gain_ratios"]) == pytest.approx([1.0, 2.0])


@pytest.mark.parametrize("contended", [False, True])
def test_overhead_times_every_step_of_both_schedulers(checkpoint: Path, contended: bool) -> None:
    pytest.importorskip("vllm", reason="the vLLM integration runs in the vLLM environment")
    from benchmarks.bench_vllm_overhead import scheduler_times

    steps = 5
    t = scheduler_times(checkpoint, running=4, steps=steps, contended=contended)
    assert set(t) == {"default", "andes"}
    for name in t:
        s = t[name]["step_s"]
        assert s.shape == (steps,) and np.all(np.isfinite(s)) and np.all(s > 0)
    andes = t["andes"]
    # the policy is asked exactly once per step (the timed wrapper sees every decision)
    assert andes["decide_s"].shape == (steps,)
    assert andes["solves"] >= 0 and 0 < andes["running_end"] <= 4
