from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.orloj.batchdist import BatchLatencyModel, batch_dists
from kairos.orloj.dist import Histogram, make_grid
from kairos.orloj.hull import BruteForceIndex, HullIndex
from kairos.orloj.score import ScoreTable, cost_steps


def batch_table(b: float, seed: int = 0, k: int = 4) -> tuple[ScoreTable, Histogram]:
    """A realistic L_B table: a bimodal app in a batch of k (edges mapped through g_k)."""
    rng = np.random.default_rng(seed)
    solo = np.where(rng.random(3000) < 0.5, rng.normal(20, 3, 3000), rng.normal(70, 6, 3000))
    app = Histogram.from_samples(solo.clip(1), make_grid(100.0, 32))
    d = batch_dists({"a": app}, {"a": 1.0}, BatchLatencyModel(), [k])["a"][0]
    return ScoreTable.build(d.hist, d.mean, b), d.hist


def gappy_table(b: float) -> tuple[ScoreTable, Histogram]:
    """Masses with empty bins in the middle and at both ends."""
    h = Histogram(make_grid(80.0, 8), np.array([0, 0.2, 0, 0, 0.5, 0.3, 0, 0]))
    return ScoreTable.build(h, h.mean(), b), h


@pytest.mark.parametrize("b", [1e-4, 1e-2])
def test_closed_form_matches_a_monte_carlo_of_eq41(b: float) -> None:
    """p(t) = (E[C(t + τ + L)] − E[C(t + L)]) / E[L] with τ ~ Exp(b), one step of cost 1."""
    table, hist = batch_table(b)
    rng = np.random.default_rng(11)
    n = 2_000_000
    lat = hist.sample(rng, n)
    tau = rng.exponential(1 / b, n)
    deadline = 1000.0
    slacks = np.linspace(hist.min_support - 5, hist.max_support + 60, 40)
    peak = max(table.score(deadline, deadline - s) for s in slacks)
    for s in slacks:
        t = deadline - s
        late_now = t + lat > deadline
        late_delayed = t + tau + lat > deadline
        mc = (late_delayed.mean() - late_now.mean()) / table.mean
        exact = table.score(deadline, t)
        assert exact == pytest.approx(mc, rel=0.01, abs=0.002 * peak), s


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 1000), t=st.floats(0.0, 400.0), b=st.sampled_from([1e-6, 1e-4, 1e-2]))
def test_coordinates_equal_the_direct_eq42_sum(seed: int, t: float, b: float) -> None:
    table, _ = batch_table(b, seed=seed % 5)
    deadline = 300.0
    direct = table.score_direct(deadline, t)
    assert table.score(deadline, t) == pytest.approx(direct, rel=1e-9, abs=1e-12 / b)
    # any time base t0 <= t: α e^{b(t − t0)} + β is the same line value
    for t0 in (0.0, t / 3, t):
        alpha, beta = table.coords(deadline - t0, table.state_at(deadline, t))
        assert alpha * math.exp(b * (t - t0)) + beta == pytest.approx(
            direct, rel=1e-9, abs=1e-12 / b
        )


def test_score_is_continuous_at_every_bin_edge() -> None:
    table, _ = batch_table(1e-3)
    deadline = 500.0
    scale = max(table.score(deadline, deadline - e) for e in table.edges)
    for e in table.edges:
        t_edge = deadline - e
        around = [table.score(deadline, t_edge + d) for d in (-1e-7, 0.0, 1e-7)]
        assert max(around) - min(around) < 1e-6 * scale


def test_score_is_zero_once_the_slack_is_below_the_support() -> None:
    table, hist = gappy_table(1e-4)
    deadline = 200.0
    low = hist.min_support  # 10: the first bin is empty
    assert low == 10.0
    for s in (low, low - 0.001, 5.0, 0.0, -50.0):
        assert table.score(deadline, deadline - s) == 0.0
        assert table.score_direct(deadline, deadline - s) == 0.0
    assert table.score(deadline, deadline - low - 0.5) > 0.0


def test_small_b_limit_is_the_chance_of_making_the_deadline() -> None:
    """b → 0: p·E[L]/c → P(L ≤ s)."""
    table, hist = batch_table(1e-9)
    deadline = 400.0
    for s in np.linspace(hist.min_support, hist.max_support + 20, 25):
        p = table.score(deadline, deadline - s, cost=2.0)
        assert p * table.mean / 2.0 == pytest.approx(float(hist.cdf(s)), abs=1e-5)


