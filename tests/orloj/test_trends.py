"""The paper's trends (spec section 5, T1-T7), reproduced by the experiments in quick mode.

Each experiment runs once per session (2 worker processes) into a shared folder. Absolute
numbers are not expected to match the paper (spec section 5); where our simulator departs from
a paper trend, the test asserts what the simulator does reproduce and says so (docs/orloj.md,
"Where we differ").
"""

from __future__ import annotations

import itertools
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kairos.experiments import ExperimentContext, get_experiment
from kairos.orloj.hull import make_index

BASELINES = ("clipper", "nexus", "clockwork")
NOISE = 0.03  # one seed of 1,500 requests: finish rates wobble by about this much


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("orloj-experiments")


_RUNS: dict[tuple[str, str], list[dict[str, Any]]] = {}


# The finish-rate tables' quick mode runs 5 seeds of 1,000 requests (CIs in every cell); the
# trend checks below were sized for one seed of 1,500 (6,000 static) and keep it, to stay quick
ONE_SEED = {"seeds": [0], "n_requests": 1500}
# The static table's clairvoyant bound (an LP over 6,000 requests) took 90% of its 100 s; no
# test here reads it (the bound >= every system check runs on the bimodal and modality tables)
TABLES = {"bimodal": ONE_SEED, "modality": ONE_SEED, "static": {"seeds": [0], "bound": False}}


def run_quick(name: str, out: Path, **overrides: Any) -> list[dict[str, Any]]:
    overrides = {**TABLES.get(name, {}), **overrides}
    key = (name, repr(sorted(overrides.items())))
    if key not in _RUNS:
        exp = get_experiment("orloj", name)
        ctx = ExperimentContext(out_dir=out / "orloj" / name, jobs=2, progress=False)
        rows: list[dict[str, Any]] = exp.run(exp.config(quick=True, overrides=overrides), ctx)
        assert (ctx.out_dir / f"{name}.json").is_file() and (ctx.out_dir / f"{name}.csv").is_file()
        assert list(ctx.out_dir.glob("*.png")), f"{name} wrote no plot"
        _RUNS[key] = rows
    return _RUNS[key]


def test_the_clairvoyant_bound_is_at_least_every_system_in_every_cell(results_dir: Path) -> None:
    """The relaxation bound is a row of the tables and no system exceeds it."""
    rows = run_quick("bimodal", results_dir) + run_quick("modality", results_dir)
    fr = table(rows)
    cells = {(r["workload"], r["slo_mult"]) for r in rows}
    for w, m in cells:
        bound = fr[(w, m, "bound")]
        assert 0.0 < bound <= 1.0
        for s in (*BASELINES, "orloj"):
            assert fr[(w, m, s)] <= bound + 1e-9, (w, m, s, fr[(w, m, s)], bound)


def table(rows: list[dict[str, Any]]) -> dict[tuple[str, float, str], float]:
    return {(r["workload"], r["slo_mult"], r["system"]): r["finish_rate"] for r in rows}


def synthetic(out: Path) -> tuple[dict[tuple[str, float, str], float], list[str], list[float]]:
    rows = run_quick("bimodal", out) + run_quick("modality", out)
    fr = table(rows)
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    slos = sorted({r["slo_mult"] for r in rows})
    return fr, workloads, slos


def test_t1_orloj_rises_with_the_slo_on_every_synthetic_workload(results_dir: Path) -> None:
    fr, workloads, slos = synthetic(results_dir)
    for w in workloads:
        series = [fr[(w, m, "orloj")] for m in slos]
        assert all(b >= a - NOISE for a, b in itertools.pairwise(series)), (w, series)
        assert series[-1] - series[0] >= 0.2, (w, series)
        # the paper reaches >= 0.96 at 4-5x; at the spec's load (rho = 0.8 of the batch-16
        # capacity, bursty) every system runs the worker at ~97% and sheds load in bursts
        assert series[-1] >= 0.7, (w, series)


