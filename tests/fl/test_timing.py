"""Availability, round timing and jobs."""

from __future__ import annotations

import numpy as np
import pytest

from kairos.fl import (
    CheckIns,
    DiurnalAvailability,
    FLJob,
    Requirement,
    ResponseModel,
    RoundRule,
    completes,
)


def test_diurnal_checkins_once_a_day_peak_at_night() -> None:
    src = DiurnalAvailability(devices=20_000, seed=3)
    day = src.chunk(2)
    assert len(day) == 20_000 and np.unique(day.device).size == 20_000
    assert np.all((day.start >= 2 * 86_400) & (day.start < 3 * 86_400))
    hours = ((day.start % 86_400) // 3600).astype(int)
    per_hour = np.bincount(hours, minlength=24)
    assert per_hour[1:4].mean() / per_hour[13:16].mean() == pytest.approx(3.0, rel=0.15)
    assert np.median(day.end - day.start) == pytest.approx(900, rel=0.05)
    assert (day.end - day.start).max() <= 4 * 3600
    assert np.array_equal(src.chunk(2).start, day.start)  # a chunk is a pure function
    assert src.mean_rate == pytest.approx(20_000 / 86_400)


def test_checkins_must_be_sorted_and_consistent() -> None:
    with pytest.raises(ValueError, match="sorted"):
        CheckIns(np.array([0, 1]), np.array([5.0, 1.0]), np.array([6.0, 2.0]))
    with pytest.raises(ValueError, match="end before"):
        CheckIns(np.array([0]), np.array([5.0]), np.array([4.0]))


def test_response_model_targets_and_failures() -> None:
    rng = np.random.default_rng(0)
    slow = rng.lognormal(0, 0.5, 200_000)
    rt = ResponseModel().sample(slow, np.ones_like(slow), rng)
    p50, p75, p95 = np.percentile(rt, [50, 75, 95])
    assert p50 == pytest.approx(120, rel=0.03)
    assert p75 == pytest.approx(170, rel=0.05) and p95 == pytest.approx(280, rel=0.05)
    comm = ResponseModel(compute_s=0, comm_s=10, noise_sigma=0)
    assert np.allclose(comm.sample(np.ones(2), np.array([1.0, 2.0]), rng), [20.0, 10.0])
    ok = completes(np.array([0.0, 0.0]), np.array([10.0, 30.0]), np.array([20.0, 20.0]))
    assert ok.tolist() == [True, False]


def test_round_rule_thresholds() -> None:
    rule = RoundRule(deadline_s=300, min_resp_frac=0.8, overcommit=1.3)
    assert rule.request_size(10) == 13 and rule.needed(10) == 8 and rule.needed(5) == 4
    plain = RoundRule()
    assert plain.succeeds_at_deadline(10, dispatched=8, responses=7)  # 7 >= 0.8*8
    assert not plain.succeeds_at_deadline(10, dispatched=7, responses=7)  # too few dispatched
    assert not plain.succeeds_at_deadline(10, dispatched=10, responses=7)
    assert not plain.succeeds_at_deadline(1, dispatched=1, responses=0)


def test_job_validation_and_totals() -> None:
    req = Requirement(name="any")
    job = FLJob("a", 10.0, 50, 20, req)
    assert job.total_demand == 1000 and job.needed == 40 and job.request_size == 50
    with pytest.raises(ValueError, match="participants"):
        FLJob("b", 0.0, 0, 5, req)
    with pytest.raises(ValueError, match="rounds"):
        FLJob("c", 0.0, 5, 0, req)
