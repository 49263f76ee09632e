"""Invariants of the paired analysis and of E5's forced cohorts (hypothesis)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.auxo.experiments.pairing import compare, first_time
from kairos.auxo.experiments.runs import forced_assignment


def _run(seed: int, curve: list[float], scale: float = 1.0) -> dict[str, Any]:
    n = len(curve)
    return {
        "seed": seed,
        "curve_mean": curve,
        "curve_time": [scale * 10.0 * i for i in range(n)],
        "curve_participant_rounds": [scale * 40.0 * i for i in range(n)],
        "best_mean": max(curve),
        "final_mean": curve[-1],
        "final_p10": curve[-1] / 2,
        "final_variance": 0.01 + curve[-1] / 100,
    }


curves = st.lists(st.floats(0.0, 1.0), min_size=2, max_size=12)


@settings(max_examples=50, deadline=None)
@given(st.lists(curves, min_size=2, max_size=5))
def test_an_arm_against_itself_is_a_tie(cs: list[list[float]]) -> None:
    runs = [_run(i, c) for i, c in enumerate(cs)]
    row = compare(runs, runs)
    assert row["d_final_mean"] == 0 and row["d_final_mean_wins"] == 0
    assert row["variance_ratio"] == row["variance_ratio_lo"] == row["variance_ratio_hi"] == 1.0
    reached = [first_time(r, r["best_mean"]) for r in runs]
    if all(t is not None and t > 0 for t in reached):
        assert row["speedup"] == 1.0 and row["resource_ratio"] == 1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(curves, min_size=2, max_size=5), st.floats(1.5, 4.0))
def test_the_same_curve_on_a_faster_clock_is_a_speedup(cs: list[list[float]], k: float) -> None:
    base = [_run(i, c) for i, c in enumerate(cs)]
    fast = [_run(i, c, scale=1.0 / k) for i, c in enumerate(cs)]
    row = compare(base, fast)
    reached = [first_time(r, r["best_mean"]) for r in base]
    if all(t is not None and t > 0 for t in reached):
        assert abs(row["speedup"] - k) < 1e-2 and row["speedup_reached"] == f"{len(cs)}/{len(cs)}"
    assert row["d_final_mean"] == 0


@settings(max_examples=50, deadline=None)
@given(st.integers(8, 200), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4, 8]), st.data())
def test_forced_cohorts_are_unions_or_splits_of_groups(
    n: int, n_groups: int, m: int, data: st.DataObject
) -> None:
    if m > n_groups and m % n_groups:
        return
    seed = data.draw(st.integers(0, 1000))
    groups = np.random.default_rng(seed).permutation(np.arange(n) % n_groups)
    out = forced_assignment(groups, m)
    cohort = np.array([out[i] for i in range(n)])
    assert set(out) == set(range(n)) and cohort.min() >= 0 and cohort.max() < m
    if m <= n_groups:  # each group lies in one cohort
        for g in range(n_groups):
            assert np.unique(cohort[groups == g]).size == 1
    else:  # each cohort lies in one group, and a group's parts differ in size by at most 1
        for c in range(m):
            assert np.unique(groups[cohort == c]).size <= 1
        for g in range(n_groups):
            sizes = np.bincount(cohort[groups == g], minlength=m)
            sizes = sizes[sizes > 0]
            assert sizes.max() - sizes.min() <= 1
