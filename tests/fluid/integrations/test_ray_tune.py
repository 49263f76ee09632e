"""Fluid under Ray Tune on a local Ray cluster: ASHA decides, Fluid sizes each trial's placement
group, and the widths Ray really gave each trial (read back inside the trainable) are the
ones Fluid chose."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from ray import tune  # noqa: E402
from ray.tune.schedulers import ASHAScheduler  # noqa: E402

from kairos.fluid.core.model import Limits  # noqa: E402
from kairos.fluid.integrations.ray_tune import FluidScheduler, train_digits  # noqa: E402


def test_asha_runs_with_fluid_widths_as_placement_groups(local_ray: None, tmp_path: Path) -> None:
    asha = ASHAScheduler(max_t=6, grace_period=2, reduction_factor=2)
    # alpha 1.5: sharing a device slows a trial by half, so a survivor gains from a whole one
    fluid = FluidScheduler(asha, devices=2, limits=Limits(c=2, d=2), max_t=6, eps=0.0, alpha=1.5)
    tuner = tune.Tuner(
        tune.with_resources(train_digits, fluid.initial_resources()),
        param_space={"x0": tune.grid_search([0.05, 0.35, 0.55, 0.75]), "x1": 0.4},
        tune_config=tune.TuneConfig(
            scheduler=fluid, metric="accuracy", mode="max", reuse_actors=False
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0),
    )
    grid = tuner.fit()
    assert not grid.errors
    results = [grid[i] for i in range(len(grid))]
    assert len(results) == 4
    chosen: dict[str, set[Fraction]] = {}
    for d in fluid.decisions:
        chosen.setdefault(d["trial"], set()).add(Fraction(d["width"]))
    last_epoch: dict[str, int] = {}
    for result in results:
        assert result.metrics is not None and result.metrics_dataframe is not None
        trial_id = result.metrics["trial_id"]
        history = result.metrics_dataframe
        widths = {Fraction(w).limit_denominator(64) for w in history["fluid_width"]}
        assert set(history["fluid_gang_in_trial_group"]) == {1}
        assert widths <= chosen[trial_id], (trial_id, widths, chosen[trial_id])
        epochs = list(history["epoch"])  # after a restore Tune keeps the rows from there on
        # Never a restart: a trial restored from an older checkpoint, or from scratch, would
        # repeat an epoch. A row may be missing: under load Tune can drop the report a trial
        # made while it was being paused, although that epoch's checkpoint was kept (seen once
        # in CI as [1, 3, 4]); the state still continues, which the next line checks.
        assert all(b > a for a, b in itertools.pairwise(epochs)), epochs
        assert epochs[-1] == result.metrics["training_iteration"]  # state came from checkpoints
        last_epoch[trial_id] = epochs[-1]
    assert any(d["why"] == "dynamic" for d in fluid.decisions), fluid.decisions
    final = {d["trial"]: d for d in fluid.decisions}  # each trial's last decision
    for result in results:  # a trial that reported after its last resize ran at that width
        assert result.metrics is not None  # checked for every result above
        trial_id = result.metrics["trial_id"]
        d = final[trial_id]
        if last_epoch[trial_id] > d["iteration"] + 1:
            width = float(result.metrics["fluid_width"])
            assert Fraction(width).limit_denominator(64) == Fraction(d["width"]), d
    assert any(
        (r.metrics or {}).get("training_iteration") == 6 for r in results
    )  # ASHA let one finish


def test_a_trial_of_two_bundles_trains_as_a_gloo_gang_equal_to_one_process(
    local_ray: None, tmp_path: Path
) -> None:
    """Width 2 = two bundles = two processes (the trainable and one actor in the trial's second
    bundle) averaging gradients over gloo at the same global batch: the same accuracies as
    one process, epoch by epoch."""
    from kairos.fluid.integrations.ray_tune import width_resources
    from kairos.fluid.runtime.trainable import DigitsMLP

    config = {"x0": 0.5, "x1": 0.4}
    tuner = tune.Tuner(
        tune.with_resources(train_digits, width_resources(Fraction(2))),
        param_space=config,
        tune_config=tune.TuneConfig(metric="accuracy", mode="max"),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), verbose=0, stop={"training_iteration": 3}
        ),
    )
    result = tuner.fit()[0]
    assert result.metrics_dataframe is not None
    history = result.metrics_dataframe
    assert list(history["fluid_ranks"]) == [2, 2, 2]
    assert list(history["fluid_gang_in_trial_group"]) == [1, 1, 1]
    alone = DigitsMLP(config)
    expected = [alone.step() for _ in range(3)]
    assert list(history["accuracy"]) == pytest.approx(expected, abs=0.006)  # a sample or two


def test_a_cluster_without_the_devices_is_refused_with_the_ray_init_to_use() -> None:
    fluid = FluidScheduler(ASHAScheduler(max_t=6), devices=4, limits=Limits(c=2, d=2), max_t=6)
    fluid.check_cluster({"CPU": 8.0, "vgpu": 4.0})  # enough: no error
    with pytest.raises(RuntimeError, match=r"ray\.init\(resources=\{'vgpu': 4\}\)"):
        fluid.check_cluster({"CPU": 8.0})
    with pytest.raises(RuntimeError, match="has 2"):
        fluid.check_cluster({"CPU": 8.0, "vgpu": 2.0})
    on_gpus = FluidScheduler(
        ASHAScheduler(max_t=6), devices=4, limits=Limits(c=2, d=2), max_t=6, resource="GPU"
    )
    with pytest.raises(RuntimeError, match=r"num_gpus"):
        on_gpus.check_cluster({"CPU": 8.0, "GPU": 1.0})


def test_tune_fails_at_the_first_trial_instead_of_waiting(local_ray: None, tmp_path: Path) -> None:
    # the local cluster has 2 vgpu; a scheduler planning over 4 would leave Tune waiting
    fluid = FluidScheduler(ASHAScheduler(max_t=2), devices=4, limits=Limits(c=2, d=2), max_t=2)
    tuner = tune.Tuner(
        tune.with_resources(train_digits, fluid.initial_resources()),
        param_space={"x0": 0.5, "x1": 0.4},
        tune_config=tune.TuneConfig(scheduler=fluid, metric="accuracy", mode="max"),
        run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0),
    )
    with pytest.raises(Exception, match=r"ray\.init\(resources=\{'vgpu': 4\}\)"):
        tuner.fit()
