"""Calibration: solo profiles per input class and the fitted batch-latency model g_k."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policy import Batch, Request
from kairos.orloj.runtime import calibrate as calibration_module
from kairos.orloj.runtime.calibrate import (
    MIN_SLOPE,
    BatchPoint,
    Calibration,
    CalibrationConfig,
    calibrate,
    complete_table,
)
from kairos.orloj.runtime.models import EarlyExitCNN, build_model
from kairos.orloj.runtime.process import ProcessExecutor

SIZES = (1, 2, 4, 8)


@pytest.fixture(scope="module")
def model() -> EarlyExitCNN:
    built = build_model("early-exit", stage_blocks=(6, 12, 12, 18))
    assert isinstance(built, EarlyExitCNN)
    return built


@pytest.fixture(scope="module")
def cal(model: EarlyExitCNN) -> Iterator[Calibration]:
    """Measured in a worker process at a raised CPU priority (when allowed), as served."""
    worker = ProcessExecutor(model, warm_sizes=SIZES, nice=-10)
    worker.start()
    try:
        yield worker.calibrate(CalibrationConfig(batch_sizes=SIZES, solo_runs=11, batch_reps=5))
    finally:
        worker.stop()


def test_solo_latency_grows_with_the_exit_stage(cal: Calibration) -> None:
    assert all(len(cal.solo[f"exit{e}"]) == 11 for e in (1, 2, 3, 4))
    # the fastest of the interleaved runs: other work on a shared machine only adds time
    fastest = [min(cal.solo[f"exit{e}"]) for e in (1, 2, 3, 4)]
    assert fastest == sorted(fastest)
    assert fastest[3] > 3 * fastest[0]  # 48 residual blocks against 6


def test_the_fitted_g_k_predicts_measured_batches(cal: Calibration) -> None:
    check = cal.check()
    print(
        f"\ng_k check: {check['within_tolerance']:.0%} of {check['points']} grid points within "
        f"10%, median error {check['median_rel_error']:.1%}, max {check['max_rel_error']:.1%}; "
        f"padded vs homogeneous {check['padded_vs_homogeneous_median']:+.1%}"
    )
    assert check["points"] == len(SIZES) * 4 + (len(SIZES) - 1) * 3
    # on a quiet machine the median point is within 10% (the spec's check, printed above and
    # reported by `kairos orloj calibrate`); a test run shares two cores with other work, so it
    # only bounds what a wrong model (not noise) would break: a median error over 35%
    assert check["median_rel_error"] <= 0.35
    # padding (Eq 4.4): one deep member among shallow ones costs what k deep members cost.
    # Measured +3% quiet and up to +7.5% with three busy loops on two cores (fastest of
    # interleaved repetitions); a batch costing its members' average depth would be 30-75%
    # cheaper than the homogeneous one (6 shallow blocks against 18-48 deep), so 25% still
    # tells the two apart
    assert abs(check["padded_vs_homogeneous_median"]) <= 0.25


def test_g_k_is_complete_non_negative_and_never_faster_for_a_bigger_batch(
    cal: Calibration,
) -> None:
    table = cal.batch_model.table
    assert table is not None and sorted(table) == list(range(1, 9))
    for k in range(1, 8):
        assert 0 <= table[k][0] <= table[k + 1][0] and 0 < table[k][1] <= table[k + 1][1]
    # batching pays on this CPU too: 8 padded requests cost well under 8 solo runs
    l4 = cal.solo_median("exit4")
    assert float(cal.batch_model.g(8, l4)) < 6 * float(cal.batch_model.g(1, l4))


def test_complete_table_interpolates_and_repairs_noise() -> None:
    noisy = BatchLatencyModel(table={1: (1.0, 1.0), 2: (-0.5, 1.4), 4: (2.0, 1.3), 8: (3.0, 3.0)})
    table = complete_table(noisy, (1, 2, 4, 8)).table
    assert table is not None
    assert table[2] == (1.0, 1.4)  # negative a_k lifted to a_1; s_k kept
    assert table[4] == (2.0, 1.4)  # s_4 < s_2: raised to s_2
    assert table[3] == pytest.approx((1.5, 1.4))
    assert table[6] == pytest.approx((2.5, 2.2))
    flat = BatchLatencyModel(table={1: (2.0, -0.4), 2: (2.5, 0.2)})  # noise on a tiny model
    floored = complete_table(flat, (1, 2)).table
    assert floored == {1: (2.0, MIN_SLOPE), 2: (2.5, 0.2)}
    same = BatchLatencyModel()
    assert complete_table(same, (1, 2)) is same


def _erring_by(error: float) -> Calibration:
    """A calibration whose one point errs by `error` against g_1(l) = l."""
    point = BatchPoint(1, "a", False, 10.0, 10.0 / (1 + error))
    return Calibration("m", {"a": [10.0]}, [point], BatchLatencyModel(table={1: (0.0, 1.0)}), 0.1)


@pytest.mark.parametrize(
    ("errors", "retakes", "measured", "kept"),
    [
        ((0.05, 0.5), 1, 1, 0.05),  # a good fit is not measured again
        ((0.5, 0.3), 1, 2, 0.3),  # a bad one is, and the better of the two kept
        ((0.5, 0.9), 1, 2, 0.5),  # the retake was worse: the first kept
        ((0.5, 0.3, 0.1), 2, 3, 0.1),  # again while still over 2 x tolerance
        ((0.5, 0.15, 0.1), 2, 2, 0.15),  # stops once within it
        ((0.5, 0.3), 0, 1, 0.5),  # retakes=0: one measurement, whatever its fit
    ],
)
def test_a_calibration_erring_past_twice_the_tolerance_is_taken_again(
    monkeypatch: pytest.MonkeyPatch,
    errors: tuple[float, ...],
    retakes: int,
    measured: int,
    kept: float,
) -> None:
    takes = iter(errors)
    calls: list[float] = []

    def fake_measure(*_args: object) -> Calibration:
        calls.append(next(takes))
        return _erring_by(calls[-1])

    monkeypatch.setattr(calibration_module, "_measure", fake_measure)
    monkeypatch.setattr(calibration_module, "warm_up", lambda *_a: None)
    monkeypatch.setattr(calibration_module, "configure_threads", lambda *_a: None)
    said: list[str] = []
    cfg = CalibrationConfig(retakes=retakes)
    cal = calibrate(build_model("decoder"), cfg, progress=said.append)
    assert len(calls) == measured
    assert cal.median_error() == pytest.approx(kept)
    assert sum("measuring again" in m for m in said) == measured - 1


def test_a_calibration_whose_held_out_batches_err_is_retaken_wider_and_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The fit matches its own points (5%) but its held-out batches err by 50%: retaken with
    twice the repetitions, the better (by the worse of its two errors) kept, both logged."""
    takes = iter([(0.05, 0.5), (0.08, 0.1)])
    reps: list[int] = []

    def fake_measure(_model: object, cfg: CalibrationConfig, _say: object) -> Calibration:
        reps.append(cfg.batch_reps)
        fit, held = next(takes)
        cal = _erring_by(fit)
        cal.held_out = [BatchPoint(1, "a", False, 10.0, 10.0 / (1 + held))]
        return cal

    monkeypatch.setattr(calibration_module, "_measure", fake_measure)
    monkeypatch.setattr(calibration_module, "warm_up", lambda *_a: None)
    monkeypatch.setattr(calibration_module, "configure_threads", lambda *_a: None)
    with caplog.at_level("INFO", logger=calibration_module.__name__):
        cal = calibrate(build_model("decoder"), CalibrationConfig(batch_reps=3, retakes=1))
    assert reps == [3, 6]
    assert cal.holdout_error() == pytest.approx(0.1) and cal.badness() == pytest.approx(0.1)
    assert "held-out 50%" in caplog.text and "held-out 10.0%" in caplog.text
    # the mutant that judges the fit alone would have kept the first take
    assert _erring_by(0.05).badness() <= 2 * 0.1


