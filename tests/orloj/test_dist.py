from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.orloj.dist import Histogram, make_grid
from kairos.orloj.window import LatencyWindows

EDGES = make_grid(100.0, 10)


def bimodal(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.where(rng.random(n) < 0.5, rng.normal(20, 3, n), rng.normal(70, 5, n)).clip(0.1)


def test_from_samples_counts_each_sample_in_its_half_open_bin() -> None:
    h = Histogram.from_samples([0.0, 9.99, 10.0, 55.0, 99.0, 150.0], EDGES)
    # [0,10) holds 0 and 9.99; 10 opens bin 1; 150 is clipped into the last bin
    assert h.masses.tolist() == pytest.approx([2 / 6, 1 / 6, 0, 0, 0, 1 / 6, 0, 0, 0, 2 / 6])
    assert h.count == 6
    assert h.density.sum() * 10 == pytest.approx(1.0)
    assert h.min_support == 0.0 and h.max_support == 100.0


def test_cdf_is_piecewise_linear_and_exact_at_edges() -> None:
    h = Histogram.from_samples([5.0, 15.0, 15.0, 35.0], EDGES)
    assert h.cdf([0.0, 10.0, 20.0, 30.0, 40.0]).tolist() == [0.0, 0.25, 0.75, 0.75, 1.0]
    assert float(h.cdf(12.5)) == pytest.approx(0.25 + 0.5 * 0.25)  # halfway through bin 1
    assert float(h.cdf(-1.0)) == 0.0 and float(h.cdf(1e9)) == 1.0
    assert h.pdf([5.0, 25.0, 200.0]).tolist() == pytest.approx([0.025, 0.0, 0.0])


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), q=st.floats(1e-9, 1.0))
def test_quantile_inverts_the_cdf(seed: int, q: float) -> None:
    rng = np.random.default_rng(seed)
    h = Histogram.from_samples(bimodal(rng, 50), make_grid(120.0, 32))
    x = float(h.quantile(q))
    assert float(h.cdf(x)) == pytest.approx(q, abs=1e-12)
    # the smallest such x: just below it the CDF is below q
    assert float(h.cdf(x - 1e-6)) < q or x <= h.min_support
    assert float(h.quantile(0.0)) == h.min_support
    assert float(h.quantile(1.0)) == h.max_support


def test_mean_and_sampling_agree_and_sampling_is_seeded() -> None:
    rng = np.random.default_rng(1)
    h = Histogram.from_samples(bimodal(rng, 5000), make_grid(120.0, 64))
    draws = h.sample(np.random.default_rng(7), 200_000)
    assert draws.mean() == pytest.approx(h.mean(), abs=4 * draws.std() / np.sqrt(draws.size))
    assert np.array_equal(draws[:100], h.sample(np.random.default_rng(7), 200_000)[:100])
    # draws follow the piecewise-linear CDF, not only the bin masses
    for x in (13.3, 21.7, 66.6):
        assert np.mean(draws <= x) == pytest.approx(float(h.cdf(x)), abs=0.005)


def test_merge_equals_binning_all_samples_and_mixture_weights() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0, 50, 300), rng.uniform(40, 100, 100)
    ha, hb = Histogram.from_samples(a, EDGES), Histogram.from_samples(b, EDGES)
    both = Histogram.from_samples(np.concatenate([a, b]), EDGES)
    assert np.allclose(ha.merge(hb).masses, both.masses)
    mix = Histogram.mixture([ha, hb], [0.25, 0.75])
    assert np.allclose(mix.masses, 0.25 * ha.masses + 0.75 * hb.masses)
    with pytest.raises(ValueError, match="same grid"):
        Histogram.mixture([ha, Histogram.from_samples(a, make_grid(100.0, 20))], [1, 1])


def test_rebin_preserves_the_cdf_and_affine_maps_edges() -> None:
    h = Histogram.from_samples([5.0, 15.0, 15.0, 35.0], EDGES)
    fine = h.rebin(make_grid(100.0, 40))
    xs = np.linspace(0, 100, 41)
    assert np.allclose(fine.cdf(xs), h.cdf(xs))
    grown = h.rebin(make_grid(200.0, 10))
    assert float(grown.cdf(40.0)) == pytest.approx(1.0)
    mapped = h.affine(0.5, 2.0)
    assert mapped.edges[0] == 0.5 and mapped.edges[-1] == 200.5
    assert np.array_equal(mapped.masses, h.masses)
    assert mapped.mean() == pytest.approx(0.5 + 2.0 * h.mean())


def test_invalid_histograms_are_rejected_with_a_reason() -> None:
    with pytest.raises(ValueError, match="increasing"):
        Histogram(np.array([0.0, 2.0, 1.0]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="no mass"):
        Histogram(EDGES, np.zeros(10))
    with pytest.raises(ValueError, match="n\\+1 edges"):
        Histogram(EDGES, np.ones(3))
    with pytest.raises(ValueError, match="zero samples"):
        Histogram.from_samples([], EDGES)
    h = Histogram.from_samples([1.0], EDGES)
    with pytest.raises(ValueError):
        h.masses[0] = 0.5  # shared arrays are read-only


# -- the two-generation window -----------------------------------------------------------------
def test_window_uses_current_alone_once_it_has_enough_samples() -> None:
    w = LatencyWindows(n_bins=8, window_ms=1000.0, min_samples=3)
    w.warm_start({"a": [10.0] * 50})
    w.add("a", [30.0, 30.0], now=100.0)
    assert sorted(set(w.samples("a").tolist())) == [10.0, 30.0]  # previous ∪ current
    w.add("a", [30.0], now=200.0)
    assert set(w.samples("a").tolist()) == {30.0}  # the current window alone
    assert w.advance(1500.0)  # window over: current becomes previous
    assert set(w.samples("a").tolist()) == {30.0}
    assert w.advance(5000.0)  # quiet for whole windows: fall back to the last histogram
    assert set(w.samples("a").tolist()) == {30.0}
    assert w.window_start == 5000.0


def test_window_grid_grows_with_the_largest_sample() -> None:
    w = LatencyWindows(n_bins=4, window_ms=1000.0, min_samples=1, headroom=1.05)
    w.warm_start({"a": [10.0, 20.0]})
    assert w.edges()[-1] == pytest.approx(21.0)
    w.add("b", [100.0], now=1.0)
    assert w.edges()[-1] == pytest.approx(105.0)
    hists = w.histograms()
    assert set(hists) == {"a", "b"}
    assert all(h.same_grid(w.edges()) for h in hists.values())
    with pytest.raises(ValueError, match="finite"):
        w.add("a", [-1.0], now=2.0)
    with pytest.raises(ValueError, match="offline profile"):
        LatencyWindows().edges()


def test_mixture_weights_are_arrival_shares_over_two_windows() -> None:
    w = LatencyWindows(window_ms=1000.0)
    assert w.weights(["a", "b"]) == {"a": 0.5, "b": 0.5}  # nothing arrived yet
    for _ in range(3):
        w.record_arrival("a", now=10.0)
    w.record_arrival("b", now=20.0)
    assert w.weights(["a", "b"]) == {"a": 0.75, "b": 0.25}
    w.record_arrival("b", now=1500.0)  # next window: the previous one still counts
    assert w.weights(["a", "b"]) == {"a": 0.6, "b": 0.4}
    w.record_arrival("b", now=2600.0)  # two windows later the early arrivals are forgotten
    assert w.weights(["a", "b"]) == {"a": 0.0, "b": 1.0}
