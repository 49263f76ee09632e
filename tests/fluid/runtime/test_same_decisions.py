"""One driver (docs/architecture.md, "One driver per system"): Fluid on real trials decides what
the simulator's driver decides.

A random search of three configurations runs real PyTorch trials on the local backend (2
virtual devices of 2 slots, worker processes, a checkpoint and relaunch on every move) and
writes its decision log: launches, resizes, stops and each iteration's measured duration and
metric. The same `Driver` then runs on a `SimClock` over a backend that replays those
measurements (`kairos.fluid.replay`), with the same tuner and configuration. `first_divergence`
between the log and the replay must be None. The comparison is shown able to fail: the log with
one launch or one resize altered is caught there, and a replay under the one-trial-per-device
baseline diverges."""

from __future__ import annotations

import pytest

from kairos.decisions import DecisionLog, Entry, altered, first_divergence, read_log
from kairos.fluid.core.model import Limits
from kairos.fluid.decisions import CODEC, Devices, Launch, Measured, Resize, Stop
from kairos.fluid.device_model import DeviceModel
from kairos.fluid.driver import DriverConfig
from kairos.fluid.replay import replay
from kairos.fluid.runtime.local import Emulation, WorkerPool, tune_local
from kairos.fluid.tuners.grid import GridSearch
from kairos.fluid.tuners.sampling import RandomSampler

T1 = 0.15  # emulated seconds per iteration alone: the run lasts a few seconds
# alpha: two trials packed on a device each run 1.15x slower (what the emulation does), so the
# trial left sharing a device when another finishes is moved to the freed one
CONFIG = DriverConfig(Limits(c=2, d=2), alpha=1.15, eps=0.02, t1_prior=T1)
# A replayed decision is made at the simulated instant its cause happened (an iteration's end);
# the real one a little later, in the same callback on the event loop.
TIME_TOL = 0.05


def search() -> GridSearch:
    return GridSearch(2, 12, sampler=RandomSampler(2, 7), n=3)


@pytest.fixture(scope="module")
def recorded(pool: WorkerPool, tmp_path_factory: pytest.TempPathFactory) -> list[Entry]:
    """The decision log of one real tuning run under Fluid, read back from its file."""
    tmp = tmp_path_factory.mktemp("fluid-replay")
    path = tmp / "decisions.jsonl"
    with DecisionLog(path, CODEC, "fluid") as log:
        emulate = Emulation(DeviceModel(), T1, util=0.45)
        run = tune_local(search(), pool, CONFIG, tmp / "run", emulate=emulate, recorder=log)
    assert not run.stats.failures and run.stats.best > 0.5  # real training happened
    return read_log(path, CODEC, system="fluid").entries


def test_the_local_backend_decides_what_the_simulators_driver_decides(
    recorded: list[Entry],
) -> None:
    kinds = [type(e.record) for e in recorded]
    # worth comparing: trials packed two to a device, one moved to a freed device (checkpoint,
    # relaunch, restore) at an iteration boundary
    assert {Launch, Resize, Stop, Measured} <= set(kinds)
    launches = [e.record for e in recorded if isinstance(e.record, Launch)]
    assert [r.placement.width for r in launches] == ["1/2"] * 3
    moves = [e.record for e in recorded if isinstance(e.record, Resize)]
    assert any(r.old.gpus != r.new.gpus for r in moves)
    assert {e.record.reason for e in recorded if isinstance(e.record, Stop)} == {"done"}

    replayed = replay(recorded, search(), 2, CONFIG)
    divergence = first_divergence(recorded, replayed, time_tol=TIME_TOL)
    assert divergence is None, str(divergence)


def test_the_comparison_finds_an_altered_launch_or_resize(recorded: list[Entry]) -> None:
    replayed = replay(recorded, search(), 2, CONFIG)
    at = max(i for i, e in enumerate(recorded) if isinstance(e.record, Launch))
    launch = recorded[at].record
    moved = Devices((1 - launch.placement.gpus[0],), launch.placement.width)
    found = first_divergence(altered(recorded, at, placement=moved), replayed, time_tol=TIME_TOL)
    assert found is not None and found.index == at, str(found)

    at = next(i for i, e in enumerate(recorded) if isinstance(e.record, Resize))
    stayed = recorded[at].record.old
    found = first_divergence(altered(recorded, at, new=stayed), replayed, time_tol=TIME_TOL)
    assert found is not None and found.index == at, str(found)


def test_the_baseline_replayed_on_the_same_measurements_decides_otherwise(
    recorded: list[Entry],
) -> None:
    baseline = replay(recorded, search(), 2, DriverConfig.baseline())
    found = first_divergence(recorded, baseline, time_tol=TIME_TOL)
    assert found is not None
    assert found.index < len(recorded) // 2  # early: the first launches already differ
