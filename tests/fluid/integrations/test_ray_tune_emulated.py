"""The emulated-timing trainable and the paired Tune study of benchmarks/bench_fluid_ray_tune.py:
an epoch lasts what the simulator's device model gives the trial at the width Ray granted it,
and under `FluidScheduler` a lone trial on two devices is widened to both and reaches the target
there, while plain ASHA runs it on one."""

from __future__ import annotations

import statistics
from fractions import Fraction
from pathlib import Path

import pytest

from kairos.fluid.device_model import DeviceModel
from kairos.fluid.integrations.emulated_trainable import (
    accuracy_at,
    epoch_seconds,
    study_target,
    truth_of,
)
from kairos.fluid.workloads import preset

CONFIG = {f"x{i}": 0.5 for i in range(6)}


def test_an_epoch_takes_the_device_models_time_at_each_width() -> None:
    wlm, device = preset("wlm"), DeviceModel()
    truth = truth_of(wlm, {**CONFIG, "seed": 3, "workload": "wlm"}, seed=3)
    assert truth == truth_of(wlm, CONFIG, seed=3)  # the emulation's settings are not the point
    assert epoch_seconds(truth, Fraction(1)) == pytest.approx(truth.t1)
    two, four = epoch_seconds(truth, Fraction(2)), epoch_seconds(truth, Fraction(4))
    assert two == device.gang(truth, 2) and four == device.gang(truth, 4)
    assert four < two < truth.t1  # compute-heavy steps: wider is faster (spec 6.4's "wlm")
    assert epoch_seconds(truth, Fraction(1, 2)) == device.packed(truth, [truth])
    assert epoch_seconds(truth, Fraction(1, 2)) > truth.t1  # a shared device is slower
    cifar = preset("cifar")
    small = truth_of(cifar, {f"x{i}": 0.5 for i in range(4)}, seed=3)
    assert epoch_seconds(small, Fraction(4)) > epoch_seconds(small, Fraction(2))  # comm-bound


def test_the_curve_is_the_configurations_and_the_seeds_alone() -> None:
    wlm = preset("wlm")
    curve = [accuracy_at(wlm, CONFIG, 0, e) for e in range(0, 81, 9)]
    assert curve == [accuracy_at(wlm, {**CONFIG, "scale": 9.0}, 0, e) for e in range(0, 81, 9)]
    assert curve != [accuracy_at(wlm, CONFIG, 1, e) for e in range(0, 81, 9)]  # the noise
    assert curve[-1] > curve[0] + 0.05  # it learns
    assert study_target(wlm, 81, 0.98) == pytest.approx(wlm.target)  # the simulator's target


def test_fluid_widens_the_lone_trial_and_it_reaches_the_target_wider(
    local_ray: None, tmp_path: Path
) -> None:
    pytest.importorskip("ray")
    from benchmarks.bench_fluid_ray_tune import Setting, paired, run_study

    # one ASHA trial on the fixture's two devices: plain Tune leaves one idle all along
    setting = Setting(devices=2, samples=1, max_t=9, stride=9, scale=0.006, quantile=0.05, eps=2.0)
    plain = run_study(setting, 0, False, tmp_path / "plain")
    fluid = run_study(setting, 0, True, tmp_path / "fluid")
    assert plain.time_to_target_s is not None and fluid.time_to_target_s is not None
    assert plain.hit_width == 1.0 and plain.max_width == 1.0
    assert fluid.resizes >= 1 and fluid.max_width == 2.0
    assert fluid.hit_width == 2.0, fluid.epochs  # the target was reached on both devices
    wlm = preset(setting.workload)
    for run in (plain, fluid):  # every epoch slept the model's time at the width Ray granted
        for e in run.epochs:
            truth = truth_of(wlm, e["point"], 0)
            width = Fraction(e["width"]).limit_denominator(64)
            assert e["model_s"] == pytest.approx(setting.stride * epoch_seconds(truth, width))
        # wall time per modelled second: the sleep is a floor; Tune's reporting adds to it
        # (a wide band: the host may be busy)
        assert 0.9 <= run.wall_over_model() <= 5.0, run.epochs
    widths = {e["width"] for e in fluid.epochs}
    assert widths == {1.0, 2.0}, fluid.epochs
    by_width = {
        w: statistics.median(e["model_s"] for e in fluid.epochs if e["width"] == w) for w in widths
    }
    assert by_width[2.0] < by_width[1.0]
    ratio = paired([plain, fluid])  # what the benchmark reports, on this one seed
    assert ratio.n == 1
    assert ratio.ratios[0] == pytest.approx(plain.to_target_s / fluid.to_target_s)


class _Trial:
    def __init__(self, trial_id: str, status: str, width: int = 1) -> None:
        from kairos.fluid.integrations.ray_tune import width_resources

        self.trial_id, self.status = trial_id, status
        self.placement_group_factory = width_resources(Fraction(width))


class _Controller:
    def __init__(self, *trials: _Trial) -> None:
        self.trials = list(trials)

    def get_live_trials(self) -> list[_Trial]:
        return self.trials


@pytest.mark.parametrize(
    ("others", "devices", "widened"),
    [
        ([_Trial("queued", "PENDING")], 4, None),  # a trial waits to start: no resize yet
        ([_Trial("started", "RUNNING")], 2, None),  # it holds the other device, unmeasured
        ([_Trial("started", "RUNNING")], 4, 3),  # two devices idle beside it
        ([], 4, 4),  # the tail: the lone measured trial takes every device
    ],
)
def test_fluid_widens_only_into_devices_no_live_trial_holds_or_waits_for(
    others: list[_Trial], devices: int, widened: int | None
) -> None:
    """ASHA's first results arrive while most trials still wait to start: widening a trial
    then takes the devices they wait for (or leaves it paused, waiting for all of them)."""
    pytest.importorskip("ray")
    from ray.tune.schedulers import ASHAScheduler

    from kairos.fluid.core.model import Limits
    from kairos.fluid.integrations.ray_tune import FluidScheduler, fluid_width

    fluid = FluidScheduler(
        ASHAScheduler(max_t=9), devices=devices, limits=Limits(c=1, d=4), max_t=9, eps=0.0
    )
    me = _Trial("me", "RUNNING")
    result = {"time_this_iter_s": 1.0, "training_iteration": 1}
    got = fluid._allocate(_Controller(me, *others), me, result)
    assert (fluid_width(got) if got is not None else None) == widened