def test_t2_orloj_beats_clockwork_clearly_under_tight_slos_on_multimodal(
    results_dir: Path,
) -> None:
    """Orloj's headline case: bimodal/multimodal, high variance, tight SLO (1.5x P99)."""
    fr, workloads, slos = synthetic(results_dir)
    multimodal = [w for w in workloads if w != "one-modal"]
    ratios = {w: fr[(w, 1.5, "orloj")] / fr[(w, 1.5, "clockwork")] for w in multimodal}
    mean_ratio = sum(ratios.values()) / len(ratios)
    print(f"\nOrloj / Clockwork finish rate at 1.5x P99: {ratios} mean {mean_ratio:.2f}")
    print("paper: 1.30 on Tables C.1 and C.2 at 1.5x (0.58 vs 0.45); its claim: +51-80%")
    assert all(r >= 1.12 for r in ratios.values()), ratios
    assert mean_ratio >= 1.2
    for w in multimodal:
        for m in slos:  # Orloj beats every baseline up to 3x and matches the best beyond
            best = max(fr[(w, m, s)] for s in BASELINES)
            margin = 0.03 if m <= 3 else -NOISE
            assert fr[(w, m, "orloj")] >= best + margin, (w, m, fr[(w, m, "orloj")], best)


def test_t3_clipper_and_nexus_collapse_at_tight_slos(results_dir: Path) -> None:
    fr, workloads, slos = synthetic(results_dir)
    for w in workloads:
        orloj = fr[(w, 1.5, "orloj")]
        assert fr[(w, 1.5, "clipper")] <= 0.1, w
        assert fr[(w, 1.5, "nexus")] <= 0.35, w
        assert max(fr[(w, 1.5, "clipper")], fr[(w, 1.5, "nexus")]) <= orloj - 0.1, w
        for s in ("clipper", "nexus"):  # and recover only as the SLO relaxes
            assert fr[(w, slos[-1], s)] > fr[(w, 1.5, s)] + 0.1, (w, s)


def test_t4_clockwork_rejects_overrun_actions_only_when_latency_varies(
    results_dir: Path,
) -> None:
    """The mechanism the spec blames for Clockwork's flat ~0.5: a batch overruns its estimate
    and the action queued behind it expires. Our Clockwork still rises with the SLO (it does
    not stay flat at 0.5), but stays far below 1 and below Orloj whenever latency varies."""
    rows = run_quick("bimodal", results_dir) + run_quick("modality", results_dir)
    static = run_quick("static", results_dir)
    dynamic_rejects = sum(r["rejected"] for r in rows if r["system"] == "clockwork")
    static_rejects = sum(r["rejected"] for r in static if r["system"] == "clockwork")
    assert dynamic_rejects > 0 and static_rejects == 0
    for r in rows:
        if r["system"] == "clockwork" and r["workload"] != "one-modal":
            assert r["finish_rate"] <= 0.9, r


def test_t5_orloj_stays_close_to_the_best_baseline_on_static_models(results_dir: Path) -> None:
    rows = run_quick("static", results_dir)
    fr = table(rows)
    gaps = {}
    for w in {r["workload"] for r in rows}:
        for m in sorted({r["slo_mult"] for r in rows}):
            best = max(fr[(w, m, s)] for s in BASELINES)
            gaps[(w, m)] = fr[(w, m, "orloj")] - best
            if m >= 3:
                assert gaps[(w, m)] >= -0.1, (w, m, gaps[(w, m)])
    print(f"\nstatic: Orloj minus the best baseline {gaps}")


def test_t6_orloj_is_insensitive_to_small_b(results_dir: Path) -> None:
    """Flat for b = 1e-6 ... 1e-4 (the paper's default); larger b (1e-2 here) costs up to 0.1 in our
    runs, where the paper's Fig 4.13 stays flat to 1e-1 (docs/orloj.md)."""
    rows = run_quick("b_sweep", results_dir)
    for m in {r["slo_mult"] for r in rows}:
        by = {r["system"]: r["finish_rate"] for r in rows if r["slo_mult"] == m}
        flat = [by["b=1e-06"], by["b=1e-05"], by["b=0.0001"]]
        assert max(flat) - min(flat) <= 0.03, (m, by)
        assert by["b=0.01"] <= max(flat) + 0.02, (m, by)


