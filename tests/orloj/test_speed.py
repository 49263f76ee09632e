"""Orloj's speed feedback (kairos.orloj.speed): the tracker, the scaled model, the policy, and
the drift experiment that shows what it is for."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.experiments import ExperimentContext, get_experiment
from kairos.orloj.batchdist import BatchLatencyModel, expected_max
from kairos.orloj.policies.orloj import OrlojPolicy
from kairos.orloj.policy import ProfileSnapshot, Request
from kairos.orloj.speed import (
    MAX_FACTOR,
    MIN_FACTOR,
    SERVED_SPEED_WINDOW,
    STALL,
    SpeedTracker,
    served_options,
)

APPS = {"a": (5.0, 15.0), "b": (40.0, 60.0)}
_IDS = itertools.count()  # request ids, unique across the tests' policies

pair = st.tuples(st.floats(0.1, 500.0), st.floats(0.1, 500.0))


@given(st.lists(pair, min_size=1, max_size=60), st.integers(1, 12), st.floats(0.0, 0.3))
def test_the_factor_is_the_ratio_of_the_last_window_sums_whenever_it_moves(
    pairs: list[tuple[float, float]], window: int, tolerance: float
) -> None:
    tracker = SpeedTracker(window, tolerance)
    for i, (measured, expected) in enumerate(pairs):
        before = tracker.factor
        moved = tracker.observe(measured, expected)
        if i + 1 < window:
            assert moved is None and tracker.factor == 1.0  # no verdict on a partial window
            continue
        last = pairs[i + 1 - window : i + 1]
        counted = sum(min(m, STALL * e) for m, e in last)  # a stall counts STALL x at most
        ratio = min(max(counted / sum(e for _, e in last), MIN_FACTOR), MAX_FACTOR)
        if moved is None:
            assert tracker.factor == before
            assert abs(ratio - before) <= tolerance * before * (1 + 1e-9) + 1e-12
        else:
            assert moved == tracker.factor == pytest.approx(ratio, rel=1e-9)


def test_failed_batches_and_empty_expectations_are_ignored_and_a_stall_is_capped() -> None:
    tracker = SpeedTracker(2, 0.0)
    bad = ((math.nan, 10.0), (math.inf, 10.0), (0.0, 10.0), (10.0, 0.0), (10.0, math.inf))
    for pair in bad:
        assert tracker.observe(*pair) is None
    assert tracker.observe(20.0, 10.0) is None
    assert tracker.observe(20.0, 10.0) == pytest.approx(2.0)
    assert tracker.observe(2_000.0, 10.0) == pytest.approx((20.0 + STALL * 10.0) / 20.0)
    assert tracker.observe(1.0, 10.0) == pytest.approx((STALL * 10.0 + 1.0) / 20.0)


@given(st.floats(0.1, 10.0), st.integers(1, 16), st.floats(0.0, 300.0))
def test_a_scaled_model_scales_every_batch_time(factor: float, k: int, solo: float) -> None:
    affine = BatchLatencyModel(c0=0.7, c_fix=0.8, c1=0.12)
    table = BatchLatencyModel(table={k: (1.5, 1.0 + 0.1 * k)})
    for model in (affine, table):
        assert float(model.scaled(factor).g(k, solo)) == pytest.approx(
            factor * float(model.g(k, solo)), rel=1e-12, abs=1e-12
        )
    with pytest.raises(ValueError, match="positive"):
        affine.scaled(0.0)


def _orloj(window: int, **options: Any) -> OrlojPolicy:
    rng = np.random.default_rng(0)
    profile = {a: rng.uniform(lo, hi, 300).tolist() for a, (lo, hi) in APPS.items()}
    return OrlojPolicy(  # the expected drop estimates below are E[L_B]: the mean estimator
        profile=profile,
        speed_window=window,
        speed_tolerance=0.05,
        drop_estimator="mean",
        **options,
    )


def _serve(pol: OrlojPolicy, rounds: int, slowdown: float) -> None:
    """Requests of app b one at a time; each batch takes `slowdown` x its true expected time,
    computed from the unscaled g_k and b's histogram, not from what Orloj wrote on the batch."""
    model = pol.config.batch_model
    t = 0.0
    for _ in range(rounds):
        rid = next(_IDS)
        pol.on_arrival(Request(rid, "b", t, 10_000.0), t)
        batch, _ = pol.next_batch(t)
        assert batch is not None and batch.size == 1
        truth = model.shift(1) + model.scale(1) * expected_max([(pol.store.hists["b"], 1)])
        measured = slowdown * truth
        t += measured
        pol.on_batch_done(batch, t, measured)


