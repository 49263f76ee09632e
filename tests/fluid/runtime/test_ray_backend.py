"""The Ray backend: the driver and `LocalBackend` over slot workers that are Ray
actors on a local Ray cluster. Each virtual device is a placement group; its slots' actors run
inside it with 1/c of the device (read back from the actors); grid search under Fluid with a
gang resize reaches the same best configuration as the local process backend; a crashing trial
is reported and the run goes on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.fluid.runtime.test_local import OneGroup

ray = pytest.importorskip("ray", reason="the tune extra installs ray")

from kairos.fluid.core.model import Limits  # noqa: E402
from kairos.fluid.driver import DriverConfig  # noqa: E402
from kairos.fluid.runtime.local import DIGITS, tune_local  # noqa: E402
from kairos.fluid.runtime.ray_pool import RayWorkerPool  # noqa: E402
from kairos.fluid.runtime.trainable import DigitsMLP  # noqa: E402
from kairos.fluid.trial import State, TrialSpec  # noqa: E402
from kairos.fluid.tuners.grid import GridSearch  # noqa: E402

FAR_APART = [{"x0": 0.05, "x1": 0.5}, {"x0": 0.55, "x1": 0.5}, {"x0": 0.3, "x1": 0.1}]


@pytest.fixture(scope="module")
def pool(local_ray: None) -> Iterator[RayWorkerPool]:
    with RayWorkerPool(2, 2, DIGITS) as p:
        yield p  # type: ignore[misc]


def test_each_device_is_a_placement_group_holding_its_slots(pool: RayWorkerPool) -> None:
    for g in range(2):
        for s in range(2):
            got = pool.granted((g, s))
            assert got["placement_group"] == pool.group_id(g)
            assert got["resources"] == {"vgpu": 0.5}
    assert pool.group_id(0) != pool.group_id(1)


def test_a_pool_larger_than_the_cluster_is_refused_by_name(pool: RayWorkerPool) -> None:
    with pytest.raises(ValueError, match=r"offers 2 of resource 'vgpu'.*needs 5"):
        RayWorkerPool(5, 1)


def test_grid_under_fluid_on_ray_finds_the_local_backends_best(
    pool: RayWorkerPool, tmp_path: Path
) -> None:
    tuner = GridSearch(2, 4, configs=list(FAR_APART))
    config = DriverConfig(Limits(c=2, d=2), eps=0.5, t1_prior=0.1)
    run = tune_local(tuner, pool, config, tmp_path)
    stats = run.stats
    assert stats.best_trial == "t1"  # the middle learning rate, as on local processes
    assert all(t.done == 4 for t in run.driver.trials.values())
    assert 0 < run.allocation <= 1
    assert not run.driver.placer.placed


def test_a_gang_of_two_actors_resumes_from_the_checkpoint_exactly(
    pool: RayWorkerPool, tmp_path: Path
) -> None:
    """As on local processes: when `s` leaves, DynamicFluid widens t0 to a two-actor `gloo`
    gang on both devices' placement groups, resuming from t0's checkpoint."""
    specs = [TrialSpec("t0", {"x0": 0.5, "x1": 0.3}, 6), TrialSpec("s", {"x0": 0.2, "x1": 0.2}, 1)]
    config = DriverConfig(Limits(c=2, d=2), eps=0.0, t1_prior=0.1)
    run = tune_local(OneGroup(specs), pool, config, tmp_path)
    t0 = run.driver.trials["t0"]
    assert t0.done == 6 and run.stats.resizes >= 1
    assert [w for _, w in t0.history] == [1, 2]
    saved = torch.load(tmp_path / "t0.pt", weights_only=True)
    straight = DigitsMLP({"x0": 0.5, "x1": 0.3})
    for _ in range(6):
        straight.step()
    for name, value in straight.model.state_dict().items():
        torch.testing.assert_close(saved["model"][name], value, rtol=1e-4, atol=1e-5)


def test_a_crashing_trial_on_ray_is_reported_and_the_run_goes_on(
    pool: RayWorkerPool, tmp_path: Path
) -> None:
    configs = [*FAR_APART[:2], {"x0": 0.5, "x1": 0.5, "explode_at": 2}]
    run = tune_local(GridSearch(2, 3, configs=configs), pool, DriverConfig(Limits(c=2, d=1)),
                     tmp_path)  # fmt: skip
    assert run.stats.failures == {"t2": "RuntimeError: trial exploded at iteration 2 (explode_at)"}
    assert run.driver.trials["t2"].state is State.STOPPED
    assert run.driver.trials["t0"].done == 3 and run.driver.trials["t1"].done == 3
