from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.orloj.batchdist import (
    MIXTURE_KEY,
    BatchLatencyModel,
    batch_dists,
    batch_factors,
    expected_max,
    fit_batch_model,
    max_cum,
    max_histogram,
    max_pdf_eq48,
    max_pdf_product,
    parse_estimator,
)
from kairos.orloj.dist import Histogram, make_grid

GRID = make_grid(100.0, 20)


def random_hist(rng: np.random.Generator, edges: np.ndarray = GRID) -> Histogram:
    """Random masses with some empty bins (as real profiles have)."""
    m = rng.random(edges.size - 1) * (rng.random(edges.size - 1) < 0.6)
    m[rng.integers(m.size)] += 0.1
    return Histogram(edges, m)


def mc_max(hists: list[Histogram], n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.max([h.sample(rng, n) for h in hists], axis=0)


# -- the batch-time model ----------------------------------------------------------------------
def test_default_model_makes_a_lone_request_cost_its_solo_time() -> None:
    m = BatchLatencyModel()
    assert float(m.g(1, 100.0)) == pytest.approx(100.5)  # 0.5 + (0.9 + 0.1) l
    assert float(m.g(16, 100.0)) == pytest.approx(250.5)  # 2.5x its longest member
    p = BatchLatencyModel.paper(c0=2.0, c1=0.5)
    assert (p.shift(4), p.scale(4)) == (2.0, 2.0)  # Eq 4.3: c0 + c1 k l
    t = BatchLatencyModel(table={1: (1.0, 1.0), 2: (1.0, 1.5)})
    assert float(t.g(2, 10.0)) == 16.0
    with pytest.raises(ValueError, match="no row for batch size 4"):
        t.g(4, 1.0)


@pytest.mark.parametrize("form", ["affine", "paper", "table"])
def test_fit_recovers_the_model_it_was_measured_on(form: str) -> None:
    truth = {
        "affine": BatchLatencyModel(c0=0.7, c_fix=0.85, c1=0.12),
        "paper": BatchLatencyModel.paper(c0=1.5, c1=0.3),
        "table": BatchLatencyModel(table={1: (0.4, 1.0), 4: (1.0, 1.3), 16: (2.0, 3.1)}),
    }[form]
    rng = np.random.default_rng(3)
    ks = np.repeat([1, 4, 16], 30)
    ls = rng.uniform(5, 200, ks.size)
    ys = np.array([float(truth.g(int(k), x)) for k, x in zip(ks, ls, strict=True)])
    fit = fit_batch_model(ks, ls, ys, form)  # type: ignore[arg-type]
    for k in (1, 4, 16):
        assert float(fit.g(k, 77.0)) == pytest.approx(float(truth.g(k, 77.0)), rel=1e-9)
    noisy = fit_batch_model(ks, ls, ys * rng.lognormal(0, 0.02, ys.size), form)  # type: ignore[arg-type]
    assert float(noisy.g(16, 100.0)) == pytest.approx(float(truth.g(16, 100.0)), rel=0.02)


# -- the distribution of the maximum -----------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 8))
def test_identical_members_max_is_F_to_the_k_and_matches_monte_carlo(seed: int, k: int) -> None:
    h = random_hist(np.random.default_rng(seed))
    cum = max_cum([(h, k)])
    assert np.allclose(cum, h.cum**k)  # Eq 4.6
    draws = mc_max([h] * k, 20_000, seed)
    empirical = np.searchsorted(np.sort(draws), GRID, side="right") / draws.size
    assert np.max(np.abs(empirical - cum)) < 0.02  # ~ 2x the DKW 95% band at n = 20k


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 6))
def test_different_members_max_is_the_product_and_matches_monte_carlo(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    hists = [random_hist(rng) for _ in range(k)]
    hmax = max_histogram([(h, 1) for h in hists])
    draws = mc_max(hists, 20_000, seed)
    empirical = np.searchsorted(np.sort(draws), GRID, side="right") / draws.size
    assert np.max(np.abs(empirical - hmax.cum)) < 0.02
    assert np.allclose(hmax.cum, np.prod([h.cum for h in hists], axis=0))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6))
def test_eq48_is_the_derivative_of_the_product_of_cdfs(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    hists = [random_hist(rng) for _ in range(k)]
    x = rng.uniform(0, 100, 200)
    x = x[np.abs(x / 5 - np.round(x / 5)) > 1e-3]  # away from edges, where f jumps
    cdfs = np.array([h.cdf(x) for h in hists])
    pdfs = np.array([h.pdf(x) for h in hists])
    oracle = max_pdf_eq48(cdfs, pdfs)
    assert np.allclose(oracle, max_pdf_product(cdfs, pdfs), rtol=1e-9, atol=1e-12)
    # and the product form is the derivative of Π F_i (central differences)
    dx = 1e-5

    def prod(v: np.ndarray) -> np.ndarray:
        return np.prod([h.cdf(v) for h in hists], axis=0)

    numeric = (prod(x + dx) - prod(x - dx)) / (2 * dx)
    assert np.allclose(numeric, oracle, rtol=1e-5, atol=1e-8)


def test_eq48_refuses_exponential_sizes() -> None:
    with pytest.raises(ValueError, match="k <= 8"):
        max_pdf_eq48(np.ones((9, 2)), np.ones((9, 2)))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_own=st.integers(1, 3), n_mix=st.integers(0, 13))