def _insert_cpu_us(kind: str, n: int, rng: np.random.Generator, total: int = 3000) -> float:
    """CPU time per insertion (this thread's, so time the scheduler gives other processes is
    not counted) while filling empty indexes to n, over about `total` insertions."""
    fills = [rng.uniform(0.0, 1.0, (3, n)) for _ in range(max(1, total // n))]
    t0 = time.thread_time()
    for alpha, beta, ties in fills:
        index = make_index(kind)
        for i in range(n):
            index.insert(i, float(alpha[i]), float(beta[i]), float(ties[i]))
    return 1e6 * (time.thread_time() - t0) / (len(fills) * n)


def test_t7_index_insertion_grows_polylogarithmically(results_dir: Path) -> None:
    """E7 runs and reports every size (its wall-clock numbers are for the figure); the growth
    is checked here on CPU time per insertion, sizes interleaved, medians of 7 rounds."""
    rows = run_quick("hull", results_dir)
    assert {(r["index"], r["n"]) for r in rows} == {
        (k, n) for k in ("hull", "bruteforce") for n in (10, 100, 1000, 3000)
    }
    assert all(r["insert_us"] > 0 and r["query_us"] > 0 for r in rows)
    rng = np.random.default_rng(0)
    sizes = (10, 3000)
    per: dict[int, list[float]] = {n: [] for n in sizes}
    for k in range(7):
        for n in sizes if k % 2 == 0 else sizes[::-1]:
            per[n].append(_insert_cpu_us("hull", n, rng))
    small, large = (statistics.median(per[n]) for n in sizes)
    growth, n_growth = large / small, sizes[1] / sizes[0]
    print(f"\nhull insertion: {small:.2f} us at n=10, {large:.2f} us at n=3000 ({growth:.1f}x)")
    # log^2 n grows (ln 3000 / ln 10)^2 = 12x over this range; linear would be 300x
    # (measured 1.7-2.0x, quiet or with three busy loops on two cores)
    assert growth < 0.05 * n_growth, (growth, n_growth)


def test_tagging_helps_and_both_indexes_make_identical_decisions(results_dir: Path) -> None:
    rows = run_quick("ablation", results_dir)
    fr = {(r["slo_mult"], r["system"]): r for r in rows}
    for m in {r["slo_mult"] for r in rows}:
        default, hull = fr[(m, "default")], fr[(m, "index=hull")]
        for key in ("finish_rate", "mean_batch_size", "timed_out", "late"):
            assert default[key] == hull[key], (m, key)
        assert fr[(m, "pooled (no app tags)")]["finish_rate"] <= default["finish_rate"] + NOISE


def test_scale_down_charged_overhead_costs_most_at_tiny_latencies(results_dir: Path) -> None:
    """Fig 4.14's mechanism: the scheduler's own time matters only when requests are short.
    The decision time is measured, so the factor 5 keeps the effect clear on fast machines."""
    rows = run_quick("scale_down", results_dir, overhead_factor=5.0)
    charged = [r for r in rows if r["charged"]]
    for m in {r["slo_mult"] for r in charged}:
        cost = {r["p99_ms"]: r["overhead_cost"] for r in charged if r["slo_mult"] == m}
        # 2 ms requests pay for the decisions, 200 ms ones hardly (the gap, not the absolute
        # cost, is asserted: a busy machine inflates every measured decision time)
        assert cost[min(cost)] >= cost[max(cost)] + 0.05, (m, cost)


def test_more_load_means_lower_finish_rates(results_dir: Path) -> None:
    rows = run_quick("load", results_dir)
    for s in {r["system"] for r in rows}:
        by = {r["rho"]: r["finish_rate"] for r in rows if r["system"] == s}
        assert by[min(by)] > by[max(by)], (s, by)