def test_a_slower_machine_stretches_orlojs_estimates_after_one_window() -> None:
    pol, same = _orloj(window=10), _orloj(window=0)  # `same`: the same arrivals, no feedback
    _serve(pol, 9, 1.5)
    _serve(same, 10, 1.0)
    assert pol.estimate("b", 4) == same.estimate("b", 4)  # the window is not full yet
    _serve(pol, 1, 1.5)
    same.store.rebuild()  # the app shares of arrivals `pol` rebuilt with
    for bs in (1, 4, 16):
        assert pol.estimate("b", bs) == pytest.approx(1.5 * same.estimate("b", bs), rel=1e-9)
    assert pol.speed is not None and pol.speed.factor == pytest.approx(1.5)
    version = pol.store.version
    _serve(pol, 25, 1.5)  # more windows at the same speed: the factor must not compound
    assert pol.speed.factor == pytest.approx(1.5) and pol.store.version == version
    _serve(pol, 10, 1.0)  # back to the profiled speed
    assert pol.speed.factor == pytest.approx(1.0)


def test_a_batch_planned_before_a_rescale_is_judged_by_the_speed_it_was_planned_with() -> None:
    pol = _orloj(window=2, schedule_ahead_ms=1e9)  # a second batch may be planned early
    _serve(pol, 1, 2.0)
    pol.on_arrival(Request(next(_IDS), "b", 0.0, 10_000.0), 0.0)
    early, _ = pol.next_batch(0.0)  # planned at factor 1
    assert early is not None and early.meta["speed"] == 1.0
    _serve(pol, 1, 2.0)  # a second batch completes the window: factor 2
    assert pol.speed is not None and pol.speed.factor == pytest.approx(2.0)
    pol.on_batch_done(early, 1.0, 2.0 * early.meta["est_ms"])  # also 2x what it expected
    assert pol.speed.factor == pytest.approx(2.0)
    pol.on_profile(ProfileSnapshot({"b": [50.0] * 5}))  # a profile rebuild keeps the scale
    model = pol.config.batch_model
    solo = expected_max([(pol.store.hists["b"], 1)])
    assert pol.estimate("b", 1) == pytest.approx(2.0 * (model.shift(1) + model.scale(1) * solo))


def test_without_a_window_the_estimates_keep_the_profiled_speed() -> None:
    pol = _orloj(window=0)
    before = pol.estimate("b", 4)
    _serve(pol, 30, 2.0)
    assert pol.speed is None and pol.estimate("b", 4) == before


def test_the_served_orloj_follows_the_machines_speed_unless_told_otherwise() -> None:
    assert served_options("orloj", {}) == {"speed_window": SERVED_SPEED_WINDOW}
    assert served_options("orloj", {"speed_window": 0, "b": 1e-5}) == {
        "speed_window": 0,
        "b": 1e-5,
    }
    assert served_options("clockwork", {}) == {}


def test_speed_feedback_keeps_orloj_ahead_of_clockwork_on_a_slower_machine(
    tmp_path: Path,
) -> None:
    """The drift experiment, quick: at 1.6x the profiled batch time Orloj without feedback
    falls toward Clockwork; with it, it keeps most of its lead. At the profiled speed the
    feedback changes (almost) nothing."""
    exp = get_experiment("orloj", "drift")
    ctx = ExperimentContext(out_dir=tmp_path, jobs=2, progress=False)
    rows = exp.run(exp.config(quick=True), ctx)
    fr = {(r["system"], r["slowdown"]): r["finish_rate"] for r in rows}
    assert abs(fr[("orloj+speed", 1.0)] - fr[("orloj", 1.0)]) <= 0.01
    assert fr[("orloj", 1.6)] < fr[("orloj", 1.0)] - 0.2  # the slowdown really hurts
    assert fr[("orloj+speed", 1.6)] >= fr[("orloj", 1.6)] + 0.04
    assert fr[("orloj+speed", 1.6)] >= fr[("clockwork", 1.6)] + 0.08
    assert (tmp_path / "drift.json").is_file() and list(tmp_path.glob("drift_*.png"))