def test_expected_max_is_exact_against_fine_integration_and_sampling(
    seed: int, n_own: int, n_mix: int
) -> None:
    rng = np.random.default_rng(seed)
    own, other = random_hist(rng), random_hist(rng)
    factors = [(own, n_own), (other, n_mix)]
    exact = expected_max(factors)
    xs = np.linspace(0, 100, 400_001)  # trapezoid on a fine grid of the exact CDF product
    fx = own.cdf(xs) ** n_own * other.cdf(xs) ** n_mix
    assert exact == pytest.approx(float(np.trapezoid(1 - fx, xs)), rel=1e-6, abs=1e-6)
    draws = mc_max([own] * n_own + [other] * n_mix, 20_000, seed)
    assert exact == pytest.approx(draws.mean(), abs=5 * draws.std() / np.sqrt(draws.size) + 1e-9)
    # the coarse max-histogram's own mean is only approximately right (the text's warning)
    assert max_histogram(factors).mean() == pytest.approx(exact, abs=2.5)


def test_expected_max_starts_at_the_first_edge() -> None:
    h = Histogram(np.array([10.0, 20.0]), np.array([1.0]))
    assert expected_max([(h, 1)]) == pytest.approx(15.0)
    assert expected_max([(h, 3)]) == pytest.approx(10 + 10 * 3 / 4)  # max of 3 uniforms


# -- per-(app, batch size) tables ------------------------------------------------------------
def two_apps() -> tuple[dict[str, Histogram], dict[str, float]]:
    rng = np.random.default_rng(5)
    fast = Histogram.from_samples(rng.normal(20, 2, 1000), GRID)
    slow = Histogram.from_samples(rng.normal(70, 5, 1000), GRID)
    return {"fast": fast, "slow": slow}, {"fast": 0.75, "slow": 0.25}


def test_own_plus_mixture_uses_every_app_and_reduces_to_eq46_for_one_app() -> None:
    hists, weights = two_apps()
    model = BatchLatencyModel()
    sizes = [1, 2, 4, 8, 16]
    dists = batch_dists(hists, weights, model, sizes)
    assert set(dists) == {"fast", "slow", MIXTURE_KEY}
    mix = Histogram.mixture([hists["fast"], hists["slow"]], [0.75, 0.25])
    for j, k in enumerate(sizes):
        d = dists["fast"][j]
        e_max = expected_max([(hists["fast"], 1), (mix, k - 1)])
        assert d.mean == pytest.approx(model.shift(k) + model.scale(k) * e_max)
        assert d.hist.edges[0] == pytest.approx(model.shift(k))  # edges mapped through g_k
        assert dists[MIXTURE_KEY][j].mean == pytest.approx(
            model.shift(k) + model.scale(k) * expected_max([(mix, k)])
        )
    # a lone fast request is fast; in a batch it waits for the (probably slow) others
    assert dists["fast"][0].mean < 25 < 70 < dists["fast"][4].mean
    assert dists["fast"][0].mean < dists["slow"][0].mean
    single = batch_dists({"a": hists["slow"]}, {"a": 1.0}, model, sizes)
    assert np.allclose(single["a"][3].hist.masses, np.diff(hists["slow"].cum ** 8))


def test_mixture_and_cyclic_modes() -> None:
    hists, weights = two_apps()
    sizes = [1, 2, 4]
    mixture = batch_dists(hists, weights, BatchLatencyModel(), sizes, "mixture")
    assert mixture["fast"][2].mean == mixture["slow"][2].mean  # app-agnostic
    cyclic = batch_dists(hists, weights, BatchLatencyModel(), sizes, "cyclic")
    assert cyclic["fast"][1].mean == cyclic["slow"][1].mean
    counts = {
        h is hists["fast"]: n for h, n in batch_factors("x", 5, hists, hists["fast"], "cyclic")
    }
    assert counts == {True: 3, False: 2}  # slots fast, slow, fast, slow, fast


def test_estimates_grow_with_batch_size() -> None:
    hists, weights = two_apps()
    dists = batch_dists(hists, weights, BatchLatencyModel(), [1, 2, 4, 8, 16])
    for how in ("mean", "min", "quantile:0.9"):
        est = [d.estimate(how) for d in dists["fast"]]
        assert est == sorted(est)
    d = dists["slow"][0]
    assert d.estimate("min") == d.hist.min_support <= d.estimate("quantile:0.5") <= d.mean + 5
    assert parse_estimator("quantile:0.25") == ("quantile", 0.25)
    for bad in ("median", "quantile:2", "quantile:x"):
        with pytest.raises(ValueError, match="drop_estimator"):
            parse_estimator(bad)
