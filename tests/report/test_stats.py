"""The shared summaries (`kairos.report.stats`) against numpy and scipy, on any input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

from kairos.report.stats import (
    mean_ci,
    paired_ratio,
    percentile_key,
    percentile_summary,
    summarize,
)

FINITE = st.floats(-1e6, 1e6, allow_nan=False)
ANY = st.one_of(FINITE, st.just(math.nan), st.just(math.inf), st.just(-math.inf))
PCTS = st.lists(st.floats(0, 100), min_size=1, max_size=5, unique=True)


@given(st.lists(ANY, max_size=100), PCTS)
def test_percentile_summary_is_numpy_over_the_finite_values(
    xs: list[float], ps: list[float]
) -> None:
    got = percentile_summary(xs, ps)
    x = np.array([v for v in xs if math.isfinite(v)])
    assert got["n"] == x.size
    if x.size == 0:
        assert all(math.isnan(v) for k, v in got.items() if k != "n")
        return
    assert got["mean"] == pytest.approx(np.mean(x), rel=1e-9, abs=1e-9)
    assert got["std"] == pytest.approx(np.std(x), rel=1e-9, abs=1e-9)
    for p in ps:
        assert got[percentile_key(p)] == pytest.approx(np.percentile(x, p), rel=1e-9, abs=1e-9)


@given(st.lists(FINITE, min_size=1, max_size=100))
def test_percentiles_are_ordered_and_within_the_range(xs: list[float]) -> None:
    got = percentile_summary(xs, (0, 10, 50, 90, 99, 100))
    values = [got[k] for k in ("p0", "p10", "p50", "p90", "p99", "p100")]
    assert values == sorted(values)
    assert (values[0], values[-1]) == (min(xs), max(xs))


def test_percentile_keys_and_the_empty_value() -> None:
    assert [percentile_key(p) for p in (50, 99, 99.9, 12.5)] == ["p50", "p99", "p99.9", "p12.5"]
    empty = percentile_summary([math.nan], (99,), empty=0.0)
    assert empty == {"n": 0, "mean": 0.0, "std": 0.0, "p99": 0.0}


@given(st.lists(FINITE, min_size=1, max_size=60))
def test_summarize_agrees_with_percentile_summary(xs: list[float]) -> None:
    s = summarize(xs)
    p = percentile_summary(xs, (50, 90, 95, 99))
    assert (s.n, s.mean, s.std, s.p50, s.p90, s.p95, s.p99) == (
        p["n"], p["mean"], p["std"], p["p50"], p["p90"], p["p95"], p["p99"]
    )  # fmt: skip
    assert (s.min, s.max) == (min(xs), max(xs))


@given(st.lists(FINITE, min_size=2, max_size=30), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_mean_ci_is_the_student_t_interval(xs: list[float], level: float) -> None:
    mean, half = mean_ci(xs, level)
    x = np.asarray(xs)
    assert mean == pytest.approx(np.mean(x), rel=1e-9, abs=1e-9)
    sem = sps.sem(x)
    if sem == 0:
        assert half == 0
        return
    lo, hi = sps.t.interval(level, x.size - 1, loc=np.mean(x), scale=sem)
    assert half == pytest.approx((hi - lo) / 2, rel=1e-6, abs=1e-9)
    assert half > 0


def test_mean_ci_with_one_value_or_a_non_finite_one_has_no_width() -> None:
    assert mean_ci([3.0])[0] == 3.0 and math.isnan(mean_ci([3.0])[1])
    mean, half = mean_ci([1.0, math.inf])
    assert mean == math.inf and math.isnan(half)  # a run that never finished is not dropped
    assert all(math.isnan(v) for v in mean_ci([]))
    with pytest.raises(ValueError, match="level"):
        mean_ci([1.0, 2.0], 1.0)


@given(
    st.lists(st.floats(0.1, 100.0), min_size=2, max_size=30),
    st.floats(0.2, 5.0),
)
def test_paired_ratio_of_a_constant_speedup_is_that_speedup(base: list[float], k: float) -> None:
    r = paired_ratio(base, [b / k for b in base])
    assert r.geo_mean == pytest.approx(k)
    assert r.lo == pytest.approx(k) and r.hi == pytest.approx(k)  # no spread, no width
    assert r.n == len(base) and r.wins == (len(base) if k > 1 + 1e-12 else r.wins)


@given(st.lists(st.tuples(st.floats(0.1, 10.0), st.floats(0.1, 10.0)), min_size=2, max_size=30))
def test_paired_ratio_interval_brackets_the_geometric_mean(
    pairs: list[tuple[float, float]],
) -> None:
    r = paired_ratio([a for a, _ in pairs], [b for _, b in pairs])
    assert r.lo <= r.geo_mean * (1 + 1e-9) and r.geo_mean <= r.hi * (1 + 1e-9)
    logs = np.log([a / b for a, b in pairs])
    assert r.geo_mean == pytest.approx(math.exp(logs.mean()))
    assert r.resolves() == (r.lo > 1 or r.hi < 1)


def test_paired_ratio_refuses_what_cannot_pair() -> None:
    with pytest.raises(ValueError, match="equal-length"):
        paired_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite positive"):
        paired_ratio([1.0, math.inf], [1.0, 1.0])
    one = paired_ratio([2.0], [1.0])
    assert one.geo_mean == 2.0 and math.isnan(one.lo)  # one seed says nothing about spread


def test_paired_ratio_on_a_textbook_case() -> None:
    # log-ratios 0, 0.1, 0.2: mean 0.1, sample sd 0.1, se 0.1/sqrt(3); t(0.975, 2) = 4.302653
    # (printed t tables), so the 95% interval of the mean log is 0.1 -/+ 0.248414 (by hand)
    r = paired_ratio([1.0, math.exp(0.1), math.exp(0.2)], [1.0, 1.0, 1.0])
    assert r.geo_mean == pytest.approx(math.exp(0.1), rel=1e-9)
    assert r.lo == pytest.approx(math.exp(0.1 - 0.248414), rel=1e-5)
    assert r.hi == pytest.approx(math.exp(0.1 + 0.248414), rel=1e-5)
    assert (r.lo, r.hi) == pytest.approx((0.86207, 1.41682), abs=1e-5)
    assert r.wins == 2 and not r.resolves() and not r.can_resolve(1.05)
    # and the same interval as scipy's one-sample t-test on the logs
    ci = sps.ttest_1samp(np.log(r.ratios), 0.0).confidence_interval(0.95)
    assert (math.log(r.lo), math.log(r.hi)) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_can_resolve_needs_a_narrow_interval_and_more_than_one_seed() -> None:
    rng = np.random.default_rng(0)
    noise = np.exp(rng.normal(0.0, 0.05, size=20))  # per-seed spread like Venn's tables
    many = paired_ratio(list(1.05 * noise), [1.0] * 20)
    few = paired_ratio(list(1.05 * noise[:2]), [1.0, 1.0])
    assert many.can_resolve(1.05) and many.resolves()
    assert not few.can_resolve(1.05)
    assert not paired_ratio([2.0], [1.0]).can_resolve(10.0)
    cols = many.columns("x")
    assert cols["x"] == many.geo_mean and cols["seeds"] == 20
    assert (cols["x_lo"], cols["x_hi"], cols["x_wins"]) == (many.lo, many.hi, many.wins)
