"""The local backend on real trial processes: data parallelism equals one process, a resize
carries the exact state, a crashing trial is reported while the run goes on, and grid and SHA
under Fluid pick the same best configuration as one trial per device."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from kairos.fluid.core.model import Limits
from kairos.fluid.driver import DriverConfig
from kairos.fluid.runtime.local import WorkerPool, tune_local
from kairos.fluid.runtime.trainable import DigitsMLP
from kairos.fluid.trial import State, TrialSpec
from kairos.fluid.tuner import TuningAPI
from kairos.fluid.tuners.grid import GridSearch
from kairos.fluid.tuners.sha import SuccessiveHalving
from kairos.runtime.ports import free_port

FAR_APART = [{"x0": 0.05, "x1": 0.5}, {"x0": 0.55, "x1": 0.5}, {"x0": 0.3, "x1": 0.1}]


def call(pool: WorkerPool, slot: tuple[int, int], msg: tuple[Any, ...]) -> Any:
    done = threading.Event()
    out: list[Any] = []

    def reply(status: str, value: Any) -> None:
        out.append((status, value))
        done.set()

    pool.workers[slot].submit(msg, reply)
    assert done.wait(120), f"no reply to {msg[0]}"
    assert out[0][0] == "ok", out[0][1]
    return out[0][1]


def test_two_gloo_processes_equal_one_at_the_same_global_batch(
    pool: WorkerPool, tmp_path: Path
) -> None:
    config = {"x0": 0.5, "x1": 0.3}
    port = free_port()
    factory = "kairos.fluid.runtime.trainable:DigitsMLP"
    gang = [(0, 0), (1, 0)]
    loads = [
        threading.Thread(
            target=call, args=(pool, slot, ("load", factory, config, None, rank, 2, port, 0))
        )
        for rank, slot in enumerate(gang)
    ]
    for t in loads:  # both ranks must be loading at once: they meet in the gloo rendezvous
        t.start()
    for t in loads:
        t.join(120)
    for _ in range(2):
        steps = [threading.Thread(target=call, args=(pool, slot, ("step",))) for slot in gang]
        for t in steps:
            t.start()
        for t in steps:
            t.join(120)
    call(pool, gang[0], ("save", str(tmp_path / "gang.pt")))
    for slot in gang:
        call(pool, slot, ("unload",))
    alone = DigitsMLP(config, 0, 1, seed=0)
    alone.step()
    alone.step()
    gang_state = torch.load(tmp_path / "gang.pt", weights_only=True)
    for name, value in alone.model.state_dict().items():
        torch.testing.assert_close(gang_state["model"][name], value, rtol=1e-4, atol=1e-5)


def test_a_resize_restores_model_and_optimizer_exactly(tmp_path: Path) -> None:
    config = {"x0": 0.5, "x1": 0.3}
    straight = DigitsMLP(config)
    for _ in range(3):
        straight.step()
    first = DigitsMLP(config)
    first.step()
    first.step()
    first.save(tmp_path / "t.pt")
    resumed = DigitsMLP(config, seed=123)  # a different init: everything must come from the file
    resumed.restore(tmp_path / "t.pt")
    resumed.step()
    assert resumed.losses == straight.losses  # the loss curve is continuous, bit for bit
    for a, b in zip(resumed.model.parameters(), straight.model.parameters(), strict=True):
        assert torch.equal(a, b)


class OneGroup:
    """Submits fixed trials as one group and nothing more."""

    name = "fixed"

    def __init__(self, specs: list[TrialSpec]) -> None:
        self.specs = specs

    def start(self, api: TuningAPI) -> None:
        api.submit_group(self.specs)

    def on_result(self, api: TuningAPI, trial_id: str, iteration: int, metric: float) -> None:
        pass

    def on_trial_end(self, api: TuningAPI, trial_id: str, stopped: bool) -> None:
        pass

    def finished(self) -> bool:
        return True


def test_fluid_widens_the_tail_and_the_curve_stays_continuous(
    pool: WorkerPool, tmp_path: Path
) -> None:
    """t0 starts on one device and s in a slot of the other; when s leaves, DynamicFluid
    widens t0 to a two-process gang, which resumes from t0's checkpoint."""
    specs = [TrialSpec("t0", {"x0": 0.5, "x1": 0.3}, 6), TrialSpec("s", {"x0": 0.2, "x1": 0.2}, 1)]
    config = DriverConfig(Limits(c=2, d=2), eps=0.0, t1_prior=0.1)
    run = tune_local(OneGroup(specs), pool, config, tmp_path)
    stats, driver = run.stats, run.driver
    t0 = driver.trials["t0"]
    assert t0.done == 6 and stats.resizes >= 1
    assert [w for _, w in t0.history] == [1, 2]  # one device, then a two-process gang
    saved = torch.load(tmp_path / "t0.pt", weights_only=True)
    straight = DigitsMLP({"x0": 0.5, "x1": 0.3})
    for _ in range(6):
        straight.step()
    for name, value in straight.model.state_dict().items():
        torch.testing.assert_close(saved["model"][name], value, rtol=1e-4, atol=1e-5)


def test_a_crashing_trial_is_reported_and_the_run_goes_on(pool: WorkerPool, tmp_path: Path) -> None:
    configs = [*FAR_APART[:2], {"x0": 0.5, "x1": 0.5, "explode_at": 2}]
    tuner = GridSearch(2, 3, configs=configs)
    run = tune_local(tuner, pool, DriverConfig(Limits(c=2, d=1)), tmp_path)
    stats, driver = run.stats, run.driver
    assert stats.failures == {"t2": "RuntimeError: trial exploded at iteration 2 (explode_at)"}
    assert driver.trials["t2"].state is State.STOPPED
    assert driver.trials["t0"].done == 3 and driver.trials["t1"].done == 3
    assert not driver.placer.placed


@pytest.mark.parametrize("algorithm", ["grid", "sha"])
def test_fluid_and_one_trial_per_device_find_the_same_best(
    algorithm: str, pool: WorkerPool, tmp_path: Path
) -> None:
    results = {}
    for label, config in (
        ("fluid", DriverConfig(Limits(c=2, d=2), eps=0.5, t1_prior=0.1)),
        ("baseline", DriverConfig.baseline()),
    ):
        if algorithm == "grid":
            tuner: Any = GridSearch(2, 4, configs=list(FAR_APART))
        else:

            class Fixed:
                def __init__(self) -> None:
                    self.left = list(FAR_APART)

                def sample(self) -> dict[str, Any]:
                    return self.left.pop(0)

                def observe(self, config: dict[str, Any], budget: int, metric: float) -> None:
                    pass

            tuner = SuccessiveHalving(Fixed(), n=3, r_min=2, max_t=6)
        run = tune_local(tuner, pool, config, tmp_path / label)
        stats = run.stats
        results[label] = (stats.best_trial, round(stats.best, 3), stats.end, run.allocation)
        assert 0 < run.allocation <= 1
    print(results)
    assert results["fluid"][0] == results["baseline"][0] == "t1"  # the middle learning rate
    assert results["fluid"][1] == pytest.approx(results["baseline"][1], abs=0.02)
