"""Heterogeneity estimate, Lemma 1's bound and the partition criteria (spec 3.3, spec 7: 1-2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kairos.auxo.criteria import (
    BLOB_RATIO,
    PartitionMonitor,
    bound_h,
    decide_partition,
    het_stats,
    het_threshold,
    min_resource,
    pairwise_objective,
    total_sse,
    within_sse,
)
from kairos.auxo.params import AuxoParams

SHIFT = np.array([8.0, 0.0])
pos = st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=100, deadline=None)
@given(pos, pos, pos, pos, st.floats(1.0, 500.0), st.floats(0.05, 0.99))
def test_h_nonincreasing_as_p_shrinks_iff_p_above_the_lemma_bound(
    theta: float, gamma: float, rho: float, g0: float, p0: float, shrink: float
) -> None:
    """Property 1: with G^2 = G0^2 P/P0, h(P) <= h(P') for P < P' iff P >= P* (Lemma 1)."""
    p_star = min_resource(p0, g0, theta, rho)

    def h(p: float) -> float:
        return bound_h(p, g0 * math.sqrt(p / p0), theta, gamma, rho)

    hi = p_star * (1 + 1 / shrink)  # both points above the bound
    assert h(hi * shrink if hi * shrink >= p_star else p_star) <= h(hi) * (1 + 1e-9)
    lo = p_star * 0.99  # both points below the bound: shrinking P makes h grow
    assert h(lo * shrink) > h(lo)


@settings(max_examples=200, deadline=None)
@given(pos, pos, pos, pos, st.floats(1.0, 1000.0), st.integers(2, 8))
def test_discrete_split_check_matches_closed_form(
    theta: float, gamma: float, rho: float, g0: float, p0: float, k: int
) -> None:
    """h(P0/K, G0/sqrt K) <= h(P0, G0)  <=>  P0/K >= theta/(rho G0^2)."""
    rhs = theta / (rho * g0 * g0)
    assume(abs(p0 / k - rhs) > 1e-6 * max(1.0, rhs))
    after = bound_h(p0 / k, g0 / math.sqrt(k), theta, gamma, rho)
    before = bound_h(p0, g0, theta, gamma, rho)
    assert (after <= before) == (p0 / k >= rhs)


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 12), st.integers(1, 5)),
        elements=st.floats(-50, 50, allow_nan=False),
    )
)
def test_eq_3_1_pairwise_form_equals_centroid_form(x: np.ndarray) -> None:
    """Property 2: 1/(2|C|) sum_{i,j} ||x_i - x_j||^2 = sum_i ||x_i - mu||^2 (ordered pairs)."""
    assert pairwise_objective(x) == pytest.approx(total_sse(x), rel=1e-9, abs=1e-6)


def test_eq_3_1_over_a_partition_is_the_within_sse() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 3))
    lab = rng.integers(0, 3, size=30)
    j = sum(pairwise_objective(x[lab == c]) for c in range(3))
    assert j == pytest.approx(within_sse(x, lab, 3))


def test_het_stats_ratio_is_within_over_total_and_weighted_g() -> None:
    rng = np.random.default_rng(1)
    f = rng.normal(size=(20, 4))
    lab = np.array([0] * 8 + [1] * 10 + [-1] * 2)  # two unlabelled rows are ignored
    s = het_stats(f, lab, 2)
    assert s is not None and s.sizes == (8, 10)
    fl, ll = f[:18], lab[:18]
    g_k = [total_sse(fl[ll == c]) / (ll == c).sum() for c in (0, 1)]
    weighted = (8 * g_k[0] + 10 * g_k[1]) / 18
    assert s.g_children_sq == pytest.approx(weighted)
    assert s.ratio == pytest.approx(within_sse(fl, ll, 2) / total_sse(fl))
    assert het_threshold(2, "G") == 0.5 and het_threshold(4, "J") == 0.5


def test_separation_tells_two_blobs_from_one() -> None:
    rng = np.random.default_rng(2)
    one = rng.normal(size=(400, 2))
    lab = (one[:, 0] > 0).astype(int)  # the best 2-split of one Gaussian
    s1 = het_stats(one, lab, 2)
    two = np.concatenate([rng.normal(size=(200, 2)) + SHIFT, rng.normal(size=(200, 2)) - SHIFT])
    s2 = het_stats(two, np.repeat([0, 1], 200), 2)
    assert s1 is not None and s2 is not None
    assert s1.separation == pytest.approx(BLOB_RATIO, abs=0.05)  # 1 - 2/pi for one blob
    assert s2.separation < 0.35 * BLOB_RATIO


def _ready_monitor(params: AuxoParams, created: int = 0) -> PartitionMonitor:
    """A monitor that has seen `patience` rounds of two clearly separated sub-clusters."""
    mon = PartitionMonitor(params.k, created)
    rng = np.random.default_rng(0)
    for r in range(max(params.patience, params.separation_window)):
        f = np.concatenate([rng.normal(size=(10, 2)) + 10, rng.normal(size=(10, 2)) - 10])
        ids = np.arange(20) + 20 * r
        mon.observe(ids, f, np.repeat([0, 1], 10), params)
    return mon


def test_all_criteria_pass_on_a_clear_split_in_the_window() -> None:
    p = AuxoParams(total_rounds=1000, p_total=200, n_clients=200)
    mon = _ready_monitor(p)
    d = decide_partition(mon, round_local=100, m_leaves=1, params=p)
    assert d.split, d.checks


@pytest.mark.parametrize(
    ("round_local", "m_leaves", "created", "failing"),
    [
        (10, 1, 0, "timing"),  # before r_min_partition = 50
        (600, 1, 0, "timing"),  # after r_max_partition = 500
        (100, 1, 80, "timing"),  # only 20 rounds since the cohort was created (< 50)
        (100, 4, 0, "cap"),  # M + K - 1 = 5 > K_max = 4
    ],
)
def test_each_criterion_can_block(
    round_local: int, m_leaves: int, created: int, failing: str
) -> None:
    p = AuxoParams(total_rounds=1000, p_total=200, n_clients=200, size_ratio=(0.2, 5.0))
    d = decide_partition(
        _ready_monitor(p, created), round_local=round_local, m_leaves=m_leaves, params=p
    )
    assert not d.split and not d.checks[failing]


def test_resources_and_members_block() -> None:
    p = AuxoParams(total_rounds=1000, p_total=10, max_leaves=8)  # P_min = 5: 10/3 < 5 at M = 2
    assert not decide_partition(_ready_monitor(p), round_local=100, m_leaves=2, params=p).checks[
        "resources"
    ]
    big = AuxoParams(total_rounds=1000, n_clients=100_000)  # n_min = 5000 distinct clients
    assert not decide_partition(
        _ready_monitor(big), round_local=100, m_leaves=1, params=big
    ).checks["members"]


def test_one_blob_fails_separation_even_when_the_sse_ratio_passes() -> None:
    p = AuxoParams(total_rounds=1000, het_rule="G")
    mon = PartitionMonitor(2)
    rng = np.random.default_rng(5)
    for r in range(p.separation_window):
        f = rng.normal(size=(40, 2)) * [3.0, 1.0]  # one elongated blob
        lab = (f[:, 0] > 0).astype(int)
        mon.observe(np.arange(40) + 40 * r, f, lab, p)
    d = decide_partition(mon, round_local=100, m_leaves=1, params=p)
    # SSE ratio about (9 (1 - 2/pi) + 1)/10 = 0.43 <= 1/2: the SSE test alone would split
    assert d.checks["heterogeneity"]
    assert not d.checks["separation"] and not d.split


def test_fixed_schedule_splits_exactly_on_schedule_within_the_cap() -> None:
    p = AuxoParams.reference()
    mon = PartitionMonitor(2)
    hits = [
        r
        for r in range(0, 1000)
        if decide_partition(mon, round_local=r, m_leaves=1, params=p).split
    ]
    assert hits == [50, 100]
    assert not decide_partition(mon, round_local=100, m_leaves=4, params=p).split  # cap