def test_app_profiles_capacity_prediction_and_file_round_trip(
    cal: Calibration, model: EarlyExitCNN, tmp_path: Path
) -> None:
    apps = {"easy": ("exit1",), "mixed": ("exit2", "exit4")}
    prof = cal.app_profile(apps, n=400, seed=1)
    assert set(prof["easy"]) <= set(cal.solo["exit1"])
    assert set(prof["mixed"]) <= set(cal.solo["exit2"]) | set(cal.solo["exit4"])
    share_deep = np.mean([v in set(cal.solo["exit4"]) for v in prof["mixed"]])
    assert 0.4 < share_deep < 0.6
    with pytest.raises(ValueError, match="unknown input classes"):
        cal.app_profile({"bad": ("exit9",)})
    # (whether batch 8 beats batch 1 is a timing question for a shared machine: the batching
    # gain itself is checked on g_k below; here the capacity must only be a positive rate)
    assert cal.capacity_per_s(apps, 8) > 0 and cal.capacity_per_s(apps, 1) > 0
    batch = Batch(
        [
            Request(i, "easy", 0.0, 1.0, payload=model.parse({"exit": e}))
            for i, e in enumerate((1, 3))
        ]
    )
    assert cal.predict(model)(batch) == pytest.approx(
        float(cal.batch_model.g(2, cal.solo_median("exit3")))
    )
    again = Calibration.load(cal.save(tmp_path / "cal.json"))
    assert again.solo == cal.solo and again.batch_model == cal.batch_model
    assert again.points == cal.points
    assert again.held_out == cal.held_out and len(cal.held_out) == len(cal.points)