def test_milestones_fire_where_the_state_changes_and_skip_empty_bins() -> None:
    table, hist = gappy_table(1e-3)
    deadline = 1000.0
    t, seen = 0.0, []
    state = table.state_at(deadline, t)
    while True:
        when = table.milestone(deadline, state)
        if when == math.inf:
            break
        # between milestones the score is one line in e^{bt}: check a point inside
        mid = (t + when) / 2
        alpha, beta = table.coords(deadline, state)
        assert alpha * math.exp(table.b * mid) + beta == pytest.approx(
            table.score_direct(deadline, mid), rel=1e-9, abs=1e-9
        )
        seen.append(deadline - when)
        t, state = when, table.state_at(deadline, when)
    # only the edges of non-empty bins (60, 50, 40, 20, 10) are milestones: 80 and 70 bound
    # empty bins above the support, 30 separates two empty bins, 0 lies below the support
    nonempty_edges = sorted(
        {float(e) for i, m in enumerate(hist.masses) if m > 0 for e in hist.edges[i : i + 2]},
        reverse=True,
    )
    assert seen == nonempty_edges == [60.0, 50.0, 40.0, 20.0, 10.0]
    assert table.coords(deadline, state) == (0.0, 0.0)  # the last state scores 0 for good


def test_far_future_deadlines_do_not_overflow() -> None:
    table, _ = batch_table(1e-2)
    alpha, beta = table.coords(1e9, table.state_at(1e9, 0.0))  # e^{-b D'} underflows to 0
    assert math.isfinite(alpha) and alpha >= 0 and beta == 0.0
    alpha, beta = table.coords(-1e9, len(table.ahat) - 1)  # long past: exponent clamped
    assert math.isfinite(alpha)


def test_time_base_reset_leaves_the_argmax_unchanged() -> None:
    rng = np.random.default_rng(4)
    tables = [batch_table(1e-4, seed=s, k=k)[0] for s, k in ((0, 1), (1, 4), (2, 16))]
    t = 987_654.0  # late in a long run
    reqs = [(rng.integers(3), t + rng.uniform(-50, 900)) for _ in range(400)]

    def argmax(t0: float, index_type: type[BruteForceIndex] | type[HullIndex]) -> int:
        index = index_type()
        for i, (which, d) in enumerate(reqs):
            table = tables[which]
            alpha, beta = table.coords(d - t0, table.state_at(d, t))
            index.insert(i, alpha, beta, d)
        return index.argmax(math.exp(1e-4 * (t - t0)))

    best = {
        argmax(t0, kind)
        for t0 in (t - 9_000_000.0 / 10, t - 5_000.0, t)
        for kind in (BruteForceIndex, HullIndex)
    }
    assert len(best) == 1
    which, d = reqs[best.pop()]
    scores = [tables[w].score_direct(dd, t) for w, dd in reqs]
    assert tables[which].score_direct(d, t) == max(scores)


# -- piece-wise step costs ---------------------------------------------------------------------
def test_three_step_cost_is_the_sum_of_three_single_steps() -> None:
    table, hist = batch_table(1e-2)
    steps = ((300.0, 1.0), (340.0, 3.0), (420.0, 4.5))
    single = cost_steps(0.0, steps)
    assert single == [(300.0, 1.0), (340.0, 2.0), (420.0, 1.5)]
    rng = np.random.default_rng(9)
    n = 1_000_000
    lat, tau = hist.sample(rng, n), rng.exponential(1 / table.b, n)

    def cost(finish: np.ndarray) -> np.ndarray:
        return np.select([finish > d for d, _ in steps[::-1]], [c for _, c in steps[::-1]], 0.0)

    for t in np.linspace(150.0, 380.0, 12):
        total = sum(table.score(d, t, cost=dc) for d, dc in single)
        direct = sum(table.score_direct(d, t, cost=dc) for d, dc in single)
        assert total == pytest.approx(direct, rel=1e-9)
        mc = (cost(t + tau + lat).mean() - cost(t + lat).mean()) / table.mean
        assert total == pytest.approx(mc, rel=0.02, abs=1e-4)


def test_cost_steps_validate_and_warn_on_decreasing_costs(caplog: pytest.LogCaptureFixture) -> None:
    assert cost_steps(50.0, None, 2.0) == [(50.0, 2.0)]
    with pytest.raises(ValueError, match="increase"):
        cost_steps(0.0, ((10.0, 1.0), (10.0, 2.0)))
    with caplog.at_level(logging.WARNING, logger="kairos.orloj.score"):
        assert cost_steps(0.0, ((10.0, 2.0), (20.0, 1.0))) == [(10.0, 2.0), (20.0, -1.0)]
    assert "decrease" in caplog.text
