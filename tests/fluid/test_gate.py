"""The gate (core/gate.py): Fluid decides what packing or scaling can buy before it profiles,
so a rolling group of as many live trials as GPUs costs nothing, and only the usable series is
measured otherwise. Each guard is checked against the run with the gate defeated."""

from __future__ import annotations

import pytest

from kairos.fluid.core.gate import Needs, steady_live, what_can_pay
from kairos.fluid.device_model import DeviceModel
from kairos.fluid.simulator import profile_session, simulate
from kairos.fluid.tuners import ASHA, make_tuner
from kairos.fluid.workloads import preset


def test_the_rule_reads_the_steady_live_count_against_the_gpus() -> None:
    assert what_can_pay(8, 8) == Needs(packing=False, scaling=False)
    assert what_can_pay(4, 8) == Needs(packing=True, scaling=False)
    assert what_can_pay(16, 8) == Needs(packing=False, scaling=True)
    assert what_can_pay(8, None) == Needs(packing=True, scaling=True)
    with pytest.raises(ValueError, match="at least one GPU"):
        what_can_pay(0, 8)


def test_which_tuners_keep_a_steady_group() -> None:
    assert steady_live(make_tuner("asha", 5, 0, 1000, 8)) == 8
    assert steady_live(make_tuner("pbt", 5, 0, 81, 8)) == 8
    assert steady_live(make_tuner("asha", 5, 0, 1000, 8, n=8)) is None  # never refilled
    assert steady_live(make_tuner("hyperband", 5, 0, 81, 8)) is None

    class Broken:
        steady_live = 0

    with pytest.raises(ValueError, match="steady_live"):
        steady_live(Broken())


def test_as_many_live_trials_as_gpus_run_the_baseline_at_no_cost() -> None:
    w = preset("cifar")
    base = simulate(w, make_tuner("bohb", w.dims, 1, 1000, 8), 8, False, seed=1)
    ours = simulate(w, make_tuner("bohb", w.dims, 1, 1000, 8), 8, True, seed=1)
    assert ours.profile_seconds == 0.0
    assert (ours.makespan, ours.gpu_seconds, ours.trials) == (
        base.makespan,
        base.gpu_seconds,
        base.trials,
    )
    # the mutant: the same tuner with the gate defeated pays for profiling and plans apart
    defeated = make_tuner("bohb", w.dims, 1, 1000, 8)
    assert isinstance(defeated, ASHA)
    defeated.steady_live = None
    worse = simulate(w, defeated, 8, True, seed=1)
    assert worse.profile_seconds > 0.0
    assert worse.makespan != base.makespan


@pytest.mark.parametrize(("gpus", "packing", "saved"), [(4, True, False), (16, False, True)])
def test_only_the_series_the_plan_can_use_is_profiled(
    gpus: int, packing: bool, saved: bool
) -> None:
    w = preset("cifar")
    ours = simulate(w, make_tuner("asha", w.dims, 0, 1000, 8), gpus, True, seed=0)
    both = profile_session(w, DeviceModel(), 0)
    assert (ours.limits.c > 1, ours.limits.d > 1) == (packing, not packing)
    used = both.packing_times if packing else both.scaling_times
    assert ours.profile_seconds == pytest.approx(sum(used))
    # on cifar the packing series is the longer one: skipping it is what saves time at 16
    assert (ours.profile_seconds < both.seconds) is saved


def test_nothing_to_profile_is_an_error_not_a_silent_profile() -> None:
    with pytest.raises(ValueError, match="nothing to profile"):
        profile_session(preset("cifar"), DeviceModel(), 0, needs=Needs(False, False))
